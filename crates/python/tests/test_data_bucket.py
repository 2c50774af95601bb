"""ofconvert.data over a bucket of moto's S3 server: records read by ranges, their indexes
kept in the cache; and through the counting proxy (counting_proxy.py), what each read costs:
a shuffled batch within twice its records' bytes, each object asked once for its size and
version, no request from an unpickled copy, requests side by side, a first batch fetched
before what comes after it, an epoch fetching each byte once, failed reads retried as often
as `retries` says and an epoch read whole through them."""

import itertools
import pickle
import warnings

import pytest

import ofconvert
from ofconvert.data import RecordDataset, RecordStream
from conftest import SIZES, TESTDATA
from record_helpers import ids, same


def test_a_bucket_reads_by_ranges_and_keeps_its_indexes_in_the_cache(moto_s3, tmp_path, uneven):
    client, _ = moto_s3
    for path in sorted(uneven.iterdir()):
        client.put_object(Bucket="data", Key=f"train/{path.name}", Body=path.read_bytes())
    client.put_object(
        Bucket="data", Key="gz/a.tfrecord.gz",
        Body=(TESTDATA / "golden" / "tutorial.tfrecord.gz").read_bytes(),
    )
    cache = tmp_path / "cache"
    with warnings.catch_warnings():
        # Local files indexed now are no objects read from a store.
        warnings.simplefilter("error")
        local = RecordDataset(uneven)
    with pytest.warns(UserWarning, match=r"3 object\(s\) in a store read whole to index them .*ofconvert index.*ofconvert-manifest.json.*dataset_info.json"):
        remote = RecordDataset("s3://data/train", cache_dir=cache)
    # Indexed once: opened again, nothing is read whole, and nothing is said.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RecordDataset("s3://data/train", cache_dir=cache)
    assert len(remote) == len(local) == sum(SIZES)
    # The way the warning gives: `ofconvert index` writes the indexes beside the objects,
    # and a machine with a cache of its own then reads those, no object whole.
    for path in sorted(uneven.iterdir()):
        client.put_object(Bucket="data", Key=f"indexed/{path.name}", Body=path.read_bytes())
    ofconvert.index("s3://data/indexed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        indexed = RecordDataset("s3://data/indexed", cache_dir=tmp_path / "another")
    assert [f["index"] for f in indexed.files] == [f"s3://data/indexed/{p.name}.idx" for p in sorted(uneven.iterdir())]
    same(indexed[56], local[56])
    for i in (0, 6, 7, 56, 79):
        same(remote[i], local[i])
    assert all(f["index"].startswith(str(cache)) for f in remote.files)
    keys = [item["Key"] for item in client.list_objects_v2(Bucket="data", Prefix="train/")["Contents"]]
    assert not any(key.endswith(".idx") for key in keys)

    stream = RecordStream("s3://data/train", shuffle=True, seed=2, batch_size=16, drop_last=False, cache_dir=cache)
    assert sorted(ids(stream)) == list(range(sum(SIZES)))
    with pytest.warns(UserWarning, match="copied into"):
        gz = RecordDataset("s3://data/gz/a.tfrecord.gz", cache_dir=cache)
    same(gz[10], list(ofconvert.read(TESTDATA / "golden" / "tutorial.tfrecord"))[10])


def _firsts(ds):
    """The index of each file's first record."""
    starts, at = [], 0
    for f in ds.files:
        starts.append(at)
        at += f["records"]
    return starts


def test_a_shuffled_batch_from_a_bucket_fetches_little_more_than_its_records(counted):
    proxy, url, _, cache = counted
    ds = RecordDataset(url, cache_dir=cache)
    local = RecordDataset(sorted(p for p in cache.parent.glob("part-*.tfrecord")))
    import random

    indices = random.Random(1).sample(range(len(ds)), 256)
    wanted = sum(len(local.raw(i)) + 16 for i in indices)
    # The keys every batch holds are looked for at the first batch, in the first record of
    # each file, a request each, and kept in the cache.
    assert ds._native.keys(look=False) is None
    proxy.reset()
    assert ds._native.keys() == ["id", "pad"]
    first_of_each = sum(len(local.raw(i)) + 16 for i in _firsts(local))
    assert first_of_each <= proxy.bytes <= 2 * first_of_each, (proxy.bytes, proxy.requests)
    assert proxy.requests == len(local.files), proxy.seen
    assert len(list(cache.glob("*.keys"))) == 1
    again = RecordDataset(url, cache_dir=cache)
    proxy.reset()
    assert again._native.keys() == ["id", "pad"]
    assert proxy.requests == 0, proxy.seen
    proxy.reset()
    batch = ds.batch(indices)
    assert [int(v) for v in batch["id"][:, 0]] == indices
    assert wanted <= proxy.bytes <= 2 * wanted, (proxy.bytes, wanted, proxy.requests)
    proxy.reset()
    got = ds.__getitems__(indices[:64])
    assert [int(r["id"][0]) for r in got] == indices[:64]
    assert proxy.bytes <= 2 * sum(len(local.raw(i)) + 16 for i in indices[:64])


@pytest.mark.parametrize("named", ["by prefix", "each by its URL"])
def test_a_dataset_in_a_bucket_opened_again_asks_each_object_once_for_its_size_and_version(counted, named):
    proxy, url, _, cache = counted
    if named != "by prefix":
        # The listing of a URL that names an object asks for its size and ETag; opening it
        # does not ask again.
        url = [f"{url}/part-{number}.tfrecord" for number in range(4)]
    first = RecordDataset(url, cache_dir=cache)
    proxy.reset()
    again = RecordDataset(url, cache_dir=cache)
    assert len(again) == len(first) == 8000
    heads = sorted(target for method, target, _ in proxy.seen if method == "HEAD")
    objects = sorted({target for method, target, _ in proxy.seen if method == "HEAD"})
    # One HEAD an object (size and ETag together); the cache's indexes of those very versions
    # are read before any index beside the objects is asked for.
    assert heads == objects and len(objects) == 4, proxy.seen
    assert not [target for _, target, _ in proxy.seen if ".idx" in target], proxy.seen


def test_a_dataset_from_a_bucket_unpickled_in_a_worker_sends_the_bucket_no_request(counted):
    proxy, url, _, cache = counted
    ds = RecordDataset(url, cache_dir=cache)
    proxy.reset()
    # What a loader's worker does with the dataset its process was handed: each object's
    # size, version and kind come with it, its index from the cache.
    copy = pickle.loads(pickle.dumps(ds))
    assert proxy.seen == []
    assert len(copy) == len(ds) == 8000
    assert [copy.raw(i) for i in (0, 2500, 7999)] == [ds.raw(i) for i in (0, 2500, 7999)]
    assert [f["path"] for f in copy.files] == [f["path"] for f in ds.files]


def test_a_batch_far_apart_in_a_bucket_is_sent_64_requests_at_a_time(counted):
    proxy, url, _, cache = counted
    ds = RecordDataset(url, cache_dir=cache)
    local = RecordDataset(sorted(cache.parent.glob("part-*.tfrecord")))
    import random

    # 256 records of 8,000: far apart, a request each. The first answers wait for 33
    # requests in flight together (10 s at most: 32 side by side never make 33).
    indices = random.Random(2).sample(range(len(ds)), 256)
    proxy.reset()
    proxy.gather = 33
    got = ds.__getitems__(indices)
    proxy.gather = 0
    assert [r["id"] for r in got] == [local[i]["id"] for i in indices]
    assert 32 < proxy.most_in_flight <= 64, proxy.most_in_flight


def test_a_shuffled_epoch_from_a_bucket_fetches_its_first_batch_before_reading_further_ahead(counted):
    proxy, url, _, cache = counted
    stream = RecordStream(url, shuffle=True, seed=4, batch_size=64, drop_last=False, cache_dir=cache)
    local = RecordStream(sorted(cache.parent.glob("part-*.tfrecord")), shuffle=True, seed=4, batch_size=64)
    first = {int(v) for v in next(iter(local))["id"][:, 0]}
    # The record each request starts at (a request reads a record, or neighbours merged,
    # from the first one's start), from the indexes the local copies' dataset kept.
    starts = {}
    for number, file in enumerate(local.dataset.files):
        assert file["path"].endswith(f"part-{number}.tfrecord"), file
        lines = open(file["index"]).read().split()
        for i, offset in enumerate(lines[::2]):
            starts[(f"/c/part-{number}.tfrecord", int(offset))] = number * 2000 + i
    proxy.reset()
    batches = iter(stream)
    assert {int(v) for v in next(batches)["id"][:, 0]} == first
    next(batches)  # the second batch's requests have been sent by now, whatever the timing
    firsts = [
        starts[(target[target.index("/c/"):], int(header.split("=")[1].split("-")[0]))] in first
        for method, target, header in proxy.seen
        if method == "GET" and header
    ]
    # Every request for the first batch's records came before any for the batches after it.
    assert True in firsts and False in firsts, firsts
    assert firsts == sorted(firsts, reverse=True), firsts


def test_a_block_shuffle_resumed_inside_a_window_fetches_its_first_batch_before_the_window(counted):
    proxy, url, _, cache = counted
    # Windows of 2,000 records, chunks of 125 (about 23 KB): a resume at record 1,000 is
    # halfway through the first window, whose every chunk the next batch draws from.
    options = dict(shuffle="block", block_size=2000, seed=4, batch_size=64, drop_last=False)
    local = RecordStream(sorted(cache.parent.glob("part-*.tfrecord")), **options)
    state = local.state_dict(position=1000, workers=1)
    local.load_state_dict(state)
    want = ids(local)
    stream = RecordStream(url, cache_dir=cache, **options)
    stream.load_state_dict(state)
    proxy.reset()
    batches = iter(stream)
    first = ids([next(batches)])
    assert first == want[:64]
    # The rest of the epoch, each record once, in the epoch's order.
    assert first + ids(batches) == want
    ranges = [header.split("=")[1].split("-") for method, _, header in proxy.seen if method == "GET" and header]
    spans = [int(end) - int(start) + 1 for start, end in ranges]
    # A request a record (or a few neighbours merged) for the first batch, then the window's
    # chunks, and never a record's request once the chunks are asked for.
    chunks = [span > 10_000 for span in spans]
    assert chunks == sorted(chunks) and chunks.count(False) >= 32 and chunks.count(True) >= 16, spans


@pytest.mark.parametrize("shuffle", [False, "block"])
def test_an_epoch_from_a_bucket_in_order_or_block_shuffled_fetches_each_byte_once(counted, shuffle):
    proxy, url, size, cache = counted
    options = dict(block_size=2000) if shuffle == "block" else {}
    stream = RecordStream(url, shuffle=shuffle, batch_size=64, drop_last=False, cache_dir=cache, **options)
    proxy.reset()
    assert sorted(ids(stream)) == list(range(8000))
    assert size <= proxy.bytes <= 1.05 * size, (proxy.bytes, size, proxy.requests)
    # A request a chunk of records, not one a record or a batch.
    assert proxy.requests <= 8000 // stream.block[1] + 8 if shuffle else proxy.requests < 50


@pytest.mark.parametrize("counted", [10], indirect=True)
@pytest.mark.parametrize("shuffle", ["block", True, False])
def test_an_epoch_through_a_proxy_failing_a_tenth_of_the_reads_gives_every_record_once(counted, shuffle):
    proxy, url, _, cache = counted
    proxy.fail_every = 0
    options = dict(block_size=2000) if shuffle == "block" else {}
    stream = RecordStream(url, shuffle=shuffle, seed=1, batch_size=64, drop_last=False, cache_dir=cache, retries=10, **options)
    local = RecordStream(sorted(cache.parent.glob("part-*.tfrecord")), shuffle=shuffle, seed=1, batch_size=64, drop_last=False, **options)
    # In order, the epoch is four requests (a whole file each): every second one fails.
    proxy.fail_every = 10 if shuffle else 2
    # A global shuffle asks for each record apart: its first ten batches, to stay quick.
    batches = 10 if shuffle is True else None
    got = list(itertools.islice(stream, batches))
    want = list(itertools.islice(local, batches))
    assert proxy.faults >= 2, proxy.gets
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a["id"].tobytes() == b["id"].tobytes() and a["pad"] == b["pad"]


@pytest.mark.parametrize("counted", [1], indirect=True)
@pytest.mark.parametrize("retries", [0, 2])
def test_a_span_that_keeps_failing_is_sent_as_often_as_retries_says_and_no_more(counted, retries):
    proxy, url, _, cache = counted
    proxy.fail_every = 0
    # One file of 2,000 small records: in order, its epoch is one span, one request.
    stream = RecordStream(f"{url}/part-0.tfrecord", batch_size=64, cache_dir=cache, retries=retries, retry_timeout=5)
    proxy.fail_every = 1
    with pytest.raises(OSError):
        list(stream)
    assert proxy.gets == 1 + retries, proxy.gets
