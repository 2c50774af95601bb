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
import asyncio
import contextlib
import json
import os
import queue
import random
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

BATCH = 256
RESUME = ", load_state_dict to first batch"
PY1E = 'shuffle=True, "py1e"'
ACCESS_KEY = "ofconvert-bench"
SECRET_KEY = "ofconvert-bench-secret"
COUNTS = "/.bench-counts"  # the proxy's own path (no bucket name starts with a dot)


def say(text: str) -> None:
    """Progress, on the standard error (the table goes to the standard output)."""
    print(text, file=sys.stderr, flush=True)


# The counting proxy (in the parent process, on a thread of its own)

class CountingProxy:
    """An HTTP/1.1 forwarder on 127.0.0.1 in front of `upstream` that counts every request and
    the bytes of every response body. Requests and answers go through byte for byte (the Host
    the client signed with included), bodies in pieces as they come; each client connection
    keeps one connection to the server. It parses no more of a message than where it ends,
    on an event loop of its own (a thread): a forwarder that parsed each message on threads
    of its own halved the pace of the reads that go a record a request. GET COUNTS answers
    the counts so far as JSON.

    It can stand for a network as well: `latency` seconds before each answer, and every
    connection's answer bodies through one link of `rate` bytes a second (0: as fast as the
    loopback goes)."""

    def __init__(self, upstream: str, latency: float = 0.0, rate: float = 0.0) -> None:
        host, port = upstream.rsplit("//", 1)[1].rsplit(":", 1)
        self.upstream = (host, int(port))
        self.requests = 0
        self.bytes = 0
        self.latency = latency
        self.rate = rate
        self.link_free = 0.0  # when the modelled link is done with the bytes given it so far
        self.loop = asyncio.new_event_loop()
        started: "queue.Queue[Any]" = queue.Queue()
        self.thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self.thread.start()
        result = started.get()
        if isinstance(result, BaseException):
            raise result
        self.url = f"http://127.0.0.1:{result}"

    def _run(self, started: "queue.Queue[Any]") -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.server = self.loop.run_until_complete(
                asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=256, limit=1 << 20))
        except BaseException as err:  # the caller raises it
            started.put(err)
            return
        started.put(self.server.sockets[0].getsockname()[1])
        self.loop.run_forever()

    def counts(self) -> Tuple[int, int]:
        return self.requests, self.bytes

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    async def _connect(self) -> Tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection(*self.upstream, limit=1 << 20)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer

    async def _serve(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        to_client.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server: Optional[Tuple[asyncio.StreamReader, asyncio.StreamWriter]] = None
        try:
            while True:
                try:
                    head = await client.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return  # the client closed its connection between requests
                method, target = head.split(b" ", 2)[:2]
                fields = _fields(head)
                if target == COUNTS.encode():
                    body = json.dumps({"requests": self.requests, "bytes": self.bytes}).encode()
                    to_client.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                    await to_client.drain()
                    continue
                if b"chunked" in fields.get(b"transfer-encoding", b""):
                    to_client.write(b"HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    await to_client.drain()
                    return  # no reader this bench runs sends a chunked request
                length = int(fields.get(b"content-length", b"0"))
                request = head + (await client.readexactly(length) if length else b"")
                for attempt in range(2):
                    fresh = server is None
                    if server is None:
                        server = await self._connect()
                    try:
                        server[1].write(request)
                        await server[1].drain()
                        answer = await server[0].readuntil(b"\r\n\r\n")
                        break
                    except (asyncio.IncompleteReadError, ConnectionError):
                        # A kept connection the server closed meanwhile: once more on a new one.
                        server[1].close()
                        server = None
                        if fresh or attempt:
                            raise
                self.requests += 1
                if self.latency:
                    await asyncio.sleep(self.latency)
                # Interim answers (100 Continue) come before the real one.
                while int(answer.split(b" ", 2)[1]) < 200:
                    to_client.write(answer)
                    answer = await server[0].readuntil(b"\r\n\r\n")
                status = int(answer.split(b" ", 2)[1])
                reply = _fields(answer)
                to_client.write(answer)
                upstream_reader = server[0]
                if method == b"HEAD" or status in (204, 304):
                    pass
                elif b"content-length" in reply:
                    await self._relay(upstream_reader, to_client, int(reply[b"content-length"]))
                elif b"chunked" in reply.get(b"transfer-encoding", b""):
                    while True:
                        line = await upstream_reader.readuntil(b"\r\n")
                        to_client.write(line)
                        size = int(line.split(b";")[0], 16)
                        if size == 0:
                            while (line := await upstream_reader.readuntil(b"\r\n")) != b"\r\n":
                                to_client.write(line)
                            to_client.write(line)
                            break
                        await self._relay(upstream_reader, to_client, size)
                        to_client.write(await upstream_reader.readexactly(2))
                else:
                    # Delimited by the end of the connection.
                    while chunk := await upstream_reader.read(self._piece()):
                        self.bytes += len(chunk)
                        await self._pace(len(chunk))
                        to_client.write(chunk)
                        await to_client.drain()
                    await to_client.drain()
                    return
                await to_client.drain()
                if b"close" in reply.get(b"connection", b"").lower():
                    server[1].close()
                    server = None
                if b"close" in fields.get(b"connection", b"").lower():
                    return
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            return  # either side cut a message short: neither connection can go on
        finally:
            if server is not None:
                server[1].close()
            to_client.close()

    def _piece(self) -> int:
        # Bytes read from the server at a time: a link's pace in steps of 5 ms at most.
        return max(16 << 10, min(1 << 20, int(self.rate / 200))) if self.rate else 1 << 20

    async def _pace(self, size: int) -> None:
        """Waits until the modelled link has carried `size` more bytes after all before them."""
        if not self.rate:
            return
        now = self.loop.time()
        self.link_free = max(now, self.link_free) + size / self.rate
        await asyncio.sleep(self.link_free - now)

    async def _relay(self, source: asyncio.StreamReader, target: asyncio.StreamWriter, length: int) -> None:
        while length:
            chunk = await source.read(min(length, self._piece()))
            if not chunk:
                raise asyncio.IncompleteReadError(b"", length)
            self.bytes += len(chunk)
            length -= len(chunk)
            await self._pace(len(chunk))
            target.write(chunk)
            await target.drain()


def _fields(head: bytes) -> Dict[bytes, bytes]:
    """The header fields of a message's head, by lower-case name (the last of a repeated one)."""
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if colon:
            fields[name.strip().lower()] = value.strip()
    return fields


def proxy_counts(control: str) -> Tuple[int, int]:
    """(requests, bytes) the proxy counted so far, asked from a reader's process (never
    through a proxy of the environment)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(control + COUNTS, timeout=30) as answer:
        counts = json.loads(answer.read())
    return counts["requests"], counts["bytes"]


class Timed:
    """Times a block and counts what the proxy saw during it."""

    def __init__(self, control: Optional[str]) -> None:
        self.control = control
        self.result: Dict[str, Any] = {}

    def __enter__(self) -> "Timed":
        self.before = proxy_counts(self.control) if self.control else (0, 0)
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        seconds = time.perf_counter() - self.started
        after = proxy_counts(self.control) if self.control else (0, 0)
        self.result = {"seconds": seconds, "requests": after[0] - self.before[0], "bytes": after[1] - self.before[1]}


# Readers (each in a child process of its own)

def batches_count(stream: Any, cap: Optional[int] = None) -> int:
    count = 0
    for batch in stream:
        count += len(next(iter(batch.values())))
        if cap and count >= cap:
            break
    return count


def fresh_cache(spec: Dict[str, Any]) -> str:
    """A cache folder holding the indexes the first open built, and nothing else."""
    shutil.copytree(spec["index_dir"], spec["cache_dir"], ignore=shutil.ignore_patterns("spans"))
    return spec["cache_dir"]


def task_index(spec: Dict[str, Any]) -> Dict[str, Any]:
    from ofconvert.data import RecordDataset

    with Timed(spec["control"]) as timed:
        dataset = RecordDataset(spec["urls"], cache_dir=spec["cache_dir"])
    return {"first open": {**timed.result, "records": len(dataset)}}


def task_stream(spec: Dict[str, Any]) -> Dict[str, Any]:
    from ofconvert.data import RecordStream

    cache = fresh_cache(spec)
    limit = spec.get("cache_limit")
    options = {"cache_limit": limit} if limit else {}
    with Timed(spec["control"]) as cold:
        stream = RecordStream(spec["urls"], shuffle=spec["shuffle"], batch_size=BATCH, drop_last=False,
                              cache_dir=cache, **options)
        records = batches_count(stream, spec.get("cap"))
    results = {"cold" if limit else "none": {**cold.result, "records": records}}
    if limit:
        stream.set_epoch(1)
        with Timed(spec["control"]) as warm:
            records = batches_count(stream)
        results["warm"] = {**warm.result, "records": records}
    return results


def task_resume(spec: Dict[str, Any]) -> Dict[str, Any]:
    from ofconvert.data import RecordStream

    cache = fresh_cache(spec)

    def stream() -> Any:
        return RecordStream(spec["urls"], shuffle=spec["shuffle"], batch_size=BATCH, drop_last=False, cache_dir=cache)

    first = stream()
    state = first.state_dict(position=len(first.dataset) // 2 // BATCH * BATCH, workers=1)
    resumed = stream()
    with Timed(spec["control"]) as timed:
        resumed.load_state_dict(state)
        batch = next(iter(resumed))
    return {"resume": {**timed.result, "records": len(next(iter(batch.values())))}}


def task_getitems(spec: Dict[str, Any]) -> Dict[str, Any]:
    from ofconvert.data import RecordDataset

    dataset = RecordDataset(spec["urls"], cache_dir=fresh_cache(spec))
    rng = random.Random(spec["seed"])
    batches = [rng.sample(range(len(dataset)), min(BATCH, len(dataset))) for _ in range(spec["batches"])]
    records = 0
    with Timed(spec["control"]) as timed:
        for indices in batches:
            records += len(dataset.__getitems__(indices))
    # The bytes of the records read, framing included, from the same files on the disk.
    local = RecordDataset(spec["files"])
    wanted = sum(len(local.raw(i)) + 16 for indices in batches for i in indices)
    return {"none": {**timed.result, "records": records, "wanted": wanted}}


def task_local(spec: Dict[str, Any]) -> Dict[str, Any]:
    from ofconvert.data import RecordStream

    def epoch() -> int:
        return batches_count(RecordStream(spec["files"], shuffle=spec["shuffle"], batch_size=BATCH, drop_last=False))

    records = epoch()  # untimed: indexes written beside the files, page cache warm
    runs = []
    for _ in range(spec["runs"]):
        with Timed(None) as timed:
            counted = epoch()
        if counted != records:
            raise SystemExit(f"{counted} records, then {records}")
        runs.append({**timed.result, "records": counted, "requests": None, "bytes": None})
    return {"local": runs}


def tfrecord_payloads(path: str) -> Iterator[bytes]:
    """The serialized records of an uncompressed TFRecord file (their checksums not checked:
    ofconvert-bench-gen wrote them)."""
    with open(path, "rb") as file:
        while True:
            head = file.read(12)
            if not head:
                return
            (length,) = struct.unpack("<Q", head[:8])
            yield file.read(length)
            file.read(4)


def count_records(files: List[str]) -> int:
    count = 0
    for path in files:
        with open(path, "rb") as file:
            while True:
                head = file.read(12)
                if not head:
                    break
                file.seek(struct.unpack("<Q", head[:8])[0] + 4, os.SEEK_CUR)
                count += 1
    return count


def task_mds_write(spec: Dict[str, Any]) -> Dict[str, Any]:
    from streaming import MDSWriter

    records = 0
    with MDSWriter(out=spec["out"], columns={"record": "bytes"}) as writer:
        for path in spec["files"]:
            for payload in tfrecord_payloads(path):
                writer.write({"record": payload})
                records += 1
    return {"records": records}


def task_mosaic(spec: Dict[str, Any]) -> Dict[str, Any]:
    from streaming import StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()  # a crashed run's leftovers would make this one fail
    with Timed(spec["control"]) as cold:
        dataset = StreamingDataset(remote=spec["remote"], local=spec["local"], shuffle=spec["shuffle"],
                                   shuffle_algo="py1e", batch_size=BATCH)
        records = sum(1 for sample in dataset if sample["record"] is not None)
    results = {"cold": {**cold.result, "records": records}}
    with Timed(spec["control"]) as warm:
        records = sum(1 for sample in dataset if sample["record"] is not None)
    results["warm"] = {**warm.result, "records": records}
    return results


TASKS = {
    "index": task_index, "stream": task_stream, "resume": task_resume, "getitems": task_getitems,
    "local": task_local, "mds_write": task_mds_write, "mosaic": task_mosaic,
}


def worker(spec: Dict[str, Any]) -> None:
    """Runs one task and prints its result as JSON (the child process's side)."""
    try:
        result = TASKS[spec["task"]](spec)
    except ImportError as err:
        result = {"missing": err.name or str(err)}
    print(json.dumps(result))


def in_child(python: str, spec: Dict[str, Any], env: Dict[str, str]) -> Dict[str, Any]:
    if not shutil.which(python):
        return {"missing": python}
    command = [python, os.path.abspath(__file__), "--worker", json.dumps(spec)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env={**os.environ, **env})
    if done.returncode != 0:
        raise SystemExit(f"{spec['task']} ({python}) failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# The parent: server, uploads, rows, table

def files_of(directory: Path) -> List[str]:
    # Indexes that ofconvert.data keeps beside the files are not record files.
    return sorted(
        str(p) for p in directory.iterdir()
        if p.is_file() and not p.name.startswith(".") and not p.name.endswith(".idx")
    )


def start_s3(server: str, root: Path) -> Tuple[subprocess.Popen, str]:
    """The S3 server binary serving `root` on 127.0.0.1, and its endpoint."""
    process = subprocess.Popen([server, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    endpoint = process.stdout.readline().strip()
    if not endpoint.startswith("http://127.0.0.1:"):
        process.kill()
        raise SystemExit(f"{server} said {endpoint!r}, not its endpoint")
    return process, endpoint


@contextlib.contextmanager
def bucket(s3_server: str, work: Path, latency_ms: float, rate_mbs: float) -> Iterator[Tuple[str, CountingProxy]]:
    """The S3 server serving the empty folder WORK/s3, and the counting proxy in front of it
    (`latency_ms`, `rate_mbs`: the network it stands for); stopped on the way out."""
    root = work / "s3"
    root.mkdir()
    server, endpoint = start_s3(s3_server, root)
    proxy: Optional[CountingProxy] = None
    try:
        proxy = CountingProxy(endpoint, latency_ms / 1e3, rate_mbs * 1e6)
        yield endpoint, proxy
    finally:
        if proxy is not None:
            proxy.close()
        if server.stdin:
            server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def rclone_env(remote: str, endpoint: str, config: Path) -> Dict[str, str]:
    """An rclone remote named `remote` for the server at `endpoint`, from the environment."""
    prefix = f"RCLONE_CONFIG_{remote.upper()}_"
    return {
        "RCLONE_CONFIG": str(config), prefix + "TYPE": "s3", prefix + "PROVIDER": "Other",
        prefix + "ENDPOINT": endpoint, prefix + "ACCESS_KEY_ID": ACCESS_KEY,
        prefix + "SECRET_ACCESS_KEY": SECRET_KEY, prefix + "REGION": "us-east-1", prefix + "FORCE_PATH_STYLE": "true",
    }


def rclone(binary: str, env: Dict[str, str], *args: str) -> None:
    # rclone's S3 client fails on an AWS_CA_BUNDLE it cannot fit to its own transport; the
    # server is plain HTTP on 127.0.0.1 and needs none.
    inherited = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
    done = subprocess.run([binary, "-q", *args], capture_output=True, text=True, check=False, env={**inherited, **env})
    if done.returncode != 0:
        raise SystemExit(f"rclone {' '.join(args)} failed:\n{done.stderr}")


def upload(binary: str, env: Dict[str, str], source: Path, names: List[str], target: str, work: Path) -> None:
    listing = work / "upload-list"
    listing.write_text("".join(name + "\n" for name in names))
    rclone(binary, env, "copy", "--files-from-raw", str(listing), str(source), target)


def reader_env(url: str) -> Dict[str, str]:
    """The environment of a reader's process: the bucket at `url` (the proxy), its keys."""
    return {
        "AWS_ENDPOINT_URL": url, "S3_ENDPOINT_URL": url, "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
        "TOKENIZERS_PARALLELISM": "false", "TRANSFORMERS_VERBOSITY": "error",
    }


def upload_corpus(binary: str, direct: Dict[str, str], name: str, folder: Path, work: Path,
                  mosaic_python: Optional[str], env: Dict[str, str]) -> Dict[str, Any]:
    """Uploads the TFRecord files of `folder` to s3://NAME/tfrecord/ and, with a
    `mosaic_python` that has MosaicML Streaming, the MDS shards of the same records to
    s3://NAME/mds/. What was uploaded: files, size, records, urls, and mds_size or, where
    Mosaic is missing, mosaic (why its rows are empty)."""
    files = files_of(folder)
    info: Dict[str, Any] = {
        "files": files, "size": sum(os.path.getsize(f) for f in files), "records": count_records(files),
        "urls": [f"s3://{name}/tfrecord/{Path(f).name}" for f in files],
    }
    say(f"{name}: uploading {len(files)} TFRecord files ({info['size'] / 1e6:,.1f} MB, {info['records']:,} records)")
    upload(binary, direct, folder, [Path(f).name for f in files], f"direct:{name}/tfrecord/", work)
    if mosaic_python is None:
        info["mosaic"] = "not run"
        return info
    mds = work / "mds" / name
    written = in_child(mosaic_python, {"task": "mds_write", "files": files, "out": str(mds)}, env)
    if "missing" in written:
        info["mosaic"] = f"not installed ({written['missing']})"
        return info
    if written["records"] != info["records"]:
        raise SystemExit(f"MDSWriter wrote {written['records']} records of {info['records']}")
    info["mds_size"] = tree_size(mds)
    say(f"{name}: uploading the MDS shards ({info['mds_size'] / 1e6:,.1f} MB)")
    names = [str(p.relative_to(mds)) for p in sorted(mds.rglob("*")) if p.is_file()]
    upload(binary, direct, mds, names, f"direct:{name}/mds/", work)
    shutil.rmtree(mds)
    return info


def tree_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


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
