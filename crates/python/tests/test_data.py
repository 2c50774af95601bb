"""ofconvert.data: RecordDataset gives read()'s records by index for every format and
compression, local and in moto's S3 server, through indexes found, built and kept;
RecordStream splits epochs over ranks and loader workers, shuffles through the index and
resumes where a state says."""

import os
import pickle
import shutil
import stat
import warnings

import numpy as np
import pytest

import ofconvert
from ofconvert.data import RecordDataset, RecordStream
from conftest import TESTDATA

SIZES = (7, 50, 23)


def same_value(x, y):
    if isinstance(x, np.ndarray):
        # Bits, so that NaNs compare.
        return isinstance(y, np.ndarray) and x.dtype == y.dtype and x.tobytes() == y.tobytes()
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(map(same_value, x, y))
    return x == y


def same(a, b):
    assert list(a) == list(b)
    for name in a:
        assert same_value(a[name], b[name]), name


@pytest.fixture
def uneven(tmp_path):
    """Three TFRecord files of 7, 50 and 23 records, each with its global `id`."""
    root = tmp_path / "uneven"
    root.mkdir()
    start = 0
    for number, size in enumerate(SIZES):
        with ofconvert.TFRecordWriter(root / f"part-{number}.tfrecord") as writer:
            for i in range(start, start + size):
                writer.write({"id": i, "pad": b"x" * (i % 13), "v": np.arange(i % 3, dtype=np.float32)})
        start += size
    return root


def ids(items):
    """The ids of records or batches."""
    out = []
    for item in items:
        values = item["id"]
        out.extend(int(v) for v in (values[:, 0] if isinstance(values, np.ndarray) and values.ndim == 2 else values))
    return out


@pytest.mark.parametrize(
    "path",
    ["golden/tutorial.tfrecord", "golden/tutorial.tfrecord.gz", "golden/tutorial.tfrecord.zz",
     "golden/edge.tfrecord", "golden/sequence.tfrecord", "ofrecord/all_kinds", "datasets", "ofdatasets"],
)
def test_every_record_by_index_is_what_read_gives(path, tmp_path):
    source = TESTDATA / path
    copy = tmp_path / "data" / source.name
    copy.parent.mkdir()
    (shutil.copytree if source.is_dir() else shutil.copy)(source, copy)
    expected = list(ofconvert.read(copy))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        ds = RecordDataset(copy, cache_dir=tmp_path / "cache")
    assert len(ds) == len(expected)
    for i in range(len(ds)):
        same(ds[i], expected[i])
    same(ds[-1], expected[-1])
    assert [list(r) for r in ds[2:5]] == [list(r) for r in expected[2:5]]
    with pytest.raises(IndexError):
        ds[len(ds)]


def test_indexes_are_built_once_kept_beside_and_those_of_the_index_command_used(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", data / "a.tfrecord")
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", data / "b.tfrecord")
    ofconvert.index(data / "a.tfrecord")
    made_by_command = (data / "a.tfrecord.idx").read_bytes()
    ds = RecordDataset(data, cache_dir=tmp_path / "cache")
    assert [f["index"] for f in ds.files] == [str(data / "a.tfrecord.idx"), str(data / "b.tfrecord.idx")]
    # Built beside the file, in the command's format.
    assert (data / "b.tfrecord.idx").read_bytes() == made_by_command
    assert not (tmp_path / "cache").exists()
    # An index that does not fit its file is not trusted.
    (data / "a.tfrecord.idx").write_text("0 16\n")
    assert len(RecordDataset(data / "a.tfrecord", cache_dir=tmp_path / "cache")) == 500
    assert (data / "a.tfrecord.idx").read_bytes() == made_by_command


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_place_keeps_its_index_in_the_cache(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", data / "a.tfrecord")
    data.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        ds = RecordDataset(data, cache_dir=tmp_path / "cache")
    finally:
        data.chmod(stat.S_IRWXU)
    assert ds.files[0]["index"].startswith(str(tmp_path / "cache"))


def test_a_compressed_file_is_decompressed_once_with_a_warning_or_refused(tmp_path):
    cache = tmp_path / "cache"
    path = TESTDATA / "golden" / "tutorial.tfrecord.gz"
    with pytest.warns(UserWarning, match="decompressed into"):
        ds = RecordDataset(path, cache_dir=cache)
    assert ds.files[0]["compression"] == "GZIP" and ds.files[0]["data"].startswith(str(cache))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = RecordDataset(path, cache_dir=cache)
    same(again[499], ds[499])
    with pytest.raises(ofconvert.UsageError, match="no random access"):
        RecordDataset(path, cache_dir=tmp_path / "other", decompress=False)


def test_features_decodes_only_those_in_the_order_asked(uneven):
    ds = RecordDataset(uneven, features=["v", "id"])
    assert list(ds[8]) == ["id", "v"]
    assert list(ds.batch([0, 1, 2])) == ["v", "id"]
    assert ds.batch([0, 1, 2])["id"].shape == (3, 1)
    # Variable-length lists stay lists of arrays.
    assert [len(v) for v in ds.batch([0, 1, 2])["v"]] == [0, 1, 2]


def test_damage_is_raised_at_the_record_with_where_it_is(tmp_path):
    path = tmp_path / "labels.tfrecord"
    with ofconvert.TFRecordWriter(path) as writer:
        writer.write({"label": 1})
        writer.write({"label": 2})
    data = bytearray(path.read_bytes())
    data[-5] ^= 1
    path.write_bytes(bytes(data))
    ds = RecordDataset(path)
    assert int(ds[0]["label"][0]) == 1
    with pytest.raises(ofconvert.CorruptRecordError) as raised:
        ds[1]
    assert (raised.value.path, raised.value.offset, raised.value.record) == (str(path), 46, 1)
    # Unchecked, the flipped bit is read as it is.
    assert RecordDataset(path, verify=False)[1]["label"][0] == 3


def test_threads_read_one_dataset_at_once(uneven):
    from concurrent.futures import ThreadPoolExecutor

    ds = RecordDataset(uneven)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: int(ds[i]["id"][0]), list(range(len(ds))) * 20))
    assert got == list(range(len(ds))) * 20


