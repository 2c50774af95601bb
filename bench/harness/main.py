"""What bench/run measures, in order: the builds, the corpora, then every row, each command of
this build right beside its baseline and the build it is compared with."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence

import builds
import bucket
import corpus
import pybench
import report
from measure import Key, Runner, Variant, find_gnu_time, say
from options import parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The like-for-like copy of a conversion that fsyncs each part before renaming it into place.
CP_FSYNC = 'cp -r "$1" "$2" && sync -- "$2"/* "$2"'
# What count and verify are compared with: reading the same files and nothing else.
CAT = 'cat "$1"/* >/dev/null'


def main(argv: List[str]) -> int:
    options = parse(argv)
    # What can be refused is refused before anything is built.
    if options.baseline and not os.access(options.baseline, os.X_OK):
        return die(f"--baseline: {options.baseline} is not an executable")
    if options.python:
        problem = pybench.problem(options.python)
        if problem:
            return die(f"--python: {problem}")
    rclone = None
    if options.s3:
        rclone = bucket.find_rclone()
        if rclone is None:
            return die("rclone is missing: install it (apt-get install rclone) or pass --no-s3")

    tree = builds.Tree(builds.target_dir(ROOT), ["release", "dist"] if options.dist else ["release"])
    try:
        if options.build:
            tree.build(ROOT)
        missing = tree.missing()
        if missing:
            return die(f"not built: {', '.join(missing)} (run without --no-build)")
        first_build = builds.time_first_build(ROOT) if options.build_time else None
        comparison = None
        if options.against:
            comparison = builds.against(ROOT, options.against, tree.target, tree.profiles)
        elif options.baseline:
            comparison = builds.baseline(os.path.abspath(options.baseline), tree.profiles)
    except builds.BuildFailed as failure:
        return die(str(failure), 1)

    work = options.dir and os.path.abspath(options.dir)
    if work:
        os.makedirs(work, exist_ok=True)
    else:
        work = tempfile.mkdtemp(prefix="ofconvert-bench.")
    try:
        return Bench(options, tree, comparison, work, rclone, first_build).run()
    finally:
        if options.dir or options.keep:
            for scratch in ("out", "big-of", "s3"):
                shutil.rmtree(os.path.join(work, scratch), ignore_errors=True)
            if options.keep:
                say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def die(message: str, code: int = 2) -> int:
    print(f"bench/run: {message}", file=sys.stderr)
    return code


class Bench:
    def __init__(self, options, tree: builds.Tree, comparison: Optional[builds.Comparison], work: str,
                 rclone: Optional[str], first_build: Optional[float]) -> None:
        self.options = options
        self.tree = tree
        self.comparison = comparison
        self.work = work
        self.rclone = rclone
        self.first_build = first_build
        self.out = os.path.join(work, "out")
        self.runner = Runner([self.out], os.path.join(work, "last-command.log"), options.runs, find_gnu_time())
        self.trees: Dict[str, corpus.Tree] = {}

    def run(self) -> int:
        options = self.options
        corpus_dir = os.path.join(self.work, "corpus")
        try:
            self.trees = corpus.generate(self.tree.helper("ofconvert-bench-gen"), corpus_dir, options.seed,
                                         options.scale, options.corpora, options.big)
        except (OSError, subprocess.CalledProcessError) as err:
            return die(f"the corpus generator failed: {err}", 1)
        corpus.warm(self.trees)
        say("timing CRC-32C")
        crc = subprocess.run([self.tree.helper("ofconvert-bench-crc")], check=True, capture_output=True,
                             text=True).stdout
        load_before = os.getloadavg()
        for name in options.corpora:
            if name == "png":
                self.png()
            else:
                self.records(name)
        if options.big:
            self.big()
        if options.s3:
            self.buckets()
        python = []
        if options.python:
            python = pybench.run_all(options.python, os.path.join(ROOT, "bench", "python"), corpus_dir,
                                     options.corpora, self.tree.helper("ofconvert-bench-s3"),
                                     self.rclone or shutil.which("rclone"), self.work)
        load_after = os.getloadavg()
        report.print_report(report.Context(
            root=ROOT, options=options, trees=self.trees, results=self.runner.results,
            comparison=self.comparison, crc=crc, first_build=self.first_build,
            load_before=load_before, load_after=load_after, python=python))
        failed = self.runner.failed or any(not section.ok for section in python)
        return 1 if failed else 0

    # --- rows ---------------------------------------------------------------------------

    def tool(self, name: str, command: str, form: str, argv: Sequence[str], baseline: Optional[Key] = None,
             runs: Optional[int] = None, env: Optional[Dict[str, str]] = None) -> Key:
        """Times a command that is no build's: a copy or a read the builds are compared with."""
        return self.runner.row(name, command, f"{name}/{form}", argv, baseline, runs=runs, env=env)

    def ofconvert(self, name: str, command: str, jobs: int, form: str, baseline: Optional[Key],
                  args: Sequence[str], dist: bool = False, env: Optional[Dict[str, str]] = None,
                  runs: Optional[int] = None) -> None:
        """Times `ofconvert --jobs J --quiet ARGS` by this release build, the dist build too for
        a conversion, and right after each the build compared with."""
        flags = ["--jobs", str(jobs), "--quiet", *args]
        variants = []
        for profile in self.tree.profiles if dist else ["release"]:
            variants.append(Variant(profile, [self.tree.ofconvert(profile), *flags]))
            if self.comparison and self.comparison.own(profile):
                variants.append(Variant(self.comparison.label(profile),
                                        [self.comparison.binaries[profile], *flags], must_pass=False))
        self.runner.rows(name, command, jobs, f"{name}/{form}", baseline, variants, runs, env)

    def records(self, name: str) -> None:
        """The large or the small corpus: copies and reads of each tree, then at each --jobs
        value the conversions, count and verify of each format, and the single-threaded
        converters."""
        tf, of, ar = (self.trees[f"{name}/{form}"].dir for form in ("tfrecord", "ofrecord", "array_record"))
        out = self.out
        cp, cp_fsync, cat = {}, {}, {}
        for form, source in (("tfrecord", tf), ("ofrecord", of), ("array_record", ar)):
            cp[form] = self.tool(name, f"cp -r {form} tree", form, ["cp", "-r", source, out])
        for form, source in (("tfrecord", tf), ("ofrecord", of), ("array_record", ar)):
            cat[form] = self.tool(name, f"cat {form} tree", form, ["sh", "-c", CAT, "sh", source])
        for form, source in (("tfrecord", tf), ("ofrecord", of)):
            # What a conversion's fsync of every part costs a plain copy.
            cp_fsync[form] = self.tool(name, f"cp -r {form} tree, fsync each file", form,
                                       ["sh", "-c", CP_FSYNC, "sh", source, out], baseline=cp[form])
        for jobs in self.options.jobs:
            # Like with like: a run that fsyncs every part against the copy that fsyncs every
            # file, a --no-sync run against the plain copy.
            for sync in ([], ["--no-sync"]):
                suffix = " --no-sync" if sync else ""
                self.ofconvert(name, "tf2of" + suffix, jobs, "tfrecord", (cp if sync else cp_fsync)["tfrecord"],
                               ["tf2of", *sync, tf, out], dist=True)
                self.ofconvert(name, "of2tf" + suffix, jobs, "ofrecord", (cp if sync else cp_fsync)["ofrecord"],
                               ["of2tf", *sync, of, out], dist=True)
            # Over the dataset its last run wrote, as the README's first command runs: the new
            # parts take the old ones' names (renamed over them, ext4 wrote them out at once).
            kept = os.path.join(self.work, f"{name}-overwritten")
            self.ofconvert(name, "tf2of --no-sync --overwrite, over its last output", jobs, "tfrecord",
                           cp["tfrecord"], ["tf2of", "--no-sync", "--overwrite", tf, kept])
            self.ofconvert(name, "of2tf --to array_record --no-sync", jobs, "ofrecord", cp["ofrecord"],
                           ["of2tf", "--no-sync", "--to", "array_record", of, out], dist=True)
            self.ofconvert(name, "tf2of --no-sync from array_record", jobs, "array_record", cp["array_record"],
                           ["tf2of", "--no-sync", ar, out], dist=True)
            for form, source in (("tfrecord", tf), ("ofrecord", of), ("array_record", ar)):
                self.ofconvert(name, f"count {form}", jobs, form, cat[form], ["count", source])
                self.ofconvert(name, f"verify {form}", jobs, form, cat[form], ["verify", source])
        convert = self.tree.helper("ofconvert-bench-convert")
        for route, flag in (("wire", []), ("typed", ["--typed"])):
            self.runner.row(name, f"bench-convert tf2of, {route} path", f"{name}/tfrecord",
                            [convert, *flag, "tf2of", tf, out], cp["tfrecord"], jobs=1)
            self.runner.row(name, f"bench-convert of2tf, {route} path", f"{name}/ofrecord",
                            [convert, *flag, "of2tf", of, out], cp["ofrecord"], jobs=1)

    def png(self) -> None:
        """What --images costs beside the plain conversion of the same PNGs (one a record)."""
        tf = self.trees["png/tfrecord"].dir
        cp = self.tool("png", "cp -r tfrecord tree", "tfrecord", ["cp", "-r", tf, self.out])
        for jobs in self.options.jobs:
            for images in ([], ["--images", "jpeg"], ["--images", "raw"]):
                command = " ".join(["tf2of --no-sync", *images])
                self.ofconvert("png", command, jobs, "tfrecord", cp, ["tf2of", "--no-sync", *images, tf, self.out])

    def big(self) -> None:
        """One big TFRecord file both ways, for the peak RSS; its OFRecord copy made by this
        release build. Without fsyncs, so that the copy they are compared with is the plain
        one and the rows do not wait on the disk for gigabytes."""
        big = self.trees["big/tfrecord"].dir
        big_of = os.path.join(self.work, "big-of")
        runs = self.options.big_runs
        cp_tf = self.tool("big", "cp -r tfrecord tree", "tfrecord", ["cp", "-r", big, self.out], runs=runs)
        say("[big] converting once to get an OFRecord input")
        shutil.rmtree(big_of, ignore_errors=True)
        subprocess.run([self.tree.ofconvert("release"), "--quiet", "tf2of", big, big_of], check=True)
        of_tree = corpus.measure_tree(big_of)
        of_tree.records = self.trees["big/tfrecord"].records
        self.trees["big/ofrecord"] = of_tree
        corpus.warm({"big/ofrecord": of_tree})
        cp_of = self.tool("big", "cp -r ofrecord tree", "ofrecord", ["cp", "-r", big_of, self.out], runs=runs)
        for jobs in self.options.jobs:
            self.ofconvert("big", "tf2of --no-sync", jobs, "tfrecord", cp_tf, ["tf2of", "--no-sync", big, self.out],
                           dist=True, runs=runs)
            self.ofconvert("big", "of2tf --no-sync", jobs, "ofrecord", cp_of, ["of2tf", "--no-sync", big_of, self.out],
                           dist=True, runs=runs)
        shutil.rmtree(big_of, ignore_errors=True)

    def buckets(self) -> None:
        """The large corpus from one bucket to another through the local S3 server: ofconvert
        against rclone copying the same objects."""
        assert self.rclone is not None
        root = os.path.join(self.work, "s3")
        shutil.rmtree(root, ignore_errors=True)
        server = bucket.Server(self.tree.helper("ofconvert-bench-s3"), root, os.path.join(self.work, "s3.log"))
        dest = os.path.join(root, "dst", "out")
        try:
            say("uploading the large corpus to s3://src/large and s3://src/large-of")
            server.upload(self.rclone, self.trees["large/tfrecord"].dir, "src/large")
            server.upload(self.rclone, self.trees["large/ofrecord"].dir, "src/large-of")
            env = server.env()
            self.runner.outputs.append(dest)
            rclone = {}
            for form, source in (("tfrecord", "src/large"), ("ofrecord", "src/large-of")):
                command = "rclone copy bucket to bucket" + (", ofrecord" if form == "ofrecord" else "")
                rclone[form] = self.tool("large", command, form,
                                         bucket.rclone_copy(self.rclone, f"BENCHSRC:{source}", "BENCHDST:dst/out"),
                                         env=env)
            for jobs in self.options.jobs:
                self.ofconvert("large", "tf2of bucket to bucket", jobs, "tfrecord", rclone["tfrecord"],
                               ["tf2of", "s3://src/large", "s3://dst/out"], env=env)
                self.ofconvert("large", "of2tf bucket to bucket", jobs, "ofrecord", rclone["ofrecord"],
                               ["of2tf", "s3://src/large-of", "s3://dst/out"], env=env)
        finally:
            if dest in self.runner.outputs:
                self.runner.outputs.remove(dest)
            server.stop()


def run() -> None:
    # A run stopped with SIGTERM still removes its worktree, its temporary directory and its
    # server, as one stopped with ^C does.
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    started = time.perf_counter()
    code = main(sys.argv[1:])
    say(f"done in {time.perf_counter() - started:.0f} s")
    sys.exit(code)
