"""TFRecordWriter and OFRecordWriter: what they write reads back the same, through
ofconvert and through TensorFlow, and they refuse what the command line refuses."""

import gc
import json
import re
import subprocess
import sys

import numpy as np
import pytest

import ofconvert
from conftest import run_tensorflow

RECORDS = [
    {
        "image/encoded": b"\xff\xd8\xff\xe0 not really a jpeg",
        "image/class/label": 7,
        "bbox": np.array([0.25, 0.5, 0.75, 1.0], dtype=np.float32),
        "tokens": np.arange(-3, 5, dtype=np.int64),
        "names": ["a", b"b\x00c"],
        "flag": 1,
        "exact": 0.5,
    },
    {
        "image/encoded": b"",
        "image/class/label": np.uint8(200),
        "bbox": np.zeros(4, dtype=np.float32),
        "tokens": np.array([], dtype=np.int64),
        "names": [b""],
        "flag": 0,
        "exact": np.float64(-1.5),
    },
]


def expected_tf(record):
    return {
        "image/encoded": [record["image/encoded"]],
        "image/class/label": [int(record["image/class/label"])],
        "bbox": np.asarray(record["bbox"], np.float32).tolist(),
        "tokens": np.asarray(record["tokens"]).tolist(),
        "names": [n.encode() if isinstance(n, str) else n for n in record["names"]],
        "flag": [int(record["flag"])],
        "exact": [float(record["exact"])],
    }


def plain(record):
    return {
        name: value if isinstance(value, list) else value.tolist() for name, value in record.items()
    }


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_tfrecord_writer_reads_back(tmp_path, compression):
    path = tmp_path / "out.tfrecord"
    with ofconvert.TFRecordWriter(path, compression=compression) as writer:
        for record in RECORDS:
            writer.write(record)
        assert writer.records_written == 2
    assert writer.records_written == 2  # still known once closed
    got = list(ofconvert.read(path))
    assert [plain(r) for r in got] == [expected_tf(r) for r in RECORDS]
    assert got[0]["exact"].dtype == np.float32
    assert got[0]["image/class/label"].dtype == np.int64


def test_ofrecord_writer_keeps_every_kind(tmp_path):
    path = tmp_path / "part-00000"
    record = {
        "i32": np.array([-1, 2**31 - 1], np.int32),
        "i64": np.array([-(2**63)], np.int64),
        "f32": np.array([0.1], np.float32),
        "f64": np.array([0.1], np.float64),
        "bytes": [b"\x00\xff"],
    }
    with ofconvert.OFRecordWriter(path) as writer:
        writer.write(record)
    (got,) = list(ofconvert.read(path))
    assert got.keys() == record.keys()
    for name, value in record.items():
        if isinstance(value, list):
            assert got[name] == value
        else:
            assert got[name].dtype == value.dtype and got[name].tobytes() == value.tobytes()


def test_refusals(tmp_path):
    with ofconvert.TFRecordWriter(tmp_path / "x.tfrecord") as writer:
        writer.write({"ok": 1})
        with pytest.raises(ofconvert.MappingError) as raised:
            writer.write({"x": np.array([0.1])})  # a float64 that float32 cannot hold exactly
        assert raised.value.record == 1
        assert raised.value.path == str(tmp_path / "x.tfrecord")
        with pytest.raises(ofconvert.UsageError):
            writer.write({"x": []})
        with pytest.raises(ofconvert.UsageError):
            writer.write({"x": np.array([2**64 - 1], np.uint64)})
        with pytest.raises(ofconvert.UsageError):
            writer.write({"x": [2**70]})
        with pytest.raises(ofconvert.UsageError):
            writer.write({"x": [1, b"mixed"]})
        with pytest.raises(ofconvert.MappingError):
            writer.write(b"\xff\xff\xff")  # serialized bytes must parse
        writer.write({})  # TensorFlow reads an Example without features
    assert len(list(ofconvert.read(tmp_path / "x.tfrecord"))) == 2

    with ofconvert.TFRecordWriter(tmp_path / "lossy.tfrecord", lossy=True) as writer:
        writer.write({"x": 0.1})
    (got,) = list(ofconvert.read(tmp_path / "lossy.tfrecord"))
    assert got["x"].tolist() == [np.float32(0.1)]

    with ofconvert.OFRecordWriter(tmp_path / "part-0") as writer:
        with pytest.raises(ofconvert.MappingError):
            writer.write({})  # OneFlow aborts on a record without features
        with pytest.raises(ofconvert.MappingError):
            writer.write(b"")
        writer.write({"x": 0.1})
    with pytest.raises(ValueError):
        writer.write({"x": 1})  # closed
    with pytest.raises(ValueError):
        ofconvert.TFRecordWriter(tmp_path / "y", compression="bzip2")
    with pytest.raises(ofconvert.FileError):
        ofconvert.OFRecordWriter(tmp_path / "no" / "such" / "dir" / "part-0")