def test_a_dataset_pickles_and_its_copy_reads_the_same(uneven):
    ds = RecordDataset(uneven, features=["id"])
    copy = pickle.loads(pickle.dumps(ds))
    assert len(copy) == len(ds) and copy.files == ds.files
    same(copy[40], ds[40])


def shares(root, world, workers, **options):
    """The ids each rank reads, its workers' streams together."""
    out = []
    for rank in range(world):
        got = []
        for worker in range(workers):
            stream = RecordStream(root, rank=rank, world_size=world, worker=(worker, workers), **options)
            got.extend(ids(stream))
        out.append(got)
    return out


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
    assert state["position"] == len(taken) and state["epoch"] == 2
    resumed = RecordStream(uneven, **options)
    resumed.load_state_dict(pickle.loads(pickle.dumps(state)))
    assert len(resumed) == (len(whole) - len(taken) if batch_size is None else -(-(len(whole) - len(taken)) // 8))
    assert taken + ids(resumed) == whole
    # Behind two loader workers, taking an item from each in turn gives the rank's order.
    workers = [RecordStream(uneven, worker=(w, 2), **options) for w in range(2)]
    for worker in workers:
        worker.set_epoch(2)
    halves = [list(worker) for worker in workers]
    in_turn = [item for pair in zip(*halves) for item in pair] + halves[0][len(halves[1]):]
    assert ids(in_turn) == whole
    with pytest.raises(ofconvert.UsageError, match="seed"):
        RecordStream(uneven, **dict(options, seed=4)).load_state_dict(state)


def test_a_pickled_stream_carries_the_rank_of_the_process_that_pickled_it(uneven, monkeypatch):
    stream = RecordStream(uneven, batch_size=4)
    monkeypatch.setattr(ofconvert.data, "_distributed", lambda: (1, 2))
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


def test_read_batches_are_the_records_stacked():
    path = TESTDATA / "golden" / "tutorial.tfrecord"
    records = list(ofconvert.read(path))
    batches = list(ofconvert.read(path, batch_size=128))
    assert [len(b["feature2"]) for b in batches] == [128, 128, 128, 116]
    rebuilt = np.concatenate([b["feature3"][:, 0] for b in batches])
    assert rebuilt.tobytes() == np.array([r["feature3"][0] for r in records]).tobytes()


def test_a_bucket_reads_by_ranges_and_keeps_its_indexes_in_the_cache(moto_s3, tmp_path, uneven):
    client, _ = moto_s3
    for path in sorted(uneven.iterdir()):
        client.put_object(Bucket="data", Key=f"train/{path.name}", Body=path.read_bytes())
    client.put_object(
        Bucket="data", Key="gz/a.tfrecord.gz",
        Body=(TESTDATA / "golden" / "tutorial.tfrecord.gz").read_bytes(),
    )
    cache = tmp_path / "cache"
    local = RecordDataset(uneven)
    remote = RecordDataset("s3://data/train", cache_dir=cache)
    assert len(remote) == len(local) == sum(SIZES)
    for i in (0, 6, 7, 56, 79):
        same(remote[i], local[i])
    assert all(f["index"].startswith(str(cache)) for f in remote.files)
    keys = [item["Key"] for item in client.list_objects_v2(Bucket="data", Prefix="train/")["Contents"]]
    assert not any(key.endswith(".idx") for key in keys)

    stream = RecordStream("s3://data/train", shuffle=True, seed=2, batch_size=16, drop_last=False, cache_dir=cache)
    assert sorted(ids(stream)) == list(range(sum(SIZES)))
    with pytest.warns(UserWarning, match="decompressed"):
        gz = RecordDataset("s3://data/gz/a.tfrecord.gz", cache_dir=cache)
    same(gz[10], list(ofconvert.read(TESTDATA / "golden" / "tutorial.tfrecord"))[10])
