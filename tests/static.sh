#!/usr/bin/env bash
# The statically linked Linux binary, built for musl as the README says, runs with no
# shared library at all: it has no program interpreter and needs no library (readelf), and
# it converts, verifies and converts back the sample data inside an otherwise empty root
# directory (chroot), where there is no library to load.
#
#   bash tests/static.sh
#
# Adds the x86_64-unknown-linux-musl target with rustup if it is missing. ring's C and
# assembly are compiled with the machine's gcc (they call no libc), so no musl-gcc is needed.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step() { printf '\n==> %s   [%s]\n' "$*" "$(date -u +%T)"; }
die() { printf 'static.sh: %s\n' "$*" >&2; exit 1; }

target=x86_64-unknown-linux-musl
step "build for $target"
if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi
# In the unoptimised link-check profile (Cargo.toml): the same linking as the README's `dist`
# build, in 2 minutes instead of 5 (OFCONVERT_STATIC_PROFILE=dist builds the README's).
profile="${OFCONVERT_STATIC_PROFILE:-link-check}"
CC_x86_64_unknown_linux_musl="${CC_x86_64_unknown_linux_musl:-gcc}" \
    cargo build --profile "$profile" --locked --quiet --target "$target" -p ofconvert \
    --manifest-path "$root/Cargo.toml"
binary="${CARGO_TARGET_DIR:-$root/target}/$target/$profile/ofconvert"

step "no program interpreter, no shared library needed"
if readelf --program-headers "$binary" | grep -q "INTERP"; then
    die "$binary asks for a program interpreter: it is linked dynamically"
fi
if readelf --dynamic "$binary" | grep -q "(NEEDED)"; then
    readelf --dynamic "$binary" | grep "(NEEDED)" >&2
    die "$binary needs shared libraries"
fi
echo "$(basename "$binary"): statically linked"

step "it runs in an empty root: tf2of, verify, of2tf"
jail="$work/root"
mkdir -p "$jail/data"
cp "$binary" "$jail/ofconvert"
cp -r "$root/testdata/datasets/tutorial" "$jail/data/tutorial"
if [ "$(id -u)" = 0 ]; then
    in_jail() { chroot "$jail" /ofconvert "$@"; }
else
    in_jail() { unshare --user --map-root-user chroot "$jail" /ofconvert "$@"; }
fi
in_jail --version
in_jail tf2of /data/tutorial /of --no-sync -q
in_jail verify /of -q
in_jail of2tf /of /back --no-sync -q
cmp "$root/testdata/datasets/tutorial/tutorial.tfrecord" "$jail/back/tutorial.tfrecord" \
    || die "the round trip inside the empty root changed the bytes"
echo "static binary: ok"
