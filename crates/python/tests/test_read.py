"""ofconvert.read against TensorFlow's own parse of every file in testdata/ (the golden
JSON files), and against the damaged files' expected errors."""

import json

import numpy as np
import pytest

import ofconvert
from conftest import TESTDATA

BYTES_INLINE_MAX = 4096


def fnv1a64(data: bytes) -> str:
    digest = 0xCBF29CE484222325
    for byte in data:
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{digest:016x}"


def render(value):
    """A value as the expected files spell a feature: kind and values (floats as bits)."""
    if value is None:
        return {"kind": None, "values": []}
    if isinstance(value, list):
        rendered = []
        for item in value:
            assert isinstance(item, bytes)
            if len(item) > BYTES_INLINE_MAX:
                rendered.append({"len": len(item), "fnv1a64": fnv1a64(item)})
            else:
                rendered.append(item.hex())
        return {"kind": "bytes_list", "values": rendered}
    assert value.ndim == 1
    if value.dtype == np.float32:
        return {"kind": "float_list", "values": value.view(np.uint32).tolist()}
    if value.dtype == np.float64:
        return {"kind": "double_list", "values": value.view(np.uint64).tolist()}
    if value.dtype == np.int32:
        return {"kind": "int32_list", "values": value.tolist()}
    assert value.dtype == np.int64, value.dtype
    return {"kind": "int64_list", "values": value.tolist()}


def check_record(expected, got):
    if expected["type"] == "sequence_example":
        context = expected.get("context", {})
        lists = expected.get("feature_lists", {})
        assert set(got) == set(context) | set(lists)
        for name, feature in context.items():
            assert render(got[name]) == feature, name
        for name, steps in lists.items():
            assert [render(step) for step in got[name]] == steps, name
    else:
        features = expected.get("features", {})
        assert {name: render(value) for name, value in got.items()} == features


GOLDEN = sorted(path.name for path in (TESTDATA / "golden").glob("*.expected.json"))


@pytest.mark.parametrize("expected_name", GOLDEN)
def test_golden_tfrecord(expected_name):
    expected = json.loads((TESTDATA / "golden" / expected_name).read_text())
    path = TESTDATA / "golden" / expected["file"]
    records = list(ofconvert.read(path))
    assert len(records) == expected["record_count"]
    for want, got in zip(expected["records"], records):
        check_record(want, got)


@pytest.mark.parametrize("expected_name", GOLDEN)
def test_golden_raw(expected_name):
    expected = json.loads((TESTDATA / "golden" / expected_name).read_text())
    raw = list(ofconvert.read(TESTDATA / "golden" / expected["file"], raw=True))
    assert [len(payload) for payload in raw] == [r["serialized_len"] for r in expected["records"]]
    for want, payload in zip(expected["records"], raw):
        if "serialized_hex" in want:
            assert payload.hex() == want["serialized_hex"]


@pytest.mark.parametrize("dataset", ["all_kinds", "no_double"])
def test_golden_ofrecord(dataset):
    expected = json.loads((TESTDATA / "ofrecord" / f"{dataset}.expected.json").read_text())
    records = list(ofconvert.read(TESTDATA / "ofrecord" / dataset))
    assert len(records) == expected["record_count"]
    for want, got in zip(expected["records"], records):
        check_record(want, got)


def test_every_file_of_the_sample_trees_reads():
    for tree in ("datasets", "ofdatasets"):
        records = list(ofconvert.read(TESTDATA / tree))
        assert records, tree
        assert all(isinstance(record, dict) and record for record in records)


def test_several_paths_in_order():
    one = list(ofconvert.read(TESTDATA / "golden" / "tutorial.tfrecord", raw=True))
    both = list(
        ofconvert.read(
            [TESTDATA / "golden" / "tutorial.tfrecord", TESTDATA / "golden" / "tutorial.tfrecord.gz"],
            raw=True,
        )
    )
    assert both == one + one


def test_batches_stack_where_shapes_agree():
    records = list(ofconvert.read(TESTDATA / "golden" / "tutorial.tfrecord"))
    batches = list(ofconvert.read(TESTDATA / "golden" / "tutorial.tfrecord", batch_size=64))
    assert [len(batch["feature2"]) for batch in batches] == [64] * 7 + [500 - 7 * 64]
    first = batches[0]
    assert first["feature0"].shape == (64, 1) and first["feature0"].dtype == np.int64
    assert first["feature3"].dtype == np.float32
    assert np.array_equal(first["feature3"][:, 0], [r["feature3"][0] for r in records[:64]])
    assert first["feature2"] == [r["feature2"] for r in records[:64]]


def test_batches_keep_ragged_features_as_lists():
    batch = next(iter(ofconvert.read(TESTDATA / "golden" / "edge.tfrecord", batch_size=3)))
    # Records differ in their features: absent ones are None.
    for name, values in batch.items():
        assert isinstance(values, (list, np.ndarray))
        assert len(values) == 3, name
    assert any(isinstance(v, list) and None in v for v in batch.values())


def test_raw_batches():
    batches = list(ofconvert.read(TESTDATA / "golden" / "tutorial.tfrecord", raw=True, batch_size=200))
    assert [len(b) for b in batches] == [200, 200, 100]
    assert all(isinstance(p, bytes) for p in batches[2])


