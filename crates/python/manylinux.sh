#!/usr/bin/env bash
# The release's wheel, linked as a release links it (docs/development.md: maturin linking with
# zig against glibc 2.17 for the manylinux2014 tag), called by .ci/run:
#
#   bash crates/python/manylinux.sh [TARGET]
#
# TARGET is a Rust target triple, the machine's own by default; for another
# (aarch64-unknown-linux-gnu on an x86-64 machine, after `rustup target add` of it) the wheel
# is built, linked and its tag checked; it is imported and read with too when
# OFCONVERT_FOREIGN_ROOT names a root file system of that machine holding python3 (a Debian
# one: `debootstrap --foreign --arch=arm64 --variant=minbase --include=python3-minimal,python3.11
# bookworm ROOT http://deb.debian.org/debian`, then each package in
# ROOT/var/cache/apt/archives unpacked with `dpkg -x`; docs/development.md) and
# `qemu-ARCH-static` (Debian's qemu-user-static) runs its programs.
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
    foreign="${OFCONVERT_FOREIGN_ROOT:-}"
    if [ -z "$foreign" ]; then
        echo "a wheel for $arch: built and tagged, not imported on $(uname -m) (no OFCONVERT_FOREIGN_ROOT)"
        exit 0
    fi
    qemu="qemu-$arch-static"
    command -v "$qemu" >/dev/null || die "$qemu is not installed (apt-get install qemu-user-static)"
    run_foreign() { "$qemu" -L "$foreign" "$foreign/usr/bin/python3" "$@"; }
    version="$(run_foreign -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
        || die "$foreign/usr/bin/python3 does not run under $qemu"
    # numpy for that machine and that Python, beside the wheel.
    "$work/venv/bin/pip" install --quiet --no-deps --only-binary=:all: \
        --platform "manylinux2014_$arch" --python-version "$version" --implementation cp \
        --target "$work/foreign-site" "numpy<2" "$zig_wheel"
    PYTHONPATH="$work/foreign-site" run_foreign - "$root/testdata/golden/tutorial.tfrecord" <<'PY'
import platform, sys, ofconvert
records = list(ofconvert.read(sys.argv[1]))
# The records TFRecord's framing holds (a length, its CRC, the data, its CRC), counted apart.
data, at, framed = open(sys.argv[1], "rb").read(), 0, 0
while at < len(data):
    at += 8 + 4 + int.from_bytes(data[at:at + 8], "little") + 4
    framed += 1
assert len(records) == framed > 0, (len(records), framed)
print(f"the manylinux2014 wheel imports and reads {len(records)} records on {platform.machine()} "
      f"(Python {platform.python_version()}, emulated)")
PY
    exit 0
fi
"$work/venv/bin/pip" install --quiet --no-deps --target "$work/zig-site" "$zig_wheel"
PYTHONPATH="$work/zig-site" "$work/venv/bin/python" - "$root/testdata/golden/tutorial.tfrecord" <<'PY'
import sys, ofconvert
n = sum(1 for _ in ofconvert.read(sys.argv[1]))
assert n > 0, "the zig-linked wheel read no record"
print("the manylinux2014 wheel imports and reads", n, "records")
PY
