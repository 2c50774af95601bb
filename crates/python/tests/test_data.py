"""ofconvert.data's RecordDataset on local files: read()'s records by index for every format
and compression, through indexes found, built and kept (beside the file, or in the cache for
a read-only place); compressed files copied once; features chosen; damage raised where it
is; threads and pickles; and read()'s batches. The streams are test_data_streams.py's and
test_data_resume.py's, buckets test_data_bucket.py's."""

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
from record_helpers import same


@pytest.mark.parametrize(
    "path",
    ["golden/tutorial.tfrecord", "golden/tutorial.tfrecord.gz", "golden/tutorial.tfrecord.zz",
     "golden/edge.tfrecord", "golden/sequence.tfrecord", "ofrecord/all_kinds", "datasets", "ofdatasets",
     "arrayrecord/examples.array_record"],
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


def test_indexes_are_kept_in_the_cache_and_those_of_the_index_command_used(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", data / "a.tfrecord")
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", data / "b.tfrecord")
    ofconvert.index(data / "a.tfrecord")
    made_by_command = (data / "a.tfrecord.idx").read_bytes()
    ds = RecordDataset(data, cache_dir=tmp_path / "cache")
    indexes = [f["index"] for f in ds.files]
    assert indexes[0] == str(data / "a.tfrecord.idx")
    # Built into the cache, in the command's format: nothing is written beside the data.
    assert indexes[1].startswith(str(tmp_path / "cache"))
    assert open(indexes[1], "rb").read() == made_by_command
    assert sorted(p.name for p in data.iterdir()) == ["a.tfrecord", "a.tfrecord.idx", "b.tfrecord"]
    assert list(RecordDataset(data, cache_dir=tmp_path / "cache")[498:]) == list(ds[498:])
    # An index that does not fit its file is not trusted, and is left as it is.
    (data / "a.tfrecord.idx").write_text("0 16\n")
    assert len(RecordDataset(data / "a.tfrecord", cache_dir=tmp_path / "cache")) == 500
    assert (data / "a.tfrecord.idx").read_text() == "0 16\n"


def test_index_beside_keeps_the_indexes_beside_the_files_on_purpose(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", data / "a.tfrecord")
    (data / "a.tfrecord.idx").write_text("0 16\n")
    ofconvert.index(data / "a.tfrecord", output_dir=tmp_path / "made")
    made_by_command = (tmp_path / "made" / "a.tfrecord.idx").read_bytes()
    stream = RecordStream(data, cache_dir=tmp_path / "cache", index_beside=True)
    assert stream.dataset.files[0]["index"] == str(data / "a.tfrecord.idx")
    # The stale one is made anew, and nothing goes to the cache.
    assert (data / "a.tfrecord.idx").read_bytes() == made_by_command
    assert not (tmp_path / "cache").exists()
    assert sum(1 for _ in stream) == 500


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_place_keeps_its_index_in_the_cache(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", data / "a.tfrecord")
    data.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        ds = RecordDataset(data, cache_dir=tmp_path / "cache", index_beside=True)
    finally:
        data.chmod(stat.S_IRWXU)
    assert ds.files[0]["index"].startswith(str(tmp_path / "cache"))


def test_a_compressed_file_is_decompressed_once_with_a_warning_or_refused(tmp_path):
    cache = tmp_path / "cache"
    path = TESTDATA / "golden" / "tutorial.tfrecord.gz"
    with pytest.warns(UserWarning, match="copied into"):
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


def test_read_batches_are_the_records_stacked():
    path = TESTDATA / "golden" / "tutorial.tfrecord"
    records = list(ofconvert.read(path))
    batches = list(ofconvert.read(path, batch_size=128))
    assert [len(b["feature2"]) for b in batches] == [128, 128, 128, 116]
    rebuilt = np.concatenate([b["feature3"][:, 0] for b in batches])
    assert rebuilt.tobytes() == np.array([r["feature3"][0] for r in records]).tobytes()
