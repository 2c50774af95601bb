"""What bench_bucket.py's readers do, each task in a child process of its own (started as
`bench_bucket.py --worker SPEC`): ofconvert's datasets and streams over the bucket and the
local files, Mosaic's MDS shards written and streamed, each timed with the proxy's counts
of its part alone. The TFRecord files of a corpus read plainly are here too, for the MDS
writer, the parent's count of records and bench_ranks_once.py's digests. Above the proxy
module only.
"""

import json
import os
import random
import shutil
import struct
import time
from typing import Any, Dict, Iterator, List, Optional

from bench_bucket_proxy import proxy_counts

BATCH = 256


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