@pytest.mark.parametrize("kind", ["tf", "of"])
def test_bad_records_are_refused_saying_what_to_pass(tmp_path, kind):
    """What would be written as something else (a key made a string, a bool made 1, an
    array's shape lost) is refused, and so is what is no record, each saying what to do."""
    path = tmp_path / "part-0"
    writer = ofconvert.TFRecordWriter(path) if kind == "tf" else ofconvert.OFRecordWriter(path)
    with writer:
        with pytest.raises(TypeError, match=r"feature names are str, not int 1"):
            writer.write({1: 2})
        with pytest.raises(TypeError, match=r"a record is a dict of feature name to values .*not list"):
            writer.write([1, 2, 3])
        for flag in (True, [1, False], np.bool_(True), np.array([True, False])):
            with pytest.raises(TypeError, match=r"feature 'flag': .*bool.*int\(x\)"):
                writer.write({"flag": flag})
        for grid in (np.arange(6).reshape(2, 3), [[1.0, 2.0], [3.0, 4.0]], np.array([[b"a"]])):
            shape = re.escape(str(np.shape(grid)))
            with pytest.raises(ofconvert.UsageError, match=rf"feature 'grid': a {shape} array .*ravel\(\).*'grid/shape'"):
                writer.write({"grid": grid})
        for big, shown in ((2**70, 2**70), ([1, -(2**70)], -(2**70)), (2**63, 2**63),
                           (np.array([2**64 - 1], np.uint64), 2**64 - 1)):
            with pytest.raises(ofconvert.UsageError, match=rf"feature 'a': {shown} is out of int64's range"):
                writer.write({"a": big})
        writer.write({"ok": 1, "row": np.arange(3)[None, :][0]})
    assert [plain(r) for r in ofconvert.read(path)] == [{"ok": [1], "row": [0, 1, 2]}]


def test_raw_payloads_round_trip(tmp_path, testdata):
    payloads = list(ofconvert.read(testdata / "golden" / "tutorial.tfrecord", raw=True))
    with ofconvert.TFRecordWriter(tmp_path / "copy.tfrecord") as writer:
        for payload in payloads:
            writer.write(payload)
    assert (tmp_path / "copy.tfrecord").read_bytes() == (testdata / "golden" / "tutorial.tfrecord").read_bytes()


READ_BACK = """
import json, sys
import tensorflow as tf
out = []
for raw in tf.data.TFRecordDataset(sys.argv[1], compression_type=sys.argv[2]):
    example = tf.train.Example.FromString(raw.numpy())
    record = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        values = list(getattr(feature, kind).value)
        if kind == "bytes_list":
            values = [v.hex() for v in values]
        record[name] = [kind, values]
    parsed = tf.io.parse_single_example(raw, {
        "image/class/label": tf.io.FixedLenFeature([], tf.int64),
        "bbox": tf.io.VarLenFeature(tf.float32),
    })
    record["parsed_label"] = int(parsed["image/class/label"])
    out.append(record)
print(json.dumps(out))
"""


@pytest.mark.parametrize("compression,tf_name", [(None, ""), ("gzip", "GZIP"), ("zlib", "ZLIB")])
def test_tensorflow_reads_what_tfrecordwriter_writes(tmp_path, compression, tf_name):
    path = tmp_path / "out.tfrecord"
    with ofconvert.TFRecordWriter(path, compression=compression) as writer:
        for record in RECORDS:
            writer.write(record)
    got = run_tensorflow(READ_BACK, str(path), tf_name)
    for record, tf_record in zip(RECORDS, got):
        want = expected_tf(record)
        assert tf_record.pop("parsed_label") == want["image/class/label"][0]
        kinds = {name: kind for name, (kind, _) in tf_record.items()}
        assert kinds == {
            "image/encoded": "bytes_list", "image/class/label": "int64_list",
            "bbox": "float_list", "tokens": "int64_list", "names": "bytes_list",
            "flag": "int64_list", "exact": "float_list",
        }
        values = {name: values for name, (_, values) in tf_record.items()}
        for name in ("image/encoded", "names"):
            want[name] = [v.hex() for v in want[name]]
        assert values == want


