"""Timing commands: each run on a clean output after `sync`, its wall time, CPU time and peak
RSS; a command's variants (this build, the build compared with) run in turns.

Wall time is taken around the child's whole life (spawn to reaping); CPU time (user + system)
comes from the kernel's account of the child and every child it waited for (`wait4`), so
`sh -c 'cp ... && sync ...'` counts its `cp` too. Peak RSS comes from GNU time around the
command: a process started from this one inherits this one's peak (18 MB of Python) as its
own, since `exec` keeps the largest resident set the process ever had; the command GNU time
starts counts from GNU time's (about 1 MB).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple


@dataclass(frozen=True)
class Key:
    """What a row is: a command on a corpus, at a --jobs value, by one build (none for the
    copies and readers it is compared with)."""

    corpus: str
    command: str
    jobs: Optional[int] = None
    build: str = ""


@dataclass
class Result:
    """The runs of one row."""

    key: Key
    tree: str
    """The input tree, `corpus/format`, whose bytes and records the row's rates count."""
    baseline: Optional[Key]
    """The row this one's ratio is to; none for a row that is its own baseline."""
    walls: List[float] = field(default_factory=list)
    cpus: List[float] = field(default_factory=list)
    peak_kb: Optional[int] = None
    """None without GNU time."""
    failed: bool = False

    @property
    def measured(self) -> bool:
        return not self.failed and bool(self.walls)

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)


@dataclass(frozen=True)
class Variant:
    """One way to run a row's command: the build's label and its command line."""

    build: str
    argv: Sequence[str]
    must_pass: bool = True
    """A failure of this variant fails the whole run (a build compared with may lack a
    command that this one has: its failure is only reported)."""


class CommandFailed(Exception):
    pass


class Runner:
    """Runs commands and keeps every row's results, in the order they were measured."""

    def __init__(self, outputs: List[str], log: str, runs: int, gnu_time: Optional[str]) -> None:
        self.outputs = outputs
        """Removed before every run: where the commands write."""
        self.log = log
        self.gnu_time = gnu_time
        self.peak_file = log + ".peak"
        self.runs = runs
        self.results: List[Result] = []
        self.failed = False

    def row(self, corpus: str, command: str, tree: str, argv: Sequence[str],
            baseline: Optional[Key] = None, jobs: Optional[int] = None,
            runs: Optional[int] = None, env: Optional[Dict[str, str]] = None) -> Key:
        """Measures one command that has no variants (a copy, a reader, a helper binary)."""
        return self.rows(corpus, command, jobs, tree, baseline, [Variant("", argv)], runs, env)[0].key

    def rows(self, corpus: str, command: str, jobs: Optional[int], tree: str,
             baseline: Optional[Key], variants: List[Variant],
             runs: Optional[int] = None, env: Optional[Dict[str, str]] = None) -> List[Result]:
        """Measures each variant of a command: one untimed run of each, then `runs` rounds in
        which each variant runs once, so that all see the machine alike."""
        results = [Result(Key(corpus, command, jobs, v.build), tree, baseline) for v in variants]
        self.results.extend(results)
        where = f"[{corpus}] {command}" + (f", --jobs {jobs}" if jobs else "")
        say(where)
        for variant, result in zip(variants, results):
            self._try(variant, result, env, timed=False)
        for _ in range(runs or self.runs):
            for variant, result in zip(variants, results):
                if not result.failed:
                    self._try(variant, result, env, timed=True)
        for variant, result in zip(variants, results):
            times = "failed" if result.failed else " ".join(f"{w:.3f}" for w in result.walls) + " s"
            say(f"    {variant.build or 'measured'}: {times}")
        return results

    def _try(self, variant: Variant, result: Result, env: Optional[Dict[str, str]], timed: bool) -> None:
        try:
            wall, cpu, peak_kb = self.run_once(variant.argv, env)
        except CommandFailed as failure:
            say(f"FAILED ({variant.build or 'command'}): {' '.join(variant.argv)}\n{failure}")
            result.failed = True
            if variant.must_pass:
                self.failed = True
            return
        if timed:
            result.walls.append(wall)
            result.cpus.append(cpu)
            if peak_kb is not None:
                result.peak_kb = max(result.peak_kb or 0, peak_kb)

    def run_once(self, argv: Sequence[str],
                 env: Optional[Dict[str, str]] = None) -> Tuple[float, float, Optional[int]]:
        """Runs `argv` once on clean outputs, its output in the log; gives its wall seconds,
        CPU seconds and peak RSS in KiB (None without GNU time)."""
        if self.gnu_time:
            argv = [self.gnu_time, "-f", "%M", "-o", self.peak_file, *argv]
        for output in self.outputs:
            shutil.rmtree(output, ignore_errors=True)
        # No run pays for the writeback of the one before.
        os.sync()
        log = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            actions = [
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log, 1),
                (os.POSIX_SPAWN_DUP2, log, 2),
            ]
            started = time.perf_counter()
            try:
                pid = os.posix_spawnp(argv[0], list(argv), env or os.environ, file_actions=actions)
            except OSError as err:
                raise CommandFailed(f"cannot start {argv[0]}: {err}") from err
            _, status, usage = os.wait4(pid, 0)
            wall = time.perf_counter() - started
        finally:
            os.close(log)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            with open(self.log, errors="replace") as text:
                tail = "".join(text.readlines()[-5:])
            raise CommandFailed(f"exit status {code}\n{tail}")
        peak_kb = None
        if self.gnu_time:
            with open(self.peak_file) as peak:
                peak_kb = int(peak.read().split()[-1])
        return wall, usage.ru_utime + usage.ru_stime, peak_kb


def find_gnu_time() -> Optional[str]:
    """GNU time, installed with apt-get when it is missing and this runs as root; None when
    there is none (the peak RSS column is then left empty)."""

    def works() -> bool:
        try:
            return subprocess.run(["/usr/bin/time", "-f", "%M", "true"], capture_output=True).returncode == 0
        except OSError:
            return False

    if not works() and shutil.which("apt-get") and os.geteuid() == 0:
        say("installing GNU time")
        subprocess.run(["apt-get", "update", "-qq"], check=False, stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", "-qq", "time"], check=False, stdout=subprocess.DEVNULL)
    return "/usr/bin/time" if works() else None


def say(message: str) -> None:
    """Progress, on the standard error (the tables go to the standard output)."""
    print(f"bench/run: {message}", file=sys.stderr, flush=True)
