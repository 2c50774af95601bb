"""Exactly once through the Python classes: every record of an epoch read once (at most
once with drop_last) over every rank and loader worker, `len()` what a rank yields, rank 0's
state after every step resumed on other layouts, for RecordStream and MixedStream alike,
and persistent loader workers across epochs. The bookkeeping itself is tried on every small
case in Rust (`cargo test`, crates/data/src/stream/exhaustive.rs); this suite tries the
Python that decides which passes a pass follows."""

import os
import pickle

import pytest

import ofconvert
from ofconvert.data import MixedStream, RecordStream
from record_helpers import ids, taken_in_turn


def write(path, first, count):
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(first, first + count):
            writer.write({"id": i})
    return path


@pytest.fixture(scope="module")
def sized(tmp_path_factory):
    """A dataset of N records (ids 0..N) for each N asked."""
    root = tmp_path_factory.mktemp("sized")
    made = {}

    def get(count):
        if count not in made:
            made[count] = write(root / f"n{count}.tfrecord", 0, count)
        return made[count]

    return get


def ranks_read(make, world, workers, take=None, state=None, epoch=0):
    """Each rank's ids behind `workers` loader workers taken in turn (the first `take`
    steps), each stream loaded with `state`; and each rank's len() before its pass."""
    got, said = [], []
    for rank in range(world):
        probe = make(rank, world, 0, workers)
        if state is not None:
            probe.load_state_dict(state)
        probe.set_epoch(epoch)
        said.append(len(probe))
        items = taken_in_turn(lambda worker, rank=rank: make(rank, world, worker, workers), workers, take, state, epoch)
        got.append(items)
    return got, said


def check_once(consumed, rest, expected, drop_last, case):
    """`consumed` and `rest` together read no record twice and (without drop_last) every
    one of `expected`."""
    everything = consumed + rest
    assert len(everything) == len(set(everything)), f"{case}: a record read twice"
    if not drop_last:
        assert sorted(everything) == sorted(expected), f"{case}: records missing"


def stream_maker(root, **options):
    def make(rank, world, worker, workers):
        return RecordStream(root, rank=rank, world_size=world, worker=(worker, workers), **options)

    return make


def test_a_stream_resumed_where_some_ranks_have_nothing_left_reads_no_record_twice(sized):
    # 100 records on 4 ranks in batches of 8 for 3 steps, resumed on 8 ranks: 4 records are
    # left, one each for 4 of the 8 ranks. The other 4 started the epoch over.
    make = stream_maker(sized(100), batch_size=8, drop_last=False)
    first, _ = ranks_read(make, 4, 1, take=3)
    state = make(0, 4, 0, 1).state_dict(position=3 * 8, workers=1)
    assert state["position"] == 96
    rest, said = ranks_read(make, 8, 1, state=state)
    consumed = [i for rank in first for batch in rank for i in ids([batch])]
    resumed = [ids([batch]) for rank in rest for batch in rank]
    check_once(consumed, [i for batch in resumed for i in batch], range(100), False, "4 ranks to 8")
    assert said == [len(rank) for rank in rest] == [1, 1, 1, 1, 0, 0, 0, 0]


def test_a_state_saved_after_an_epochs_last_step_resumes_with_nothing_left(sized):
    make = stream_maker(sized(100), batch_size=8, drop_last=True)
    state = make(0, 4, 0, 1).state_dict(position=3 * 8, workers=1)
    rest, said = ranks_read(make, 4, 1, state=state)
    assert said == [0, 0, 0, 0] and rest == [[], [], [], []]
    # The pass after it: the epoch again.
    stream = make(0, 4, 0, 1)
    stream.load_state_dict(state)
    assert list(stream) == []
    assert len(stream) == 3 and len(ids(stream)) == 24


def mixture_maker(roots, **options):
    def make(rank, world, worker, workers):
        return MixedStream(roots, rank=rank, world_size=world, worker=(worker, workers), **options)

    return make


def test_a_mixtures_state_follows_workers_that_hold_different_numbers_of_batches(tmp_path):
    # 3 sources of 5 records in batches of 2, one rank of 2 workers holding 6 and 3 batches:
    # the states after steps 8 and 9 read a record twice, the last said 14 of 15 were read.
    roots = [write(tmp_path / f"s{n}.tfrecord", 100 * n, 5) for n in range(3)]
    make = mixture_maker(roots, batch_size=2, drop_last=False)
    assert [make(0, 1, worker, 2)._pass([]).lane_units(worker) for worker in range(2)] == [6, 3]
    (whole,), _ = ranks_read(make, 1, 2)
    assert len(whole) == 9
    for steps in range(10):
        state = make(0, 1, 0, 2).state_dict(position=steps * 2, workers=2)
        consumed = ids(whole[:steps])
        assert state["position"] == len(consumed), steps
        (rest,), said = ranks_read(make, 1, 1, state=state)
        assert said == [len(rest)]
        check_once(consumed, ids(rest), ids(whole), False, f"after {steps} steps")


SHUFFLES = (False, True, "block")


def windows(shuffle):
    """Windows of 2 records for a block shuffle, so that small datasets hold several."""
    return {"block_size": 2} if shuffle == "block" else {}


