#!/usr/bin/env python3
"""A training job's reads of a bucket: one process per (rank, data-loader worker), every
process of a layout started at once, the requests and bytes of all of them counted together.

    cargo build --release -p ofconvert-bench --bins
    python bench/python/bench_ranks.py --s3-server target/release/ofconvert-bench-s3 \
        --mosaic-python /tmp/mosaic-venv/bin/python

This Python needs ofconvert and numpy, and the rest is bench_bucket.py's (beside this
script, whose server, counting proxy and uploads this one uses): `rclone` to upload, and
`--mosaic-python`, a Python with MosaicML Streaming 0.13 made as bench_bucket.py's
docstring says (without one, no Mosaic rows). The corpus is *small* as
`ofconvert-bench-gen` writes it (400,000 records of about 84 bytes in 8 objects), written
into the temporary folder by the `ofconvert-bench-gen` beside `--s3-server` (`--records N`
for fewer, `--dir DIR` for one written before: DIR/small/tfrecord).

Layouts, as ranks x workers of a node: 1x1, 1x4, 2x2 and 4x2 on one node (all its processes
share one cache folder), and two nodes of 2x2 each (world size 4, a cache folder a node).
Each rank is a process started as torchrun would start it, without torch: it opens
`RecordStream(urls, shuffle, rank=, world_size=, batch_size=256, drop_last=False,
cache_dir=its node's)` (with `cache_limit=` twice the dataset, or without), then hands its
workers, processes it started before the epoch as a loader's persistent workers, the stream
pickled with `worker=(id, count)` set, as a DataLoader's workers started with `spawn` get it;
each worker iterates its share. A rank's first batch is its worker 0's, the one a loader
hands over first; a node's first batch is when its last rank has one (the first step of a
synchronous job), from the start of the epoch.

Each layout runs two epochs in the same processes, every rank told to start at once:
"cold" from a fresh cache folder, without indexes (the pass that builds them is counted:
the ranks of a node open the dataset together), "warm" the next (`set_epoch(1)`). A row's
requests and MB fetched are the proxy's counts over the epoch, all processes together, and
"x dataset" their ratio to the TFRecord bytes (a job that reads each byte once: 1.00). Its
time runs from the start to the last worker's end; records/s is the records read over it.

MosaicML Streaming runs the same layouts over the same records (the MDS shards
bench_bucket.py writes): each rank a process with RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set as torchrun sets them, a
`StreamingDataset(remote, local=its node's folder, shuffle, batch_size=256)` (in order, and
`shuffle=True` with its default algorithm) behind a `DataLoader(batch_size=256,
num_workers=workers)`. The two nodes on one host keep apart the shared memory Mosaic names
after the first free number it finds: each node has its own TMPDIR, where its filelocks
are, and the second one finds number 0 taken there. A run that fails is a row that says so.

Every row checks that the processes together read each record exactly once: each worker (or
Mosaic rank) keeps a 64-bit digest of each record it read (of the decoded features; of the
serialized bytes for Mosaic), and their multiset is compared with the dataset's. A row that
reads a record twice or misses one says so in the table and on the standard error, and the
script exits 1 if an ofconvert row did (or failed).

`--quick` is a run that only shows that this works: 4,000 records, 1x1 and 2x2, no Mosaic.
`--readers mosaic` runs Mosaic's rows alone, which a change to ofconvert leaves as they were;
`--orders` picks orders (`shuffle=True` without a cache, a record a request, takes most of a
full run's time).
Times on a machine that does other work are not measurements. Requests and bytes do not
depend on the machine's load where one process reads (1x1) and in warm epochs; where several
processes race for the same objects (a cold epoch's index passes, spans that one process
puts in the shared cache before or after another looks), they vary from run to run:
`--runs N` runs each layout N times and gives the median time and the least and most of the
counts. `--latency`/`--rate` make the proxy stand for a network, as in bench_bucket.py: one
link shared by every process of both nodes.
"""

