"""`--python PY`: the Python benches of bench/python in their quick forms, with a Python that
imports ofconvert. Each prints a Markdown table of its own, which the report repeats; their
progress goes to the standard error as it comes. bench_arrayrecord.py is not among them: it
writes corpora of its own (400,000 records) and compares with Google's `array_record`, which
needs a Python of its own (bench/README.md says how to run it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import List, Optional

from measure import say


@dataclass
class Section:
    title: str
    command: List[str]
    output: str
    ok: bool


def problem(python: str) -> Optional[str]:
    """Why `python` cannot run the benches (it does not import ofconvert), or None."""
    try:
        done = subprocess.run([python, "-c", "import ofconvert"], capture_output=True, text=True)
    except OSError as err:
        return f"cannot run {python}: {err}"
    if done.returncode == 0:
        return None
    lines = done.stderr.strip().splitlines()
    return f"{python} cannot import ofconvert: {lines[-1] if lines else f'exit {done.returncode}'}"


def run_all(python: str, scripts: str, corpus_dir: str, corpora: List[str], s3_server: str,
            rclone: Optional[str], work: str) -> List[Section]:
    # ofconvert.data keeps the index it builds beside each file: the scripts read a copy, and
    # the corpus keeps its record files alone.
    copy = os.path.join(work, "python-corpus")
    shutil.rmtree(copy, ignore_errors=True)
    readable = [c for c in corpora if c in ("large", "small")]
    for name in readable:
        for form in ("tfrecord", "ofrecord"):
            shutil.copytree(os.path.join(corpus_dir, name, form), os.path.join(copy, name, form))

    def script(name: str, *args: str) -> List[str]:
        return [python, os.path.join(scripts, name), *args]

    planned = []
    if readable:
        planned.append(("readers (bench.py --runs 1)",
                        script("bench.py", "--runs", "1", "--dir", copy, "--corpus", ",".join(readable),
                               "--s3-server", s3_server)))
    planned.append(("shuffles (bench_shuffle.py, 32 files of 500 records)",
                    script("bench_shuffle.py", "--files", "32", "--records", "500", "--block", "4096",
                           "--seeds", "1")))
    if rclone is None:
        say("no rclone: bench_bucket.py and bench_ranks.py are left out")
    else:
        if "small" in readable:
            planned.append(("training from a bucket (bench_bucket.py --corpus small --runs 1)",
                            script("bench_bucket.py", "--dir", copy, "--corpus", "small", "--runs", "1",
                                   "--cap", "2048", "--batches", "4", "--s3-server", s3_server,
                                   "--rclone", rclone, "--tmp", work)))
        planned.append(("a job of many processes (bench_ranks.py --quick)",
                        script("bench_ranks.py", "--quick", "--s3-server", s3_server, "--rclone", rclone,
                               "--tmp", work)))
    sections = []
    try:
        for title, command in planned:
            say(f"python: {title}")
            done = subprocess.run(command, stdout=subprocess.PIPE, text=True, cwd=work)
            if done.returncode != 0:
                say(f"FAILED (exit {done.returncode}): {' '.join(command)}")
            sections.append(Section(title, command, done.stdout, done.returncode == 0))
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return sections
