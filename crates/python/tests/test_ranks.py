"""A job of many processes, one per (rank, loader worker), reading one epoch: each reads a lane
of neighbouring records of its own, so that all of them together fetch the dataset about once
from a bucket, and a state saved by rank 0 after any step resumes with exactly the rest."""

import multiprocessing

import pytest

import ofconvert
from ofconvert import UsageError
from ofconvert.data import RecordStream
from record_helpers import ids


def _lane(url, cache, rank, world, worker, workers, shuffle, cache_limit=None):
    """One process of the job: its ids of one epoch."""
    options = dict(block_size=2000) if shuffle == "block" else {}
    stream = RecordStream(
        url, shuffle=shuffle, seed=3, rank=rank, world_size=world, worker=(worker, workers),
        batch_size=64, drop_last=False, cache_dir=cache, cache_limit=cache_limit, **options,
    )
    return ids(stream)


@pytest.mark.parametrize("shuffle", [False, "block"])
@pytest.mark.parametrize("world, workers", [(1, 4), (2, 2), (4, 1)])
def test_processes_of_a_job_fetch_the_dataset_about_once_between_them(counted, shuffle, world, workers):
    proxy, url, size, cache = counted
    # The indexes are built once beforehand (as a dataset opened before): the epoch alone is
    # counted.
    assert len(ofconvert.data.RecordDataset(url, cache_dir=cache)) == 8000
    proxy.reset()
    layout = [(url, str(cache), rank, world, worker, workers, shuffle) for rank in range(world) for worker in range(workers)]
    with multiprocessing.get_context("spawn").Pool(len(layout)) as pool:
        lanes = pool.starmap_async(_lane, layout).get(timeout=300)
    everything = sum(lanes, [])
    assert sorted(everything) == list(range(8000))
    # Each process 2,000 records (a window of the block shuffle): without a cache, the bytes of
    # the records and of a few requests' framing, not one dataset a process.
    assert size <= proxy.bytes <= 1.1 * size, (proxy.bytes / size, proxy.requests)


def test_two_nodes_each_with_its_cache_fetch_the_dataset_about_once_between_them(counted, tmp_path):
    proxy, url, size, _ = counted
    # Each node's cache holds the indexes (a dataset opened there before); the epoch is counted.
    nodes = [tmp_path / "node-a", tmp_path / "node-b"]
    for cache in nodes:
        assert len(ofconvert.data.RecordDataset(url, cache_dir=cache)) == 8000
    proxy.reset()
    # Ranks 0 and 1 on the first node, 2 and 3 on the second, two loader workers each.
    layout = [
        (url, str(nodes[rank // 2]), rank, 4, worker, 2, "block", "10MB") for rank in range(4) for worker in range(2)
    ]
    with multiprocessing.get_context("spawn").Pool(len(layout)) as pool:
        lanes = pool.starmap_async(_lane, layout).get(timeout=300)
    assert sorted(sum(lanes, [])) == list(range(8000))
    # Each node fetches the chunks its lanes read, whole (for its cache): the chunks a lane
    # boundary between the nodes cuts are the only ones both fetch.
    assert size <= proxy.bytes <= 1.15 * size, (proxy.bytes / size, proxy.requests)


def test_a_state_of_rank_0_resumes_with_exactly_the_rest_after_any_step_even_the_uneven_last(tmp_path):
    path = tmp_path / "a.tfrecord"
    total = 3 * 2 * 4 + 2  # 3 ranks, two whole rounds of 4, two records over
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(total):
            writer.write({"id": i})
    options = dict(world_size=3, batch_size=4, drop_last=False)
    streams = [RecordStream(path, rank=rank, **options) for rank in range(3)]
    ranks = [iter(stream) for stream in streams]
    consumed = []
    for step in range(4):
        for items in ranks:
            consumed += ids([item for item in [next(items, None)] if item is not None])
        state = streams[0].state_dict()
        assert state["position"] == len(consumed), (step, state)
        if len(consumed) < total:
            rest = RecordStream(path, batch_size=4, drop_last=False)
            rest.load_state_dict(state)
            assert sorted(consumed + ids(rest)) == list(range(total)), step
    assert state["position"] == total


def test_a_state_counted_behind_a_loader_needs_its_worker_count(tmp_path):
    path = tmp_path / "a.tfrecord"
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(40):
            writer.write({"id": i})
    stream = RecordStream(path, batch_size=4)
    with pytest.raises(UsageError, match="workers="):
        stream.state_dict(position=8)
    # Two workers took turns: 8 records are the first batch of each worker's lane of 5.
    state = stream.state_dict(position=8, workers=2)
    assert state["passes"] == [dict(world_size=1, workers=2, unit=4, drop_last=True, steps=2)]
    rest = RecordStream(path, batch_size=4)
    rest.load_state_dict(state)
    assert sorted(ids(rest)) == list(range(4, 20)) + list(range(24, 40))
    bad = dict(state, passes=[dict(state["passes"][0], steps=-1)])
    with pytest.raises(UsageError, match="pass of a state"):
        rest.load_state_dict(bad)


def test_a_state_of_version_2_resumes_as_the_prefix_it_counted(tmp_path):
    path = tmp_path / "a.tfrecord"
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(100):
            writer.write({"id": i})
    for shuffle in (False, True, "block"):
        options = dict(shuffle=shuffle, seed=2, batch_size=8, drop_last=False)
        if shuffle == "block":
            options["block_size"] = 32
        whole = ids(RecordStream(path, **options))
        state = RecordStream(path, **options).state_dict()
        del state["passes"]
        state.update(version=2, position=24)
        resumed = RecordStream(path, **options)
        resumed.load_state_dict(state)
        # The records after the first 24 of the epoch's order, each once (in the order of a
        # pass of their own).
        rest = ids(resumed)
        assert sorted(rest) == sorted(whole[24:]), shuffle
        assert rest == whole[24:] or shuffle