import argparse
import functools
import importlib
import json
import os
import pickle
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Tuple

import numpy as np

import bench_bucket as bucket
from bench_ranks_once import batch_digests, bytes_digest, each_once, reference_digests

BATCH = 256
SMALL_RECORDS = 400_000  # ofconvert-bench-gen's small corpus at scale 1
QUICK_RECORDS = 4_000
ORDERS = [("in order", False), ('shuffle="block"', "block"), ("shuffle=True", True)]
MOSAIC_ORDERS = [("in order", False), ("shuffle=True", True)]
ORDER_NAMES = {"in-order": False, "block": "block", "true": True}  # --orders
CACHES = ["none", "cache_limit"]
EPOCHS = ["cold", "warm"]
SAID = "bench-ranks: "  # starts every line a child says to its parent (libraries print too)


class Layout(NamedTuple):
    ranks: int  # a node's
    workers: int  # a rank's
    nodes: int = 1

    @property
    def label(self) -> str:
        each = f"{self.ranks}x{self.workers}"
        return each if self.nodes == 1 else f"{self.nodes} nodes x {each}"

    @property
    def processes(self) -> int:
        return self.nodes * self.ranks * self.workers


LAYOUTS = [Layout(1, 1), Layout(1, 4), Layout(2, 2), Layout(4, 2), Layout(2, 2, 2)]
QUICK_LAYOUTS = [Layout(1, 1), Layout(2, 2)]


# The children: ranks and their workers (each told what to do on its standard input)

def tell(message: Any) -> None:
    print(SAID + json.dumps(message), flush=True)


def ofconvert_rank(spec: Dict[str, Any]) -> None:
    """A rank: starts its workers, then for each "go" opens the stream (the first time) or
    draws the next epoch, and hands each worker its share."""
    from ofconvert.data import RecordStream

    workers = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--loader-worker"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(spec["workers"])]
    try:
        for worker in workers:
            _heard(worker.stdout)
        tell("ready")
        stream = None
        for line in sys.stdin:
            if line.strip() != "go":
                break
            if stream is None:
                options = {"cache_limit": spec["cache_limit"]} if spec["cache_limit"] else {}
                stream = RecordStream(spec["urls"], shuffle=spec["shuffle"], rank=spec["rank"],
                                      world_size=spec["world"], batch_size=BATCH, drop_last=False,
                                      cache_dir=spec["cache_dir"], **options)
            else:
                stream.set_epoch(stream.epoch + 1)
            for number, worker in enumerate(workers):
                stream.worker = (number, len(workers))
                keys = f"{spec['keys']}-worker{number}-epoch{stream.epoch}.npy"
                message = pickle.dumps({"stream": stream, "keys": keys})
                assert worker.stdin is not None
                worker.stdin.write(len(message).to_bytes(8, "little") + message)
                worker.stdin.flush()
            tell({"workers": [_heard(worker.stdout) for worker in workers]})
    finally:
        for worker in workers:
            if worker.stdin:
                worker.stdin.close()
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


def _heard(source: Optional[IO[bytes]]) -> Any:
    """The next thing a child said on `source` (lines it did not say to its parent skipped)."""
    assert source is not None
    while line := source.readline().decode():
        if line.startswith(SAID):
            said = json.loads(line[len(SAID):])
            if isinstance(said, dict) and "error" in said:
                raise RuntimeError(said["error"])
            return said
    raise RuntimeError("a loader worker ended without a word")


def loader_worker() -> None:
    """A loader worker: for each stream it is handed, iterates it, then saves a digest of each
    record and says when its first batch and its end came."""
    importlib.import_module("ofconvert.data")  # before the epoch, as a forked loader worker has it

    tell("ready")
    source = sys.stdin.buffer
    while len(head := source.read(8)) == 8:
        message = pickle.loads(source.read(int.from_bytes(head, "little")))
        first, batches = None, []
        for batch in message["stream"]:
            if first is None:
                first = time.monotonic()
            batches.append(batch)
        end = time.monotonic()
        digests = np.concatenate([batch_digests(b) for b in batches]) if batches else np.zeros(0, np.uint64)
        np.save(message["keys"], digests)
        tell({"records": len(digests), "first": first, "end": end, "keys": message["keys"]})


