"""What ofconvert.data refuses rather than reading on in silence: an object of a bucket
replaced since the dataset was opened (its new bytes never read against the former index,
nor cached under the former version's name)."""

import itertools

import pytest

import ofconvert
from ofconvert import FileError
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
def test_an_object_replaced_since_the_dataset_was_opened_fails_its_reads_and_is_never_cached(
    replaced_later, read, cached
):
    url, replace, cache = replaced_later
    options = dict(cache_dir=cache, cache_limit="10MB" if cached else None)
    if read.startswith("stream"):
        shuffle = read.endswith("shuffled")
        opened = RecordStream(url, shuffle=shuffle, batch_size=32, drop_last=False, **options)
        reading = lambda: list(opened)  # noqa: E731
    else:
        opened = RecordDataset(url, **options)
        reading = (lambda: opened[150]) if read == "ds[i]" else (lambda: opened.batch([290, 7, 150]))
    replace()
    with pytest.raises(FileError) as raised:
        reading()
    message = str(raised.value)
    assert url in message, message
    assert "changed since the dataset was opened" in message, message
    assert "open the dataset again" in message, message
    # None of the new bytes kept under the former version's name.
    assert _cached_spans(cache) == []
    # Opened again, the dataset reads the new records.
    again = RecordDataset(url, **options)
    assert again[150]["pad"] == [b"q" * 100]
