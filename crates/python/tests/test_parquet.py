"""TFDS's Parquet files (testdata/tfds: one builder TFDS prepared as TFRecord and as Parquet)
read as the same records in TFRecord files are; the training reader, which has no random
access to them yet, refuses them with what to do instead."""

import pytest

import ofconvert
from ofconvert.data import RecordDataset
from conftest import TESTDATA

PETS = "pets/1.0.0"


def shards(fmt, split):
    return sorted((TESTDATA / "tfds" / fmt / PETS).glob(f"pets-{split}.{fmt}-*"))


@pytest.mark.parametrize("split", ["train", "test"])
def test_tfds_parquet_shards_read_as_the_tfrecord_shards_records(split):
    for raw in (True, False):
        ours = [r for path in shards("parquet", split) for r in ofconvert.read(path, raw=raw)]
        theirs = [r for path in shards("tfrecord", split) for r in ofconvert.read(path, raw=raw)]
        assert len(ours) == {"train": 24, "test": 9}[split]
        assert ours == theirs


def test_a_cut_parquet_file_is_named_as_one(tmp_path):
    whole = shards("parquet", "test")[0].read_bytes()
    cut = tmp_path / "pets-test.parquet-00000-of-00001"
    cut.write_bytes(whole[:-3])
    with pytest.raises(ofconvert.CorruptRecordError, match="damaged Parquet file: no PAR1 magic at its end"):
        list(ofconvert.read(cut))


def test_the_training_reader_refuses_parquet_with_what_to_do():
    with pytest.raises(ofconvert.UsageError, match=r"is a Parquet file.*ofconvert tf2of"):
        RecordDataset(shards("parquet", "train")[0])
