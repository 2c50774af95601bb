"""A OneFlow part damaged from its first length on, and a part its manifest lists that is
missing: ofconvert.read, RecordDataset and RecordStream raise, naming the part and the
offset, as the command line's count and verify do, rather than read the other parts'
records as if they were all."""

import pytest

import ofconvert
from ofconvert.data import RecordDataset, RecordStream


@pytest.fixture
def eight_parts(tmp_path):
    """A OneFlow dataset of 8 parts holding 500 records, converted from 8 TFRecord files."""
    tf = tmp_path / "tf"
    tf.mkdir()
    for shard in range(8):
        count = 62 if shard < 7 else 66
        with ofconvert.TFRecordWriter(tf / f"train-{shard:05}-of-00008") as writer:
            for i in range(shard * 62, shard * 62 + count):
                writer.write({"id": i, "payload": b"x" * 40})
    of = tmp_path / "of"
    ofconvert.tf2of(tf, of)
    assert ofconvert.count(of)["total"] == 500
    return of


def damage_first_length(part):
    """Flips the fifth byte of the part's first length: it now runs past the file."""
    data = bytearray(part.read_bytes())
    data[4] ^= 0xFF
    part.write_bytes(bytes(data))


def assert_names_the_part(err, part):
    assert isinstance(err, ofconvert.CorruptRecordError), type(err)
    assert (err.path, err.offset, err.record) == (str(part), 0, 0)


def test_read_raises_on_a_part_damaged_at_its_first_length(eight_parts):
    part = eight_parts / "part-00000"
    damage_first_length(part)
    with pytest.raises(ofconvert.Error) as raised:
        list(ofconvert.read(eight_parts))
    assert_names_the_part(raised.value, part)
    with pytest.raises(ofconvert.Error) as raised:
        list(ofconvert.read(eight_parts, batch_size=100))
    assert_names_the_part(raised.value, part)
    with pytest.raises(ofconvert.Error) as raised:
        ofconvert.count(eight_parts)
    assert_names_the_part(raised.value, part)
    report = ofconvert.verify(eight_parts)
    assert (len(report["files"]), report["problems"]) == (8, 1)


def test_record_dataset_and_record_stream_raise_on_a_part_damaged_at_its_first_length(eight_parts):
    part = eight_parts / "part-00000"
    damage_first_length(part)
    with pytest.raises(ofconvert.Error) as raised:
        dataset = RecordDataset(eight_parts)
        [dataset[i] for i in range(len(dataset))]
    assert_names_the_part(raised.value, part)
    with pytest.raises(ofconvert.Error) as raised:
        list(RecordStream(eight_parts, batch_size=50))
    assert_names_the_part(raised.value, part)


def test_a_part_the_manifest_lists_that_is_missing_fails_every_reader(eight_parts):
    missing = eight_parts / "part-00003"
    missing.unlink()
    readers = [
        lambda: list(ofconvert.read(eight_parts)),
        lambda: RecordDataset(eight_parts),
        lambda: list(RecordStream(eight_parts)),
        lambda: ofconvert.count(eight_parts),
    ]
    for reader in readers:
        with pytest.raises(ofconvert.Error, match="missing, yet ofconvert-manifest.json lists it") as raised:
            reader()
        assert raised.value.path == str(missing)
