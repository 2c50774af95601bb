#!/usr/bin/env bash
# CI for the Python package, called by .ci/run:
#
#   bash crates/python/ci.sh
#
# Builds the wheel as `pip install ./crates/python` does (pip runs maturin), checks with
# auditwheel that it is a manylinux wheel (no shared library from outside), installs it with
# its Ray and Spark extras into a fresh virtualenv, checks that the extension is the abi3 one
# and that the `ofconvert` command is on its PATH, and runs the pytest suite: Ray on a local
# cluster, Spark on local[2,2] (Java 17 on the machine) and moto's S3 server included. Then
# the command line's own integration tests run against the wheel's `ofconvert` command, so
# that the two cannot drift. TensorFlow lives in a virtualenv of its own (set
# OFCONVERT_INTEROP_VENV to one that has tensorflow-cpu to skip installing it; pip's cache
# makes a reinstall quick). The benchmark script then runs once on a tiny input, to show
# that it works, with the `tfrecord` package in a third virtualenv.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step() { printf '\n==> %s\n' "$*"; }

die() { printf 'ci.sh: %s\n' "$*" >&2; exit 1; }

step "python: the wheel pip builds from ./crates/python is a manylinux one"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --upgrade pip
"$work/venv/bin/pip" wheel --quiet --no-deps --wheel-dir "$work/dist" "$here"
wheels=("$work"/dist/ofconvert-*.whl)
[ "${#wheels[@]}" = 1 ] || die "expected one wheel in $work/dist, found: ${wheels[*]}"
wheel="${wheels[0]}"
"$work/venv/bin/pip" install --quiet auditwheel
"$work/venv/bin/auditwheel" show "$wheel" | tee "$work/auditwheel.txt"
# maturin tags a wheel pip builds linux_x86_64; what matters is that it needs nothing a
# manylinux system lacks (`auditwheel repair` gives it the tag for a release: README).
grep -q 'consistent with the following platform tag: "manylinux' "$work/auditwheel.txt" \
    || die "auditwheel finds the wheel needs more than manylinux allows"
if grep -q 'external shared libraries are required' "$work/auditwheel.txt"; then
    die "the wheel needs shared libraries from outside manylinux"
fi

step "python: the wheel with its Ray and Spark extras in a fresh virtualenv"
"$work/venv/bin/pip" install --quiet "$wheel[ray,spark]" pytest "moto[server]" boto3
"$work/venv/bin/python" - <<'PY'
import pathlib, ofconvert, ofconvert._native as native
name = pathlib.Path(native.__file__).name
assert ".abi3." in name, f"not an abi3 extension: {name}"
print("ofconvert", ofconvert.__version__, name)
PY
PATH="$work/venv/bin:$PATH" ofconvert --version

if [ -n "${OFCONVERT_INTEROP_VENV:-}" ]; then
    tf_venv="$OFCONVERT_INTEROP_VENV"
else
    step "python: virtualenv with tensorflow-cpu"
    python3 -m venv "$work/tf"
    "$work/tf/bin/pip" install --quiet --upgrade pip
    "$work/tf/bin/pip" install --quiet tensorflow-cpu
    tf_venv="$work/tf"
fi

step "python: pytest"
(
    cd "$work"
    OFCONVERT_TF_PYTHON="$tf_venv/bin/python" OFCONVERT_REQUIRE_TF=1 \
        OFCONVERT_REQUIRE_ENGINES=1 \
        "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$here/tests"
)

step "python: the command line's integration tests against the wheel's ofconvert command"
# The parts of the suite that exercise the command line itself (flags, output, exit codes,
# signals, progress, sharding); the engine's behaviour under faults and stores is the
# binary's, already tested.
OFCONVERT_TEST_BINARY="$work/venv/bin/ofconvert" \
    cargo test --locked --quiet --manifest-path "$root/Cargo.toml" -p ofconvert --test integration \
    -- usage:: convert:: inspect:: resume:: shard:: images:: tfds:: faults::killed

step "python: the benchmark script runs (a tiny input, not a measurement)"
# The tfrecord package cannot share a process with TensorFlow: a virtualenv of its own.
python3 -m venv "$work/tfrecord"
"$work/tfrecord/bin/pip" install --quiet tfrecord
TF_CPP_MIN_LOG_LEVEL=3 "$work/venv/bin/python" "$here/bench.py" --runs 1 \
    --tf-python "$tf_venv/bin/python" --tfrecord-python "$work/tfrecord/bin/python" \
    --files "$root/testdata/golden/tutorial.tfrecord" | tee "$work/bench.md"
if grep -q "not installed" "$work/bench.md"; then
    echo "ci.sh: a reader of the benchmark is missing" >&2
    exit 1
fi
