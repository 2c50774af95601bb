#!/usr/bin/env bash
# End-to-end benchmark: ofconvert against `cp -r` of the same files, in one session.
#
# Builds the dist (product) and release binaries, writes the deterministic corpora (ofconvert-bench-gen), warms the
# page cache, then times each command several times after one untimed warm-up run, removing
# the output and running `sync` before every run so that no run pays for the last one's
# writeback. Wall time comes from bash's EPOCHREALTIME around the command, peak RSS from GNU
# time's %M. Prints Markdown tables on stdout; progress goes to stderr.
set -euo pipefail
export LC_ALL=C

usage() {
    cat <<'EOF'
Usage: bench/run.sh [OPTIONS]

Times `cp -r`, `cat`, `ofconvert tf2of`, `of2tf`, `count` and `verify` (at each --jobs
value) and the single-threaded wire and typed converters on the benchmark corpora, and
prints Markdown tables: every command (median wall time, MB/s, records/s, ratio to the copy
(verify: to `cat` of the same files), peak RSS, CPU time and CPU ns per record), then the
conversions' targets (ratio to the like-for-like copy at the first and last --jobs value,
CPU ns per record, jobs speed-up). On the png corpus it times `tf2of --no-sync` as is, with
`--images jpeg` and with `--images raw`, and prints a table of images/s and the ratio to the
plain tf2of. On the large corpus, also `tf2of` and `of2tf` from one bucket to another
through a local S3 server (ofconvert-bench-s3) against `rclone copy` of the same objects
through the same server. The header gives the first build's time and the CRC-32C
throughput (ofconvert-bench-crc); the last table says which speed target each figure meets.

Options:
  --dir DIR       where the corpus and the outputs go (default: a temporary directory,
                  removed at the end). A corpus already in DIR with the same seed, scale
                  and corpora is reused.
  --scale F       corpus size factor (default 1: ~200 MB of large records in 16 shards,
                  400,000 small records in 8 shards, 2,000 32x32 RGB PNGs in 4 shards)
  --runs N        timed runs per command (default 5), after one warm-up run
  --jobs LIST     --jobs values to measure, space- or comma-separated (default "1 2")
  --corpus LIST   large,small,png, some of them, or none (with --big)
                  (default large,small,png)
  --big [SIZE]    also convert one big TFRecord file (default 4G; suffixes K, M, G) both
                  ways and report its peak RSS; needs about 3 x SIZE of free disk
  --big-runs N    timed runs per command on the big file (default 3)
  --seed N        corpus seed (default 42)
  --no-s3         leave out the bucket-to-bucket rows (they need rclone: installed with
                  apt-get when missing and running as root)
  --no-build      use the dist and release binaries already built
  --no-build-time leave out the first-build row (a clean `cargo build --release -p
                  ofconvert` into a temporary target directory, timed; about 2 minutes)
  --baseline BIN  also time another ofconvert binary (an earlier commit's release build)
                  on the same tf2of/of2tf commands (bucket to bucket too), each right after
                  this build's run of it, so that a change is compared with what it
                  replaced in one session
  --keep          keep the temporary directory
  -h, --help      this text

Needs bash 5, cargo, rclone (unless --no-s3), GNU time (/usr/bin/time; installed with apt-get when missing and
running as root), coreutils and awk.
EOF
}

die() {
    echo "run.sh: $*" >&2
    exit 2
}

DIR=""
SCALE=1
RUNS=5
JOBS="1 2"
CORPORA="large,small,png"
BIG=""
BIG_RUNS=3
SEED=42
BUILD=1
KEEP=0
BASELINE_BIN=""
S3=1
BUILD_TIME=1

while (($#)); do
    case $1 in
    --dir) DIR=${2:?--dir needs a directory}; shift 2 ;;
    --scale) SCALE=${2:?--scale needs a number}; shift 2 ;;
    --runs) RUNS=${2:?--runs needs a number}; shift 2 ;;
    --jobs) JOBS=${2:?--jobs needs a list}; shift 2 ;;
    --corpus) CORPORA=${2:?--corpus needs a list}; shift 2 ;;
    --big)
        if [[ ${2:-} =~ ^[0-9]+[KMGkmg]?$ ]]; then
            BIG=$2; shift 2
        else
            BIG=4G; shift
        fi
        ;;
    --big-runs) BIG_RUNS=${2:?--big-runs needs a number}; shift 2 ;;
    --seed) SEED=${2:?--seed needs a number}; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --no-s3) S3=0; shift ;;
    --no-build-time) BUILD_TIME=0; shift ;;
    --baseline) BASELINE_BIN=${2:?--baseline needs a binary}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
    esac
done

