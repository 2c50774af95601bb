"""The report: Markdown on the standard output. Every row, each with its ratio to its baseline;
the png corpus's --images rows; each conversion across the --jobs values; this build beside
the build compared with; the speed targets, met or missed; the Python benches' own tables."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from builds import Comparison
from corpus import Tree
from measure import Key, Result
from pybench import Section

THIS = ("release", "dist")
"""This tree's builds, as the rows name them."""

JUDGED = "release"
"""The build the targets are judged on: what `cargo run --release` in the quick start makes."""


@dataclass
class Context:
    root: str
    options: argparse.Namespace
    trees: Dict[str, Tree]
    results: List[Result]
    comparison: Optional[Comparison]
    crc: str
    first_build: Optional[float]
    load_before: Tuple[float, float, float]
    load_after: Tuple[float, float, float]
    python: List[Section]


class Rows:
    """The results by key, and what each row is compared with."""

    def __init__(self, results: List[Result], trees: Dict[str, Tree]) -> None:
        self.results = results
        self.by_key = {r.key: r for r in results}
        self.trees = trees

    def get(self, corpus: str, command: str, jobs: Optional[int] = None, build: str = "") -> Optional[Result]:
        result = self.by_key.get(Key(corpus, command, jobs, build))
        return result if result is not None and result.measured else None

    def ratio(self, result: Optional[Result]) -> Optional[float]:
        """Wall time over that of the row's baseline; a baseline row's is 1."""
        if result is None or not result.measured:
            return None
        base = self.by_key.get(result.baseline) if result.baseline else result
        if base is None or not base.measured or base.median <= 0:
            return None
        return result.median / base.median

    def ns_per_record(self, result: Optional[Result]) -> Optional[float]:
        if result is None or not result.measured:
            return None
        records = self.trees[result.tree].records
        return result.cpu * 1e9 / records if records else None


def print_report(ctx: Context) -> None:
    rows = Rows(ctx.results, ctx.trees)
    header(ctx)
    every_row(ctx, rows)
    png(ctx, rows)
    across_jobs(ctx, rows)
    if ctx.comparison:
        side_by_side(ctx, rows)
    notes(ctx)
    targets(ctx, rows)
    for section in ctx.python:
        print()
        print(f"### {section.title}{'' if section.ok else ' (FAILED)'}")
        print()
        print(section.output.rstrip() or "(no output)")


def header(ctx: Context) -> None:
    options = ctx.options
    commit = git(ctx.root, "rev-parse", "--short", "HEAD") or "unknown"
    if subprocess.run(["git", "-C", ctx.root, "diff", "--quiet", "HEAD"], capture_output=True).returncode != 0:
        commit += " (with uncommitted changes)"
    print("### ofconvert end-to-end benchmark")
    print()
    print(f"- machine: {cpu_model()}, {os.cpu_count()} cores, {memory()} RAM, {platform.system()} {platform.release()}")
    print(f"- commit {commit}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, seed {options.seed}, "
          f"scale {options.scale}{', --quick' if options.quick else ''}")
    print(f"- load before: {load(ctx.load_before)}; after: {load(ctx.load_after)}")
    for key in sorted(ctx.trees):
        tree = ctx.trees[key]
        print(f"- {key}: {tree.files} files, {tree.records} records, {tree.bytes / 1e6:.1f} MB")
    if ctx.first_build is not None:
        print(f"- first build: a clean `cargo build --release -p ofconvert` (dependencies downloaded, none "
              f"compiled) took {ctx.first_build:.0f} s")
    for line in ctx.crc.splitlines():
        size, project, reference = (float(f) for f in line.split())
        print(f"- CRC-32C of {size / 1024:.0f} KiB buffers: {project:.1f} GB/s (the crc32c crate: "
              f"{reference:.1f} GB/s, {project / reference:.1f}x)")
    profiles = "release = the quick build, what `cargo run --release` compiles (the targets are judged on it)"
    if options.dist:
        profiles += "; dist = the product build (one code unit, fat LTO), its conversions timed beside"
    print(f"- builds: {profiles}")
    if ctx.comparison:
        for note in ctx.comparison.notes:
            print(f"- {note}")
    print()


