#!/usr/bin/env bash
# Interop: real TensorFlow and the protobuf runtime read what ofconvert writes.
#
#   bash tests/interop/run.sh
#
# Uses the virtualenv with tensorflow-cpu, protobuf, grpcio-tools and tensorflow-datasets
# that oneflow.sh and crates/python/ci.sh share, kept in ${XDG_CACHE_HOME:-~/.cache}/ofconvert-interop
# and made when missing (set OFCONVERT_INTEROP_VENV to another virtualenv that has them to
# use it instead; tensorflow-datasets is added to it if missing), builds the
# release binary, converts testdata/ both ways, runs check.py on every output, loads
# the TFDS folders of2tf gives back with tfds.builder_from_directory (tfds_check.py), also
# after tf2of --images raw (features.json then describes the pixels), and
# takes a dataset TFDS's own builder writes (a ClassLabel with names) through tf2of, diff
# and of2tf and back into TFDS, prepared as TFRecord, as ArrayRecord and as Parquet (tfds_builder.py).
# Exits non-zero on any mismatch.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
testdata="$root/testdata"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step() { printf '\n==> %s   [%s]\n' "$*" "$(date -u +%T)"; }

if [ -n "${OFCONVERT_INTEROP_VENV:-}" ]; then
    venv="$OFCONVERT_INTEROP_VENV"
else
    cache="${XDG_CACHE_HOME:-$HOME/.cache}/ofconvert-interop"
    step "virtualenv with tensorflow-cpu, protobuf, grpcio-tools, tensorflow-datasets (cached in $cache)"
    # shellcheck source=tests/interop/oneflow_venv.sh
    . "$here/oneflow_venv.sh"
    tensorflow_venv_ready
    venv="$tf_venv"
fi
python="$venv/bin/python"
if ! "$python" -c "import tensorflow_datasets" 2>/dev/null; then
    step "tensorflow-datasets into $venv"
    "$venv/bin/pip" install --quiet tensorflow-datasets
fi
export TF_CPP_MIN_LOG_LEVEL=3

step "build"
cargo build --release --locked --quiet -p ofconvert --manifest-path "$root/Cargo.toml"
target="${CARGO_TARGET_DIR:-$root/target}"
ofconvert="$target/release/ofconvert"

step "OneFlow's record.proto for the protobuf runtime"
mkdir -p "$work/py"
"$python" -m grpc_tools.protoc -I "$root/proto" --python_out="$work/py" \
    "$root/proto/oneflow/core/record/record.proto"
export PYTHONPATH="$work/py/oneflow/core/record${PYTHONPATH:+:$PYTHONPATH}"

check() { "$python" "$here/check.py" "$@"; }

step "tf2of: the sample tree"
"$ofconvert" --quiet tf2of "$testdata/datasets" "$work/of"
check tf2of "$testdata/datasets" "$work/of"

step "tf2of: golden files (GZIP, ZLIB, edge values, empty Examples skipped)"
mkdir -p "$work/golden"
for file in tutorial.tfrecord tutorial.tfrecord.gz tutorial.tfrecord.zz images.tfrecord \
    edge.tfrecord bert.tfrecord; do
    mkdir -p "$work/golden/${file//./_}"
    cp "$testdata/golden/$file" "$work/golden/${file//./_}/"
done
"$ofconvert" --quiet tf2of "$work/golden" "$work/golden-of" --empty skip --parts 2
check tf2of "$work/golden" "$work/golden-of"

step "of2tf: back from tf2of's output, GZIP"
"$ofconvert" --quiet of2tf "$work/of" "$work/back" --compression gzip
check of2tf "$work/of" "$work/back"

step "of2tf: OneFlow datasets written the OneFlow way"
"$ofconvert" --quiet of2tf "$testdata/ofdatasets" "$work/from-of"
check of2tf "$testdata/ofdatasets" "$work/from-of"
"$ofconvert" --quiet of2tf "$testdata/ofrecord/no_double" "$work/no-double" --compression zlib
check of2tf "$testdata/ofrecord/no_double" "$work/no-double"
# all_kinds holds 1e300: narrowing would make it an infinity, which --lossy refuses too.
if "$ofconvert" --quiet --jobs 1 of2tf "$testdata/ofrecord/all_kinds" "$work/all-kinds" --lossy \
    2>"$work/all-kinds.err"; then
    echo "of2tf --lossy converted a double beyond float's range" >&2
    exit 1
fi
grep -q '(record #1): feature "double": double 1e300 is beyond the range of float' \
    "$work/all-kinds.err"
test ! -e "$work/all-kinds" || test -z "$(ls -A "$work/all-kinds")"

step "of2tf: TFDS folders come back in TFDS's layout and load with tfds.builder_from_directory"
"$ofconvert" --quiet tf2of "$testdata/datasets/tfds" "$work/tfds-of"
"$ofconvert" --quiet of2tf "$work/tfds-of" "$work/tfds-back"
"$ofconvert" --quiet of2tf "$work/tfds-of" "$work/tfds-resharded" --parts 3
check of2tf "$work/tfds-of" "$work/tfds-back"
for folder in mnist/3.0.1 cifar10/3.0.2; do
    for written in "$work/tfds-back/$folder" "$work/tfds-resharded/$folder"; do
        # TensorFlow Datasets must find everything in the folders: no download, no cache.
        empty="$(mktemp -d "$work/tfds-data.XXXXXX")"
        resharded=()
        [ "$written" = "$work/tfds-resharded/$folder" ] && resharded=(--resharded)
        TFDS_DATA_DIR="$empty" "$python" "$here/tfds_check.py" \
            "$testdata/datasets/tfds/$folder" "$written" "${resharded[@]}"
    done
done

step "tf2of --images raw: features.json describes the pixels, and TFDS loads the same images"
"$ofconvert" --quiet tf2of "$testdata/datasets/tfds" "$work/tfds-raw-of" --images raw
"$ofconvert" --quiet of2tf "$work/tfds-raw-of" "$work/tfds-raw-back"
for folder in mnist/3.0.1 cifar10/3.0.2; do
    empty="$(mktemp -d "$work/tfds-data.XXXXXX")"
    TFDS_DATA_DIR="$empty" "$python" "$here/tfds_check.py" \
        "$testdata/datasets/tfds/$folder" "$work/tfds-raw-back/$folder" --raw
done

step "TFDS's own builder: class names, side files and names through tf2of and of2tf, back into TFDS; prepared as ArrayRecord too"
mkdir -p "$work/tfds-builder"
empty="$(mktemp -d "$work/tfds-data.XXXXXX")"
TFDS_DATA_DIR="$empty" "$python" "$here/tfds_builder.py" "$ofconvert" "$work/tfds-builder"

step "array_record's reader and Grain's ArrayRecordDataSource read what ofconvert's ArrayRecord writer makes"
(cd "$root" && "$python" testdata/arrayrecord/check_ours.py)

step "interop: all outputs read back as they should"
