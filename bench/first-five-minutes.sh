#!/usr/bin/env bash
# A newcomer's first five minutes: from a fresh clone, with the dependencies already
# downloaded, the README's quick start command, then its test command, then
# `pip install ./crates/python` into a fresh virtualenv. Prints a Markdown table of each
# step's wall and CPU seconds, the size of target/ after it and the load average before it.
set -euo pipefail
export LC_ALL=C

usage() {
    cat <<'EOF'
Usage: bench/first-five-minutes.sh [OPTIONS] [COMMIT]

Clones the repository this script sits in (at COMMIT, default HEAD) into a temporary
directory, runs `cargo fetch --locked` (not timed), then times, in that clone:
  1. the first command of the README's quick start (`cargo run ...`),
  2. its second command (`cargo test ...`),
  3. `pip install ./crates/python` in a fresh virtualenv (pip itself upgraded first, not
     timed),
each as the clone's own README gives them, and prints one table: wall seconds, CPU seconds
(user + system, children included), the size of target/ after the step and the 1-minute
load average before it. A failing step is reported in the table and the next runs.

Options:
  --baseline COMMIT  also time COMMIT (e.g. main) in a clone of its own, step by step
                     interleaved with COMMIT (baseline first), so that both see the same
                     machine
  --timings DIR      pass --timings to the two cargo commands and copy their HTML reports
                     (cargo-timings/) into DIR
  --no-python        leave out the pip install
  --keep             keep the temporary directory (its path goes to stderr)
  -h, --help         this text

Needs git, cargo, python3 with venv, GNU time (/usr/bin/time) and du. pip's and cargo's
download caches are used as they are: the figures are build times, not download times.
CARGO_TARGET_DIR is unset for the steps: each clone builds in its own target/.
EOF
}

die() {
    echo "first-five-minutes.sh: $*" >&2
    exit 2
}

BASELINE=""
TIMINGS=""
PYTHON=1
KEEP=0
COMMIT=HEAD
while (($#)); do
    case $1 in
    --baseline) BASELINE=${2:?--baseline needs a commit}; shift 2 ;;
    --timings) TIMINGS=${2:?--timings needs a directory}; shift 2 ;;
    --no-python) PYTHON=0; shift ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) die "unknown option $1 (--help lists them)" ;;
    *) COMMIT=$1; shift ;;
    esac
done

[ -x /usr/bin/time ] || die "GNU time (/usr/bin/time) is missing"
command -v cargo >/dev/null || die "cargo is missing"
ROOT=$(cd "$(dirname "$0")/.." && git rev-parse --show-toplevel)
resolve() { git -C "$ROOT" rev-parse --verify --quiet "$1^{commit}" || die "no commit $1"; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/first-five-minutes.XXXXXX")
if ((KEEP)); then
    echo "first-five-minutes.sh: keeping $WORK" >&2
else
    trap 'rm -rf "$WORK"' EXIT
fi
[ -z "$TIMINGS" ] || mkdir -p "$TIMINGS"

# label -> commit; the baseline goes first in every step.
labels=()
declare -A sha
if [ -n "$BASELINE" ]; then
    labels+=(baseline)
    sha[baseline]=$(resolve "$BASELINE")
fi
labels+=(this)
sha[this]=$(resolve "$COMMIT")

# The README's quick start block: its `cargo run` and `cargo test` lines.
readme_command() { # clone kind(run|test)
    awk -v kind="$2" '
        /^## Quick start/ { in_section = 1; next }
        in_section && /^## / { exit }
        in_section && /^```/ { in_block = !in_block; next }
        in_block && $1 == "cargo" && $2 == kind { print; exit }
    ' "$1/README.md"
}

for label in "${labels[@]}"; do
    clone="$WORK/$label"
    echo "first-five-minutes.sh: cloning ${sha[$label]} ($label) and fetching its dependencies" >&2
    git clone --quiet --no-checkout "$ROOT" "$clone"
    git -C "$clone" checkout --quiet --detach "${sha[$label]}"
    (cd "$clone" && cargo fetch --locked --quiet)
    for kind in run test; do
        [ -n "$(readme_command "$clone" "$kind")" ] || die "no \`cargo $kind\` line in the quick start of $label's README.md"
    done
done

rows=()
steps=0
# step label name command...: times the command in the clone, appends a row.
step() {
    local label=$1 name=$2 clone="$WORK/$1" load status=0 log
    shift 2
    steps=$((steps + 1))
    log="$WORK/step-$steps-$label.log"
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "first-five-minutes.sh: $label: $name (load $load)" >&2
    (cd "$clone" && env -u CARGO_TARGET_DIR /usr/bin/time -f '%e %U %S' -o "$WORK/$label.time" \
        "$@" >"$log" 2>&1) || status=$?
    local wall cpu size
    read -r wall user sys < <(tail -n 1 "$WORK/$label.time")
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", u + s }')
    size=$(du -sb "$clone/target" 2>/dev/null | awk '{ printf "%.2f GB", $1 / 1e9 }')
    local result=ok
    if ((status != 0)); then
        result="failed ($status)"
        tail -n 20 "$log" | sed "s/^/  $label | /" >&2
    fi
    rows+=("| $label (${sha[$label]:0:7}) | $name | $(printf '%.0f' "$wall") | $cpu | ${size:-none} | $load | $result |")
}

with_timings() { # a README cargo line, with --timings after its subcommand when asked
    if [ -n "$TIMINGS" ]; then
        sed 's/^cargo \(run\|test\) /cargo \1 --timings /' <<<"$1"
    else
        printf '%s\n' "$1"
    fi
}

for kind in run test; do
    for label in "${labels[@]}"; do
        cmd=$(with_timings "$(readme_command "$WORK/$label" "$kind")")
        step "$label" "$cmd" bash -c "$cmd"
        if [ -n "$TIMINGS" ]; then
            for report in "$WORK/$label"/target/cargo-timings/cargo-timing-*.html; do
                [ -e "$report" ] && cp "$report" "$TIMINGS/$label-$kind-$(basename "$report")"
            done
            rm -rf "$WORK/$label/target/cargo-timings"
        fi
    done
done

if ((PYTHON)); then
    for label in "${labels[@]}"; do
        python3 -m venv "$WORK/$label/.venv"
        "$WORK/$label/.venv/bin/pip" install --quiet --upgrade pip
        step "$label" "pip install ./crates/python" "$WORK/$label/.venv/bin/pip" install ./crates/python
    done
fi

echo "One run on $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'); dependencies fetched, none compiled:"
echo
echo "| commit | step | wall s | CPU s | target/ after | load before | result |"
echo "| --- | --- | ---: | ---: | ---: | ---: | --- |"
printf '%s\n' "${rows[@]}"