@pytest.mark.parametrize("kind", ["stream", "mixture"])
def test_every_small_case_reads_each_record_once_resumed_after_any_step(sized, tmp_path, kind):
    resumes = ((1, 1), (2, 2), (3, 1))
    tried = 0
    for total in (1, 2, 5, 12):
        if kind == "stream":
            source, records = sized(total), total
            expected = list(range(total))
        else:
            source = [write(tmp_path / f"m{total}-{n}.tfrecord", 1000 * n, total) for n in range(2)]
            # A share of total + 1: one source's records and one of the other's, or more.
            records = total + 1
            expected = None
        for shuffle in SHUFFLES:
            if kind == "mixture":
                # The records of the epoch's shares: what one process reads of a whole pass.
                expected = ids(mixture_maker(source, size=records, shuffle=shuffle, **windows(shuffle))(0, 1, 0, 1))
                assert len(expected) == records == len(set(expected))
            for world, workers, batch_size, drop_last in [
                (w, k, b, d) for w in (1, 2, 3) for k in (1, 2) for b in (1, 2) for d in (False, True)
            ]:
                options = dict(shuffle=shuffle, batch_size=batch_size, drop_last=drop_last, **windows(shuffle))
                if kind == "stream":
                    make = stream_maker(source, **options)
                else:
                    make = mixture_maker(source, size=records, **options)
                whole, said = ranks_read(make, world, workers)
                assert said == [len(rank) for rank in whole]
                if drop_last:
                    assert len(set(said)) == 1, (kind, total, shuffle, world, workers)
                steps_most = max(said)
                for steps in range(steps_most + 1):
                    state = make(0, world, 0, workers).state_dict(position=steps * batch_size, workers=workers)
                    consumed = [i for rank in whole for i in ids(rank[:steps])]
                    for again, workers_again in resumes:
                        rest, said_again = ranks_read(make, again, workers_again, state=state)
                        case = (kind, total, shuffle, world, workers, batch_size, drop_last, steps, again, workers_again)
                        assert said_again == [len(rank) for rank in rest], case
                        if drop_last:
                            assert len(set(said_again)) == 1, case
                        check_once(consumed, [i for rank in rest for i in ids(rank)], expected, drop_last, case)
                        tried += 1
    print(f"{kind}: {tried} resumes")
    assert tried > 1000


def test_persistent_workers_read_each_epoch_whole_in_its_own_order(sized, monkeypatch):
    """A loader with persistent_workers=True keeps its workers' copies of the stream from
    one epoch to the next, each iterated again when a pass starts; set_epoch and
    load_state_dict reach them through the stream's plan."""
    total = 37
    stream = RecordStream(sized(total), shuffle=True, seed=3, rank=0, world_size=1, batch_size=4, drop_last=False)
    stream.set_epoch(0)
    # The workers' copies, made once when the loader started its workers.
    copies = [pickle.loads(pickle.dumps(stream)) for _ in range(2)]
    serving = {}
    monkeypatch.setattr(ofconvert._layout, "_loader_info", lambda: serving.get("info"))
    # The workers here are copies in this process: their parent, the training process, is
    # this process too.
    monkeypatch.setattr(os, "getppid", os.getpid)

    def loader_pass():
        streams = []
        for worker, copy in enumerate(copies):
            serving["info"] = (worker, 2, 777)
            streams.append(iter(copy))
            # A generator starts its body at the first next(): take it now, as the worker.
            streams[-1] = _started(streams[-1])
        serving.pop("info")
        out = []
        while streams:
            for items in list(streams):
                item = next(items, None)
                if item is None:
                    streams.remove(items)
                else:
                    out.append(item)
        return ids(out)

    orders = []
    for epoch in range(3):
        stream.set_epoch(epoch)
        got = loader_pass()
        assert sorted(got) == list(range(total)), epoch
        orders.append(got)
    assert orders[0] != orders[1] != orders[2]
    # A state loaded between epochs reaches the workers too: the rest, then the next epoch.
    state = RecordStream(sized(total), shuffle=True, seed=3, rank=0, world_size=1, batch_size=4).state_dict(
        position=8, workers=1
    )
    stream.load_state_dict(state)
    rest = loader_pass()
    assert len(rest) == total - 8 and len(set(rest)) == len(rest)
    stream.set_epoch(1)
    assert loader_pass() == orders[1]


def _started(items):
    """`items` with its first item taken now: the generator's body runs at once."""
    first = next(items, None)

    def chained():
        if first is not None:
            yield first
            yield from items

    return chained()


def _rank_with_a_worker(blob, epoch, queue):
    """A rank's process: the stream it was handed, a worker forked from it (a persistent
    loader's, started before the epoch), then `epoch` set; the worker's next pass reads the
    plan its parent left."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    stream = pickle.loads(blob)
    started = context.Event()
    worker = context.Process(target=_worker_follows, args=(stream, started, queue))
    worker.start()
    stream.set_epoch(epoch)
    started.set()
    worker.join(timeout=60)


def _worker_follows(stream, started, queue):
    started.wait(timeout=60)
    stream._follow_plan()
    queue.put((stream.epoch, os.getppid()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked processes")
def test_each_ranks_persistent_workers_follow_their_own_ranks_epoch(sized):
    """One stream pickled to every rank's process (as torch.multiprocessing.spawn hands its
    arguments): each rank publishes its own plan, and its workers read their parent's."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    blob = pickle.dumps(RecordStream(sized(12), shuffle=True, batch_size=2))
    ranks = [context.Process(target=_rank_with_a_worker, args=(blob, epoch, queue)) for epoch in (3, 5)]
    for rank in ranks:
        rank.start()
    got = sorted(queue.get(timeout=60) for _ in ranks)
    for rank in ranks:
        rank.join(timeout=60)
    assert [epoch for epoch, _ in got] == [3, 5]
    assert got[0][1] != got[1][1]
