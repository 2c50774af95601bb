"""ofconvert.data's RecordStream: two ranks of two loader workers over files of uneven sizes
read every record once (or as many each, with drop_last); orders per epoch and per seed; a
shuffled file mixed from its first batch; a block shuffle's promises on a disk and in a
bucket; a pickled stream keeping its rank; stacked batches; few files mapped at once."""

import os
import pickle

import numpy as np
import pytest

import ofconvert
from ofconvert.data import RecordDataset, RecordStream
from conftest import SIZES
from record_helpers import ids, in_turn, shares


@pytest.mark.parametrize("batch_size", [None, 4])
@pytest.mark.parametrize("shuffle", [False, True])
def test_two_ranks_of_two_workers_read_every_record_once(uneven, batch_size, shuffle):
    total = sum(SIZES)
    every = shares(uneven, 2, 2, shuffle=shuffle, batch_size=batch_size, drop_last=False, seed=5)
    assert sorted(every[0] + every[1]) == list(range(total))
    assert abs(len(every[0]) - len(every[1])) <= 1

    equal = shares(uneven, 2, 2, shuffle=shuffle, batch_size=batch_size, drop_last=True, seed=5)
    assert len(equal[0]) == len(equal[1]) > 0
    assert len(set(equal[0] + equal[1])) == len(equal[0]) * 2
    assert len(equal[0]) == (total // 2 if batch_size is None else total // 2 // batch_size * batch_size)


def test_epochs_differ_and_a_seed_gives_the_same_order(uneven):
    stream = RecordStream(uneven, shuffle=True, seed=7, batch_size=10, drop_last=False)
    first = ids(stream)
    assert ids(stream) == first
    stream.set_epoch(1)
    second = ids(stream)
    assert second != first and sorted(second) == sorted(first) == list(range(sum(SIZES)))
    again = RecordStream(uneven, shuffle=True, seed=7, batch_size=10, drop_last=False)
    again.set_epoch(1)
    assert ids(again) == second
    other = RecordStream(uneven, shuffle=True, seed=8, batch_size=10, drop_last=False)
    assert ids(other) != first


def test_a_shuffled_file_mixes_its_whole_length_from_the_first_records_on(tmp_path):
    path = tmp_path / "one.tfrecord"
    total = 2000
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(total):
            writer.write({"id": i})
    for epoch in range(3):
        stream = RecordStream(path, shuffle=True, seed=1, batch_size=100)
        stream.set_epoch(epoch)
        first = ids([next(iter(stream))])
        # The first 100 records come from every tenth of the file, not from its start.
        tenths = {i * 10 // total for i in first}
        assert tenths == set(range(10)), sorted(first)


def test_a_pickled_stream_carries_the_rank_of_the_process_that_pickled_it(uneven, monkeypatch):
    stream = RecordStream(uneven, batch_size=4)
    monkeypatch.setattr(ofconvert._layout, "_distributed", lambda: (1, 2))
    copy = pickle.loads(pickle.dumps(stream))
    monkeypatch.undo()
    # A spawned worker has no process group: the copy keeps rank 1 of 2.
    assert (copy.rank, copy.world_size) == (1, 2)
    assert ids(copy) == ids(RecordStream(uneven, batch_size=4, rank=1, world_size=2))
    assert (stream.rank, stream.world_size) == (None, None)


def test_batches_are_stacked_and_ragged_features_are_lists(uneven):
    batch = next(iter(RecordStream(uneven, batch_size=6)))
    assert batch["id"].dtype == np.int64 and batch["id"].shape == (6, 1)
    assert batch["pad"] == [[b"x" * (i % 13)] for i in range(6)]
    assert [len(v) for v in batch["v"]] == [i % 3 for i in range(6)]


@pytest.mark.parametrize("where", ["disk", "bucket"])
def test_a_block_shuffle_keeps_every_promise_of_the_stream(uneven, where, request, tmp_path):
    root = uneven
    options = dict(shuffle="block", block_size=16, seed=4)
    if where == "bucket":
        client, _ = request.getfixturevalue("moto_s3")
        for path in sorted(uneven.iterdir()):
            client.put_object(Bucket="data", Key=f"block/{path.name}", Body=path.read_bytes())
        root = "s3://data/block"
        options["cache_dir"] = tmp_path / "cache"
    total = sum(SIZES)
    every = shares(root, 2, 2, batch_size=4, drop_last=False, **options)
    assert sorted(every[0] + every[1]) == list(range(total))
    assert abs(len(every[0]) - len(every[1])) <= 1
    equal = shares(root, 2, 2, batch_size=4, drop_last=True, **options)
    assert len(equal[0]) == len(equal[1]) == total // 8 * 4
    assert len(set(equal[0] + equal[1])) == total // 8 * 8
    # The same order on every rank, another each epoch; a window of 16 records mixes chunks.
    orders = []
    for epoch in range(2):
        stream = RecordStream(root, batch_size=4, drop_last=False, **options)
        stream.set_epoch(epoch)
        orders.append(ids(stream))
    assert orders[0] != orders[1] and sorted(orders[0]) == sorted(orders[1]) == list(range(total))
    assert orders[0] != list(range(total))
    window, chunk = RecordStream(root, **options).block
    assert (window, chunk) == (16, 1)
    for start in range(0, total - 16, 16):
        assert max(orders[0][start:start + 16]) - min(orders[0][start:start + 16]) > 1
    # Resumed mid-epoch on another layout: the rest once.
    taken = [in_turn(root, rank, 2, 2, take=2, epoch=1, batch_size=4, drop_last=False, **options) for rank in range(2)]
    state = RecordStream(root, rank=0, world_size=2, batch_size=4, **options).state_dict(position=8, workers=2)
    state["epoch"] = 1
    rest = in_turn(root, 0, 1, 2, state=state, epoch=1, batch_size=4, drop_last=False, **options)
    assert sorted(taken[0] + taken[1] + rest) == list(range(total))


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="Linux's /proc")
def test_a_shuffled_epoch_over_many_files_keeps_few_of_them_mapped(tmp_path):
    root = tmp_path / "many"
    root.mkdir()
    for number in range(120):
        with ofconvert.TFRecordWriter(root / f"part-{number:03}.tfrecord") as writer:
            writer.write({"id": number})

    def mapped():
        with open("/proc/self/maps") as maps:
            return len({line.split()[-1] for line in maps if str(root) in line})

    stream = RecordStream(root, shuffle=True, batch_size=4)
    assert sorted(ids(stream)) == list(range(120))
    assert mapped() <= 64
    del stream
    ds = RecordDataset(root)
    for i in range(0, 120, 7):
        ds[(i * 37) % 120]
    assert mapped() <= 64