def test_tensorflow_reads_what_of2tf_writes_from_ofrecordwriter(tmp_path):
    (tmp_path / "of" / "train").mkdir(parents=True)
    with ofconvert.OFRecordWriter(tmp_path / "of" / "train" / "part-00000") as writer:
        writer.write({"encoded": [b"jpeg"], "class/label": np.int32([3]), "bbox": np.float32([0.5])})
    ofconvert.of2tf(tmp_path / "of", tmp_path / "tf", sync=False)
    (path,) = sorted((tmp_path / "tf").rglob("*.tfrecord"))
    got = run_tensorflow(READ_BACK.replace('"image/class/label"', '"class/label"'), str(path), "")
    assert got[0]["class/label"] == ["int64_list", [3]]
    assert got[0]["encoded"] == ["bytes_list", [b"jpeg".hex()]]
    assert got[0]["parsed_label"] == 3


WRITERS = {
    "tf": lambda dir: ofconvert.TFRecordWriter(dir / "t.tfrecord"),
    "array_record": lambda dir: ofconvert.ArrayRecordWriter(dir / "t.array_record"),
    "of": lambda dir: ofconvert.OFRecordWriter(dir / "part-00000"),
}


# Google's array_record reader, beside TensorFlow, gives the serialized Examples back.
ARRAY_RECORD_READ_BACK = """
import json, sys
from array_record.python.array_record_module import ArrayRecordReader
reader = ArrayRecordReader(sys.argv[1])
print(json.dumps([reader.read().hex() for _ in range(reader.num_records())]))
"""


def test_array_record_writer_writes_what_tfrecord_writer_does_and_array_record_reads_it(tmp_path):
    paths = {"tf": tmp_path / "out.tfrecord", "array_record": tmp_path / "out.array_record"}
    for kind, path in paths.items():
        with (ofconvert.TFRecordWriter if kind == "tf" else ofconvert.ArrayRecordWriter)(path) as writer:
            for record in RECORDS:
                writer.write(record)
    raw = {kind: list(ofconvert.read(path, raw=True)) for kind, path in paths.items()}
    assert raw["array_record"] == raw["tf"] and len(raw["tf"]) == len(RECORDS)
    assert ofconvert.count(paths["array_record"])["files"][0]["compression"] == "array_record"
    got = run_tensorflow(ARRAY_RECORD_READ_BACK, str(paths["array_record"]))
    assert [bytes.fromhex(record) for record in got] == raw["tf"]
    with pytest.raises(TypeError):
        ofconvert.ArrayRecordWriter(tmp_path / "x.array_record", compression="gzip")


@pytest.mark.parametrize("kind", WRITERS)
def test_an_unclosed_writer_keeps_what_it_was_given_with_a_resource_warning(tmp_path, kind):
    writer = WRITERS[kind](tmp_path)
    path = writer.path
    writer.write({"label": 1})
    writer.write({"label": 2})
    with pytest.warns(ResourceWarning, match="unclosed .*keeping its 2 records"):
        del writer
        gc.collect()
    assert [r["label"].tolist() for r in ofconvert.read(path)] == [[1], [2]]
    assert [p.name for p in tmp_path.iterdir()] == [path.rsplit("/", 1)[-1]]


@pytest.mark.parametrize("kind", WRITERS)
def test_an_exception_out_of_the_with_block_discards_the_file(tmp_path, kind):
    with pytest.raises(KeyError):
        with WRITERS[kind](tmp_path) as writer:
            writer.write({"label": 1})
            raise KeyError("stop")
    assert writer.closed
    assert list(tmp_path.iterdir()) == []


# A file that cannot grow past 2.5 MiB, as on a full disk: of six records of 1 MiB, one
# fits only in part (which one fails depends on the buffers). SIGXFSZ is ignored so that the
# write fails with EFBIG instead of ending Python.
FULL_DISK = """
import json, resource, signal, sys
import ofconvert
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (5 << 19, resource.RLIM_INFINITY))
writer = getattr(ofconvert, sys.argv[2])(sys.argv[1])
said = []
for label in range(6):
    try:
        writer.write({"label": label, "blob": bytes(1 << 20)})
        said.append("ok")
    except ofconvert.FileError as err:
        said.append(str(err))
for _ in range(2):
    try:
        writer.close()
        said.append("closed")
    except ofconvert.FileError as err:
        said.append("close: " + str(err))
said.append(writer.closed)
print(json.dumps(said))
"""