DAMAGED = json.loads((TESTDATA / "damaged" / "expected.json").read_text())["files"]


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damaged_files_raise_with_their_place(name):
    expected = DAMAGED[name]
    reader = ofconvert.read(TESTDATA / "damaged" / name)
    if expected["kind"] == "ok":
        assert len(list(reader)) == expected["records"]
        return
    got = []
    with pytest.raises(ofconvert.Error) as raised:
        for record in reader:
            got.append(record)
    assert len(got) == expected["good_records"]
    err = raised.value
    assert err.path == str(TESTDATA / "damaged" / name)
    assert err.record == expected["index"]
    assert err.offset == expected["offset"]
    if expected["kind"] == "NotAnExample":
        # A payload that does not parse leaves the framing intact: reading can go on.
        assert isinstance(err, ofconvert.MappingError)
        assert len(list(reader)) == expected["records"] - expected["good_records"] - 1
    else:
        assert isinstance(err, ofconvert.CorruptRecordError), type(err)
        # The reader stops after damage to the framing.
        assert list(reader) == []


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_on_corrupt_skip_reads_what_tf2of_salvages(tmp_path, name):
    """read(on_corrupt="skip") steps over each damaged file's damage as tf2of does: the same
    records come, and the same damage is counted with the same words."""
    src = tmp_path / "in" / "d"
    src.mkdir(parents=True)
    (src / name).write_bytes((TESTDATA / "damaged" / name).read_bytes())
    reader = ofconvert.read(src / name, raw=True, on_corrupt="skip")
    try:
        summary = ofconvert.tf2of(src.parent, tmp_path / "of", on_corrupt="skip", sync=False)
    except ofconvert.ConversionError:
        # No record framed anywhere in it: not a TFRecord, for both.
        with pytest.raises(ofconvert.FormatError, match="no TFRecord record is framed"):
            list(reader)
        return
    got = list(reader)
    manifest = summary["datasets"][0]["manifest"]
    if DAMAGED[name]["kind"] == "NotAnExample":
        # Intact framing around a payload that does not parse: read raw, it is a record;
        # tf2of, which parses it, skips it.
        assert len(got) == manifest["records"] + 1
    else:
        assert len(got) == manifest["records"]
        # What came before the damage is what reading without skip gave.
        before = []
        for record in ofconvert.read(src / name, raw=True):
            before.append(record)
            if len(before) == DAMAGED[name].get("good_records", DAMAGED[name].get("records")):
                break
        assert got[: len(before)] == before
    skipped = manifest.get("skipped", {})
    assert reader.skipped["corrupt"] == skipped.get("corrupt", 0) - (
        DAMAGED[name]["kind"] == "NotAnExample")
    assert reader.skipped["recovered"] == skipped.get("recovered", 0)
    assert len(reader.skipped["details"]) == reader.skipped["corrupt"] + reader.skipped["recovered"]


def test_on_corrupt_skip_counts_in_batches_too_and_refuses_other_words(tmp_path):
    path = TESTDATA / "damaged" / "flipped_data.tfrecord"
    batches = ofconvert.read(path, batch_size=100, on_corrupt="skip")
    assert sum(len(batch["feature0"]) for batch in batches) == 499
    assert batches.skipped["corrupt"] == 1
    assert "offset 312 (record #3)" in batches.skipped["details"][0]
    assert ofconvert.read(path).skipped is None
    with pytest.raises(ofconvert.UsageError, match='on_corrupt must be "fail" or "skip"'):
        ofconvert.read(path, on_corrupt="ignore")


def test_missing_path_is_a_file_error(tmp_path):
    with pytest.raises(ofconvert.FileError) as raised:
        ofconvert.read(tmp_path / "nothing-here")
    assert raised.value.path == str(tmp_path / "nothing-here")
    assert isinstance(raised.value, OSError)


def test_unknown_format_is_a_format_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some text that is no record file at all\n")
    with pytest.raises(ofconvert.FormatError):
        ofconvert.read(path)


@pytest.mark.parametrize("batch_size", [None, 4])
def test_a_directory_without_record_files_fails_as_count_and_the_command_line_do(tmp_path, batch_size):
    (tmp_path / "notes.txt").write_text("no records here")
    with pytest.raises(ofconvert.FileError) as counted:
        ofconvert.count(tmp_path)
    with pytest.raises(ofconvert.FileError) as read:
        list(ofconvert.read(tmp_path, batch_size=batch_size))
    assert str(read.value) == str(counted.value) == f"no record files found under {tmp_path}"
    # RecordDataset lists its paths the same way.
    with pytest.raises(ofconvert.FileError) as listed:
        ofconvert.data.RecordDataset(tmp_path)
    assert str(listed.value) == str(counted.value)
    # One empty folder among others fails too, as count does.
    (tmp_path / "empty").mkdir()
    with pytest.raises(ofconvert.FileError, match="no record files found under .*empty"):
        ofconvert.read([TESTDATA / "golden" / "tutorial.tfrecord", tmp_path / "empty"])