def mosaic_rank(spec: Dict[str, Any]) -> None:
    """A rank of MosaicML Streaming (RANK and the rest in its environment): for each "go",
    an epoch of its DataLoader (made the first time)."""
    from streaming import StreamingDataset
    from torch.utils.data import DataLoader

    tell("ready")
    loader, epoch = None, 0
    for line in sys.stdin:
        if line.strip() != "go":
            break
        if loader is None:
            dataset = StreamingDataset(remote=spec["remote"], local=spec["local"], shuffle=spec["shuffle"],
                                       batch_size=BATCH)
            loader = DataLoader(dataset, batch_size=BATCH, num_workers=spec["workers"])
        first, batches = None, []
        for batch in loader:
            if first is None:
                first = time.monotonic()
            batches.append(batch["record"])
        end = time.monotonic()
        digests = np.fromiter((bytes_digest(record) for batch in batches for record in batch), np.uint64)
        keys = f"{spec['keys']}-epoch{epoch}.npy"
        np.save(keys, digests)
        epoch += 1
        tell({"workers": [{"records": len(digests), "first": first, "end": end, "keys": keys}]})


def mosaic_clean() -> None:
    """Removes the shared memory a Mosaic run that died left behind, which would make the
    next one fail."""
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()


def child(role: str, spec: Optional[str]) -> int:
    try:
        if role == "rank":
            ofconvert_rank(json.loads(spec or "{}"))
        elif role == "mosaic-rank":
            mosaic_rank(json.loads(spec or "{}"))
        elif role == "mosaic-clean":
            mosaic_clean()
        else:
            loader_worker()
    except BaseException:  # said to the parent, which makes it a failed row
        tell({"error": traceback.format_exc()})
        return 1
    return 0


# The parent: layouts, epochs, rows

class Failed(Exception):
    pass