# Not ArrayRecord: its zstd makes a megabyte of zeros a few bytes, which no limit stops.
@pytest.mark.parametrize("kind", ["tf", "of"])
def test_a_record_that_fails_to_reach_the_file_publishes_nothing(tmp_path, kind):
    name, cls = {"tf": ("t.tfrecord", "TFRecordWriter"), "of": ("part-00000", "OFRecordWriter")}[kind]
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(tmp_path / name), cls],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    writes, closes, closed = said[:6], said[6:8], said[8]
    first = writes.index(next(w for w in writes if w != "ok"))
    assert first >= 2 and "File too large" in writes[first], writes
    # The writer takes nothing more: part of a record may be in the file. Every later record
    # is refused with the same error, and closing says it once, then does nothing.
    assert writes[first + 1:] == [writes[first]] * (5 - first), writes
    assert closes == ["close: " + writes[first], "closed"] and closed is True
    # Nothing published, nothing left under the temporary name.
    assert list(tmp_path.iterdir()) == []


UNCLOSED_AT_EXIT = """
import sys
import ofconvert
kept = ofconvert.TFRecordWriter(sys.argv[1] + "/global.tfrecord")
kept.write({"label": 1})
cycle = ofconvert.OFRecordWriter(sys.argv[1] + "/part-00000")
cycle.write({"label": 2})
cycle.itself = cycle
del cycle
empty = ofconvert.TFRecordWriter(sys.argv[1] + "/empty.tfrecord")
"""


@pytest.mark.parametrize("flags", [["-X", "dev"], ["-W", "error::ResourceWarning"]])
def test_writers_left_open_when_the_interpreter_ends_keep_their_records(tmp_path, flags):
    done = subprocess.run(
        [sys.executable, *flags, "-c", UNCLOSED_AT_EXIT, str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["global.tfrecord", "part-00000"], done.stderr
    assert [r["label"].tolist() for r in ofconvert.read(tmp_path / "global.tfrecord")] == [[1]]
    assert [r["label"].tolist() for r in ofconvert.read(tmp_path / "part-00000")] == [[2]]
    assert "ResourceWarning: unclosed TFRecordWriter" in done.stderr
    assert "ResourceWarning: unclosed OFRecordWriter" in done.stderr


def test_python_floats_become_float32_as_tensorflow_makes_them(tmp_path):
    path = tmp_path / "f.tfrecord"
    with ofconvert.TFRecordWriter(path) as writer:
        writer.write({"score": 0.1, "scores": [0.1, 1, 2.5], "pair": [0.1, 1 / 3]})
        # numpy float64 values are kept exactly or refused, and the error names the keyword.
        for value in (np.array([0.1]), np.float64(0.1), [np.float64(0.1)]):
            with pytest.raises(ofconvert.MappingError, match=r"lossy=True rounds it"):
                writer.write({"score": value})
        # A float beyond float32's range is refused: it would become an infinity.
        with pytest.raises(ofconvert.MappingError, match="beyond the range of float"):
            writer.write({"score": 1e300})
    (got,) = list(ofconvert.read(path))
    assert got["score"].dtype == np.float32
    assert got["score"].tolist() == [np.float32(0.1)]
    assert got["scores"].tolist() == [np.float32(0.1), 1.0, 2.5]
    assert got["pair"].tolist() == [np.float32(0.1), np.float32(1 / 3)]

    # An OFRecord has float64: Python floats stay float64 there.
    with ofconvert.OFRecordWriter(tmp_path / "part-0") as writer:
        writer.write({"score": 0.1})
    (got,) = list(ofconvert.read(tmp_path / "part-0"))
    assert got["score"].dtype == np.float64 and got["score"].tolist() == [0.1]


FLOATS_IN_TENSORFLOW = """
import json, sys
import tensorflow as tf
made = tf.train.FloatList(value=[0.1, 1 / 3, 2.5])
raw = next(iter(tf.data.TFRecordDataset(sys.argv[1]))).numpy()
read = tf.train.Example.FromString(raw).features.feature["score"].float_list
print(json.dumps([list(made.value), list(read.value)]))
"""


def test_python_floats_are_what_tensorflows_float_list_makes_of_them(tmp_path):
    path = tmp_path / "f.tfrecord"
    with ofconvert.TFRecordWriter(path) as writer:
        writer.write({"score": [0.1, 1 / 3, 2.5]})
    made, read = run_tensorflow(FLOATS_IN_TENSORFLOW, str(path))
    assert read == made == [float(np.float32(v)) for v in (0.1, 1 / 3, 2.5)]