JOBS=${JOBS//,/ }
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer, not '$RUNS'"
[[ $BIG_RUNS =~ ^[1-9][0-9]*$ ]] || die "--big-runs must be a positive integer, not '$BIG_RUNS'"
[[ $SEED =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer, not '$SEED'"
[[ $SCALE =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] || die "--scale must be a positive number, not '$SCALE'"
for j in $JOBS; do
    [[ $j =~ ^[1-9][0-9]*$ ]] || die "--jobs values must be positive integers, not '$j'"
done
CORPUS_LIST=()
for c in ${CORPORA//,/ }; do
    case $c in
    large | small | png) CORPUS_LIST+=("$c") ;;
    none) ;;
    *) die "unknown corpus '$c' (expected large, small, png or none)" ;;
    esac
done
((${#CORPUS_LIST[@]} > 0 || ${#BIG} > 0)) || die "nothing to measure: no corpus and no --big"

# --- tools ------------------------------------------------------------------------------

((BASH_VERSINFO[0] >= 5)) || die "needs bash 5 or later (for EPOCHREALTIME), this is $BASH_VERSION"
for tool in awk sort cp rm sync find nproc; do
    command -v "$tool" >/dev/null || die "'$tool' is missing"
done
if ! /usr/bin/time -f '%e %M' true >/dev/null 2>&1; then
    if command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
        echo "run.sh: installing GNU time" >&2
        apt-get update -qq >&2 && apt-get install -y -qq time >&2
    fi
    /usr/bin/time -f '%e %M' true >/dev/null 2>&1 ||
        die "GNU time is missing at /usr/bin/time: install the 'time' package (apt-get install time)"
fi

[[ " ${CORPUS_LIST[*]} " == *" large "* ]] || S3=0
if ((S3)) && ! command -v rclone >/dev/null; then
    if command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
        echo "run.sh: installing rclone" >&2
        apt-get update -qq >&2 && apt-get install -y -qq rclone >&2
    fi
    command -v rclone >/dev/null || die "rclone is missing: install it (apt-get install rclone) or pass --no-s3"
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ((BUILD)); then
    command -v cargo >/dev/null || die "cargo is missing"
    # The product is the dist build (what cargo install and the wheel build); the quick
    # release build of the same code is timed beside it, so its cost shows.
    echo "run.sh: building the dist and release binaries" >&2
    (cd "$ROOT" && cargo build --profile dist --quiet -p ofconvert -p ofconvert-bench --bins) >&2
    (cd "$ROOT" && cargo build --release --quiet -p ofconvert) >&2
fi
BUILD_SECONDS=""
if ((BUILD_TIME)); then
    # What a new user waits for: the quick start's build on a fresh clone, dependencies
    # downloaded but none compiled.
    command -v cargo >/dev/null || die "cargo is missing"
    build_target=$(mktemp -d)
    echo "run.sh: timing a clean cargo build --release -p ofconvert" >&2
    build_start=$EPOCHREALTIME
    (cd "$ROOT" && CARGO_TARGET_DIR=$build_target cargo build --release --locked --quiet -p ofconvert) >&2
    BUILD_SECONDS=$(awk -v a="$build_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
    rm -rf "$build_target"
fi
TARGET=${CARGO_TARGET_DIR:-}
if [[ -z $TARGET ]]; then
    TARGET=$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
        grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4) || true
    TARGET=${TARGET:-$ROOT/target}
fi
OFCONVERT=$TARGET/dist/ofconvert
RELEASE_BUILD=$TARGET/release/ofconvert
GEN=$TARGET/dist/ofconvert-bench-gen
CONVERT=$TARGET/dist/ofconvert-bench-convert
S3_SERVER=$TARGET/dist/ofconvert-bench-s3
CRC=$TARGET/dist/ofconvert-bench-crc
for bin in "$OFCONVERT" "$RELEASE_BUILD" "$GEN" "$CONVERT" "$S3_SERVER" "$CRC"; do
    [[ -x $bin ]] || die "$bin is not built (run without --no-build)"
done
[[ -z $BASELINE_BIN || -x $BASELINE_BIN ]] || die "--baseline: $BASELINE_BIN is not an executable"

# --- corpus -----------------------------------------------------------------------------

S3_PID=""
REMOVE_AT_EXIT=()
cleanup() {
    if [[ -n $S3_PID ]]; then
        kill "$S3_PID" 2>/dev/null || true
        wait "$S3_PID" 2>/dev/null || true
    fi
    rm -rf "${REMOVE_AT_EXIT[@]}"
}
trap cleanup EXIT
if [[ -z $DIR ]]; then
    DIR=$(mktemp -d "${TMPDIR:-/tmp}/ofconvert-bench.XXXXXX")
    ((KEEP)) || REMOVE_AT_EXIT=("$DIR")
else
    mkdir -p "$DIR"
    DIR=$(cd "$DIR" && pwd)
    REMOVE_AT_EXIT=("$DIR/out" "$DIR/big-of" "$DIR/s3")
fi
CORPUS_DIR=$DIR/corpus
OUT=$DIR/out
TIME_FILE=$DIR/time.txt
CPU_FILE=$DIR/cpu.txt
LOG_FILE=$DIR/last-command.log
RESULTS=$DIR/results.txt
: >"$RESULTS"

gen_list=$(IFS=,; echo "${CORPUS_LIST[*]}")
if [[ -n $BIG ]]; then
    gen_list=${gen_list:+$gen_list,}big
fi
stamp="seed=$SEED scale=$SCALE corpus=$gen_list big=$BIG"
if [[ -f $CORPUS_DIR/stamp && $(<"$CORPUS_DIR/stamp") == "$stamp" ]]; then
    echo "run.sh: reusing the corpus in $CORPUS_DIR" >&2
else
    rm -f "$CORPUS_DIR/stamp"
    echo "run.sh: generating the corpus ($stamp) in $CORPUS_DIR" >&2
    "$GEN" --seed "$SEED" --scale "$SCALE" --corpus "$gen_list" --big-size "${BIG:-4G}" "$CORPUS_DIR"
    echo "$stamp" >"$CORPUS_DIR/stamp"
fi

# corpus.tsv: corpus, format, directory, files, records, bytes.
declare -A TREE_DIR TREE_FILES TREE_RECORDS TREE_BYTES
while IFS=$'\t' read -r corpus format dir files records bytes; do
    [[ $corpus == \#* || -z $corpus ]] && continue
    TREE_DIR[$corpus/$format]=$CORPUS_DIR/$dir
    TREE_FILES[$corpus/$format]=$files
    TREE_RECORDS[$corpus/$format]=$records
    TREE_BYTES[$corpus/$format]=$bytes
done <"$CORPUS_DIR/corpus.tsv"

echo "run.sh: warming the page cache" >&2
for key in "${!TREE_DIR[@]}"; do
    cat "${TREE_DIR[$key]}"/* >/dev/null
done

# --- measuring --------------------------------------------------------------------------

FAILED=0
# Also removed before each run: the bucket-to-bucket rows' output.
EXTRA_OUT=""
WALL=""
CPU=""
RSS_KB=""

# Runs the command once on a clean output directory; sets WALL (s), CPU (user + system s)
# and RSS_KB.
run_once() {
    rm -rf "$OUT" ${EXTRA_OUT:+"$EXTRA_OUT"}
    sync
    local started=$EPOCHREALTIME
    # CPU time from bash's `time` (milliseconds; GNU time's own start adds about one),
    # as GNU time prints it in 10 ms ticks, too coarse for the small corpus.
    local TIMEFORMAT='%3U %3S'
    if ! { time /usr/bin/time -f '%e %M' -o "$TIME_FILE" "$@" >"$LOG_FILE" 2>&1; } 2>"$CPU_FILE"; then
        echo "run.sh: FAILED: $*" >&2
        tail -n 5 "$LOG_FILE" >&2
        return 1
    fi
    local ended=$EPOCHREALTIME
    WALL=$(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.4f", b - a }')
    RSS_KB=$(awk 'END { print $2 }' "$TIME_FILE")
    CPU=$(awk 'END { printf "%.3f", $1 + $2 }' "$CPU_FILE")
}

# measure CORPUS COMMAND JOBS TREE BASELINE RUNS -- command...
# TREE (corpus/format) gives the bytes and records the command reads; BASELINE names the
# cp row it is compared with. Appends one line to $RESULTS.
measure() {
    local corpus=$1 label=$2 jobs=$3 tree=$4 baseline=$5 runs=$6
    shift 7
    local walls=() cpus=() peak=0 r
    echo -n "run.sh: [$corpus] $label${jobs:+ -j $jobs}:" >&2
    if ! run_once "$@"; then
        echo "$corpus|$label|$jobs|failed||||0|$tree|$baseline" >>"$RESULTS"
        FAILED=1
        return 0
    fi
    for ((r = 1; r <= runs; r++)); do
        if ! run_once "$@"; then
            echo "$corpus|$label|$jobs|failed||||0|$tree|$baseline" >>"$RESULTS"
            FAILED=1
            return 0
        fi
        walls+=("$WALL")
        cpus+=("$CPU")
        if ((RSS_KB > peak)); then
            peak=$RSS_KB
        fi
        echo -n " $WALL" >&2
    done
    local stats cpu
    cpu=$(printf '%s\n' "${cpus[@]}" | sort -g | awk '
        { v[NR] = $1 }
        END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    stats=$(printf '%s\n' "${walls[@]}" | sort -g | awk '
        { v[NR] = $1 }
        END {
            median = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.4f|%.4f|%.4f", median, v[1], v[NR]
        }')
    echo " s" >&2
    echo "$corpus|$label|$jobs|$stats|$cpu|$peak|$tree|$baseline" >>"$RESULTS"
}

# CRC-32C throughput: the project's function and the crc32c crate, 64 KiB and 1 MiB.
echo "run.sh: timing CRC-32C" >&2
CRC_LINES=$("$CRC") || die "the CRC bench failed"

LOAD_BEFORE=$(uptime)

for corpus in "${CORPUS_LIST[@]}"; do
    tf=${TREE_DIR[$corpus/tfrecord]}
    of=${TREE_DIR[$corpus/ofrecord]}
    measure "$corpus" "cp -r tfrecord tree" "" "$corpus/tfrecord" "" "$RUNS" -- cp -r "$tf" "$OUT"
    cp_tf="$corpus|cp -r tfrecord tree"
    if [[ $corpus == png ]]; then
        # What --images costs next to the plain conversion of the same PNGs (one a record).
        for j in $JOBS; do
            for images in "" jpeg raw; do
                measure "$corpus" "ofconvert tf2of --no-sync${images:+ --images $images}" "$j" \
                    "$corpus/tfrecord" "$cp_tf" "$RUNS" -- \
                    "$OFCONVERT" --jobs "$j" --quiet tf2of --no-sync ${images:+--images "$images"} "$tf" "$OUT"
            done
        done
        continue
    fi
    measure "$corpus" "cp -r ofrecord tree" "" "$corpus/ofrecord" "" "$RUNS" -- cp -r "$of" "$OUT"
    cp_of="$corpus|cp -r ofrecord tree"
    # What verify is compared with: reading the same files and nothing else.
    # shellcheck disable=SC2016
    measure "$corpus" "cat tfrecord tree" "" "$corpus/tfrecord" "" "$RUNS" -- \
        sh -c 'cat "$1"/* >/dev/null' sh "$tf"
    # shellcheck disable=SC2016
    measure "$corpus" "cat ofrecord tree" "" "$corpus/ofrecord" "" "$RUNS" -- \
        sh -c 'cat "$1"/* >/dev/null' sh "$of"
    # ofconvert fsyncs each part before renaming it into place; this row shows what that
    # durability costs a plain copy. The single quotes are for the inner shell.
    # shellcheck disable=SC2016
    measure "$corpus" "cp -r tfrecord tree, fsync each file" "" "$corpus/tfrecord" "$cp_tf" "$RUNS" -- \
        sh -c 'cp -r "$1" "$2" && sync -- "$2"/* "$2"' sh "$tf" "$OUT"
    # shellcheck disable=SC2016
    measure "$corpus" "cp -r ofrecord tree, fsync each file" "" "$corpus/ofrecord" "$cp_of" "$RUNS" -- \
        sh -c 'cp -r "$1" "$2" && sync -- "$2"/* "$2"' sh "$of" "$OUT"
    for j in $JOBS; do
        # Like with like: a run that fsyncs every part is compared with the copy that fsyncs
        # every file, a --no-sync run with the plain copy. With --baseline, each row is
        # followed by the same command of the baseline.
        for sync in "" --no-sync; do
            base_tf="$cp_tf, fsync each file" base_of="$cp_of, fsync each file"
            [[ -z $sync ]] || base_tf=$cp_tf base_of=$cp_of
            for bin in "$OFCONVERT" "$RELEASE_BUILD" ${BASELINE_BIN:+"$BASELINE_BIN"}; do
                who=ofconvert
                [[ $bin == "$RELEASE_BUILD" ]] && who=release-build
                [[ $bin == "$BASELINE_BIN" ]] && who=baseline
                measure "$corpus" "$who tf2of${sync:+ $sync}" "$j" "$corpus/tfrecord" "$base_tf" "$RUNS" -- \
                    "$bin" --jobs "$j" --quiet tf2of ${sync:+"$sync"} "$tf" "$OUT"
                measure "$corpus" "$who of2tf${sync:+ $sync}" "$j" "$corpus/ofrecord" "$base_of" "$RUNS" -- \
                    "$bin" --jobs "$j" --quiet of2tf ${sync:+"$sync"} "$of" "$OUT"
            done
        done
        measure "$corpus" "ofconvert count tfrecord" "$j" "$corpus/tfrecord" "$cp_tf" "$RUNS" -- \
            "$OFCONVERT" --jobs "$j" --quiet count "$tf"
        measure "$corpus" "ofconvert count ofrecord" "$j" "$corpus/ofrecord" "$cp_of" "$RUNS" -- \
            "$OFCONVERT" --jobs "$j" --quiet count "$of"
        measure "$corpus" "ofconvert verify tfrecord" "$j" "$corpus/tfrecord" "$corpus|cat tfrecord tree" "$RUNS" -- \
            "$OFCONVERT" --jobs "$j" --quiet verify "$tf"
        measure "$corpus" "ofconvert verify ofrecord" "$j" "$corpus/ofrecord" "$corpus|cat ofrecord tree" "$RUNS" -- \
            "$OFCONVERT" --jobs "$j" --quiet verify "$of"
    done
    for route in wire typed; do
        flag=()
        [[ $route == typed ]] && flag=(--typed)
        measure "$corpus" "bench-convert tf2of, $route path" 1 "$corpus/tfrecord" "$cp_tf" "$RUNS" -- \
            "$CONVERT" "${flag[@]}" tf2of "$tf" "$OUT"
        measure "$corpus" "bench-convert of2tf, $route path" 1 "$corpus/ofrecord" "$cp_of" "$RUNS" -- \
            "$CONVERT" "${flag[@]}" of2tf "$of" "$OUT"
    done
done

if [[ -n $BIG ]]; then
    big=${TREE_DIR[big/tfrecord]}
    big_of=$DIR/big-of
    measure big "cp -r tfrecord tree" "" big/tfrecord "" "$BIG_RUNS" -- cp -r "$big" "$OUT"
    echo "run.sh: [big] converting once to get an OFRecord input" >&2
    rm -rf "$big_of"
    "$OFCONVERT" --quiet tf2of "$big" "$big_of"
    TREE_FILES[big/ofrecord]=$(find "$big_of" -name 'part-*' | wc -l)
    TREE_RECORDS[big/ofrecord]=${TREE_RECORDS[big/tfrecord]}
    TREE_BYTES[big/ofrecord]=$(find "$big_of" -name 'part-*' -printf '%s\n' | awk '{ s += $1 } END { print s }')
    cat "$big_of"/part-* >/dev/null
    measure big "cp -r ofrecord tree" "" big/ofrecord "" "$BIG_RUNS" -- cp -r "$big_of" "$OUT"
    for j in $JOBS; do
        measure big "ofconvert tf2of" "$j" big/tfrecord "big|cp -r tfrecord tree" "$BIG_RUNS" -- \
            "$OFCONVERT" --jobs "$j" --quiet tf2of "$big" "$OUT"
        measure big "ofconvert of2tf" "$j" big/ofrecord "big|cp -r ofrecord tree" "$BIG_RUNS" -- \
            "$OFCONVERT" --jobs "$j" --quiet of2tf "$big_of" "$OUT"
    done
    rm -rf "$big_of"
fi

# Bucket to bucket through one local S3 server (s3s-fs over $DIR/s3): ofconvert tf2of
# against rclone copying the same objects. rclone sees two remotes, so that it downloads and
# uploads every byte as ofconvert does rather than asking the server to copy.
if ((S3)); then
    S3_ROOT=$DIR/s3
    rm -rf "$S3_ROOT"
    mkdir -p "$S3_ROOT/src" "$S3_ROOT/dst"
    mkfifo "$DIR/s3.stdin"
    "$S3_SERVER" "$S3_ROOT" <"$DIR/s3.stdin" >"$DIR/s3.endpoint" 2>"$DIR/s3.log" &
    S3_PID=$!
    exec {S3_STDIN}>"$DIR/s3.stdin"
    rm -f "$DIR/s3.stdin"
    for ((tries = 0; tries < 100; tries++)); do
        [[ -s $DIR/s3.endpoint ]] && break
        sleep 0.1
    done
    S3_ENDPOINT=$(head -n 1 "$DIR/s3.endpoint")
    [[ $S3_ENDPOINT == http://127.0.0.1:* ]] || die "the S3 server did not start: $(cat "$DIR/s3.log")"
    echo "run.sh: S3 server at $S3_ENDPOINT" >&2
    export AWS_ACCESS_KEY_ID=ofconvert-bench AWS_SECRET_ACCESS_KEY=ofconvert-bench-secret
    export AWS_REGION=us-east-1 AWS_ENDPOINT_URL=$S3_ENDPOINT AWS_ALLOW_HTTP=true
    for remote in BENCHSRC BENCHDST; do
        export "RCLONE_CONFIG_${remote}_TYPE=s3" "RCLONE_CONFIG_${remote}_PROVIDER=Other"
        export "RCLONE_CONFIG_${remote}_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID"
        export "RCLONE_CONFIG_${remote}_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY"
        export "RCLONE_CONFIG_${remote}_ENDPOINT=$S3_ENDPOINT" "RCLONE_CONFIG_${remote}_REGION=us-east-1"
    done
    # Uploaded through the server, which stores each object's ETag then; a file copied
    # into its directory would have its MD5 computed again on every HEAD and GET.
    echo "run.sh: uploading the large corpus to s3://src/large and s3://src/large-of" >&2
    env -u AWS_CA_BUNDLE rclone copy --config /dev/null "${TREE_DIR[large/tfrecord]}/" BENCHSRC:src/large/
    env -u AWS_CA_BUNDLE rclone copy --config /dev/null "${TREE_DIR[large/ofrecord]}/" BENCHSRC:src/large-of/
    EXTRA_OUT=$S3_ROOT/dst/out
    # The trailing slashes spare rclone a HEAD of the prefix, which s3s-fs answers with 500
    # (a directory is no object) and rclone retries with backoff. rclone's own transport
    # refuses AWS_CA_BUNDLE (the endpoint is plain http anyway).
    measure large "rclone copy bucket to bucket" "" large/tfrecord "" "$RUNS" -- \
        env -u AWS_CA_BUNDLE rclone copy --config /dev/null BENCHSRC:src/large/ BENCHDST:dst/out/
    measure large "rclone copy bucket to bucket, ofrecord" "" large/ofrecord "" "$RUNS" -- \
        env -u AWS_CA_BUNDLE rclone copy --config /dev/null BENCHSRC:src/large-of/ BENCHDST:dst/out/
    for j in $JOBS; do
        for bin in "$OFCONVERT" ${BASELINE_BIN:+"$BASELINE_BIN"}; do
            who=ofconvert
            [[ $bin == "$BASELINE_BIN" ]] && who=baseline
            measure large "$who tf2of bucket to bucket" "$j" large/tfrecord \
                "large|rclone copy bucket to bucket" "$RUNS" -- \
                "$bin" --jobs "$j" --quiet tf2of s3://src/large s3://dst/out
            measure large "$who of2tf bucket to bucket" "$j" large/ofrecord \
                "large|rclone copy bucket to bucket, ofrecord" "$RUNS" -- \
                "$bin" --jobs "$j" --quiet of2tf s3://src/large-of s3://dst/out
        done
    done
    EXTRA_OUT=""
    exec {S3_STDIN}>&-
fi

LOAD_AFTER=$(uptime)

# --- report -----------------------------------------------------------------------------

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
mem=$(awk '/^MemTotal/ { printf "%.1f GB", $2 * 1024 / 1e9 }' /proc/meminfo 2>/dev/null || true)
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"

echo "### ofconvert end-to-end benchmark"
echo
echo "- machine: ${cpu:-unknown CPU}, $(nproc) cores, ${mem:-? GB} RAM, $(uname -sr)"
echo "- commit $commit, $(date -u '+%Y-%m-%d %H:%M UTC'), seed $SEED, scale $SCALE"
echo "- load before: ${LOAD_BEFORE#*load average: }; after: ${LOAD_AFTER#*load average: }"
for key in $(printf '%s\n' "${!TREE_DIR[@]}" | sort); do
    printf -- '- %s: %s files, %s records, %.1f MB\n' "$key" "${TREE_FILES[$key]}" \
        "${TREE_RECORDS[$key]}" "$(awk -v b="${TREE_BYTES[$key]}" 'BEGIN { print b / 1e6 }')"
done
if [[ -n $BUILD_SECONDS ]]; then
    echo "- first build: a clean \`cargo build --release -p ofconvert\` (dependencies downloaded, none compiled) took $BUILD_SECONDS s"
fi
while read -r size project reference; do
    awk -v size="$size" -v project="$project" -v reference="$reference" 'BEGIN {
        printf "- CRC-32C of %d KiB buffers: %.1f GB/s (the crc32c crate: %.1f GB/s, %.1fx)\n",
            size / 1024, project, reference, project / reference }'
done <<<"$CRC_LINES"
echo "- ofconvert = the dist build (the product); release-build = the quick build of the same code"
if [[ -n $BIG ]]; then
    printf -- '- big/ofrecord (made by tf2of): %s files, %.1f MB\n' "${TREE_FILES[big/ofrecord]}" \
        "$(awk -v b="${TREE_BYTES[big/ofrecord]}" 'BEGIN { print b / 1e6 }')"
fi
echo
echo "| corpus | command | jobs | median wall s | MB/s | records/s | ratio to cp | peak RSS MB | min–max s | CPU s | CPU ns/record |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
declare -A BASELINE_WALL
while IFS='|' read -r corpus label jobs median _ _ _ _ _ _; do
    if [[ ($label == "cp -r "* || $label == "cat "* || $label == "rclone copy"*) && $median != failed ]]; then
        BASELINE_WALL["$corpus|$label"]=$median
    fi
done <"$RESULTS"
while IFS='|' read -r corpus label jobs median min max cpu peak tree baseline; do
    if [[ $median == failed ]]; then
        echo "| $corpus | $label | ${jobs:-–} | failed | | | | | | | |"
        continue
    fi
    base=${BASELINE_WALL[${baseline:-$corpus|$label}]:-}
    awk -v corpus="$corpus" -v label="$label" -v jobs="${jobs:-–}" -v median="$median" \
        -v min="$min" -v max="$max" -v cpu="$cpu" -v peak="$peak" -v bytes="${TREE_BYTES[$tree]}" \
        -v records="${TREE_RECORDS[$tree]}" -v base="$base" 'BEGIN {
            ratio = (base > 0) ? sprintf("%.2f", median / base) : "–"
            printf "| %s | %s | %s | %.3f | %.0f | %.0f | %s | %.1f | %.3f–%.3f | %.3f | %.0f |\n",
                corpus, label, jobs, median, bytes / median / 1e6, records / median, ratio,
                peak * 1024 / 1e6, min, max, cpu, cpu * 1e9 / records
        }'
done <"$RESULTS"
if grep -q '^png|ofconvert tf2of' "$RESULTS"; then
    echo
    echo "| png corpus | jobs | median wall s | images/s | ratio to plain tf2of | peak RSS MB | CPU s |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    awk -F'|' -v images="${TREE_RECORDS[png/tfrecord]}" '
        $1 == "png" && $2 ~ /^ofconvert tf2of/ && $4 != "failed" {
            if ($2 == "ofconvert tf2of --no-sync") plain[$3] = $4
            row[++n] = $0
        }
        END {
            for (i = 1; i <= n; i++) {
                split(row[i], f, "|")
                ratio = (plain[f[3]] > 0) ? sprintf("%.2f", f[4] / plain[f[3]]) : "–"
                printf "| %s | %s | %.3f | %.0f | %s | %.1f | %.2f |\n",
                    f[2], f[3], f[4], images / f[4], ratio, f[8] * 1024 / 1e6, f[7]
            }
        }' "$RESULTS"
fi
echo
# The targets' table: each conversion's ratio to its like-for-like copy, the CPU it spent
# per record, and how much a second job speeds it up.
echo "| corpus | command | baseline | ratio, --jobs ${JOBS%% *} | ratio, --jobs ${JOBS##* } | CPU ns/record, --jobs ${JOBS%% *} | wall --jobs ${JOBS%% *} / --jobs ${JOBS##* } |"
echo "|---|---|---|---:|---:|---:|---:|"
awk -F'|' -v first="${JOBS%% *}" -v last="${JOBS##* }" -v records_list="$(
    for key in "${!TREE_RECORDS[@]}"; do printf '%s=%s\n' "$key" "${TREE_RECORDS[$key]}"; done
)" '
    BEGIN {
        n = split(records_list, pairs, "\n")
        for (i = 1; i <= n; i++) if (split(pairs[i], kv, "=") == 2) records[kv[1]] = kv[2]
    }
    $4 == "failed" { next }
    $2 ~ /^(cp -r |rclone copy)/ { wall[$1 "|" $2] = $4; next }
    $2 ~ /^(ofconvert|release-build|baseline) (tf2of|of2tf)/ {
        key = $1 "|" $2
        # The key of the baseline row, corpus|label, spans fields 10 and 11.
        if (!(key in seen)) { seen[key] = 1; order[++rows] = key; base[key] = $10 "|" $11; tree[key] = $9 }
        median[key "|" $3] = $4
        cpu[key "|" $3] = $7
    }
    END {
        for (r = 1; r <= rows; r++) {
            key = order[r]
            split(key, part, "|")
            b = wall[base[key]]
            sub(/^[^|]*\|/, "", base[key])
            a = median[key "|" first]; z = median[key "|" last]
            printf "| %s | %s | %s | %s | %s | %s | %s |\n", part[1], part[2], base[key],
                (a > 0 && b > 0) ? sprintf("%.2f", a / b) : "–",
                (z > 0 && b > 0) ? sprintf("%.2f", z / b) : "–",
                (records[tree[key]] > 0 && (key "|" first) in cpu) ? sprintf("%.0f", cpu[key "|" first] * 1e9 / records[tree[key]]) : "–",
                (a > 0 && z > 0 && first != last) ? sprintf("%.2f", a / z) : "–"
        }
    }' "$RESULTS"
echo
echo "Median of $RUNS timed runs${BIG:+ (big file: $BIG_RUNS)} after one warm-up run, files in page cache,"
echo "output removed and \`sync\` before each run. MB = 10^6 bytes of input. Ratio = wall time /"
echo "wall time of its like-for-like copy of the same input tree: \`cp -r\` for --no-sync,"
echo "\`cp -r\` + fsync of each file for a run that fsyncs its parts (below 1 is faster). Peak RSS"
echo "from GNU time (%M). CPU s = median user + system time (bash's time, in ms), which a"
echo "loaded machine disturbs less than wall time; CPU ns/record = CPU s / records of input."
echo "bench-convert is single-threaded: wire = the Transcoder, typed = decode into prost"
echo "messages + map + encode, same framing code."
echo "png corpus: one image a record, so images/s = records/s; ratio = wall time / wall time of"
echo "the plain \`tf2of --no-sync\` at the same --jobs."
if ((S3)); then
    echo "Bucket-to-bucket rows go through one S3 server on 127.0.0.1 (ofconvert-bench-s3: s3s-fs"
    echo "over a local directory); their ratio is to \`rclone copy\` of the same objects through it."
fi

# The speed targets, each met or missed, from the rows above. "Default" --jobs is one per
# core; when the --jobs list leaves that out, its last value stands in.
DEFAULT_JOBS=$(nproc)
[[ " $JOBS " == *" $DEFAULT_JOBS "* ]] || DEFAULT_JOBS=${JOBS##* }
echo
echo "| target | measured | |"
echo "|---|---|---|"
awk -F'|' -v build="$BUILD_SECONDS" -v crc="$CRC_LINES" -v default_jobs="$DEFAULT_JOBS" \
    -v records_list="$(for key in "${!TREE_RECORDS[@]}"; do printf '%s=%s\n' "$key" "${TREE_RECORDS[$key]}"; done)" '
    BEGIN {
        n = split(records_list, pairs, "\n")
        for (i = 1; i <= n; i++) if (split(pairs[i], kv, "=") == 2) records[kv[1]] = kv[2]
    }
    $4 != "failed" { wall[$1 "|" $2 "|" $3] = $4; cpu[$1 "|" $2 "|" $3] = $7; tree[$1 "|" $2 "|" $3] = $9 }
    function verdict(ok) { return ok ? "met" : "**missed**" }
    function line(what, measured, ok) { printf "| %s | %s | %s |\n", what, measured, verdict(ok) }
    # CPU ns a record of a row, or -1 when it was not measured.
    function ns(key) { return (key in cpu && records[tree[key]] > 0) ? cpu[key] * 1e9 / records[tree[key]] : -1 }
    # Wall time of a row over that of another, or -1.
    function ratio(key, base) { return (key in wall && base in wall && wall[base] > 0) ? wall[key] / wall[base] : -1 }
    function small(label) {
        value = ns("small|ofconvert " label "|1")
        if (value >= 0) line("small " label ", --jobs 1: <= 90 CPU ns/record", sprintf("%.0f", value), value <= 90)
    }
    function against(what, key, base, bound) {
        value = ratio(key, base)
        if (value >= 0) line(what sprintf(" <= %.1fx", bound), sprintf("%.2fx", value), value <= bound)
    }
    END {
        if (build != "") line("first build (clean `cargo build --release -p ofconvert`) <= 90 s", build " s", build <= 90)
        m = split(crc, lines, "\n")
        for (i = 1; i <= m; i++) {
            if (split(lines[i], f, " ") == 3 && f[3] > 0)
                line(sprintf("CRC-32C of %d KiB buffers >= 3x the crc32c crate", f[1] / 1024),
                    sprintf("%.1fx", f[2] / f[3]), f[2] / f[3] >= 3)
        }
        small("tf2of --no-sync"); small("of2tf --no-sync"); small("tf2of"); small("of2tf")
        small("verify tfrecord"); small("verify ofrecord")
        against("verify --jobs 1 of the large tfrecord tree / cat", "large|ofconvert verify tfrecord|1",
            "large|cat tfrecord tree|", 1.2)
        against("verify --jobs 1 of the large ofrecord tree / cat", "large|ofconvert verify ofrecord|1",
            "large|cat ofrecord tree|", 1.2)
        split("tf2of tfrecord of2tf ofrecord", d, " ")
        for (i = 1; i <= 3; i += 2) {
            against("large " d[i] " --no-sync, --jobs 1 / cp -r", "large|ofconvert " d[i] " --no-sync|1",
                "large|cp -r " d[i + 1] " tree|", 1.2)
            against("large " d[i] " --no-sync, --jobs " default_jobs " / cp -r",
                "large|ofconvert " d[i] " --no-sync|" default_jobs, "large|cp -r " d[i + 1] " tree|", 1.1)
        }
        against("tf2of bucket to bucket, --jobs 1 / rclone", "large|ofconvert tf2of bucket to bucket|1",
            "large|rclone copy bucket to bucket|", 1.0)
        against("tf2of bucket to bucket, --jobs " default_jobs " / rclone",
            "large|ofconvert tf2of bucket to bucket|" default_jobs, "large|rclone copy bucket to bucket|", 1.0)
        against("of2tf bucket to bucket, --jobs 1 / rclone", "large|ofconvert of2tf bucket to bucket|1",
            "large|rclone copy bucket to bucket, ofrecord|", 1.0)
        against("of2tf bucket to bucket, --jobs " default_jobs " / rclone",
            "large|ofconvert of2tf bucket to bucket|" default_jobs, "large|rclone copy bucket to bucket, ofrecord|", 1.0)
    }' "$RESULTS"
exit "$FAILED"