def every_row(ctx: Context, rows: Rows) -> None:
    print("| corpus | command | jobs | build | median s | ratio | to | MB/s | records/s | CPU s | CPU ns/record "
          "| peak RSS MB | min–max s |")
    print("|---|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for result in ctx.results:
        key = result.key
        jobs = key.jobs or "–"
        build = key.build or "–"
        to = short(result.baseline.command) if result.baseline else "–"
        if not result.measured:
            print(f"| {key.corpus} | {key.command} | {jobs} | {build} | failed | | {to} | | | | | | |")
            continue
        tree = ctx.trees[result.tree]
        median = result.median
        print(f"| {key.corpus} | {key.command} | {jobs} | {build} | {median:.3f} | {fmt(rows.ratio(result))} | {to} "
              f"| {tree.bytes / median / 1e6:.0f} | {tree.records / median:.0f} | {result.cpu:.3f} "
              f"| {fmt(rows.ns_per_record(result), '.0f')} | {megabytes(result.peak_kb)} "
              f"| {min(result.walls):.3f}–{max(result.walls):.3f} |")
    print()


def png(ctx: Context, rows: Rows) -> None:
    """The png corpus: --images against the plain conversion of the same PNGs."""
    found = [r for r in ctx.results if r.key.corpus == "png" and r.key.command.startswith("tf2of")]
    if not found:
        return
    images = ctx.trees["png/tfrecord"].records
    print("| png corpus | jobs | build | median s | images/s | ratio to plain tf2of | peak RSS MB | CPU s |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for result in found:
        key = result.key
        if not result.measured:
            print(f"| {key.command} | {key.jobs} | {key.build} | failed | | | | |")
            continue
        plain = rows.get("png", "tf2of --no-sync", key.jobs, key.build)
        ratio = result.median / plain.median if plain else None
        print(f"| {key.command} | {key.jobs} | {key.build} | {result.median:.3f} | {images / result.median:.0f} "
              f"| {fmt(ratio)} | {megabytes(result.peak_kb)} | {result.cpu:.3f} |")
    print()


def across_jobs(ctx: Context, rows: Rows) -> None:
    """Each conversion at the first and the last --jobs value: its ratios, its CPU a record at
    the first, and the speed-up of the last over the first."""
    first, last = ctx.options.jobs[0], ctx.options.jobs[-1]
    print(f"| corpus | command | build | to | ratio, --jobs {first} | ratio, --jobs {last} "
          f"| CPU ns/record, --jobs {first} | wall --jobs {first} / --jobs {last} |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    seen = set()
    for result in ctx.results:
        key = result.key
        if not key.command.startswith(("tf2of", "of2tf")) or not key.build or key.corpus == "png":
            continue
        row = (key.corpus, key.command, key.build)
        if row in seen:
            continue
        seen.add(row)
        at_first = rows.get(key.corpus, key.command, first, key.build)
        at_last = rows.get(key.corpus, key.command, last, key.build)
        speedup = at_first.median / at_last.median if at_first and at_last and first != last else None
        to = short(result.baseline.command) if result.baseline else "–"
        print(f"| {key.corpus} | {key.command} | {key.build} | {to} | {fmt(rows.ratio(at_first))} "
              f"| {fmt(rows.ratio(at_last))} | {fmt(rows.ns_per_record(at_first), '.0f')} | {fmt(speedup)} |")
    print()


def side_by_side(ctx: Context, rows: Rows) -> None:
    """Each command of this build beside the same command of the build compared with, both
    measured in turns in this run."""
    other = ctx.comparison
    assert other is not None
    name = other.name
    print(f"| corpus | command | jobs | build | this s | {name} s | this ratio | {name} ratio | to | this / {name} |")
    print("|---|---|---:|---|---:|---:|---:|---:|---|---:|")
    for result in ctx.results:
        key = result.key
        if key.build not in THIS:
            continue
        twin_key = Key(key.corpus, key.command, key.jobs, other.label(other.stand_in[key.build]))
        twin = rows.by_key.get(twin_key)
        if twin is None:
            continue
        this_s = f"{result.median:.3f}" if result.measured else "failed"
        twin_s = f"{twin.median:.3f}" if twin.measured else "failed"
        against = result.median / twin.median if result.measured and twin.measured else None
        to = short(result.baseline.command) if result.baseline else "–"
        build = key.build if twin_key.build == other.label(key.build) else f"{key.build} (beside {twin_key.build})"
        print(f"| {key.corpus} | {key.command} | {key.jobs or '–'} | {build} | {this_s} | {twin_s} "
              f"| {fmt(rows.ratio(result))} | {fmt(rows.ratio(twin))} | {to} | {fmt(against)} |")
    print()


def notes(ctx: Context) -> None:
    options = ctx.options
    runs = f"{options.runs} timed run{'s' if options.runs > 1 else ''}"
    if options.big:
        runs += f" (big file: {options.big_runs})"
    print(f"""\
Median of {runs} after one untimed run, files in the page cache, the output removed and
`sync` run before each run; the builds timed on a command (release, dist, the one compared
with) take turns run by run. MB = 10^6 bytes of input. Ratio = wall time / wall time of the
row named in "to", measured in the same run (below 1 is faster): `cp -r` of the same input
tree for a `--no-sync` conversion, `cp -r` + an fsync of each file for a conversion that
fsyncs its parts, `cat` of the same files for count and verify. CPU s = median user + system
time of the command and the children it waited for (wait4), which a loaded machine disturbs
less than wall time; CPU ns/record = CPU s / records of input. Peak RSS: the largest resident
set of the command or one of its children (GNU time's %M; empty without GNU time).
bench-convert is single-threaded: wire = the Transcoder, typed = decode into prost messages +
map + encode, same framing code. ArrayRecord files are TFDS's layout (a record a chunk,
zstd:3), written by ofconvert-bench-gen from the same records; `of2tf --to array_record`
writes the same layout. png corpus: one image a record, so images/s = records/s; ratio =
wall time / wall time of the plain `tf2of --no-sync` at the same --jobs by the same build.""")
    if options.s3:
        print("Bucket-to-bucket rows go through one S3 server on 127.0.0.1 (ofconvert-bench-s3: s3s-fs over a")
        print("local directory); their ratio is to `rclone copy` of the same objects through it.")
    print()


def targets(ctx: Context, rows: Rows) -> None:
    """The issue's speed targets, judged on the release build; the build compared with is shown
    beside."""
    other = ctx.comparison
    twin = other.label(other.stand_in[JUDGED]) if other else None
    print(f"| target (release build) | measured |{f' {other.name} |' if other else ''} |")
    print(f"|---|---|{'---|' if other else ''}---|")

    def line(what: str, value: Optional[float], twin_value: Optional[float], bound: float, unit: str) -> None:
        if value is None:
            return
        shown = (lambda v: "–" if v is None else (f"{v:.0f} {unit}" if unit != "x" else f"{v:.2f}x"))
        verdict = "met" if value <= bound else "**missed**"
        print(f"| {what} | {shown(value)} |{f' {shown(twin_value)} |' if other else ''} {verdict} |")

    line("first build (clean `cargo build --release -p ofconvert`) <= 200 s", ctx.first_build, None, 200, "s")
    conversions = ("tf2of", "of2tf")
    for command in conversions:
        for suffix in ("", " --no-sync"):
            this = rows.get("small", command + suffix, 1, JUDGED)
            theirs = rows.get("small", command + suffix, 1, twin) if twin else None
            line(f"small {command}{suffix}, --jobs 1: <= 100 CPU ns/record", rows.ns_per_record(this),
                 rows.ns_per_record(theirs), 100, "ns")
    for command in conversions:
        for suffix, copy, bound in ((" --no-sync", "cp -r", 1.5), ("", "cp -r + fsync", 1.1)):
            this = rows.get("small", command + suffix, 1, JUDGED)
            theirs = rows.get("small", command + suffix, 1, twin) if twin else None
            line(f"small {command}{suffix}, --jobs 1 / {copy} <= {bound}x", rows.ratio(this), rows.ratio(theirs),
                 bound, "x")
    for corpus in ("small", "large"):
        for form in ("tfrecord", "ofrecord"):
            this = rows.get(corpus, f"verify {form}", 1, JUDGED)
            theirs = rows.get(corpus, f"verify {form}", 1, twin) if twin else None
            line(f"verify --jobs 1 of the {corpus} {form} tree / cat <= 1.1x", rows.ratio(this), rows.ratio(theirs),
                 1.1, "x")
    for command in conversions:
        this = rows.get("large", command, 1, JUDGED)
        theirs = rows.get("large", command, 1, twin) if twin else None
        line(f"large {command}, --jobs 1 / cp -r + fsync <= 0.8x (held)", rows.ratio(this), rows.ratio(theirs),
             0.8, "x")


# --- helpers ------------------------------------------------------------------------------


def short(command: str) -> str:
    """The short name of a baseline row: what the ratio column is to."""
    if command.startswith("cp -r"):
        return "cp -r + fsync" if "fsync" in command else "cp -r"
    return command.split()[0]


def fmt(value: Optional[float], spec: str = ".2f") -> str:
    return "–" if value is None else format(value, spec)


def megabytes(kib: Optional[int]) -> str:
    return fmt(None if kib is None else kib * 1024 / 1e6, ".1f")


def load(average: Tuple[float, float, float]) -> str:
    return ", ".join(f"{v:.2f}" for v in average)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def memory() -> str:
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemTotal"):
                    return f"{int(line.split()[1]) * 1024 / 1e9:.1f} GB"
    except OSError:
        pass
    return "? GB"


def git(root: str, *args: str) -> str:
    done = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""
