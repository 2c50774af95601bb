"""cache_limit=: the spans a stream reads from a bucket kept on local disk within a limit,
keyed by the object as it was (URL, size, ETag), filled by the index pass over each object
when the dataset fits, shared by processes through files and a lock per entry, checked
through the counting proxy (counting_proxy.py)."""

import multiprocessing
import os
import time
import warnings

import pytest

import ofconvert
from ofconvert import UsageError
from ofconvert.data import RecordDataset, RecordStream
from record_helpers import ids


def held_bytes(file_size):
    """The bytes an entry of the cache holds, its trailer (the hash of each MiB of them,
    their length and a mark, not counted in the limit) left out."""
    hashed = max(file_size - 16, 0)
    return hashed - 8 * -(-hashed // ((1 << 20) + 8))


def spans(cache):
    """The cache's entries (temporary ones too) and the bytes each holds, its trailer not
    counted, seen under the lock its writers take (a stream's threads write while it is
    iterated)."""
    import fcntl

    where = cache / "spans"
    if not where.exists():
        return {}
    with open(where / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return {
                p.name: held_bytes(p.stat().st_size)
                for p in where.iterdir()
                if p.name.endswith(".span") or p.name.startswith(".tmp-")
            }
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def batches(stream):
    return [(b["id"].tobytes(), b["pad"]) for b in stream]


@pytest.mark.parametrize("shuffle", [False, "block"])
def test_a_second_epoch_through_the_cache_fetches_nothing_and_reads_the_same(counted, shuffle):
    proxy, url, size, cache = counted
    options = dict(block_size=2000) if shuffle == "block" else {}
    proxy.reset()
    stream = RecordStream(url, shuffle=shuffle, seed=3, batch_size=64, drop_last=False, cache_dir=cache, cache_limit=2 * size, **options)
    local = RecordStream(sorted(cache.parent.glob("part-*.tfrecord")), shuffle=shuffle, seed=3, batch_size=64, drop_last=False, **options)
    first = batches(stream)
    # The index pass read each object once and kept it: the epoch read it there.
    assert size <= proxy.bytes <= 1.05 * size
    assert sum(spans(cache).values()) <= 2 * size
    proxy.reset()
    stream.set_epoch(1)
    local.set_epoch(1)
    assert batches(stream) == batches(local)
    assert proxy.bytes == 0 and proxy.requests == 0
    assert sorted(ids(stream)) == list(range(8000)) and first


def test_the_cache_stays_within_a_limit_smaller_than_the_dataset(counted):
    proxy, url, size, cache = counted
    limit = size // 2
    stream = RecordStream(url, shuffle="block", block_size=500, batch_size=64, drop_last=False, cache_dir=cache, cache_limit=limit)
    for epoch in range(2):
        stream.set_epoch(epoch)
        seen = []
        for batch in stream:
            seen.extend(int(v) for v in batch["id"][:, 0])
            assert sum(spans(cache).values()) <= limit
        assert sorted(seen) == list(range(8000))
    assert spans(cache) and not any(name.startswith(".tmp-") for name in spans(cache))


def test_a_global_shuffle_and_ds_i_read_through_a_cache_that_holds_the_dataset(counted):
    proxy, url, size, cache = counted
    options = dict(batch_size=64, drop_last=False, cache_dir=cache, cache_limit=size)
    proxy.reset()
    stream = RecordStream(url, shuffle=True, seed=2, **options)
    local = RecordStream(sorted(cache.parent.glob("part-*.tfrecord")), shuffle=True, seed=2, batch_size=64, drop_last=False)
    assert batches(stream) == batches(local)
    # Each object once, by the index pass that kept it, not a request a record.
    assert size <= proxy.bytes <= 1.05 * size, (proxy.bytes, size)
    assert proxy.requests < 50, proxy.requests
    # Without the index pass's bytes (a cache emptied), each piece once (threads wanting one
    # at once wait for it): 125 batches of records from anywhere, far fewer requests.
    import shutil

    shutil.rmtree(cache / "spans")
    proxy.reset()
    stream.set_epoch(2)
    local.set_epoch(2)
    assert batches(stream) == batches(local)
    assert size <= proxy.bytes <= 1.05 * size, (proxy.bytes, size)
    assert proxy.requests < 50, proxy.requests
    ds = RecordDataset(url, cache_dir=cache, cache_limit=size)
    proxy.reset()
    stream.set_epoch(1)
    local.set_epoch(1)
    assert batches(stream) == batches(local)
    assert [int(ds[i]["id"][0]) for i in (7999, 3, 4500)] == [7999, 3, 4500]
    assert proxy.bytes == 0


def test_records_of_one_cached_chunk_or_across_two_read_as_on_the_local_disk(moto_s3, tmp_path):
    client, env = moto_s3
    client.create_bucket(Bucket="twochunks")
    # 20,000 records of a few bytes: the cache's chunks hold 16,384, so the file is two.
    path = tmp_path / "many.tfrecord"
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(20000):
            writer.write({"id": i})
    client.put_object(Bucket="twochunks", Key="many.tfrecord", Body=path.read_bytes())
    options = dict(cache_dir=tmp_path / "cache", cache_limit="10MB")
    ds = RecordDataset("s3://twochunks/many.tfrecord", **options)
    local = RecordDataset(path)
    for warm in (False, True):
        # In one chunk, across the two (a run the cache holds in two pieces), and scattered.
        for indices in ([5, 6, 7], list(range(16380, 16390)), [19999, 0, 16384, 16383]):
            got, want = ds.batch(indices), local.batch(indices)
            assert got["id"].tobytes() == want["id"].tobytes(), (warm, indices)
            assert [int(v) for v in got["id"][:, 0]] == indices
        assert spans(tmp_path / "cache"), "the chunks read are kept"


def test_an_object_replaced_is_read_fresh_never_from_the_cache(counted, moto_s3):
    proxy, url, size, cache = counted
    client, _ = moto_s3
    options = dict(batch_size=64, drop_last=False, cache_dir=cache, cache_limit="10MB")
    assert {b"p" * 150} == {pad[0] for b in RecordStream(url, **options) for pad in b["pad"]}
    before = set(spans(cache))
    # The same size, other bytes: another ETag.
    path = cache.parent / "part-1.tfrecord"
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(2000):
            writer.write({"id": 2000 + i, "pad": b"q" * 150})
    bucket, prefix = url[len("s3://"):].split("/", 1)
    client.put_object(Bucket=bucket, Key=f"{prefix}/part-1.tfrecord", Body=path.read_bytes())
    proxy.reset()
    got = {}
    for b in RecordStream(url, **options):
        got.update(zip((int(v) for v in b["id"][:, 0]), (pad[0] for pad in b["pad"])))
    assert sorted(got) == list(range(8000))
    assert all(pad == (b"q" if 2000 <= i < 4000 else b"p") * 150 for i, pad in got.items())
    assert 0 < proxy.bytes < size
    # The former version's entries went when the new one came.
    assert len(set(spans(cache)) - before) == len(before - set(spans(cache))) >= 1


def _share(url, cache, worker, endpoint):
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    stream = RecordStream(url, shuffle="block", block_size=2000, seed=5, worker=(worker, 2), batch_size=64, drop_last=False, cache_dir=cache, cache_limit="10MB")
    return ids(stream)


def test_two_processes_share_one_cache_and_read_every_record_once(counted):
    proxy, url, size, cache = counted
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        shares = pool.starmap(_share, [(url, str(cache), worker, proxy.url) for worker in range(2)])
    assert sorted(shares[0] + shares[1]) == list(range(8000))
    assert not set(shares[0]) & set(shares[1])
    assert not any(name.startswith(".tmp-") for name in spans(cache))
    # What they left is whole: an epoch here reads it all from the cache.
    stream = RecordStream(url, shuffle="block", block_size=2000, seed=5, batch_size=64, drop_last=False, cache_dir=cache, cache_limit="10MB")
    proxy.reset()
    assert sorted(ids(stream)) == list(range(8000))
    assert proxy.bytes == 0


def test_a_limit_too_small_or_not_a_size_is_refused(counted):
    proxy, url, size, cache = counted
    options = dict(shuffle="block", block_size=2000, cache_dir=cache)
    with pytest.raises(UsageError, match=r"needs \d+ bytes"):
        RecordStream(url, cache_limit=1000, **options)
    for bad in ["20 parsecs", "20G", "", -1, 0, True, 1.5]:
        with pytest.raises(UsageError, match="cache_limit"):
            RecordStream(url, cache_limit=bad, **options)
    # A global shuffle reads from anywhere: the cache must hold the whole dataset.
    with pytest.raises(UsageError, match=rf"needs {size} bytes .*whole dataset"):
        RecordStream(url, shuffle=True, cache_dir=cache, cache_limit=size - 1)
    assert len(RecordStream(url, cache_limit="512MiB", **options).dataset) == 8000
    assert len(RecordDataset(url, cache_dir=cache, cache_limit="1.5GB")) == 8000


@pytest.mark.parametrize("damage", ["cut short", "a byte flipped"])
def test_an_entry_a_crash_or_a_disk_damaged_is_never_read(counted, damage):
    proxy, url, size, cache = counted
    options = dict(shuffle="block", block_size=2000, batch_size=64, drop_last=False, cache_dir=cache, cache_limit="10MB")
    first = batches(RecordStream(url, **options))
    # A writer that died (a temporary file), and an entry damaged: cut to half its length,
    # or at its length with a byte of a record flipped (a length check cannot tell).
    where = cache / "spans"
    name, length = sorted(spans(cache).items())[0]
    (where / f".tmp-{name}").write_bytes(b"\0" * 100)
    with open(where / name, "r+b") as entry:
        if damage == "cut short":
            entry.truncate(length // 2)
        else:
            entry.seek(length // 2)
            byte = entry.read(1)
            entry.seek(length // 2)
            entry.write(bytes([byte[0] ^ 0x20]))
    # The next run: reads the same records, having fetched the damaged entry's bytes again.
    proxy.reset()
    assert batches(RecordStream(url, **options)) == first
    # The damaged entry's bytes (what is read of each object's start to tell its kind aside),
    # kept again: the cache holds the dataset whole, the dead writer's file gone.
    fetched = [n for target, at, n in proxy.bodies if target.endswith(".tfrecord") and at != "bytes=0-4095"]
    assert sum(fetched) == length, fetched
    kept = spans(cache)
    assert sum(kept.values()) == size
    assert not any(n.startswith(".tmp-") for n in kept)


def test_a_cache_that_cannot_keep_what_is_read_says_so_once_and_reading_goes_on(counted):
    proxy, url, size, cache = counted
    # Where the entries would go is a file, not a directory: nothing can be kept there.
    cache.mkdir()
    (cache / "spans").write_bytes(b"")
    stream = RecordStream(url, batch_size=64, drop_last=False, cache_dir=cache, cache_limit="10MB")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in range(2):
            stream.set_epoch(epoch)
            assert sorted(ids(stream)) == list(range(8000))
    told = [w for w in caught if "could not keep" in str(w.message)]
    assert len(told) == 1 and told[0].category is RuntimeWarning, [str(w.message) for w in caught]


def _rank_worker(url, cache, limit, shuffle, rank, worker, endpoint, start, results):
    """One process of a job of 4 ranks of 2 loader workers: opens the dataset and reads its
    share of an epoch, all of them starting together."""
    try:
        os.environ["AWS_ENDPOINT_URL"] = endpoint
        start.wait(timeout=120)
        options = dict(block_size=2000) if shuffle == "block" else {}
        stream = RecordStream(url, shuffle=shuffle, seed=5, rank=rank, world_size=4, worker=(worker, 2), batch_size=64, drop_last=False, cache_dir=cache, cache_limit=limit, **options)
        results.put(("read", ids(stream)))
    except BaseException as err:  # the test says what failed, not only that a process did
        results.put(("failed", repr(err)))


def _processes(target, arguments, timeout=240):
    """Runs `target(*args, start, results)` in a spawned process for each of `arguments`, all
    released together; what each put in `results`, each within `timeout` seconds."""
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(len(arguments)), context.Queue()
    processes = [context.Process(target=target, args=(*args, start, results)) for args in arguments]
    for process in processes:
        process.start()
    try:
        got = [results.get(timeout=timeout) for _ in processes]
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    assert all(kind == "read" for kind, _ in got), got
    return [value for _, value in got]


@pytest.mark.parametrize("shuffle", [False, "block"])
def test_processes_sharing_a_cold_cache_fetch_the_dataset_about_once_index_pass_included(counted, shuffle):
    proxy, url, size, cache = counted
    proxy.reset()
    jobs = [(url, str(cache), size, shuffle, rank, worker, proxy.url) for rank in range(4) for worker in range(2)]
    shares = _processes(_rank_worker, jobs)
    assert sorted(set(i for share in shares for i in share)) == list(range(8000))
    data = sum(n for target, _, n in proxy.bodies if target.endswith(".tfrecord"))
    # Each object's bytes once, by the index pass that kept them (the epoch read them from
    # the cache), and its first 4 KiB, read by its first opener to tell its kind.
    assert data <= size + 4 * 4096, (data, size)
    # Everything: with the listings of the prefix (one a process, about 1.2 kB each) and the
    # answers to asking for an index beside each object (none there), within 5%.
    assert proxy.bytes <= 1.05 * size, (proxy.bytes, size)


def _open_and_read(url, cache, endpoint, results):
    """Opens the dataset and reads an epoch in order; puts the ids read in `results`."""
    try:
        os.environ["AWS_ENDPOINT_URL"] = endpoint
        stream = RecordStream(url, batch_size=64, drop_last=False, cache_dir=cache, cache_limit="10MB")
        results.put(("read", sorted(ids(stream))))
    except BaseException as err:  # the test says what failed, not only that a process did
        results.put(("failed", repr(err)))


def held_locks(cache):
    """The names of the cache's entry locks that some process holds now."""
    import fcntl

    held = []
    for path in sorted((cache / ".locks").glob("*.lock")):
        with open(path, "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(lock, fcntl.LOCK_UN)
            except BlockingIOError:
                held.append(path.name)
    return held


def test_a_process_killed_holding_an_entry_lock_does_not_block_the_next(counted):
    proxy, url, size, cache = counted
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    # Reads of the objects wait: the first process holds their locks while it reads them.
    proxy.flowing.clear()
    holder = context.Process(target=_open_and_read, args=(url, str(cache), proxy.url, results))
    holder.start()
    try:
        for _ in range(300):  # 30 s at most
            if held_locks(cache):
                break
            time.sleep(0.1)
        assert held_locks(cache), "the first process holds the locks of what it reads"
        holder.kill()
        holder.join(timeout=30)
    finally:
        proxy.flowing.set()
    assert holder.exitcode == -9
    # The kernel let go of its locks: the next process reads the dataset, the files the
    # killed one left behind notwithstanding.
    assert not held_locks(cache)
    following = context.Process(target=_open_and_read, args=(url, str(cache), proxy.url, results))
    following.start()
    try:
        kind, got = results.get(timeout=120)
    finally:
        following.join(timeout=30)
        if following.is_alive():
            following.kill()
    assert kind == "read" and got == list(range(8000)), (kind, got)
