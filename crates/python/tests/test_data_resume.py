"""ofconvert.data's RecordStream resumed where a state says: with exactly the rest of the
epoch, on another layout of ranks and loader workers, once behind forked workers and not in
the pass after; a state of another dataset, order or version refused."""

import itertools
import os
import pickle
import shutil

import pytest

import ofconvert
from ofconvert.data import RecordStream
from conftest import SIZES
from record_helpers import ids, in_turn


@pytest.mark.parametrize("batch_size", [None, 8])
def test_a_stream_resumes_with_exactly_the_rest_of_the_epoch(uneven, batch_size):
    options = dict(shuffle=True, seed=3, batch_size=batch_size, drop_last=False, rank=1, world_size=2)
    stream = RecordStream(uneven, **options)
    stream.set_epoch(2)
    whole = ids(stream)
    stream.set_epoch(2)
    items = iter(stream)
    taken = ids([next(items) for _ in range(3)])
    state = stream.state_dict()
    # Every rank of the two has consumed as many: the position counts them all.
    assert state["position"] == 2 * len(taken) and state["epoch"] == 2
    resumed = RecordStream(uneven, **options)
    resumed.load_state_dict(pickle.loads(pickle.dumps(state)))
    assert len(resumed) == (len(whole) - len(taken) if batch_size is None else -(-(len(whole) - len(taken)) // 8))
    assert taken + ids(resumed) == whole
    # Behind two loader workers, each reads a run of the rank's items: taken one from each in
    # turn, they are the rank's records, each once. The state of 3 items taken so by each
    # rank (two of its first worker's, one of its second's) resumes with the rest.
    layout = {k: v for k, v in options.items() if k not in ("rank", "world_size")}
    behind = in_turn(uneven, 1, 2, 2, epoch=2, **layout)
    assert sorted(behind) == sorted(whole) and behind != whole
    first = sum((in_turn(uneven, rank, 2, 2, take=3, epoch=2, **layout) for rank in range(2)), [])
    unit = batch_size or 1
    saved = RecordStream(uneven, **options).state_dict(position=3 * unit, workers=2)
    saved["epoch"] = 2
    assert saved["position"] == 2 * 3 * unit == len(first)
    rest = []
    for rank in range(2):
        resumed = RecordStream(uneven, **dict(options, rank=rank))
        resumed.load_state_dict(saved)
        rest += ids(resumed)
    assert sorted(first + rest) == list(range(sum(SIZES)))
    with pytest.raises(ofconvert.UsageError, match="seed"):
        RecordStream(uneven, **dict(options, seed=4)).load_state_dict(state)


@pytest.mark.parametrize("shuffle", [False, True, "block"])
def test_a_state_saved_on_two_ranks_resumes_on_four_or_one_with_the_rest_once(uneven, shuffle):
    options = dict(shuffle=shuffle, seed=3, batch_size=4, drop_last=False)
    if shuffle == "block":
        options["block_size"] = 16
    # Two ranks of two workers each, three batches a rank, then a checkpoint of rank 1.
    taken = [in_turn(uneven, rank, 2, 2, take=3, epoch=1, **options) for rank in range(2)]
    stream = RecordStream(uneven, rank=1, world_size=2, **options)
    stream.set_epoch(1)
    state = stream.state_dict(position=3 * 4, workers=2)
    assert state["position"] == 24 and state["epoch"] == 1
    before = taken[0] + taken[1]
    for world, workers in ((4, 2), (1, 1), (3, 2)):
        rest = [in_turn(uneven, rank, world, workers, state=state, epoch=1, **options) for rank in range(world)]
        assert sorted(before + sum(rest, [])) == list(range(sum(SIZES))), (world, workers)
    # The same seed and layout give the same order.
    once, again = RecordStream(uneven, **options), RecordStream(uneven, **options)
    once.load_state_dict(state)
    again.load_state_dict(state)
    assert ids(once) == ids(again)


def test_a_state_of_another_dataset_or_order_is_refused(uneven, tmp_path):
    stream = RecordStream(uneven, shuffle="block", block_size=16, batch_size=4)
    state = stream.state_dict(position=8, workers=1)
    for other, match in (
        (dict(shuffle=True), "shuffle"),
        (dict(shuffle="block", block_size=32), "block_size"),
        (dict(shuffle="block", block_size=16, seed=1), "seed"),
    ):
        with pytest.raises(ofconvert.UsageError, match=match):
            RecordStream(uneven, batch_size=4, **other).load_state_dict(state)
    changed = tmp_path / "changed"
    shutil.copytree(uneven, changed)
    with ofconvert.TFRecordWriter(changed / "part-1.tfrecord") as writer:
        for i in range(50):
            writer.write({"id": i, "pad": b"y" * 20})
    with pytest.raises(ofconvert.UsageError, match="another dataset"):
        RecordStream(changed, shuffle="block", block_size=16, batch_size=4).load_state_dict(state)
    old = {"epoch": 0, "position": 4, "seed": 0, "shuffle": False, "records": sum(SIZES)}
    with pytest.raises(ofconvert.UsageError, match="version"):
        RecordStream(uneven).load_state_dict(old)
    # A copy of the same files elsewhere is the same dataset.
    copy = tmp_path / "copy"
    shutil.copytree(uneven, copy)
    again = RecordStream(copy, shuffle="block", block_size=16, batch_size=4)
    again.load_state_dict(state)
    assert len(again) == (sum(SIZES) - 8) // 4


_LOADER_PASSES = itertools.count(1000)


def _loader_pass(stream, workers):
    """One pass of `stream` behind `workers` forked loader workers: the ids each read. The
    workers of a pass share the seed a loader draws for it."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    seed = next(_LOADER_PASSES)

    def work(worker):
        ofconvert._layout._loader_info = lambda: (worker, workers, seed)
        queue.put(ids(stream))

    processes = [context.Process(target=work, args=(w,)) for w in range(workers)]
    for process in processes:
        process.start()
    got = sorted(sum((queue.get(timeout=60) for _ in processes), []))
    for process in processes:
        process.join(timeout=60)
    return got


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers")
def test_a_resumed_epoch_behind_loader_workers_skips_only_once(uneven):
    options = dict(batch_size=4, drop_last=False, rank=0, world_size=1)
    stream = RecordStream(uneven, **options)
    stream.load_state_dict(RecordStream(uneven, **options).state_dict(position=20, workers=1))
    # The resumed pass: the rest of the epoch; the next pass of the same epoch, whole.
    assert _loader_pass(stream, 2) == list(range(20, sum(SIZES)))
    assert _loader_pass(stream, 2) == list(range(sum(SIZES)))
    assert _loader_pass(stream, 2) == list(range(sum(SIZES)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers")
def test_processes_forked_between_a_resume_and_its_pass_do_not_count_as_its_workers(uneven):
    import multiprocessing

    options = dict(batch_size=4, drop_last=False, rank=0, world_size=1)
    stream = RecordStream(uneven, **options)
    stream.load_state_dict(RecordStream(uneven, **options).state_dict(position=20, workers=1))
    # Another loader's workers, a pool, a subprocess: forks and copies of the stream in between.
    for _ in range(3):
        process = multiprocessing.get_context("fork").Process(target=len, args=([],))
        process.start()
        process.join(timeout=60)
    pickle.dumps(stream)
    assert _loader_pass(stream, 2) == list(range(20, sum(SIZES)))
    # set_epoch of the same epoch once the resumed pass began: the epoch from its start.
    stream.set_epoch(stream.epoch)
    assert _loader_pass(stream, 2) == list(range(sum(SIZES)))
