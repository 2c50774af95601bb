#!/usr/bin/env bash
# Interop with real OneFlow 0.9.0: OneFlow reads every sample dataset tf2of writes (and a TFDS
# dataset TFDS prepared as ArrayRecord and as Parquet) through the code `ofconvert schema --oneflow` prints,
# with TensorFlow's values; OFRecords written with
# OneFlow's own record_pb2 go through of2tf and TensorFlow reads them back.
#
#   bash tests/interop/oneflow.sh
#
# Needs CPython 3.10 (the OneFlow 0.9.0 wheel is built for it): found under pyenv
# (~/.pyenv/versions/3.10.*) or as python3.10 on PATH; set OFCONVERT_PYTHON310 to choose one.
# Two virtualenvs are kept under ${XDG_CACHE_HOME:-~/.cache}/ofconvert-interop, each rebuilt
# only when its requirements change: OneFlow (with the CUDA libraries its import needs, used
# on the CPU; about 2 GB, downloaded once into pip's cache) and TensorFlow. They cannot share
# one: OneFlow needs protobuf<4, TensorFlow a newer one. Values cross between them in files.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
testdata="$root/testdata"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cache="${XDG_CACHE_HOME:-$HOME/.cache}/ofconvert-interop"

step() { printf '\n==> %s   [%s]\n' "$*" "$(date -u +%T)"; }
die() { printf 'oneflow.sh: %s\n' "$*" >&2; exit 1; }

# shellcheck source=tests/interop/oneflow_venv.sh
. "$here/oneflow_venv.sh"

step "virtualenvs (cached in $cache)"
oneflow_venv_ready
tensorflow_venv_ready
export TF_CPP_MIN_LOG_LEVEL=3 GLOG_minloglevel=2
oneflow_python() {
    LD_LIBRARY_PATH="$oneflow_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$oneflow_venv/bin/python" "$@"
}
tf_python() { "$tf_venv/bin/python" "$@"; }
oneflow_python -c 'import oneflow, google.protobuf as p; print("oneflow", oneflow.__version__, "protobuf", p.__version__)'

step "build"
cargo build --release --locked --quiet -p ofconvert --manifest-path "$root/Cargo.toml"
ofconvert="${CARGO_TARGET_DIR:-$root/target}/release/ofconvert"

step "tf2of: every sample dataset, with the flags it needs"
# What a user passes for each tree of testdata/datasets; the others need none.
flags_for() {
    case "$1" in
        imagenet) echo "--preset imagenet" ;;
        *) echo "" ;;
    esac
}
# roots.txt: each output tree and the input root its manifests' paths are relative to.
for tree in "$testdata"/datasets/*/; do
    name="$(basename "$tree")"
    # shellcheck disable=SC2046
    "$ofconvert" --quiet tf2of "$tree" "$work/of/$name" $(flags_for "$name")
    printf '%s\t%s\n' "$name" "$tree" >>"$work/roots.txt"
done
# Several parts read as one stream, in order, and unpadded part names.
"$ofconvert" --quiet tf2of "$testdata/datasets/tutorial" "$work/of/tutorial-3-parts" \
    --parts 3 --part-digits 0
printf '%s\t%s\n' tutorial-3-parts "$testdata/datasets/tutorial" >>"$work/roots.txt"
# The golden inception-style records: JPEG and PNG, 0 to 3 boxes (empty float lists).
mkdir -p "$work/golden/images"
cp "$testdata/golden/images.tfrecord" "$work/golden/images/"
"$ofconvert" --quiet tf2of "$work/golden/images" "$work/of/golden-images"
printf '%s\t%s\n' golden-images "$work/golden/images" >>"$work/roots.txt"
# Images OneFlow cannot decode, re-encoded as JPEG or decoded to pixels.
for images in jpeg raw; do
    "$ofconvert" --quiet tf2of "$testdata/datasets/tfds" "$work/of/tfds-$images" --images "$images"
    printf '%s\t%s\n' "tfds-$images" "$testdata/datasets/tfds" >>"$work/roots.txt"
    "$ofconvert" --quiet tf2of "$testdata/datasets/imagenet" "$work/of/imagenet-$images" \
        --preset imagenet --images "$images"
    printf '%s\t%s\n' "imagenet-$images" "$testdata/datasets/imagenet" >>"$work/roots.txt"
done

# A TFDS dataset prepared as ArrayRecord by TFDS's own builder (TensorFlow's values come from
# Google's array_record reader).
mkdir -p "$work/tfds-empty"
TFDS_DATA_DIR="$work/tfds-empty" tf_python "$here/tfds_builder.py" --prepare array_record \
    "$work/tfds-array-record"
"$ofconvert" --quiet tf2of "$work/tfds-array-record" "$work/of/tfds-array-record"
printf '%s\t%s\n' tfds-array-record "$work/tfds-array-record" >>"$work/roots.txt"
# And as Parquet (TensorFlow's values come from pyarrow's read of the shards' `data` column).
mkdir -p "$work/tfds-empty-parquet"
TFDS_DATA_DIR="$work/tfds-empty-parquet" tf_python "$here/tfds_builder.py" --prepare parquet \
    "$work/tfds-parquet"
"$ofconvert" --quiet tf2of "$work/tfds-parquet" "$work/of/tfds-parquet"
printf '%s\t%s\n' tfds-parquet "$work/tfds-parquet" >>"$work/roots.txt"

step "schema --oneflow: the code each dataset is read with"
mkdir -p "$work/code"
find "$work/of" -name ofconvert-manifest.json -print0 | sort -z |
    while IFS= read -r -d '' manifest; do
        dir="$(dirname "$manifest")"
        key="$(realpath --relative-to="$work/of" "$dir" | tr '/' '~')"
        "$ofconvert" schema --oneflow "$dir" >"$work/code/$key.py" 2>/dev/null
    done

step "TensorFlow parses the inputs"
tf_python "$here/tf_values.py" "$work/roots.txt" "$work/of" "$work/tf"

step "OneFlow runs the printed code over every record"
oneflow_python "$here/oneflow_read.py" "$work/of" "$work/code" "$work/tf"

step "of2tf: OFRecords written with OneFlow's record_pb2, read back by TensorFlow"
oneflow_python "$here/oneflow_write.py" "$work/from-oneflow"
"$ofconvert" --quiet of2tf "$work/from-oneflow/exact" "$work/back/exact"
"$ofconvert" --quiet of2tf "$work/from-oneflow/lossy" "$work/back/lossy" --lossy
mkdir -p "$work/py"
tf_python -m grpc_tools.protoc -I "$root/proto" --python_out="$work/py" \
    "$root/proto/oneflow/core/record/record.proto"
PYTHONPATH="$work/py/oneflow/core/record" tf_python "$here/check.py" of2tf \
    "$work/from-oneflow/exact" "$work/back/exact"
PYTHONPATH="$work/py/oneflow/core/record" tf_python "$here/check.py" of2tf \
    "$work/from-oneflow/lossy" "$work/back/lossy" --lossy

step "OneFlow interop: all datasets read back as they should"
