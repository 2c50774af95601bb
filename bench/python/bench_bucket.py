#!/usr/bin/env python3
"""Training from a bucket: ofconvert.data against `rclone copy` of the same objects and
MosaicML Streaming over the same records, on one S3 server, every request and byte counted.

    cargo build --release -p ofconvert-bench --bins
    target/release/ofconvert-bench-gen /tmp/corpus
    python bench/python/bench_bucket.py --dir /tmp/corpus \
        --s3-server target/release/ofconvert-bench-s3 --mosaic-python /tmp/mosaic-venv/bin/python

This Python needs ofconvert (`maturin develop --profile release` in crates/python); `rclone`
comes from Debian (`apt-get install -y rclone`, 1.60 here). `--mosaic-python` is a Python
with MosaicML Streaming 0.13; without one, its rows say "not installed". The one these
figures were taken with is CPython 3.10 with PyTorch 1.13.1 and no CUDA wheel beyond the
libraries its import loads (about 2.5 GB, instead of the several GB a newer torch pulls):

    python3.10 -m venv /tmp/mosaic-venv
    /tmp/mosaic-venv/bin/pip install --no-deps torch==1.13.1 torchvision==0.14.1 \
        nvidia-cuda-runtime-cu11==11.7.99 'nvidia-cudnn-cu11==8.9.*' 'nvidia-cublas-cu11==11.11.*'
    /tmp/mosaic-venv/bin/pip install --no-deps mosaicml-streaming==0.13.0
    /tmp/mosaic-venv/bin/pip install 'numpy<2' typing_extensions boto3 Brotli python-snappy \
        'zstd<2' 'xxhash<4' tqdm 'catalogue<3' filelock pillow 'transformers<5'

(`streaming` imports torchvision and transformers at its top; the rest of its requirements,
the other clouds' clients and matplotlib among them, are never imported for an S3 remote.)

The script starts `--s3-server` (`ofconvert-bench-s3`) on an empty temporary folder and
uploads through it, with rclone, each corpus's TFRecord files (DIR/CORPUS/tfrecord, as
`ofconvert-bench-gen` writes them) to s3://CORPUS/tfrecord/, and the MDS shards Mosaic's own
`MDSWriter` writes from the same serialized records (one `bytes` column, its default shard
size and no compression) to s3://CORPUS/mds/. Objects are uploaded, not copied into the
server's folder: s3s-fs computes the MD5 of a file put there behind its back on every GET and
HEAD, which would weigh on every row.

Every reader reaches the server through a proxy in this script (127.0.0.1 only) that counts
the requests and the bytes of the response bodies: a row's requests, MB fetched and their
ratio to the dataset's size (the TFRecord files, or the MDS shards and index.json for Mosaic)
are those of its timed part alone. The proxy costs reads that go a record a request up to a
third of their pace on a loaded 2-core machine, and reads of whole spans next to nothing.
Each reader runs in a process of its own (not pinned), a fresh one for each run of a bucket
row; the table gives the run of median time. Rows, for each corpus:

- `rclone copy` of s3://CORPUS/tfrecord to a fresh local folder (rclone's defaults: 4
  transfers, MD5 checked); records/s is the corpus's records over its time;
- `RecordStream(urls, batch_size=256, drop_last=False)` in order, `shuffle="block"` and
  `shuffle=True`: without a cache (`shuffle=True` stopped after `--cap` records, said in the
  row, as its requests go a batch's records at a time), and with `cache_limit=` twice the
  dataset: "cold" is the first epoch on a fresh cache folder, "warm" the next one
  (`set_epoch(1)`) in the same process;
- the time from `load_state_dict` of a state halfway through the epoch to the first batch,
  for each order (no cache);
- `RecordDataset.__getitems__` of 256 indices drawn at random, `--batches` batches, no cache;
- opening the dataset the first time, which builds each object's index in one streaming pass
  (kept in the cache folder): the other ofconvert rows start from a fresh cache folder holding
  these indexes only, as a dataset opened before, so that they time and count their reads
  alone (Mosaic's index is index.json, written by MDSWriter beside the shards);
- the same stream over the local files, in order, `"block"` and `True` (once untimed first,
  which writes the indexes beside the files and warms the page cache): the baseline of the
  warm rows;
- Mosaic's `StreamingDataset(remote="s3://CORPUS/mds", local=fresh folder, shuffle=False,
  or shuffle=True with shuffle_algo="py1e", batch_size=256)`, iterated without a DataLoader,
  sample by sample (raw bytes, where ofconvert's batches are decoded features): the first
  pass (cold) and a second over the same local folder (warm).

Cold rows time the dataset's construction (a look at each object, or Mosaic's index.json)
and the epoch; warm rows the epoch; the resume and `__getitems__` rows their operation
alone. MB/s is records/s times the TFRecord bytes per record, for every row alike. Below the
table, the ratios issue #30 sets targets for. The proxy, the server and the readers share
the machine: the load average before and after is printed.

On the loopback the network costs nothing but the processors it shares with the readers;
`--latency MS` and `--rate MB/S` make the proxy stand for a network instead (every answer
held back `--latency` milliseconds, every answer body through one link of `--rate` MB/s
shared by all connections, rclone's included), so that rows show which reader keeps a
slower link busy. The table's footer says which network the rows went through.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

# bench_ranks.py reaches CountingProxy, bucket, rclone_env, reader_env, say and upload_corpus
# as bench_bucket.X.
from bench_bucket_proxy import CountingProxy
from bench_bucket_store import bucket, in_child, rclone, rclone_env, reader_env, say, tree_size, upload_corpus
from bench_bucket_tasks import BATCH, worker

RESUME = ", load_state_dict to first batch"
PY1E = 'shuffle=True, "py1e"'


class Row:
    def __init__(self, corpus: str, reader: str, mode: str, cache: str, runs: Optional[List[Dict[str, Any]]],
                 size: int, missing: Optional[str] = None, rates: bool = True) -> None:
        self.corpus, self.reader, self.mode, self.cache = corpus, reader, mode, cache
        self.size, self.missing, self.rates = size, missing, rates
        self.median: Optional[Dict[str, Any]] = None
        if runs:
            by_time = sorted(runs, key=lambda r: r["seconds"])
            self.median = by_time[(len(by_time) - 1) // 2]
            self.seconds = statistics.median(r["seconds"] for r in runs)

    @property
    def rate(self) -> Optional[float]:
        if not self.median or not self.rates:
            return None
        return self.median["records"] / self.seconds


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, help="the corpus directory ofconvert-bench-gen wrote")
    parser.add_argument("--corpus", default="small,large", help="corpora of --dir (default small,large)")
    parser.add_argument("--s3-server", help="the ofconvert-bench-s3 binary")
    parser.add_argument("--rclone", default="rclone", help="the rclone binary (default: rclone on PATH)")
    parser.add_argument("--mosaic-python", default=sys.executable, help="a Python with mosaicml-streaming")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per row (default 3)")
    parser.add_argument("--cap", type=int, default=20480,
                        help="records of a shuffle=True epoch without a cache (default 20480)")
    parser.add_argument("--batches", type=int, default=40, help="batches of __getitems__ (default 40)")
    parser.add_argument("--latency", type=float, default=0.0,
                        help="milliseconds the proxy holds back each answer (default 0)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="MB/s of the one link all answers go through (default 0: unlimited)")
    parser.add_argument("--tmp", type=Path, help="where the temporary folder goes (default: the system's)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(json.loads(args.worker))
        return 0
    if not args.dir or not args.s3_server:
        parser.error("give --dir and --s3-server")
    if not shutil.which(args.rclone):
        parser.error(f"no rclone at {args.rclone!r} (apt-get install -y rclone)")
    if not shutil.which(args.s3_server):
        parser.error(f"{args.s3_server} is not an executable (cargo build --release -p ofconvert-bench --bins)")
    if args.runs < 1 or args.cap < 1 or args.batches < 1:
        parser.error("--runs, --cap and --batches must be at least 1")
    if args.latency < 0 or args.rate < 0:
        parser.error("--latency and --rate cannot be negative")
    for name in args.corpus.split(","):
        if not (args.dir / name / "tfrecord").is_dir():
            parser.error(f"no {args.dir / name / 'tfrecord'}: give the folder ofconvert-bench-gen wrote")

    work = Path(tempfile.mkdtemp(prefix="bench-bucket-", dir=args.tmp))
    try:
        with bucket(args.s3_server, work, args.latency, args.rate) as (endpoint, proxy):
            return run(args, work, endpoint, proxy)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path, endpoint: str, proxy: CountingProxy) -> int:
    config = work / "rclone.conf"  # never written: the remotes come from the environment
    direct = rclone_env("direct", endpoint, config)
    counted = rclone_env("counted", proxy.url, config)
    env = reader_env(proxy.url)
    corpora = {name: upload_corpus(args.rclone, direct, name, args.dir / name / "tfrecord", work, args.mosaic_python, env)
               for name in args.corpus.split(",")}

    load_before = os.getloadavg()[0]
    say(f"load average before: {load_before:.2f} on {os.cpu_count()} cores")
    rows: List[Row] = []
    for name, info in corpora.items():
        size, urls = info["size"], info["urls"]
        scratch = work / "scratch"

        def runs_of(task: Dict[str, Any], python: str = sys.executable) -> Dict[str, List[Dict[str, Any]]]:
            """`task` --runs times, each in a fresh child with fresh folders."""
            collected: Dict[str, List[Dict[str, Any]]] = {}
            for _ in range(args.runs):
                shutil.rmtree(scratch, ignore_errors=True)
                scratch.mkdir()
                spec = {**task, "control": proxy.url, "cache_dir": str(scratch / "cache"), "local": str(scratch / "local")}
                result = in_child(python, spec, env)
                if "missing" in result:
                    return {"missing": result["missing"]}  # type: ignore[dict-item]
                for key, value in result.items():
                    collected.setdefault(key, []).append(value)
            return collected

        def add(reader: str, mode: str, cache: str, runs: Any, row_size: int = size, rates: bool = True) -> None:
            if isinstance(runs, str):
                rows.append(Row(name, reader, mode, cache, None, row_size, missing=runs))
                return
            row = Row(name, reader, mode, cache, runs, row_size, rates=rates)
            rows.append(row)
            m = row.median
            assert m is not None
            fetched = "" if m["bytes"] is None else f", {m['requests']} requests, {m['bytes'] / 1e6:,.1f} MB"
            say(f"{name}: {reader}, {mode}, {cache}: {m['records']:,} records in {row.seconds:.3f} s{fetched}")

        # rclone copy of the same objects, through the proxy.
        copies = []
        for _ in range(args.runs):
            target = work / "rclone-copy"
            shutil.rmtree(target, ignore_errors=True)
            before = proxy.counts()
            started = time.perf_counter()
            # The slash: without it rclone first asks whether the prefix is an object (a HEAD
            # that s3s-fs answers 500 for a folder) and retries for most of a minute.
            rclone(args.rclone, counted, "copy", f"counted:{name}/tfrecord/", str(target))
            seconds = time.perf_counter() - started
            after = proxy.counts()
            if tree_size(target) != size:
                raise SystemExit(f"rclone copied {tree_size(target)} bytes of {size}")
            copies.append({"seconds": seconds, "records": info["records"], "requests": after[0] - before[0],
                           "bytes": after[1] - before[1]})
            shutil.rmtree(target)
        add("rclone copy", "whole objects", "none", copies)

        # The first open builds the indexes; the last run's are every later row's start.
        index_dir = work / "indexes"
        first = runs_of({"task": "index", "urls": urls})
        shutil.rmtree(index_dir, ignore_errors=True)
        shutil.copytree(scratch / "cache", index_dir)
        add("RecordDataset", "first open (indexes built)", "none", first["first open"], rates=False)

        limit = 2 * size + (64 << 20)
        orders = [("in order", False), ('shuffle="block"', "block"), ("shuffle=True", True)]
        stream = {"task": "stream", "urls": urls, "index_dir": str(index_dir)}
        for label, shuffle in orders:
            capped = shuffle is True and args.cap < info["records"]
            got = runs_of({**stream, "shuffle": shuffle, "cap": args.cap if capped else None})
            add("RecordStream", label + (f", first {args.cap:,}" if capped else ""), "none", got.get("none", got.get("missing")))
        for label, shuffle in orders:
            got = runs_of({**stream, "shuffle": shuffle, "cache_limit": limit})
            add("RecordStream", label, "cold", got["cold"])
            add("RecordStream", label, "warm", got["warm"])
        for label, shuffle in orders:
            got = runs_of({"task": "resume", "urls": urls, "index_dir": str(index_dir), "shuffle": shuffle})
            add("RecordStream", label + RESUME, "none", got["resume"], rates=False)
        got = runs_of({"task": "getitems", "urls": urls, "files": info["files"], "index_dir": str(index_dir),
                       "batches": args.batches, "seed": 0})
        add("RecordDataset", f"__getitems__, {args.batches} x {BATCH} at random", "none", got["none"])
        for label, shuffle in orders:
            got = in_child(sys.executable, {"task": "local", "files": info["files"], "shuffle": shuffle, "runs": args.runs}, {})
            add("RecordStream, local disk", label, "—", got["local"])

        for label, shuffle in [("in order", False), (PY1E, True)]:
            if "mosaic" in info:
                add("Mosaic StreamingDataset", label, "cold", info["mosaic"])
                add("Mosaic StreamingDataset", label, "warm", info["mosaic"])
                continue
            got = runs_of({"task": "mosaic", "remote": f"s3://{name}/mds", "shuffle": shuffle}, args.mosaic_python)
            add("Mosaic StreamingDataset", label, "cold", got.get("cold", got.get("missing")), info["mds_size"])
            add("Mosaic StreamingDataset", label, "warm", got.get("warm", got.get("missing")), info["mds_size"])
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(index_dir, ignore_errors=True)
    load_after = os.getloadavg()[0]
    say(f"load average after: {load_after:.2f}")

    print_table(rows, corpora)
    print_ratios(rows, corpora)
    print(f"\nLoad average: {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} cores; "
          f"{args.runs} run(s) a row.")
    network = "the loopback, unlimited" if not (args.latency or args.rate) else (
        f"{args.latency:g} ms a request" + (f", one link of {args.rate:g} MB/s" if args.rate else ", unlimited"))
    print(f"Network between the readers and the server: {network}.")
    return 0


def print_table(rows: List[Row], corpora: Dict[str, Dict[str, Any]]) -> None:
    print("| corpus | reader | mode | cache | records | median s | records/s | MB/s | requests | MB fetched | × dataset |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        if row.missing or row.median is None:
            print(f"| {row.corpus} | {row.reader} | {row.mode} | {row.cache} | | | {row.missing} | | | | |")
            continue
        m = row.median
        per_record = corpora[row.corpus]["size"] / corpora[row.corpus]["records"]
        rate = f"{row.rate:,.0f}" if row.rate else ""
        mbs = f"{row.rate * per_record / 1e6:,.1f}" if row.rate else ""
        requests = "" if m["requests"] is None else f"{m['requests']:,}"
        fetched = "" if m["bytes"] is None else f"{m['bytes'] / 1e6:,.1f}"
        times = "" if m["bytes"] is None else f"{m['bytes'] / row.size:.3f}"
        print(f"| {row.corpus} | {row.reader} | {row.mode} | {row.cache} | {m['records']:,} | {row.seconds:.3f} | "
              f"{rate} | {mbs} | {requests} | {fetched} | {times} |")


def print_ratios(rows: List[Row], corpora: Dict[str, Dict[str, Any]]) -> None:
    """What issue #30 sets a target for, from the rows above."""
    def find(corpus: str, reader: str, mode: str, cache: str) -> Optional[Row]:
        for row in rows:
            # A mode, or the same stopped early ("shuffle=True, first 20,480").
            same = row.mode == mode or row.mode.startswith(mode + ", first ")
            if (row.corpus, row.reader, row.cache) == (corpus, reader, cache) and same and row.median:
                return row
        return None

    print()
    print("| corpus | measure | value | target |")
    print("| --- | --- | ---: | --- |")
    stream, local, mosaic = "RecordStream", "RecordStream, local disk", "Mosaic StreamingDataset"
    caches = {"none": "no cache", "cold": "cold cache", "warm": "warm cache"}
    for corpus in dict.fromkeys(row.corpus for row in rows):
        def line(label: str, value: Optional[float], target: str, unit: str = "") -> None:
            if value is not None:
                print(f"| {corpus} | {label} | {value:.2f}{unit} | {target} |")

        def ratio(label: str, a: Optional[Row], b: Optional[Row], target: str) -> None:
            if a is not None and b is not None and a.rate and b.rate:
                line(label, a.rate / b.rate, target)

        rclone = find(corpus, "rclone copy", "whole objects", "none")
        for cache in ("none", "cold"):
            ratio(f"in order ({caches[cache]}) ÷ rclone copy", find(corpus, stream, "in order", cache), rclone, "≥ 0.9")
        for cache in ("none", "cold", "warm"):
            ratio(f'"block" ÷ in order ({caches[cache]})', find(corpus, stream, 'shuffle="block"', cache),
                  find(corpus, stream, "in order", cache), "≥ 0.8")
        for cache in ("none", "cold"):
            row = find(corpus, stream, 'shuffle="block"', cache)
            if row and row.median and row.median["bytes"] is not None:
                line(f'"block" ({caches[cache]}): bytes fetched ÷ dataset', row.median["bytes"] / row.size, "≤ 1.05")
        mean = corpora[corpus]["size"] / corpora[corpus]["records"]
        for label, row in (("__getitems__", next((r for r in rows if r.corpus == corpus and r.mode.startswith("__getitems__") and r.median), None)),
                           ("shuffle=True (no cache)", find(corpus, stream, "shuffle=True", "none"))):
            if row and row.median:
                # A stream's records: their number times the mean record's bytes.
                wanted = row.median.get("wanted") or row.median["records"] * mean
                line(f"{label}: bytes fetched ÷ bytes of its records", row.median["bytes"] / wanted, "≤ 2")
        for label, mode in (("in order", "in order"), ('"block"', 'shuffle="block"'), ("True", "shuffle=True")):
            ratio(f"{label}, warm cache ÷ local disk", find(corpus, stream, mode, "warm"), find(corpus, local, mode, "—"), "≥ 0.8")
        for label, mode in (('"block"', 'shuffle="block"' + RESUME), ("True", "shuffle=True" + RESUME)):
            row = find(corpus, stream, mode, "none")
            if row:
                line(f"{label}: load_state_dict to first batch", row.seconds, "≤ 1 s", " s")
        for label, mode, theirs in (("in order", "in order", "in order"), ('"block"', 'shuffle="block"', PY1E),
                                    ("True", "shuffle=True", PY1E)):
            for cache, their_cache in (("none", "cold"), ("cold", "cold"), ("warm", "warm")):
                name = "in order" if theirs == "in order" else "py1e"
                ratio(f"{label} ({caches[cache]}) ÷ Mosaic {name} ({their_cache})",
                      find(corpus, stream, mode, cache), find(corpus, mosaic, theirs, their_cache), "> 1")


if __name__ == "__main__":
    sys.exit(main())
