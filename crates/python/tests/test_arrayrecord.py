"""ArrayRecord files (TFDS's other format) read as TFRecord files are: the files Google's own
`array_record` writer made (testdata/arrayrecord) give its records byte for byte, and one of
TensorFlow's Examples gives what the same records in a TFRecord file give, in order, at
random, and from a bucket."""

import json
import random
import shutil
import struct
import warnings

import pytest

import ofconvert
from ofconvert.data import RecordDataset, RecordStream
from conftest import TESTDATA
from record_helpers import ids

ARRAYRECORD = TESTDATA / "arrayrecord"
CASES = json.loads((ARRAYRECORD / "manifest.json").read_text())


def expected(name):
    data = (ARRAYRECORD / f"{name}.expected").read_bytes()
    records, at = [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        records.append(data[at + 8 : at + 8 + length])
        at += 8 + length
    return records


@pytest.mark.parametrize("case", [c["name"] for c in CASES])
def test_googles_files_read_byte_for_byte(case):
    records = list(ofconvert.read(ARRAYRECORD / f"{case}.array_record", raw=True))
    assert records == expected(case)


@pytest.mark.parametrize("case", ["examples", "transposed_examples"])
def test_examples_read_as_the_same_records_in_a_tfrecord_file(case):
    ours = list(ofconvert.read(ARRAYRECORD / f"{case}.array_record"))
    tfrecord = list(ofconvert.read(TESTDATA / "golden" / "tutorial.tfrecord"))
    assert len(ours) == 500 and ours == tfrecord


def test_random_access_from_a_bucket_reads_through_the_footer_and_copies_nothing(moto_s3, tmp_path):
    client, _ = moto_s3
    url = "s3://data/ar/examples.array_record"
    client.put_object(
        Bucket="data", Key="ar/examples.array_record",
        Body=(ARRAYRECORD / "examples.array_record").read_bytes(),
    )
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", tmp_path / "tutorial.tfrecord")
    local = RecordDataset(tmp_path / "tutorial.tfrecord")
    cache = tmp_path / "cache"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # decompress=False refused an ArrayRecord file while it had to be copied.
        remote = RecordDataset(url, cache_dir=cache, decompress=False)
    assert remote.files[0]["compression"] == "ArrayRecord"
    assert (remote.files[0]["data"], remote.files[0]["index"]) == (url, None)
    assert not cache.exists()
    assert len(remote) == len(local) == 500
    for i in (0, 1, 250, 499):
        assert remote.raw(i) == local.raw(i)
        assert list(remote[i]) == list(local[i])
        for name in local[i]:
            assert str(remote[i][name]) == str(local[i][name]), name
    indices = [499, 3, 250, 4, 5, 0]
    assert [str(r) for r in remote.__getitems__(indices)] == [str(r) for r in local.__getitems__(indices)]


@pytest.fixture
def counted_array_records(counted, moto_s3, tmp_path):
    """Two ArrayRecord files of 2,000 records (a record a chunk, zstd:3, as TFDS writes them)
    in the counting proxy's bucket, and their local copies."""
    proxy, url, _, cache = counted
    client, _ = moto_s3
    bucket, prefix = url[len("s3://"):].split("/", 1)
    rng = random.Random(4)
    local, size = [], 0
    for number in range(2):
        path = tmp_path / f"ar-{number}.array_record"
        with ofconvert.ArrayRecordWriter(path) as writer:
            for i in range(2000):
                writer.write({"id": number * 2000 + i, "pad": rng.randbytes(400)})
        client.put_object(Bucket=bucket, Key=f"{prefix}-ar/{path.name}", Body=path.read_bytes())
        local.append(path)
        size += path.stat().st_size
    return proxy, f"{url}-ar", local, size, cache


def test_a_shuffled_batch_from_a_bucket_fetches_its_chunks_after_the_footers(counted_array_records):
    proxy, url, local, size, cache = counted_array_records
    proxy.reset()
    ds = RecordDataset(url, cache_dir=cache, decompress=False)
    # The listing; each file's size (a HEAD), its first 4 KiB (its format, and its first
    # chunk), its postscript and its footer; no chunk of records.
    assert len(proxy.seen) <= 1 + 2 * 4, proxy.seen
    assert proxy.bytes < size / 20, (proxy.bytes, size, proxy.seen)
    assert not cache.exists()
    plain = RecordDataset(local)
    indices = random.Random(1).sample(range(len(ds)), 256)
    # A chunk holds a record, its zstd frame, its 40-byte header and the block headers it runs across.
    wanted = sum(len(plain.raw(i)) for i in indices)
    proxy.reset()
    batch = ds.batch(indices)
    assert [int(v) for v in batch["id"][:, 0]] == indices
    assert wanted <= proxy.bytes <= 2 * wanted, (proxy.bytes, wanted, proxy.requests)
    assert [ds.raw(i) for i in indices[:8]] == [plain.raw(i) for i in indices[:8]]


def test_a_stream_shuffles_array_records_from_a_bucket_through_the_cache(counted_array_records):
    proxy, url, local, size, cache = counted_array_records
    options = dict(shuffle=True, seed=2, batch_size=64, drop_last=False)
    stream = RecordStream(url, cache_dir=cache, cache_limit=2 * size, **options)
    plain = RecordStream(local, **options)
    batches = [b["id"].tobytes() for b in stream]
    assert batches == [b["id"].tobytes() for b in plain]
    assert sorted(ids(stream)) == list(range(4000))
    proxy.reset()
    stream.set_epoch(1)
    plain.set_epoch(1)
    assert [b["pad"] for b in stream] == [b["pad"] for b in plain]
    assert proxy.requests == 0


def test_of2tf_writes_array_record_files_that_read_as_the_source(tmp_path):
    source = tmp_path / "tf"
    source.mkdir()
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", source / "tutorial.tfrecord")
    ofconvert.tf2of(source, tmp_path / "of")
    summary = ofconvert.of2tf(tmp_path / "of", tmp_path / "ar", to="array_record")
    written = sorted((tmp_path / "ar").rglob("*.array_record"))
    assert len(written) == 1 and summary["records"] == 500
    assert list(ofconvert.read(written)) == list(ofconvert.read(source))
    assert ofconvert.count(written[0])["files"][0]["compression"] == "array_record"
    with pytest.raises(ofconvert.UsageError, match="compression applies to TFRecord files"):
        ofconvert.of2tf(tmp_path / "of", tmp_path / "gz", to="array_record", compression="gzip")
    with pytest.raises(ofconvert.UsageError, match="array_record"):
        ofconvert.of2tf(tmp_path / "of", tmp_path / "other", to="parquet")
    # Grouped and compressed as array_record's own options string says.
    ofconvert.of2tf(
        tmp_path / "of", tmp_path / "grouped", to="array_record",
        array_record_options="group_size:50,snappy",
    )
    grouped = sorted((tmp_path / "grouped").rglob("*.array_record"))
    assert list(ofconvert.read(grouped)) == list(ofconvert.read(source))
    manifest = json.loads((tmp_path / "grouped" / "ofconvert-manifest.json").read_text())
    assert manifest["settings"]["array_record_options"].startswith("group_size:50,")
    with pytest.raises(ofconvert.UsageError, match=r'array_record_options="lz4": lz4: unknown option'):
        ofconvert.of2tf(
            tmp_path / "of", tmp_path / "lz4", to="array_record", array_record_options="lz4"
        )
    with pytest.raises(ofconvert.UsageError, match=r'applies to ArrayRecord files \(to="array_record"\)'):
        ofconvert.of2tf(tmp_path / "of", tmp_path / "tf2", array_record_options="group_size:2")


def test_array_record_writer_groups_and_compresses_as_its_options_say(tmp_path):
    examples = list(ofconvert.read(TESTDATA / "golden" / "tutorial.tfrecord", raw=True)) * 8
    sizes = {}
    for options in (None, "group_size:100", "group_size:100,brotli:9", "group_size:7,uncompressed"):
        path = tmp_path / f"{options}.array_record"
        with ofconvert.ArrayRecordWriter(path, options=options) as writer:
            for example in examples:
                writer.write(example)
        assert list(ofconvert.read(path, raw=True)) == examples, options
        sizes[options] = path.stat().st_size
    # 4,000 like records: a chunk each costs its header and a zstd frame each (whole 64 KiB
    # blocks in all); a hundred a chunk compress together.
    assert sizes["group_size:100"] < sizes[None] / 2, sizes
    with pytest.raises(ValueError, match="transposed chunks are read, not written"):
        ofconvert.ArrayRecordWriter(tmp_path / "t.array_record", options="transpose:true")
