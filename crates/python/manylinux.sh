#!/usr/bin/env bash
# The release's wheel, linked as a release links it (docs/development.md: maturin linking with
# zig against glibc 2.17 for the manylinux2014 tag), called by .ci/run:
#
#   bash crates/python/manylinux.sh [TARGET]
#
# TARGET is a Rust target triple, the machine's own by default; for another
# (aarch64-unknown-linux-gnu on an x86-64 machine, after `rustup target add` of it) the wheel
# is built, linked and its tag checked, but not imported.
#
# Built in the unoptimised link-check profile (Cargo.toml): the tag depends on the symbols the
# program links, not on its optimisation. auditwheel checks that the tag holds (no newer glibc
# symbol, no shared library from outside), and Python imports the wheel and reads a file with
# it. Needs nothing built before it: CI runs it in the background (with a target directory of
# its own) beside the steps that mostly wait on Python.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step() { printf '\n==> %s   [%s]\n' "$*" "$(date -u +%T)"; }

die() { printf 'manylinux.sh: %s\n' "$*" >&2; exit 1; }

target="${1:-}"
step "python: the release's manylinux2014 wheel (zig, glibc 2.17) for ${target:-this machine}: its tag, and it imports"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --upgrade pip
"$work/venv/bin/pip" install --quiet "maturin>=1.5,<2" ziglang auditwheel numpy
(
    cd "$here"
    PATH="$work/venv/bin:$PATH" maturin build --locked --profile link-check --zig \
        --compatibility manylinux2014 ${target:+--target "$target"} --out "$work/zig"
)
zig_wheels=("$work"/zig/ofconvert-*.whl)
[ "${#zig_wheels[@]}" = 1 ] || die "expected one wheel in $work/zig, found: ${zig_wheels[*]}"
zig_wheel="${zig_wheels[0]}"
case "$(basename "$zig_wheel")" in
*manylinux2014_*) ;;
*) die "the release wheel is not tagged manylinux2014: $(basename "$zig_wheel")" ;;
esac
"$work/venv/bin/auditwheel" show "$zig_wheel" | tee "$work/auditwheel.txt"
# auditwheel wraps its sentences to the terminal's width: read them as one line.
verdict="$(tr -s ' \n' '  ' < "$work/auditwheel.txt")"
arch="${target%%-*}"
grep -Eq "consistent with the following platform tag: \"manylinux_2_17_${arch:-$(uname -m)}\"" <<<"$verdict" \
    || die "auditwheel finds the wheel needs a newer glibc than manylinux2014 (2.17) gives, or another machine"
if grep -q 'external shared libraries are required' <<<"$verdict"; then
    die "the wheel needs shared libraries from outside manylinux"
fi
if [ -n "$arch" ] && [ "$arch" != "$(uname -m)" ]; then
    echo "a wheel for $arch: built and tagged, not imported on $(uname -m)"
    exit 0
fi
"$work/venv/bin/pip" install --quiet --no-deps --target "$work/zig-site" "$zig_wheel"
PYTHONPATH="$work/zig-site" "$work/venv/bin/python" - "$root/testdata/golden/tutorial.tfrecord" <<'PY'
import sys, ofconvert
n = sum(1 for _ in ofconvert.read(sys.argv[1]))
assert n > 0, "the zig-linked wheel read no record"
print("the manylinux2014 wheel imports and reads", n, "records")
PY
