#!/usr/bin/env python3
"""Reading speed: ofconvert.read against TensorFlow's loop and the PyPI `tfrecord` package.

    cargo run --release -p ofconvert-bench --bin ofconvert-bench-gen -- /tmp/corpus
    python crates/python/bench.py --dir /tmp/corpus

Each reader runs in a process of its own, with the Python given for it (default: this
one): `--tf-python` for TensorFlow and `--tfrecord-python` for the `tfrecord` package, which
cannot share a process with TensorFlow (both register tensorflow.Example's protos). Rows of a
reader that is missing say so. For each corpus (DIR/large/tfrecord, DIR/small/tfrecord,
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
import json
import os
import subprocess
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


def worker(index: int, files: List[str], runs: int) -> None:
    """Runs one reader and prints its result as JSON (the child process's side)."""
    _, reader, _ = READERS[index]
    try:
        records, seconds = measure(reader, files, runs)
    except ImportError as err:
        print(json.dumps({"missing": err.name}))
        return
    print(json.dumps({"records": records, "seconds": seconds}))


def in_child(python: str, index: int, files: List[str], runs: int) -> dict:
    command = [python, __file__, "--worker", str(index), "--runs", str(runs), "--files", *files]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{READERS[index][0]} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, help="the corpus directory ofconvert-bench-gen wrote")
    parser.add_argument("--corpus", default="large,small", help="corpora of --dir (default large,small)")
    parser.add_argument(
        "--files", nargs="+", type=Path,
        help="instead of --dir: uncompressed TFRecord files to read (OFRecord rows left out)",
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs per reader (default 3)")
    parser.add_argument("--tf-python", default=sys.executable, help="a Python with tensorflow")
    parser.add_argument("--tfrecord-python", default=sys.executable, help="a Python with tfrecord")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.worker is not None:
        worker(args.worker, [str(p) for p in args.files], args.runs)
        return 0
    pythons = {tensorflow_loop: args.tf_python, tfrecord_package: args.tfrecord_python}

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
        for index, (label, reader, kind) in enumerate(READERS):
            if not files[kind]:
                continue
            result = in_child(pythons.get(reader, sys.executable), index, files[kind], args.runs)
            if "missing" in result:
                rows.append((label, None, None, f"not installed ({result['missing']})"))
                continue
            records, seconds = result["records"], result["seconds"]
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
