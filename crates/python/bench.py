#!/usr/bin/env python3
"""Reading speed: ofconvert.read against TensorFlow's loop and the PyPI `tfrecord` package.

    cargo run --release -p ofconvert-bench --bin ofconvert-bench-gen -- /tmp/corpus
    python crates/python/bench.py --dir /tmp/corpus

Run it with a Python that has ofconvert, tensorflow-cpu and tfrecord installed (rows of a
reader that is missing say so). For each corpus (DIR/large/tfrecord, DIR/small/tfrecord,
and the OFRecord copies for ofconvert alone) it reads every record with:

- `ofconvert.read(files)`: dicts of numpy arrays and list[bytes];
- `ofconvert.read(files, raw=True)`: the serialized bytes;
- `ofconvert.read(files, batch_size=256)`: stacked batches;
- TensorFlow: `tf.data.TFRecordDataset(files)` + `tf.train.Example.FromString(x.numpy())`;
- `tfrecord.tfrecord_loader(file, None)` per file: dicts of numpy arrays.

Every reader runs once untimed, then --runs times; the table gives the best run's
records/s and the ratio to TensorFlow's loop, as Markdown on stdout.
"""

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple


def files_of(directory: Path) -> List[str]:
    return sorted(str(p) for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))


def ofconvert_dicts(files: List[str]) -> int:
    import ofconvert

    count = 0
    for _ in ofconvert.read(files):
        count += 1
    return count


def ofconvert_raw(files: List[str]) -> int:
    import ofconvert

    count = 0
    for _ in ofconvert.read(files, raw=True):
        count += 1
    return count


def ofconvert_batches(files: List[str]) -> int:
    import ofconvert

    count = 0
    for batch in ofconvert.read(files, batch_size=256):
        count += len(next(iter(batch.values())))
    return count


def tensorflow_loop(files: List[str]) -> int:
    import tensorflow as tf

    count = 0
    for raw in tf.data.TFRecordDataset(files):
        tf.train.Example.FromString(raw.numpy())
        count += 1
    return count


def tfrecord_package(files: List[str]) -> int:
    from tfrecord.reader import tfrecord_loader

    count = 0
    for path in files:
        for _ in tfrecord_loader(path, None):
            count += 1
    return count


READERS: List[Tuple[str, Callable[[List[str]], int], str]] = [
    ("ofconvert.read", ofconvert_dicts, "tf"),
    ("ofconvert.read(raw=True)", ofconvert_raw, "tf"),
    ("ofconvert.read(batch_size=256)", ofconvert_batches, "tf"),
    ("ofconvert.read (OFRecord)", ofconvert_dicts, "of"),
    ("tf.data + Example.FromString", tensorflow_loop, "tf"),
    ("tfrecord.tfrecord_loader", tfrecord_package, "tf"),
]


def measure(reader: Callable[[List[str]], int], files: List[str], runs: int) -> Tuple[int, float]:
    records = reader(files)  # warm-up: page cache, imports, graph building
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        counted = reader(files)
        best = min(best, time.perf_counter() - started)
        if counted != records:
            raise SystemExit(f"{reader.__name__}: {counted} records, then {records}")
    return records, best


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, help="the corpus directory ofconvert-bench-gen wrote")
    parser.add_argument("--corpus", default="large,small", help="corpora of --dir (default large,small)")
    parser.add_argument(
        "--files", nargs="+", type=Path,
        help="instead of --dir: uncompressed TFRecord files to read (OFRecord rows left out)",
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs per reader (default 3)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

    corpora: Dict[str, Dict[str, List[str]]] = {}
    if args.files:
        corpora["files"] = {"tf": [str(p) for p in args.files], "of": []}
    elif args.dir:
        for name in args.corpus.split(","):
            root = args.dir / name
            corpora[name] = {
                "tf": files_of(root / "tfrecord"),
                "of": files_of(root / "ofrecord") if (root / "ofrecord").is_dir() else [],
            }
    else:
        parser.error("give --dir or --files")

    print("| corpus | reader | records | best s | records/s | × TensorFlow |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for corpus, files in corpora.items():
        rows = []
        for label, reader, kind in READERS:
            if not files[kind]:
                continue
            try:
                records, seconds = measure(reader, files[kind], args.runs)
            except ImportError as err:
                rows.append((label, None, None, f"not installed ({err.name})"))
                continue
            rows.append((label, records, seconds, None))
            print(f"{corpus}: {label}: {records} records in {seconds:.3f} s", file=sys.stderr)
        baseline = next(
            (records / seconds for label, records, seconds, _ in rows if label.startswith("tf.data") and records),
            None,
        )
        for label, records, seconds, missing in rows:
            if missing:
                print(f"| {corpus} | {label} | | | {missing} | |")
                continue
            rate = records / seconds if seconds > 0 else float("inf")
            ratio = f"{rate / baseline:.1f}" if baseline else ""
            print(f"| {corpus} | {label} | {records} | {seconds:.3f} | {rate:,.0f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
