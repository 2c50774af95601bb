#!/usr/bin/env bash
# CI for the Python package, called by .ci/run:
#
#   bash crates/python/ci.sh
#
# Installs the package the way the README says (`pip install ./crates/python`: pip builds the
# wheel with maturin) into a fresh virtualenv, checks that the wheel is the abi3 one and that
# the `ofconvert` command is on its PATH, and runs the pytest suite. TensorFlow lives in a
# virtualenv of its own (set OFCONVERT_INTEROP_VENV to one that has tensorflow-cpu to skip
# installing it; pip's cache makes a reinstall quick). The benchmark script then runs once on
# a tiny input, to show that it works, with the `tfrecord` package in a third virtualenv.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step() { printf '\n==> %s\n' "$*"; }

step "python: pip install ./crates/python in a fresh virtualenv"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --upgrade pip
"$work/venv/bin/pip" install --quiet "$here" pytest
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
        "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$here/tests"
)

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