class Row(NamedTuple):
    reader: str
    order: str
    cache: str
    epoch: str
    layout: Layout
    runs: List[Dict[str, Any]]  # each: seconds, records, requests, bytes, firsts, once; or error

    @property
    def error(self) -> Optional[str]:
        return next((run["error"] for run in self.runs if "error" in run), None)

    @property
    def once(self) -> str:
        """"yes" if every run read each record once; else what the first other run read."""
        return self.error or next((run["once"] for run in self.runs if run["once"] != "yes"), "yes")

    @property
    def median(self) -> Dict[str, Any]:
        """The run of median time."""
        return sorted(self.runs, key=lambda run: run["seconds"])[(len(self.runs) - 1) // 2]

    def span(self, key: str, scale: float, form: str) -> str:
        """`key` of the runs, times `scale`: one value, or the least and the most (the counts of
        processes racing for the same object vary from run to run)."""
        values = [run[key] * scale for run in self.runs]
        low, high = format(min(values), form), format(max(values), form)
        return low if low == high else f"{low}–{high}"


def run_layout(commands: List[Tuple[List[str], Dict[str, str]]], layout: Layout, proxy: bucket.CountingProxy,
               reference: Any, log: Path, timeout: float) -> List[Dict[str, Any]]:
    """Starts one process for each rank (`commands`, node by node), then runs the epochs, each
    rank told to start at the same moment. A result for each epoch; an error where one
    failed (the epochs after it not run)."""
    said: "queue.Queue[Tuple[int, Optional[str]]]" = queue.Queue()
    processes: List[subprocess.Popen] = []
    results: List[Dict[str, Any]] = []
    with open(log, "w") as errors:
        try:
            for number, (command, env) in enumerate(commands):
                # A session of its own, which its workers join: on a failure, all are ended together.
                process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                                           text=True, env={**os.environ, **env}, start_new_session=True)
                processes.append(process)
                threading.Thread(target=_listen, args=(process, number, said), daemon=True).start()
            _answers(said, len(processes), timeout + 300)  # the imports of a cold start
            for _ in EPOCHS:
                before = proxy.counts()
                started = time.monotonic()
                for process in processes:
                    assert process.stdin is not None
                    process.stdin.write("go\n")
                    process.stdin.flush()
                answers = _answers(said, len(processes), timeout)
                after = proxy.counts()
                fetched = (after[0] - before[0], after[1] - before[1])
                results.append(_epoch(answers, layout, started, fetched, reference))
            for process in processes:
                assert process.stdin is not None
                process.stdin.close()
            for process in processes:
                process.wait(timeout=60)
        except (Failed, OSError, ValueError, subprocess.TimeoutExpired) as failure:
            errors.flush()
            tail = log.read_text(errors="replace").strip().splitlines()[-12:]
            results.append({"error": str(failure), "log": tail})
        finally:
            # After a failure, a rank's workers may outlive it: its session is ended whole.
            failed = any("error" in result for result in results)
            for process in processes:
                if process.poll() is None or failed:
                    try:
                        os.killpg(process.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    process.wait()
    return results


def _listen(process: subprocess.Popen, number: int, said: "queue.Queue[Tuple[int, Optional[str]]]") -> None:
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(SAID):
            said.put((number, line[len(SAID):]))
    said.put((number, None))


def _answers(said: "queue.Queue[Tuple[int, Optional[str]]]", count: int, timeout: float) -> Dict[int, Any]:
    """One answer from each of `count` processes, within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    answers: Dict[int, Any] = {}
    while len(answers) < count:
        try:
            number, line = said.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise Failed(f"no answer from {count - len(answers)} of {count} ranks within {timeout:.0f} s") from None
        if line is None:
            raise Failed(f"rank process {number} ended")
        answer = json.loads(line)
        if isinstance(answer, dict) and "error" in answer:
            raise Failed(f"rank process {number}: {answer['error'].strip().splitlines()[-1]}")
        answers[number] = answer
    return answers


def _epoch(answers: Dict[int, Any], layout: Layout, started: float, fetched: Tuple[int, int],
           reference: Any) -> Dict[str, Any]:
    workers = [w for number in sorted(answers) for w in answers[number]["workers"]]
    ends = [w["end"] for w in workers]
    # A rank's first batch is its first worker's (where a share is empty, the earliest other).
    firsts = []
    for number in sorted(answers):
        times = [w["first"] for w in answers[number]["workers"] if w["first"] is not None]
        first = answers[number]["workers"][0]["first"]
        firsts.append((first if first is not None else min(times, default=started)) - started)
    nodes = [max(firsts[node * layout.ranks:(node + 1) * layout.ranks]) for node in range(layout.nodes)]
    keys = [w["keys"] for w in workers]
    once = each_once(keys, reference)
    for path in keys:
        os.remove(path)
    return {"seconds": max(ends) - started, "records": sum(w["records"] for w in workers), "requests": fetched[0],
            "bytes": fetched[1], "firsts": nodes, "once": once}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ofconvert_commands(layout: Layout, shuffle: Any, cache_limit: Optional[int], urls: List[str], run: Path, *,
                       env: Dict[str, str]) -> List[Tuple[List[str], Dict[str, str]]]:
    """Each rank's command line and environment."""
    commands = []
    for node in range(layout.nodes):
        for local in range(layout.ranks):
            rank = node * layout.ranks + local
            spec = {"urls": urls, "shuffle": shuffle, "rank": rank, "world": layout.nodes * layout.ranks,
                    "workers": layout.workers, "cache_dir": str(run / f"node{node}" / "cache"),
                    "cache_limit": cache_limit, "keys": str(run / f"keys-rank{rank}")}
            commands.append(([sys.executable, os.path.abspath(__file__), "--rank", json.dumps(spec)], env))
    return commands


def mosaic_commands(python: str, layout: Layout, shuffle: bool, remote: str, run: Path, *,
                    env: Dict[str, str]) -> List[Tuple[List[str], Dict[str, str]]]:
    """Each Mosaic rank's command line and environment, as torchrun would set it."""
    port = free_port()
    world = layout.nodes * layout.ranks
    commands = []
    for node in range(layout.nodes):
        # Mosaic names its shared memory after the first number whose filelocks are not in
        # TMPDIR: the placeholders make node N start at N, where the nodes of a job on
        # hosts of their own would each take 0.
        tmp = run / f"node{node}" / "tmp"
        tmp.mkdir(parents=True)
        for taken in range(node):
            (tmp / f"{taken:06}_barrier_filelock").touch()
        for local in range(layout.ranks):
            rank = node * layout.ranks + local
            spec = {"remote": remote, "local": str(run / f"node{node}" / "local"), "shuffle": shuffle,
                    "workers": layout.workers, "keys": str(run / f"keys-rank{rank}")}
            ranks = {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(local),
                     "LOCAL_WORLD_SIZE": str(layout.ranks), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                     "TMPDIR": str(tmp)}
            command = [python, os.path.abspath(__file__), "--mosaic-rank", json.dumps(spec)]
            commands.append((command, {**env, **ranks}))
    return commands


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--s3-server", help="the ofconvert-bench-s3 binary")
    parser.add_argument("--gen", help="the ofconvert-bench-gen binary (default: beside --s3-server)")
    parser.add_argument("--records", type=int, help=f"records of the corpus written (default {SMALL_RECORDS:,})")
    parser.add_argument("--dir", type=Path, help="a corpus folder ofconvert-bench-gen wrote (DIR/small/tfrecord)")
    parser.add_argument("--rclone", default="rclone", help="the rclone binary (default: rclone on PATH)")
    parser.add_argument("--mosaic-python", help="a Python with mosaicml-streaming (default: no Mosaic rows)")
    parser.add_argument("--readers", default="ofconvert,mosaic",
                        help="whose rows: ofconvert, mosaic or both (default; Mosaic's need --mosaic-python)")
    parser.add_argument("--orders", default="in-order,block,true",
                        help="orders read: in-order, block, true (default all; Mosaic's: in-order and true)")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_RECORDS:,} records, 1x1 and 2x2, no Mosaic: shows that it works")
    parser.add_argument("--runs", type=int, default=1,
                        help="runs of each layout; the table gives the median time and the range of counts (default 1)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds an epoch may take (default 1800)")
    parser.add_argument("--latency", type=float, default=0.0,
                        help="milliseconds the proxy holds back each answer (default 0)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="MB/s of the one link all answers go through (default 0: unlimited)")
    parser.add_argument("--tmp", type=Path, help="where the temporary folder goes (default: the system's)")
    parser.add_argument("--rank", help=argparse.SUPPRESS)
    parser.add_argument("--mosaic-rank", help=argparse.SUPPRESS)
    parser.add_argument("--mosaic-clean", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--loader-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rank or args.mosaic_rank or args.mosaic_clean or args.loader_worker:
        role = "rank" if args.rank else "mosaic-rank" if args.mosaic_rank else (
            "mosaic-clean" if args.mosaic_clean else "worker")
        return child(role, args.rank or args.mosaic_rank)
    if not args.s3_server or not shutil.which(args.s3_server):
        parser.error("give --s3-server: ofconvert-bench-s3 (cargo build --release -p ofconvert-bench --bins)")
    if not shutil.which(args.rclone):
        parser.error(f"no rclone at {args.rclone!r} (apt-get install -y rclone)")
    if args.dir is not None and args.records is not None:
        parser.error("--records is the size of the corpus written; --dir is one written before: give one")
    if args.quick:
        args.records = args.records or QUICK_RECORDS
        args.readers = "ofconvert"
    if args.dir is None:
        args.gen = args.gen or str(Path(args.s3_server).with_name("ofconvert-bench-gen"))
        if not shutil.which(args.gen):
            parser.error(f"no ofconvert-bench-gen at {args.gen!r}: give --gen or --dir")
        args.records = args.records or SMALL_RECORDS
        if args.records < 8:
            parser.error("--records: at least 8 (the corpus has 8 objects)")
    elif not (args.dir / "small" / "tfrecord").is_dir():
        parser.error(f"no {args.dir / 'small' / 'tfrecord'}: give the folder ofconvert-bench-gen wrote")
    if set(args.orders.split(",")) - set(ORDER_NAMES):
        parser.error(f"--orders: some of {', '.join(ORDER_NAMES)}")
    args.orders = [ORDER_NAMES[name] for name in args.orders.split(",")]
    readers = set(args.readers.split(","))
    if not readers or readers - {"ofconvert", "mosaic"}:
        parser.error("--readers: ofconvert, mosaic, or ofconvert,mosaic")
    args.readers = readers
    if "mosaic" not in readers:
        args.mosaic_python = None
    if args.latency < 0 or args.rate < 0 or args.timeout <= 0 or args.runs < 1:
        parser.error("--latency and --rate cannot be negative, --timeout must be positive, --runs at least 1")

    work = Path(tempfile.mkdtemp(prefix="bench-ranks-", dir=args.tmp))
    try:
        with bucket.bucket(args.s3_server, work, args.latency, args.rate) as (endpoint, proxy):
            return run(args, work, endpoint, proxy)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path, endpoint: str, proxy: bucket.CountingProxy) -> int:
    corpus = args.dir
    if corpus is None:
        corpus = work / "corpus"
        # The gen scales its 8 shards of 50,000 records each.
        scale = args.records / SMALL_RECORDS
        subprocess.run([args.gen, str(corpus), "--corpus", "small", "--scale", repr(scale)], check=True,
                       stdout=subprocess.DEVNULL)
    env = bucket.reader_env(proxy.url)
    direct = bucket.rclone_env("direct", endpoint, work / "rclone.conf")
    info = bucket.upload_corpus(args.rclone, direct, "small", corpus / "small" / "tfrecord", work,
                                args.mosaic_python, env)
    layouts = QUICK_LAYOUTS if args.quick else LAYOUTS
    run_dir = work / "run"

    def epochs(reader: str, order: str, cache: str, layout: Layout, reference: Any,
               commands: Callable[[Path], List[Tuple[List[str], Dict[str, str]]]]) -> List[Row]:
        """The layout's epochs, `--runs` times from fresh folders: a row for each epoch."""
        runs: List[List[Dict[str, Any]]] = [[] for _ in EPOCHS]
        for _ in range(args.runs):
            shutil.rmtree(run_dir, ignore_errors=True)
            run_dir.mkdir()
            results = run_layout(commands(run_dir), layout, proxy, reference, work / "children.log", args.timeout)
            for epoch, result in zip(EPOCHS, results):
                runs[EPOCHS.index(epoch)].append(result)
                what = f"{reader}, {order}, cache {cache}, {layout.label}, {epoch}"
                if "error" in result:
                    bucket.say(f"FAILED: {what}: {result['error']}" + "".join("\n  " + line for line in result["log"]))
                    continue
                bucket.say(f"{what}: {result['records']:,} records in {result['seconds']:.2f} s, "
                           f"{result['requests']:,} requests, {result['bytes'] / 1e6:,.1f} MB, "
                           f"each once: {result['once']}")
                if result["once"] != "yes":
                    bucket.say(f"FAILED: {what}: not each record once: {result['once']}")
        return [Row(reader, order, cache, epoch, layout, got) for epoch, got in zip(EPOCHS, runs) if got]

    load_before = os.getloadavg()[0]
    bucket.say(f"load average before: {load_before:.2f} on {os.cpu_count()} cores")
    rows: List[Row] = []
    if "ofconvert" in args.readers:
        reference = reference_digests(info["files"], serialized=False)
        limit = 2 * info["size"] + (64 << 20)
        for order, shuffle in [o for o in ORDERS if o[1] in args.orders]:
            for cache in CACHES:
                for layout in layouts:
                    rows += epochs("RecordStream", order, cache, layout, reference, functools.partial(
                        ofconvert_commands, layout, shuffle, limit if cache == "cache_limit" else None,
                        info["urls"], env=env))
    if "mds_size" in info:
        reference = reference_digests(info["files"], serialized=True)
        for order, shuffle in [o for o in MOSAIC_ORDERS if o[1] in args.orders]:
            for layout in layouts:
                subprocess.run([args.mosaic_python, os.path.abspath(__file__), "--mosaic-clean"],
                               env={**os.environ, **env}, stdout=subprocess.DEVNULL, check=False)
                rows += epochs("Mosaic StreamingDataset", order, "local dir", layout, reference, functools.partial(
                    mosaic_commands, args.mosaic_python, layout, shuffle, "s3://small/mds", env=env))
    load_after = os.getloadavg()[0]
    bucket.say(f"load average after: {load_after:.2f}")

    print_table(rows, info)
    if "mosaic" in args.readers and "mds_size" not in info:
        print(f"\nMosaic StreamingDataset: {info['mosaic']}"
              + (" (give --mosaic-python)" if info["mosaic"] == "not run" else ""))
    print(f"\nThe corpus: {info['records']:,} records, {info['size'] / 1e6:,.1f} MB of TFRecord in "
          f"{len(info['urls'])} objects" + (f", {info['mds_size'] / 1e6:,.1f} MB of MDS shards" if "mds_size" in info
                                            else "") + ".")
    network = "the loopback, unlimited" if not (args.latency or args.rate) else (
        f"{args.latency:g} ms a request" + (f", one link of {args.rate:g} MB/s for every process" if args.rate else ""))
    print(f"Network between the readers and the server: {network}. Load average {load_before:.2f} before, "
          f"{load_after:.2f} after, on {os.cpu_count()} cores: times are those of a machine doing other work, "
          f"not measurements; requests and bytes counted exactly, over {args.runs} run(s) of each layout.")
    failed = [row for row in rows if row.reader == "RecordStream" and row.once != "yes"]
    if failed:
        bucket.say(f"FAILED: {len(failed)} RecordStream row(s) did not read each record exactly once, or failed")
        return 1
    return 0


def print_table(rows: Iterable[Row], info: Dict[str, Any]) -> None:
    print("| reader | order | cache | epoch | layout | processes | records | each once | s | records/s "
          "| first batch s | requests | MB fetched | x dataset |")
    print("| --- | --- | --- | --- | --- | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: |")
    # Grouped by what is read and how, the layouts side by side.
    orders = [label for label, _ in ORDERS]
    for row in sorted(rows, key=lambda r: (r.reader != "RecordStream", orders.index(r.order),
                                             r.cache != "none", EPOCHS.index(r.epoch))):
        layout = row.layout
        head = f"| {row.reader} | {row.order} | {row.cache} | {row.epoch} | {layout.label} | {layout.processes} |"
        if row.error:
            print(f"{head} failed | {row.error} | | | | | | |")
            continue
        size = info["mds_size"] if row.reader.startswith("Mosaic") else info["size"]
        median = row.median
        firsts = median["firsts"]
        first = f"{firsts[0]:.2f}" if len(firsts) == 1 else (
            " / ".join(f"{f:.2f}" for f in firsts) + f" (spread {max(firsts) - min(firsts):.2f})")
        print(f"{head} {row.span('records', 1, ',')} | {row.once} | {median['seconds']:.2f} | "
              f"{median['records'] / median['seconds']:,.0f} | {first} | {row.span('requests', 1, ',')} | "
              f"{row.span('bytes', 1e-6, ',.1f')} | {row.span('bytes', 1 / size, '.2f')} |")

if __name__ == "__main__":
    sys.exit(main())
