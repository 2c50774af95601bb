"""The command line of bench/run."""

from __future__ import annotations

import argparse
import re
from typing import List

DESCRIPTION = """\
Times ofconvert against plain copies and reads of the same files, in one run, and prints
Markdown tables with every row's ratio to its baseline measured in the same run:
tf2of and of2tf (synced against `cp -r` + an fsync of each file, --no-sync against `cp -r`),
count and verify against `cat`, ArrayRecord (of2tf --to array_record, and count, verify and
tf2of of ArrayRecord files), the png corpus with --images, the single-threaded wire and typed
converters, bucket to bucket against `rclone copy` through a local S3 server, at each --jobs
value; then the speed targets, each met or missed. The targets are judged on the release
build (what `cargo run --release` compiles); the dist build's conversions are timed beside it.
With --against REV (or --baseline BIN), another build runs each command right after this one,
and a table puts the two side by side. Tables go to the standard output, progress to the
standard error. Exits 1 when a command of this build or a copy it is compared with fails (a
missed target is no failure), 2 on a usage error."""

QUICK = """\
--quick: a check that the harness works, not a measurement: scale 0.02, one run, no bucket
rows unless --s3, no first-build row, no dist build (it compiles nothing that
`cargo test --workspace --release` did not). About a minute."""


def parse(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/run", description=DESCRIPTION, epilog=QUICK,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--dir", help="where the corpus and the outputs go (default: a temporary directory, removed at the "
        "end); a corpus already there with the same seed, scale and corpora is reused")
    add("--scale", help="corpus size factor (default 1: ~200 MB of large records in 16 shards, 400,000 small "
        "records in 8 shards, 2,000 32x32 PNGs in 4 shards)")
    add("--runs", type=int, help="timed runs per command, after one untimed run (default 5)")
    add("--jobs", default="1 2", help="--jobs values to measure, space- or comma-separated (default \"1 2\")")
    add("--corpus", default="large,small,png",
        help="large,small,png, some of them, or none (with --big) (default large,small,png)")
    add("--big", nargs="?", const="4G", default="", metavar="SIZE",
        help="also convert one big TFRecord file (default 4G; suffixes K, M, G) both ways: peak RSS; needs "
        "about 3 x SIZE of free disk")
    add("--big-runs", type=int, default=3, help="timed runs per command on the big file (default 3)")
    add("--seed", type=int, default=42, help="corpus seed (default 42)")
    s3 = parser.add_mutually_exclusive_group()
    s3.add_argument("--no-s3", dest="s3", action="store_false", default=None,
                    help="leave out the bucket-to-bucket rows (they need rclone: installed with apt-get when "
                    "missing and running as root)")
    s3.add_argument("--s3", dest="s3", action="store_true", help="the bucket-to-bucket rows, with --quick too")
    add("--no-build", dest="build", action="store_false",
        help="time the binaries already built in the target directory")
    add("--no-build-time", dest="build_time", action="store_false", default=None,
        help="leave out the first-build row (a clean `cargo build --release -p ofconvert` into a temporary "
        "target directory, timed: minutes)")
    add("--no-dist", dest="dist", action="store_false", default=None,
        help="leave out the dist build (its rows and its build, several minutes of fat LTO)")
    other = parser.add_mutually_exclusive_group()
    other.add_argument("--against", metavar="REV",
                       help="build commit REV (a worktree in a temporary directory, its target directory kept "
                       "in TARGET/bench-against/SHA/ for the next run) in this run's profiles and time it right "
                       "after this build on every ofconvert command; prints the two side by side")
    other.add_argument("--baseline", metavar="BIN",
                       help="time another ofconvert binary right after this build on every ofconvert command")
    add("--python", metavar="PY",
        help="also run the Python benches in their quick forms with PY, a Python that imports ofconvert: "
        "bench.py (readers), bench_shuffle.py, and with rclone bench_bucket.py and bench_ranks.py --quick")
    add("--quick", action="store_true", help="see below")
    add("--keep", action="store_true", help="keep the temporary directory")
    options = parser.parse_args(argv)

    quick = options.quick
    if options.scale is None:
        options.scale = "0.02" if quick else "1"
    if options.runs is None:
        options.runs = 1 if quick else 5
    for name, unless_quick in (("s3", True), ("build_time", True), ("dist", True)):
        if getattr(options, name) is None:
            setattr(options, name, not quick and unless_quick)

    if not re.fullmatch(r"[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?", options.scale) or float(options.scale) <= 0:
        parser.error(f"--scale must be a positive number, not {options.scale!r}")
    if options.runs < 1 or options.big_runs < 1:
        parser.error("--runs and --big-runs must be positive")
    if options.seed < 0:
        parser.error("--seed must not be negative")
    if options.big and not re.fullmatch(r"[0-9]+[KMGkmg]?", options.big):
        parser.error(f"--big takes a size like 512M or 4G, not {options.big!r}")
    try:
        options.jobs = [int(j) for j in options.jobs.replace(",", " ").split()]
    except ValueError:
        parser.error(f"--jobs values must be positive integers, not {options.jobs!r}")
    if not options.jobs or min(options.jobs) < 1:
        parser.error("--jobs values must be positive integers")
    options.corpora = []
    for corpus in options.corpus.replace(",", " ").split():
        if corpus not in ("large", "small", "png", "none"):
            parser.error(f"unknown corpus {corpus!r} (expected large, small, png or none)")
        if corpus != "none" and corpus not in options.corpora:
            options.corpora.append(corpus)
    if not options.corpora and not options.big:
        parser.error("nothing to measure: no corpus and no --big")
    if "large" not in options.corpora:
        options.s3 = False
    return options
