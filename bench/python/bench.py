#!/usr/bin/env python3
"""Reading speed: ofconvert.read and ofconvert.data against TensorFlow (tf.data) and the PyPI
`tfrecord` package.

    cargo run --release -p ofconvert-bench --bin ofconvert-bench-gen -- /tmp/corpus
    python bench/python/bench.py --dir /tmp/corpus --cpu 0 \
        --s3-server target/release/ofconvert-bench-s3

Each reader runs in a process of its own, with the Python given for it (default: this
one): `--tf-python` for TensorFlow and `--tfrecord-python` for the `tfrecord` package, which
cannot share a process with TensorFlow (both register tensorflow.Example's protos). Rows of a
reader that is missing say so. For each corpus (DIR/large/tfrecord, DIR/small/tfrecord,
and the OFRecord copies for ofconvert alone) it reads every record with:

- `ofconvert.read(files)`: dicts of numpy arrays and list[bytes];
- `ofconvert.read(files, raw=True)`: the serialized bytes;
- `ofconvert.read(files, batch_size=256)`: stacked batches;
- TensorFlow: `tf.data.TFRecordDataset(files)` + `tf.train.Example.FromString(x.numpy())`;
- `tfrecord.tfrecord_loader(file, None)` per file: dicts of numpy arrays;
- `ofconvert.data.RecordStream(files, batch_size=256)`, in file order and shuffled: batches
  as a training loop gets them (OFRecord too), and with batch_size=32 (a batch of large
  records that fits in the allocator's reused memory);
- `ofconvert.data.RecordDataset(files)[i]` for 100,000 indices drawn at random (all
  records when fewer);
- `tf.data.TFRecordDataset(files).batch(256).map(tf.io.parse_example)`: TensorFlow's own
  batched pipeline, with the features of the first record as its spec;
- with `--s3-server`, the stream again over the same files in an S3 bucket served on
  127.0.0.1 by that binary (`ofconvert-bench-s3`): a whole epoch in file order, and the
  first 20,000 records of a shuffled one.

Every reader runs once untimed (which builds the indexes ofconvert.data keeps beside the
files, and warms the page cache), then --runs times, in a process of its own, pinned to one
core with --cpu; the table gives the median run's records/s and MB/s (bytes of the files
read) and the ratios to the `tfrecord` package and to TensorFlow's batched pipeline of the
same run, as Markdown on stdout.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple


def files_of(directory: Path) -> List[str]:
    # Indexes that ofconvert.data keeps beside the files are not record files.
    return sorted(
        str(p) for p in directory.iterdir()
        if p.is_file() and not p.name.startswith(".") and not p.name.endswith(".idx")
    )


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


def stream_batches(files: List[str]) -> int:
    from ofconvert.data import RecordStream

    count = 0
    for batch in RecordStream(files, batch_size=256, drop_last=False):
        count += len(next(iter(batch.values())))
    return count


def stream_small_batches(files: List[str]) -> int:
    from ofconvert.data import RecordStream

    count = 0
    for batch in RecordStream(files, batch_size=32, drop_last=False):
        count += len(next(iter(batch.values())))
    return count


def stream_shuffled(files: List[str]) -> int:
    from ofconvert.data import RecordStream

    count = 0
    for batch in RecordStream(files, shuffle=True, batch_size=256, drop_last=False):
        count += len(next(iter(batch.values())))
    return count


RANDOM_READS = 100_000
BUCKET_READS = 20_000


def stream_shuffled_bucket(files: List[str]) -> int:
    """The first batches of a shuffled epoch, BUCKET_READS records: a whole epoch of small
    records scattered over a bucket would take minutes."""
    from ofconvert.data import RecordStream

    count = 0
    for batch in RecordStream(files, shuffle=True, batch_size=256, drop_last=False):
        count += len(next(iter(batch.values())))
        if count >= BUCKET_READS:
            break
    return count


def dataset_random(files: List[str]) -> int:
    from ofconvert.data import RecordDataset

    dataset = RecordDataset(files)
    indices = random.Random(0).sample(range(len(dataset)), min(len(dataset), RANDOM_READS))
    for index in indices:
        dataset[index]
    return len(indices)


def tensorflow_batched(files: List[str]) -> int:
    import tensorflow as tf

    first = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(files[:1]))).numpy())
    spec = {}
    for name, feature in first.features.feature.items():
        kind = feature.WhichOneof("kind")
        values = getattr(feature, kind).value
        dtype = {"bytes_list": tf.string, "float_list": tf.float32, "int64_list": tf.int64}[kind]
        spec[name] = tf.io.FixedLenFeature([], dtype) if len(values) == 1 else tf.io.VarLenFeature(dtype)
    dataset = tf.data.TFRecordDataset(files).batch(256).map(lambda x: tf.io.parse_example(x, spec))
    count = 0
    for batch in dataset:
        count += int(tf.shape(next(iter(batch.values())))[0]) if not isinstance(
            next(iter(batch.values())), tf.SparseTensor) else int(next(iter(batch.values())).dense_shape[0])
    return count


READERS: List[Tuple[str, Callable[[List[str]], int], str]] = [
    ("ofconvert.read", ofconvert_dicts, "tf"),
    ("ofconvert.read(raw=True)", ofconvert_raw, "tf"),
    ("ofconvert.read(batch_size=256)", ofconvert_batches, "tf"),
    ("ofconvert.read (OFRecord)", ofconvert_dicts, "of"),
    ("RecordStream(batch_size=256)", stream_batches, "tf"),
    ("RecordStream(batch_size=32)", stream_small_batches, "tf"),
    ("RecordStream(shuffle=True, batch_size=256)", stream_shuffled, "tf"),
    ("RecordStream(batch_size=256) (OFRecord)", stream_batches, "of"),
    ("RecordDataset[i], random i", dataset_random, "tf"),
    ("tf.data + Example.FromString", tensorflow_loop, "tf"),
    ("tf.data .batch(256) + parse_example", tensorflow_batched, "tf"),
    ("tfrecord.tfrecord_loader", tfrecord_package, "tf"),
    ("RecordStream(batch_size=256), S3", stream_batches, "s3"),
    ("RecordStream(shuffle=True, batch_size=256), S3, first 20,000", stream_shuffled_bucket, "s3"),
]


def measure(reader: Callable[[List[str]], int], files: List[str], runs: int) -> Tuple[int, List[float]]:
    records = reader(files)  # warm-up: page cache, imports, graph building, indexes
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        counted = reader(files)
        times.append(time.perf_counter() - started)
        if counted != records:
            raise SystemExit(f"{reader.__name__}: {counted} records, then {records}")
    return records, times


def worker(index: int, files: List[str], runs: int, cpu: Optional[int]) -> None:
    """Runs one reader and prints its result as JSON (the child process's side)."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    _, reader, _ = READERS[index]
    try:
        records, times = measure(reader, files, runs)
    except ImportError as err:
        print(json.dumps({"missing": err.name}))
        return
    print(json.dumps({"records": records, "times": times}))


def in_child(python: str, index: int, files: List[str], runs: int, cpu: Optional[int]) -> dict:
    command = [python, __file__, "--worker", str(index), "--runs", str(runs), "--files", *files]
    if cpu is not None:
        command += ["--cpu", str(cpu)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{READERS[index][0]} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def start_s3(server: str, root: Path) -> Tuple[subprocess.Popen, Dict[str, str]]:
    """The S3 server binary serving `root` (its subdirectories the buckets) on 127.0.0.1, and
    the environment that reaches it."""
    process = subprocess.Popen([server, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    endpoint = process.stdout.readline().strip()
    if not endpoint.startswith("http://127.0.0.1:"):
        process.kill()
        raise SystemExit(f"{server} said {endpoint!r}, not its endpoint")
    return process, {
        "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "ofconvert-bench",
        "AWS_SECRET_ACCESS_KEY": "ofconvert-bench-secret", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
    }


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, help="the corpus directory ofconvert-bench-gen wrote")
    parser.add_argument("--corpus", default="large,small", help="corpora of --dir (default large,small)")
    parser.add_argument(
        "--files", nargs="+",
        help="instead of --dir: uncompressed TFRecord files to read (OFRecord and S3 rows left out)",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs per reader (default 5)")
    parser.add_argument("--cpu", type=int, help="pin each reader's process to this core")
    parser.add_argument("--tf-python", default=sys.executable, help="a Python with tensorflow")
    parser.add_argument("--tfrecord-python", default=sys.executable, help="a Python with tfrecord")
    parser.add_argument("--s3-server", help="the ofconvert-bench-s3 binary, to read --dir from a bucket too")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.worker is not None:
        worker(args.worker, [str(p) for p in args.files], args.runs, args.cpu)
        return 0
    pythons = {tensorflow_loop: args.tf_python, tensorflow_batched: args.tf_python, tfrecord_package: args.tfrecord_python}

    corpora: Dict[str, Dict[str, List[str]]] = {}
    if args.files:
        corpora["files"] = {"tf": [str(p) for p in args.files], "of": [], "s3": []}
    elif args.dir:
        for name in args.corpus.split(","):
            root = args.dir / name
            tf_files = files_of(root / "tfrecord")
            corpora[name] = {
                "tf": tf_files,
                "of": files_of(root / "ofrecord") if (root / "ofrecord").is_dir() else [],
                "s3": [f"s3://{name}/tfrecord/{Path(f).name}" for f in tf_files] if args.s3_server else [],
            }
    else:
        parser.error("give --dir or --files")
    server = None
    if args.s3_server and args.dir:
        server, env = start_s3(args.s3_server, args.dir)
        os.environ.update(env)

    try:
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", file=sys.stderr)
        print("| corpus | reader | records | median s | records/s | MB/s | × tfrecord | × tf.data batched |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for corpus, files in corpora.items():
            sizes = {kind: sum(os.path.getsize(f) for f in files[kind if kind != "s3" else "tf"]) for kind in files}
            totals: Dict[str, int] = {}
            rows = []
            for index, (label, reader, kind) in enumerate(READERS):
                if not files[kind]:
                    continue
                result = in_child(pythons.get(reader, sys.executable), index, files[kind], args.runs, args.cpu)
                if "missing" in result:
                    rows.append((label, kind, None, None, f"not installed ({result['missing']})"))
                    continue
                records, seconds = result["records"], statistics.median(result["times"])
                if reader not in (dataset_random, stream_shuffled_bucket):
                    totals[kind] = records
                rows.append((label, kind, records, seconds, None))
                print(f"{corpus}: {label}: {records} records in {seconds:.3f} s (median of "
                      f"{len(result['times'])})", file=sys.stderr)
            rates = {label: records / seconds for label, _, records, seconds, _ in rows if records}
            tfrecord = rates.get("tfrecord.tfrecord_loader")
            batched = rates.get("tf.data .batch(256) + parse_example")
            for label, kind, records, seconds, missing in rows:
                if missing:
                    print(f"| {corpus} | {label} | | | {missing} | | | |")
                    continue
                rate = rates[label]
                # The bucket holds the same files as the local TFRecord rows.
                files_kind = "tf" if kind == "s3" else kind
                per_record = sizes[files_kind] / totals[files_kind] if totals.get(files_kind) else 0
                ratios = [f"{rate / base:.1f}" if base else "" for base in (tfrecord, batched)]
                print(f"| {corpus} | {label} | {records} | {seconds:.3f} | {rate:,.0f} | "
                      f"{rate * per_record / 1e6:,.0f} | {ratios[0]} | {ratios[1]} |")
        print(f"load average after: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    finally:
        if server is not None:
            server.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
