"""Records dealt by the counts a dataset's metadata states (a manifest's parts, a TFDS folder's
shardLengths): a process opens each object in a bucket with one small read and indexes only
the objects its lanes read, so that two nodes with caches of their own fetch the dataset
about once between them, the index passes counted; a wrong count fails the read that finds it."""

import itertools
import json
import multiprocessing

import pytest

import ofconvert
from counting_proxy import CountingProxy
from ofconvert import Error as OfconvertError
from ofconvert.data import RecordDataset, RecordStream
from record_helpers import ids

FILES, RECORDS = 8, 1000
_BUCKETS = itertools.count()


def _tfrecords(root, name):
    root.mkdir(parents=True)
    for number in range(FILES):
        with ofconvert.TFRecordWriter(root / name(number)) as writer:
            for i in range(RECORDS):
                writer.write({"id": number * RECORDS + i, "pad": b"p" * 150})


def _tfds_name(number):
    return f"ds-train.tfrecord-{number:05}-of-{FILES:05}"


def _info(lengths):
    return json.dumps({"name": "ds", "version": "1.0.0", "splits": [
        {"name": "train", "shardLengths": [str(n) for n in lengths], "numBytes": "0"}]})


@pytest.fixture(params=["manifest", "tfds"])
def stated(request, moto_s3, tmp_path, monkeypatch):
    """A bucket of its own (a process keeps one client per bucket) holding 8 files of 1,000
    records whose counts are stated: OFRecord parts with the manifest tf2of wrote, or TFDS
    shards beside their dataset_info.json; reached through a counting proxy."""
    client, env = moto_s3
    bucket = f"stated{next(_BUCKETS)}"
    client.create_bucket(Bucket=bucket)
    if request.param == "manifest":
        _tfrecords(tmp_path / "in", lambda number: f"part-{number}.tfrecord")
        ofconvert.tf2of(tmp_path / "in", tmp_path / "of")
        folder = tmp_path / "of"
    else:
        folder = tmp_path / "tfds"
        _tfrecords(folder, _tfds_name)
        (folder / "dataset_info.json").write_text(_info([RECORDS] * FILES))
    size = 0
    for path in sorted(folder.iterdir()):
        client.put_object(Bucket=bucket, Key=f"d/{path.name}", Body=path.read_bytes())
        size += path.stat().st_size if "part-" in path.name or ".tfrecord-" in path.name else 0
    proxy = CountingProxy(env["AWS_ENDPOINT_URL"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    yield proxy, f"s3://{bucket}/d", size, client, bucket
    proxy.server.shutdown()
    proxy.server.server_close()


def _lane(url, cache, rank, world, worker, workers):
    """One process of the job: its ids of one epoch, in order, through its node's cache."""
    stream = RecordStream(
        url, rank=rank, world_size=world, worker=(worker, workers), batch_size=64,
        drop_last=False, cache_dir=cache, cache_limit="10MB",
    )
    return ids(stream)


def test_a_dataset_with_stated_counts_opens_without_reading_its_objects(stated, tmp_path):
    proxy, url, size, *_ = stated
    ds = RecordDataset(url, cache_dir=tmp_path / "cache")
    assert len(ds) == FILES * RECORDS
    assert [f["stated"] for f in ds.files] == [RECORDS] * FILES
    assert all(f["index"] is None for f in ds.files)
    # A few kilobytes an object (its kind and first record), no object read whole.
    assert proxy.bytes < 0.05 * size, (proxy.bytes, size)
    # A record past an object's first makes that object's index alone: one object read.
    opened = proxy.bytes
    assert ds[RECORDS + 5]["id"] == [RECORDS + 5]
    assert size / FILES <= proxy.bytes - opened <= 1.1 * size / FILES, (proxy.bytes - opened, size / FILES)
    assert len(list((tmp_path / "cache").rglob("*.idx"))) == 1
    assert ds[0]["id"] == [0] and ds[FILES * RECORDS - 1]["id"] == [FILES * RECORDS - 1]
    # Counted by reading instead: every object indexed when the dataset is opened.
    counted = RecordDataset(url, cache_dir=tmp_path / "other", stated_counts=False)
    assert len(counted) == FILES * RECORDS
    assert all(f["stated"] is None and f["index"] is not None for f in counted.files)


def test_two_nodes_with_caches_of_their_own_fetch_the_dataset_about_once_indexes_counted(stated, tmp_path):
    proxy, url, size, *_ = stated
    # Fresh caches: the passes that index the objects are counted with the epoch.
    nodes = [tmp_path / "node-a", tmp_path / "node-b"]
    # Ranks 0 and 1 on the first node, 2 and 3 on the second, two loader workers each.
    layout = [(url, str(nodes[rank // 2]), rank, 4, worker, 2) for rank in range(4) for worker in range(2)]
    with multiprocessing.get_context("spawn").Pool(len(layout)) as pool:
        lanes = pool.starmap_async(_lane, layout).get(timeout=300)
    assert sorted(sum(lanes, [])) == list(range(FILES * RECORDS))
    # Each node reads (to index them, keeping what it reads for the epoch) the objects its
    # ranks read alone: without stated counts, each read every object, 2x the dataset.
    assert size <= proxy.bytes <= 1.15 * size, (proxy.bytes / size, proxy.requests)


def test_a_stated_count_that_is_wrong_fails_the_read_that_finds_it(moto_s3, tmp_path):
    client, _ = moto_s3
    folder = tmp_path / "tfds"
    _tfrecords(folder, _tfds_name)
    # TFDS's own Parquet writer has been seen to count records its shards do not hold.
    (folder / "dataset_info.json").write_text(_info([RECORDS] * 3 + [RECORDS + 1] + [RECORDS] * 4))
    for path in folder.iterdir():
        client.put_object(Bucket="data", Key=f"wrong/{path.name}", Body=path.read_bytes())
    url = "s3://data/wrong"
    ds = RecordDataset(url, cache_dir=tmp_path / "cache")
    assert len(ds) == FILES * RECORDS + 1
    assert ds[5]["id"] == [5]
    with pytest.raises(OfconvertError, match=r"ds-train.tfrecord-00003-of-00008.*holds 1000 records.*states 1001"):
        ds[3 * RECORDS + 7]
    # A stream that reaches that object fails there, as loudly.
    with pytest.raises(OfconvertError, match="states 1001"):
        list(RecordStream(url, cache_dir=tmp_path / "cache", batch_size=100))
    counted = RecordDataset(url, cache_dir=tmp_path / "cache", stated_counts=False)
    assert len(counted) == FILES * RECORDS
    assert counted[3 * RECORDS + 7]["id"] == [3 * RECORDS + 7]
