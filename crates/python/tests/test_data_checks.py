"""What ofconvert.data refuses, or warns of, rather than reading on in silence: an object of a
bucket replaced since the dataset was opened (its new bytes never read against the former
index, nor cached under the former version's name), a feature name no record has (a typo,
with the closest name suggested, as the command line does), and a global shuffle of a
bucket with no cache (a request a record)."""

import itertools
import warnings

import pytest

import ofconvert
from ofconvert import FileError, UsageError
from ofconvert.data import RecordDataset, RecordStream

_BUCKETS = itertools.count()


def _records(path, pad):
    """A TFRecord of 300 records, each padded with `pad`: files written with another `pad`
    byte are the same size, record for record."""
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(300):
            writer.write({"id": i, "pad": pad * 100})
    return path.read_bytes()


@pytest.fixture
def replaced_later(moto_s3, tmp_path):
    """A bucket of its own holding one object, and a function that replaces it with records
    of the same sizes and other bytes."""
    client, _ = moto_s3
    bucket = f"versions{next(_BUCKETS)}"
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="one.tfrecord", Body=_records(tmp_path / "p.tfrecord", b"p"))
    replacement = _records(tmp_path / "q.tfrecord", b"q")

    def replace():
        client.put_object(Bucket=bucket, Key="one.tfrecord", Body=replacement)

    return f"s3://{bucket}/one.tfrecord", replace, tmp_path / "cache"


def _cached_spans(cache):
    where = cache / "spans"
    return [p.name for p in where.iterdir() if p.name != ".lock"] if where.exists() else []


@pytest.mark.parametrize("cached", [False, True], ids=["no cache", "cache"])
@pytest.mark.parametrize("read", ["ds[i]", "ds.batch", "stream in order", "stream shuffled"])
def test_an_object_replaced_since_the_dataset_was_opened_is_never_read_nor_cached(
    replaced_later, read, cached
):
    url, replace, cache = replaced_later
    options = dict(cache_dir=cache, cache_limit="10MB" if cached else None)
    if read.startswith("stream"):
        shuffle = read.endswith("shuffled")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a global shuffle without a cache says it is slow
            opened = RecordStream(url, shuffle=shuffle, batch_size=32, drop_last=False, **options)
        reading = lambda: list(opened)  # noqa: E731
    else:
        opened = RecordDataset(url, **options)
        reading = (lambda: opened[150]) if read == "ds[i]" else (lambda: opened.batch([290, 7, 150]))
    kept = set(_cached_spans(cache))
    replace()
    if cached:
        # The pass that indexed the object kept its bytes as the dataset opened it: the reads
        # come from there, the opened version's records, never the new ones.
        assert kept
        got = reading()
        pads = {pad for item in (got if isinstance(got, list) else [got]) for pad in _pads(item)}
        assert pads == {b"p" * 100}, pads
    else:
        with pytest.raises(FileError) as raised:
            reading()
        message = str(raised.value)
        assert url in message, message
        assert "changed since the dataset was opened" in message, message
        assert "open the dataset again" in message, message
    # None of the new bytes kept under the former version's name.
    assert set(_cached_spans(cache)) == kept
    # Opened again, the dataset reads the new records.
    again = RecordDataset(url, **options)
    assert again[150]["pad"] == [b"q" * 100]


def _pads(item):
    """The `pad` values of a record, or of a batch's records."""
    pads = item["pad"]
    return [pad[0] for pad in pads] if isinstance(pads[0], list) else [pads[0]]


@pytest.fixture
def two_schemas(tmp_path):
    """Two files: the first's 1,200 records have `id` and `pad`, the second's 10 have
    `weight` too."""
    root = tmp_path / "two"
    root.mkdir()
    with ofconvert.TFRecordWriter(root / "a.tfrecord") as writer:
        for i in range(1200):
            writer.write({"id": i, "pad": b"x"})
    with ofconvert.TFRecordWriter(root / "b.tfrecord") as writer:
        for i in range(1200, 1210):
            writer.write({"id": i, "pad": b"x", "weight": 0.5})
    return root


@pytest.mark.parametrize("make", [RecordDataset, RecordStream])
def test_a_misspelt_feature_is_refused_with_the_closest_name(two_schemas, make):
    with pytest.raises(UsageError) as raised:
        make(two_schemas, features=["id", "wieght"])
    message = str(raised.value)
    assert 'no feature "wieght"' in message, message
    assert 'did you mean "weight"?' in message, message
    assert "id, pad, weight" in message, message
    # A name like none of them is refused too, without a suggestion.
    with pytest.raises(UsageError, match='no feature "nosuchthing"') as raised:
        make(two_schemas, features="nosuchthing")
    assert "did you mean" not in str(raised.value)


def test_features_that_records_have_are_taken_even_when_only_later_files_have_them(two_schemas):
    ds = RecordDataset(two_schemas, features=["id", "weight"])
    assert int(ds[0]["id"][0]) == 0
    assert float(ds[1209]["weight"][0]) == 0.5
    stream = RecordStream(two_schemas, features=["weight"], batch_size=1210)
    assert len(next(iter(stream))["weight"]) == 1210


def _slow_shuffle_warnings(caught):
    return [w for w in caught if issubclass(w.category, UserWarning) and "a request a record" in str(w.message)]


def test_a_global_shuffle_of_a_bucket_without_a_cache_says_once_how_to_be_faster(replaced_later, tmp_path):
    url, _, cache = replaced_later
    local = tmp_path / "local.tfrecord"
    _records(local, b"l")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stream = RecordStream(url, shuffle=True, batch_size=64, cache_dir=cache)
        for _ in stream:
            pass
        for _ in stream:
            pass
    said = _slow_shuffle_warnings(caught)
    assert len(said) == 1, [str(w.message) for w in caught]
    message = str(said[0].message)
    assert 'shuffle="block"' in message and "cache_limit=" in message, message
    # Not for local files, a cache that holds the dataset, nor the other orders.
    for quiet in (
        dict(paths=local, shuffle=True),
        dict(paths=url, shuffle=True, cache_limit="10MB"),
        dict(paths=url, shuffle="block"),
        dict(paths=url, shuffle=False),
    ):
        paths = quiet.pop("paths")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            list(RecordStream(paths, batch_size=64, cache_dir=cache, **quiet))
        assert not _slow_shuffle_warnings(caught), quiet
