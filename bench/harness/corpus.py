"""The corpora: written by this tree's `ofconvert-bench-gen` (the same seed gives the same
bytes), reused when a kept directory already holds them, and read once to warm the page cache.
"""

from __future__ import annotations

import glob
import os
import subprocess
from dataclasses import dataclass
from typing import Dict, List

from measure import say

LAYOUT = "tfrecord,ofrecord,array_record"
"""The trees each corpus is written as: a corpus written by a generator that wrote other trees
is written again."""


@dataclass
class Tree:
    """One tree of record files, as `corpus.tsv` lists it."""

    dir: str
    files: int
    records: int
    bytes: int


def generate(gen: str, directory: str, seed: int, scale: str, corpora: List[str], big: str) -> Dict[str, Tree]:
    """Writes the corpora into `directory` unless its stamp says they are there; gives every
    tree by `corpus/format`."""
    names = corpora + (["big"] if big else [])
    stamp = f"seed={seed} scale={scale} corpus={','.join(names)} big={big} layout={LAYOUT}"
    stamp_file = os.path.join(directory, "stamp")
    if os.path.isfile(stamp_file) and open(stamp_file).read().strip() == stamp:
        say(f"reusing the corpus in {directory}")
    else:
        if os.path.exists(stamp_file):
            os.remove(stamp_file)
        say(f"generating the corpus ({stamp}) in {directory}")
        subprocess.run([gen, "--seed", str(seed), "--scale", scale, "--corpus", ",".join(names),
                        "--big-size", big or "4G", directory], check=True)
        with open(stamp_file, "w") as out:
            out.write(stamp + "\n")
    return read_table(directory)


def read_table(directory: str) -> Dict[str, Tree]:
    """`corpus.tsv`: corpus, format, directory (relative), files, records, bytes."""
    trees = {}
    with open(os.path.join(directory, "corpus.tsv")) as table:
        for line in table:
            if not line.strip() or line.startswith("#"):
                continue
            corpus, form, relative, files, records, size = line.rstrip("\n").split("\t")
            trees[f"{corpus}/{form}"] = Tree(os.path.join(directory, relative), int(files), int(records), int(size))
    return trees


def warm(trees: Dict[str, Tree]) -> None:
    """Reads every file once, so that every row finds them in the page cache."""
    say("warming the page cache")
    for tree in trees.values():
        for path in sorted(glob.glob(os.path.join(tree.dir, "*"))):
            with open(path, "rb") as source:
                while source.read(1 << 20):
                    pass


def measure_tree(directory: str) -> Tree:
    """A tree the run wrote itself (the big file's OFRecord copy)."""
    paths = [p for p in glob.glob(os.path.join(directory, "part-*")) if os.path.isfile(p)]
    return Tree(directory, len(paths), 0, sum(os.path.getsize(p) for p in paths))
