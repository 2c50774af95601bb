"""ArrayRecord files (TFDS's other format) read as TFRecord files are: the files Google's own
`array_record` writer made (testdata/arrayrecord) give its records byte for byte, and one of
TensorFlow's Examples gives what the same records in a TFRecord file give, in order, at
random, and from a bucket."""

import json
import shutil
import struct
import warnings

import pytest

import ofconvert
from ofconvert.data import RecordDataset
from conftest import TESTDATA

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


@pytest.mark.parametrize("case", [c["name"] for c in CASES if "transpose" not in c["options"]])
def test_googles_files_read_byte_for_byte(case):
    records = list(ofconvert.read(ARRAYRECORD / f"{case}.array_record", raw=True))
    assert records == expected(case)


def test_a_transposed_file_is_refused_where_its_chunk_is():
    with pytest.raises(ofconvert.CorruptRecordError) as raised:
        list(ofconvert.read(ARRAYRECORD / "transposed.array_record", raw=True))
    assert raised.value.offset is not None and "transposed" in str(raised.value).lower()


def test_examples_read_as_the_same_records_in_a_tfrecord_file():
    ours = list(ofconvert.read(ARRAYRECORD / "examples.array_record"))
    tfrecord = list(ofconvert.read(TESTDATA / "golden" / "tutorial.tfrecord"))
    assert len(ours) == 500 and ours == tfrecord


def test_random_access_from_a_bucket_copies_the_file_once_into_the_cache(moto_s3, tmp_path):
    client, _ = moto_s3
    client.put_object(
        Bucket="data", Key="ar/examples.array_record",
        Body=(ARRAYRECORD / "examples.array_record").read_bytes(),
    )
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", tmp_path / "tutorial.tfrecord")
    local = RecordDataset(tmp_path / "tutorial.tfrecord")
    cache = tmp_path / "cache"
    with pytest.warns(UserWarning, match="copied into"):
        remote = RecordDataset("s3://data/ar/examples.array_record", cache_dir=cache)
    assert remote.files[0]["compression"] == "ArrayRecord"
    assert remote.files[0]["data"].startswith(str(cache))
    assert len(remote) == len(local) == 500
    for i in (0, 1, 250, 499):
        assert list(remote[i]) == list(local[i])
        for name in local[i]:
            assert str(remote[i][name]) == str(local[i][name]), name
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = RecordDataset("s3://data/ar/examples.array_record", cache_dir=cache)
    assert len(again) == 500
    with pytest.raises(ofconvert.UsageError, match="ArrayRecord"):
        RecordDataset("s3://data/ar/examples.array_record", cache_dir=tmp_path / "other", decompress=False)


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
