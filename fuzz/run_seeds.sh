#!/usr/bin/env bash
# Runs every fuzz target once over each input of its seed corpus (fuzz/seed.sh's, from
# testdata/), on a stable toolchain: the targets are linked with libFuzzer but built without
# coverage instrumentation (that needs nightly: `cargo fuzz run`, fuzz/README.md), so nothing
# is mutated. What it shows: the targets' own checks (readers against the reference parsers,
# the wire path against the typed one, printers read back) hold on every seed, and no seed
# panics, takes more than 512 MB or runs more than 10 s. (`-malloc_limit_mb`, the check on a
# single allocation, needs the instrumented build: libFuzzer sees allocations through the
# sanitizers' hooks.)
# CI runs it; exits non-zero on the first failure.
#
#   bash fuzz/run_seeds.sh [TARGET...]      (default: every target)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target_dir="${CARGO_TARGET_DIR:-$here/target}/seeds"

if (($#)); then
    targets=("$@")
else
    targets=()
    for source in "$here"/fuzz_targets/*.rs; do
        targets+=("$(basename "$source" .rs)")
    done
fi

"$here/seed.sh"
# Unoptimised: the seeds are small, and the build is the slow part.
cargo build --manifest-path "$here/Cargo.toml" --target-dir "$target_dir" --bins --locked --quiet
for name in "${targets[@]}"; do
    corpus="$here/corpus/$name"
    seeds=$(find "$corpus" -type f | wc -l)
    [ "$seeds" -gt 0 ] || { echo "run_seeds.sh: $name has no seed in $corpus" >&2; exit 1; }
    # -runs=0: run the corpus once and stop. A failing seed is copied beside the log.
    # -timeout: a seed that runs longer fails as a crash does, so that work without bound (a
    # hostile file's, which memory limits do not see) is caught. The slowest seed takes 50 ms
    # in this unoptimised build: 10 s leaves room for a loaded machine, and is still far
    # below what such work costs (minutes), or libFuzzer's default of 20 minutes.
    if ! "$target_dir/debug/$name" -runs=0 -rss_limit_mb=512 -timeout=10 \
        -artifact_prefix="$target_dir/$name-" "$corpus" >"$target_dir/$name.log" 2>&1; then
        tail -n 40 "$target_dir/$name.log" >&2
        echo "run_seeds.sh: $name failed on a seed (whole log: $target_dir/$name.log)" >&2
        exit 1
    fi
    echo "$name: $seeds seeds, none failed"
done
