#!/usr/bin/env python3
"""Regenerates the golden data under testdata/ with real TensorFlow and protobuf.

Run from the repository root, in a virtualenv made with
    pip install tensorflow-cpu protobuf grpcio-tools pillow numpy
as
    python testdata/generate.py

TensorFlow writes every TFRecord file (tf.io.TFRecordWriter, with tf.io.TFRecordOptions for
GZIP and ZLIB) and reads it back (tf.data.TFRecordDataset); the expected values are the parse
of what TensorFlow read, by tf.train.Example.FromString / SequenceExample.FromString, checked
against TensorFlow's own C++ parser (tf.io.parse_single_example). OFRecord files are written
the way OneFlow documents: the protobuf message from proto/oneflow/core/record/record.proto,
compiled here with grpc_tools.protoc, framed by an 8-byte little-endian length.

Messages are serialized with deterministic=True: the upb backend otherwise writes map entries
in an order that changes from one process to the next, and the files would not be
reproducible. testdata/README.md describes the output.
"""

import atexit
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import google.protobuf  # noqa: E402
from google.protobuf import text_format  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TESTDATA = Path("testdata")
OUTPUT_DIRS = ["golden", "damaged", "ofrecord", "datasets", "ofdatasets"]

# Bytes values longer than this, and text renderings longer than TEXT_INLINE_MAX, are stored
# as length + FNV-1a 64 digest instead of inline, to keep the expected files small.
BYTES_INLINE_MAX = 4096
TEXT_INLINE_MAX = 131072
# "serialized_hex" is stored for records smaller than this.
SERIALIZED_HEX_MAX = 4096

COMPRESSION_SUFFIX = {"": "", "GZIP": ".gz", "ZLIB": ".zz"}

VERSIONS = {
    "tensorflow_version": tf.__version__,
    "protobuf_version": google.protobuf.__version__,
}


# ---------------------------------------------------------------------------------------------
# Value encodings of the expected JSON


def f32(bits):
    """The Python float whose f32 rounding has exactly these bits."""
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def f32_bits(value):
    return struct.unpack("<I", struct.pack("<f", value))[0]


def f64_bits(value):
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def bytes_json(value):
    value = bytes(value)
    if len(value) <= BYTES_INLINE_MAX:
        return value.hex()
    return {"len": len(value), "fnv1a64": fnv1a64(value)}


def feature_json(feature):
    kind = feature.WhichOneof("kind")
    if kind is None:
        return {"kind": None, "values": []}
    values = getattr(feature, kind).value
    if kind == "bytes_list":
        out = [bytes_json(v) for v in values]
    elif kind == "float_list":
        out = [f32_bits(v) for v in values]
    elif kind == "double_list":
        out = [f64_bits(v) for v in values]
    else:
        out = [int(v) for v in values]
    return {"kind": kind, "values": out}


def features_json(feature_map):
    return {name: feature_json(feature_map[name]) for name in sorted(feature_map)}


def text_json(message):
    text = text_format.MessageToString(message)
    if len(text) <= TEXT_INLINE_MAX:
        return {"text": text}
    encoded = text.encode("utf-8")
    return {"text_len": len(encoded), "text_fnv1a64": fnv1a64(encoded)}


def record_json(serialized, message_type):
    """Parses one serialized record with protobuf and renders it as the expected JSON."""
    if message_type == "example":
        msg = tf.train.Example.FromString(serialized)
        out = {"type": "example", "features": features_json(msg.features.feature)}
    elif message_type == "sequence_example":
        msg = tf.train.SequenceExample.FromString(serialized)
        lists = msg.feature_lists.feature_list
        out = {
            "type": "sequence_example",
            "context": features_json(msg.context.feature),
            "feature_lists": {
                name: [feature_json(step) for step in lists[name].feature] for name in sorted(lists)
            },
        }
    elif message_type == "ofrecord":
        msg = RECORD_PB2.OFRecord.FromString(serialized)
        out = {"type": "ofrecord", "features": features_json(msg.feature)}
    else:
        raise ValueError(message_type)
    out.update(text_json(msg))
    out["serialized_len"] = len(serialized)
    if len(serialized) < SERIALIZED_HEX_MAX:
        out["serialized_hex"] = serialized.hex()
    return out


def write_json(path, top, records=None):
    """Writes sorted, stable JSON; a record list goes one record per line for readable diffs."""

    def dump(value):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    lines = ["{"]
    items = [" %s: %s" % (json.dumps(k), dump(top[k])) for k in sorted(top)]
    if records is not None:
        body = ",\n".join("  " + dump(r) for r in records)
        items.append(' "records": [\n%s\n ]' % body if records else ' "records": []')
    lines.append(",\n".join(items))
    lines.append("}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# TensorFlow I/O


def tf_write(path, payloads, compression=""):
    """Writes with TF's writer and checks that TF's reader gives the same records back."""
    path.parent.mkdir(parents=True, exist_ok=True)
    options = tf.io.TFRecordOptions(compression_type=compression)
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for payload in payloads:
            writer.write(payload)
    records, error, _ = tf_read(path, compression)
    if error is not None or records != payloads:
        raise AssertionError("TensorFlow did not read back %s: %s" % (path, error))


def tf_read(path, compression=""):
    """Reads with tf.data; returns (records, first error line or None, error class or None)."""
    records = []
    try:
        for record in tf.data.TFRecordDataset(str(path), compression_type=compression):
            records.append(record.numpy())
    except tf.errors.OpError as e:
        return records, str(e).splitlines()[0], type(e).__name__
    return records, None, None


def tf_parse_check(serialized, expected):
    """Checks protobuf's parse against TensorFlow's C++ parser, float bits included."""
    dtypes = {"bytes_list": tf.string, "float_list": tf.float32, "int64_list": tf.int64}
    spec = {
        name: tf.io.VarLenFeature(dtypes[f["kind"]])
        for name, f in expected["features"].items()
        if f["kind"] is not None
    }
    if not spec:
        return
    parsed = tf.io.parse_single_example(serialized, spec)
    for name, sparse in parsed.items():
        values = sparse.values.numpy()
        kind = expected["features"][name]["kind"]
        if kind == "bytes_list":
            got = [bytes_json(v) for v in values.tolist()]
        elif kind == "float_list":
            got = values.view(np.uint32).tolist()
        else:
            got = values.tolist()
        if got != expected["features"][name]["values"]:
            raise AssertionError("TensorFlow and protobuf disagree on %r" % name)


def write_golden(name, payloads, message_type, compressions=("",)):
    """Writes golden/NAME (+ compressed copies) with TF, and their expected JSON from TF's read."""
    for compression in compressions:
        path = TESTDATA / "golden" / (name + COMPRESSION_SUFFIX[compression])
        tf_write(path, payloads, compression)
        records = tf_read(path, compression)[0]
        expected = [record_json(r, message_type) for r in records]
        if message_type == "example":
            for serialized, e in zip(records, expected):
                tf_parse_check(serialized, e)
        top = dict(VERSIONS, file=path.name, compression=compression or "NONE")
        top["record_count"] = len(records)
        write_json(path.with_name(path.name + ".expected.json"), top, expected)


def ser(message):
    return message.SerializeToString(deterministic=True)


def example(features):
    """An Example from {name: Feature}; insertion order does not matter (maps are sorted)."""
    ex = tf.train.Example()
    ex.features.SetInParent()
    for name, feature in features.items():
        ex.features.feature[name].CopyFrom(feature)
    return ex


def bytes_feature(values):
    f = tf.train.Feature()
    f.bytes_list.SetInParent()
    f.bytes_list.value.extend(values)
    return f


def float_feature(values):
    f = tf.train.Feature()
    f.float_list.SetInParent()
    f.float_list.value.extend(values)
    return f


def int64_feature(values):
    f = tf.train.Feature()
    f.int64_list.SetInParent()
    f.int64_list.value.extend(int(v) for v in values)
    return f


# ---------------------------------------------------------------------------------------------
# Datasets


def tutorial_payloads(n=500):
    """The "TFRecord and tf.train.Example" tutorial's four features, with a fixed seed."""
    rng = np.random.RandomState(2024)
    feature0 = rng.choice([False, True], n)
    feature1 = rng.randint(0, 5, n)
    strings = np.array([b"cat", b"dog", b"chicken", b"horse", b"goat"])
    feature2 = strings[feature1]
    feature3 = rng.randn(n)
    return [
        ser(
            example(
                {
                    "feature0": int64_feature([feature0[i]]),
                    "feature1": int64_feature([feature1[i]]),
                    "feature2": bytes_feature([feature2[i]]),
                    "feature3": float_feature([feature3[i]]),
                }
            )
        )
        for i in range(n)
    ]


SYNSETS = [
    ("n01440764", b"tench, Tinca tinca"),
    ("n01443537", b"goldfish, Carassius auratus"),
    ("n01484850", b"great white shark, white shark, man-eater, man-eating shark"),
    ("n01491361", b"tiger shark, Galeocerdo cuvieri"),
    ("n01494475", b"hammerhead, hammerhead shark"),
    ("n01496331", b"electric ray, crampfish, numbfish, torpedo"),
]


def synthetic_image(rng, height, width, channels=3):
    """A smooth gradient plus noise: compresses like a photo, not like flat colour."""
    y = np.linspace(0, 255, height)[:, None, None]
    x = np.linspace(0, 255, width)[None, :, None]
    base = (y * rng.uniform(0.2, 1.0, channels) + x * rng.uniform(0.2, 1.0, channels)) / 2
    noise = rng.normal(0, 12, (height, width, channels))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def imagenet_example(rng, index, image_format="JPEG", height=24, width=32, n_boxes=1):
    """An Example with the keys of inception's build_imagenet_data.py (labels 1-based)."""
    label = index % len(SYNSETS)
    synset, human = SYNSETS[label]
    pixels = synthetic_image(rng, height, width)
    if image_format == "JPEG":
        encoded = tf.io.encode_jpeg(pixels, quality=90).numpy()
    else:
        encoded = tf.io.encode_png(pixels).numpy()
    boxes = []
    for _ in range(n_boxes):
        x0, x1 = sorted(rng.uniform(0, 1, 2).tolist())
        y0, y1 = sorted(rng.uniform(0, 1, 2).tolist())
        boxes.append((x0, y0, x1, y1))
    filename = "%s_%d.%s" % (synset, 1000 + index, "JPEG" if image_format == "JPEG" else "png")
    return ser(
        example(
            {
                "image/height": int64_feature([height]),
                "image/width": int64_feature([width]),
                "image/colorspace": bytes_feature([b"RGB"]),
                "image/channels": int64_feature([3]),
                "image/class/label": int64_feature([label + 1]),
                "image/class/synset": bytes_feature([synset.encode()]),
                "image/class/text": bytes_feature([human]),
                "image/object/bbox/xmin": float_feature([b[0] for b in boxes]),
                "image/object/bbox/ymin": float_feature([b[1] for b in boxes]),
                "image/object/bbox/xmax": float_feature([b[2] for b in boxes]),
                "image/object/bbox/ymax": float_feature([b[3] for b in boxes]),
                "image/object/bbox/label": int64_feature([label + 1] * len(boxes)),
                "image/format": bytes_feature([image_format.encode()]),
                "image/filename": bytes_feature([filename.encode()]),
                "image/encoded": bytes_feature([encoded]),
            }
        )
    )


def images_payloads():
    rng = np.random.RandomState(7)
    shapes = [("JPEG", 24, 32, 1), ("PNG", 24, 32, 2), ("JPEG", 32, 24, 0),
              ("PNG", 16, 16, 1), ("JPEG", 24, 32, 3), ("PNG", 24, 32, 1)]
    return [imagenet_example(rng, i, fmt, h, w, boxes) for i, (fmt, h, w, boxes) in enumerate(shapes)]


def edge_payloads():
    rng = np.random.RandomState(99)
    payloads = []
    payloads.append(ser(example({
        "empty_bytes": bytes_feature([]),
        "empty_float": float_feature([]),
        "empty_int64": int64_feature([]),
    })))
    payloads.append(ser(example({
        "int64": int64_feature([-2**63, 2**63 - 1, 0, -1, 1, 2**31 - 1, -2**31, 2**31, 2**32,
                                -2**32, 127, 128, 300]),
    })))
    float_bits = [
        0x7FC00000,  # NaN
        0xFFC00000,  # -NaN
        0x7FC00001,  # NaN with a payload
        0x7F800000,  # +inf
        0xFF800000,  # -inf
        0x00000000,  # 0.0
        0x80000000,  # -0.0
        0x00000001,  # 1.4e-45, the smallest subnormal
        0x80000001,  # -1.4e-45
        0x007FFFFF,  # the largest subnormal
        0x00800000,  # the smallest normal
        0x7F7FFFFF,  # f32::MAX
        0xFF7FFFFF,  # f32::MIN
        0x3DCCCCCD,  # 0.1
        0x3EAAAAAB,  # 1/3
        0xBF4A8001,  # a 7-digit value
        0x3F800000,  # 1.0
        0x4B800001,  # 16777218.0
        0x5F000000,  # 2^63
    ]
    payloads.append(ser(example({"float": float_feature([f32(b) for b in float_bits])})))
    payloads.append(ser(example({
        "étiquette": int64_feature([1]),
        "标签": bytes_feature(["猫".encode()]),
        "🏷️": float_feature([0.5]),
        "has space": int64_feature([2]),
        "image/class/label": int64_feature([3]),
        "UPPER_lower-123": bytes_feature([b"x"]),
    })))
    payloads.append(ser(example({
        "all_bytes": bytes_feature([bytes(range(256))]),
        "several": bytes_feature([b"", b"a", b"\x00", b"\n\r\t\"'\\", "é".encode(), b"\x7f\x80\xff",
                                  b"two words", "ünïcödé ✓".encode()]),
    })))
    payloads.append(ser(example({
        "big": bytes_feature([rng.bytes(1 << 20)]),
        "after_big": int64_feature([42]),
    })))
    kinds = []
    for i in range(1000):
        if i % 3 == 0:
            kinds.append(("f%04d" % i, int64_feature([i, -i])))
        elif i % 3 == 1:
            kinds.append(("f%04d" % i, float_feature([i / 7.0])))
        else:
            kinds.append(("f%04d" % i, bytes_feature([b"v%d" % i])))
    payloads.append(ser(example(dict(kinds))))
    payloads.append(ser(tf.train.Example()))
    payloads.append(ser(example({})))
    payloads.append(ser(example({"no_kind": tf.train.Feature(), "label": int64_feature([5])})))
    payloads.append(ser(example({
        "long_int64": int64_feature(rng.randint(-2**62, 2**62, 300, dtype=np.int64).tolist()),
        "long_float": float_feature(rng.randn(300).tolist()),
    })))
    assert payloads[7] == b"" and payloads[8] == b"\x0a\x00"
    return payloads


def sequence_payloads():
    payloads = []
    sx = tf.train.SequenceExample()
    sx.context.feature["id"].CopyFrom(bytes_feature([b"seq-0"]))
    sx.context.feature["length"].CopyFrom(int64_feature([3]))
    lists = sx.feature_lists.feature_list
    for step in ([1, 2], [3], [4, 5, 6]):
        lists["tokens"].feature.add().CopyFrom(int64_feature(step))
    for step in ([0.5], [0.25], [-1.0]):
        lists["scores"].feature.add().CopyFrom(float_feature(step))
    for step in ([b"a", b"b"], [b"c"], [b"d", b"e", b"f"]):
        lists["words"].feature.add().CopyFrom(bytes_feature(step))
    payloads.append(ser(sx))

    sx = tf.train.SequenceExample()
    sx.context.feature["id"].CopyFrom(bytes_feature([b"seq-1"]))
    sx.feature_lists.feature_list["empty"].SetInParent()
    sx.feature_lists.feature_list["one_step"].feature.add().CopyFrom(int64_feature([7]))
    sx.feature_lists.feature_list["empty_step"].feature.add().CopyFrom(float_feature([]))
    payloads.append(ser(sx))

    sx = tf.train.SequenceExample()
    for step in ([1.0, 2.0, 3.0], [], [4.0]):
        sx.feature_lists.feature_list["frames"].feature.add().CopyFrom(float_feature(step))
    payloads.append(ser(sx))

    sx = tf.train.SequenceExample()
    sx.context.feature["only_context"].CopyFrom(int64_feature([-1, 1]))
    payloads.append(ser(sx))
    return payloads


def bert_payloads(n, seed, max_seq_length=128, max_predictions=20):
    """Records shaped like google-research/bert create_pretraining_data.py's output."""
    rng = np.random.RandomState(seed)
    cls, sep, mask = 101, 102, 103
    payloads = []
    for _ in range(n):
        len_a = rng.randint(10, 50)
        len_b = rng.randint(10, 50)
        tokens = [cls] + rng.randint(1000, 30000, len_a).tolist() + [sep]
        segment_ids = [0] * len(tokens)
        tokens += rng.randint(1000, 30000, len_b).tolist() + [sep]
        segment_ids += [1] * (len_b + 1)
        candidates = [i for i, t in enumerate(tokens) if t not in (cls, sep)]
        n_pred = min(max_predictions, max(1, int(round(len(tokens) * 0.15))))
        positions = sorted(rng.choice(candidates, n_pred, replace=False).tolist())
        masked_ids = [tokens[p] for p in positions]
        for p in positions:
            tokens[p] = mask
        input_mask = [1] * len(tokens)
        pad = max_seq_length - len(tokens)
        tokens += [0] * pad
        input_mask += [0] * pad
        segment_ids += [0] * pad
        weights = [1.0] * n_pred + [0.0] * (max_predictions - n_pred)
        positions += [0] * (max_predictions - n_pred)
        masked_ids += [0] * (max_predictions - n_pred)
        payloads.append(ser(example({
            "input_ids": int64_feature(tokens),
            "input_mask": int64_feature(input_mask),
            "segment_ids": int64_feature(segment_ids),
            "masked_lm_positions": int64_feature(positions),
            "masked_lm_ids": int64_feature(masked_ids),
            "masked_lm_weights": float_feature(weights),
            "next_sentence_labels": int64_feature([rng.randint(0, 2)]),
        })))
    return payloads


# Seven-segment digits: segments a..g as (row0, row1, col0, col1) on a 28x28 canvas.
SEGMENTS = {
    "a": (4, 7, 8, 20), "b": (6, 14, 18, 21), "c": (14, 22, 18, 21), "d": (21, 24, 8, 20),
    "e": (14, 22, 7, 10), "f": (6, 14, 7, 10), "g": (12, 15, 8, 20),
}
DIGITS = ["abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg"]


def mnist_payloads(n, seed):
    rng = np.random.RandomState(seed)
    payloads = []
    for _ in range(n):
        label = rng.randint(0, 10)
        canvas = np.zeros((28, 28), dtype=np.float64)
        for segment in DIGITS[label]:
            r0, r1, c0, c1 = SEGMENTS[segment]
            canvas[r0:r1, c0:c1] = 255
        dy, dx = rng.randint(-2, 3, 2)
        canvas = np.roll(canvas, (dy, dx), axis=(0, 1)) * rng.uniform(0.6, 1.0)
        pixels = np.clip(canvas + rng.normal(0, 8, canvas.shape), 0, 255).astype(np.uint8)
        png = tf.io.encode_png(pixels[:, :, None]).numpy()
        payloads.append(ser(example({"image": bytes_feature([png]), "label": int64_feature([label])})))
    return payloads


# ---------------------------------------------------------------------------------------------
# OFRecord


def load_ofrecord_proto():
    """Compiles the vendored record.proto with grpc_tools.protoc and imports it."""
    # In a child process: grpc_tools' protobuf runtime and TensorFlow's crash in one process.
    out = tempfile.mkdtemp(prefix="ofrecord_pb2_")
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    args = [sys.executable, "-m", "grpc_tools.protoc", "-Iproto", "--python_out=" + out,
            "proto/oneflow/core/record/record.proto"]
    subprocess.run(args, check=True)
    sys.path.insert(0, out)
    from oneflow.core.record import record_pb2

    return record_pb2


# Set by main(): the record.proto module compiled at run time.
RECORD_PB2 = None


def of_feature(kind, values):
    f = RECORD_PB2.Feature()
    getattr(f, kind).SetInParent()
    getattr(f, kind).value.extend(values)
    return f


def ofrecord(features):
    rec = RECORD_PB2.OFRecord()
    for name, feature in features.items():
        rec.feature[name].CopyFrom(feature)
    return rec.SerializeToString(deterministic=True)


def of_write(path, payloads):
    """OneFlow's documented writer: an i64 little-endian length, then the serialized record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for b in payloads:
            f.write(struct.pack("<q", len(b)))
            f.write(b)


def of_read(path):
    data = path.read_bytes()
    records, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<q", data, pos)
        records.append(data[pos + 8: pos + 8 + n])
        pos += 8 + n
    return records


def write_of_dataset(directory, parts):
    expected = []
    for i, payloads in enumerate(parts):
        path = directory / ("part-%05d" % i)
        of_write(path, payloads)
        records = of_read(path)
        assert records == payloads
        for r in records:
            e = record_json(r, "ofrecord")
            e["part"] = path.name
            expected.append(e)
    top = dict(VERSIONS, dataset=directory.name, parts=["part-%05d" % i for i in range(len(parts))])
    top["record_count"] = len(expected)
    write_json(directory.with_name(directory.name + ".expected.json"), top, expected)


def of_all_kinds_parts():
    rng = np.random.RandomState(5)
    records = []
    for i in range(7):
        doubles = [0.5, -2.0, 1e300, 0.1, 5e-324, -0.0, float("nan"), float("inf")][: 2 + i]
        if i % 2 == 0:
            # Every value exactly representable as f32: of->tf narrows these losslessly.
            doubles = [0.5, -2.0, 1.25, -0.0, float("inf")][: 1 + i % 5]
        records.append(ofrecord({
            "encoded": of_feature("bytes_list", [rng.bytes(int(rng.randint(0, 40)))]),
            "names": of_feature("bytes_list", [b"alpha", b"", "βeta".encode()][: i % 4]),
            "float": of_feature("float_list", [f32(0x3DCCCCCD), f32(0x80000000), f32(0x7F7FFFFF),
                                               f32(0x00000001), float(i)]),
            "double": of_feature("double_list", doubles),
            "class/label": of_feature("int32_list", [i - 3]),
            "int32": of_feature("int32_list", [-1, -2**31, 2**31 - 1, 0, 7 * i][: 1 + i % 5]),
            "int64": of_feature("int64_list", [-2**63, 2**63 - 1, -1, 0, i]),
            "empty_double": of_feature("double_list", []),
            "empty_int32": of_feature("int32_list", []),
        }))
    return [records[:4], records[4:]]


def of_no_double_parts():
    rng = np.random.RandomState(6)
    records = []
    for i in range(5):
        records.append(ofrecord({
            "encoded": of_feature("bytes_list", [tf.io.encode_jpeg(synthetic_image(rng, 8, 8)).numpy()]),
            "label": of_feature("int64_list", [i, -i, 2**40]),
            "scores": of_feature("float_list", rng.randn(1 + i).tolist()),
            "tags": of_feature("bytes_list", [b"t%d" % j for j in range(i)]),
        }))
    return [records]


# ---------------------------------------------------------------------------------------------
# Damaged files


def record_starts(data):
    starts, pos = [], 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        if pos + 16 + n > len(data):
            break
        starts.append(pos)
        pos += 16 + n
    return starts, pos


def flip(data, offset):
    out = bytearray(data)
    out[offset] ^= 0xFF
    return bytes(out)


def damaged_files():
    """Returns [(name, bytes, expected dict)] derived from the golden tutorial files."""
    golden = TESTDATA / "golden"
    plain = (golden / "tutorial.tfrecord").read_bytes()
    gz = (golden / "tutorial.tfrecord.gz").read_bytes()
    zz = (golden / "tutorial.tfrecord.zz").read_bytes()
    starts, end = record_starts(plain)
    assert end == len(plain) and len(starts) == 500
    total = len(starts)
    rng = np.random.RandomState(1234)
    files = []

    def damage(kind, offset, index, good):
        return {"kind": kind, "offset": offset, "index": index, "good_records": good}

    s3 = starts[3]
    files.append(("flipped_data.tfrecord", flip(plain, s3 + 12 + 5),
                  damage("DataCrcMismatch", s3 + 12, 3, 3),
                  "byte 5 of record 3's payload XOR 0xff"))
    s5 = starts[5]
    files.append(("flipped_length.tfrecord", flip(plain, s5 + 7),
                  damage("LengthCrcMismatch", s5, 5, 5),
                  "most significant byte of record 5's length XOR 0xff (a length near 2^64)"))
    files.append(("flipped_length_crc.tfrecord", flip(plain, s5 + 9),
                  damage("LengthCrcMismatch", s5, 5, 5),
                  "byte 1 of record 5's length CRC XOR 0xff"))
    last = starts[-1]
    (last_len,) = struct.unpack_from("<Q", plain, last)
    files.append(("truncated_payload.tfrecord", plain[: last + 12 + last_len // 2],
                  damage("Truncated", last, total - 1, total - 1),
                  "cut in the middle of the last record's payload"))
    files.append(("truncated_header.tfrecord", plain + plain[:5],
                  damage("TruncatedHeader", len(plain), total, total),
                  "5 trailing bytes (the start of a length field) after the last record"))
    files.append(("garbage.tfrecord", rng.bytes(4096),
                  damage("LengthCrcMismatch", 0, 0, 0),
                  "4096 random bytes"))

    # A correctly framed record that is not an Example: field 1 with wire type 7 (invalid)
    # first, random bytes after. TF's writer frames it, so both CRCs are right.
    junk = b"\x0f" + rng.bytes(63)
    try:
        tf.train.Example.FromString(junk)
        raise AssertionError("the junk payload parsed as an Example")
    except google.protobuf.message.DecodeError:
        pass
    tmp = Path(tempfile.mkdtemp(prefix="damaged_"))
    framed = tmp / "junk.tfrecord"
    tutorial = tf_read(golden / "tutorial.tfrecord")[0]
    tf_write(framed, tutorial[:2] + [junk] + tutorial[2:3])
    junk_bytes = framed.read_bytes()
    junk_offset = record_starts(junk_bytes)[0][2]
    expected = damage("NotAnExample", junk_offset, 2, 2)
    expected["records"] = 4
    files.append(("crc_ok_garbage_payload.tfrecord", junk_bytes, expected,
                  "4 records framed by TF; record 2 is 64 bytes that do not parse as an Example"))

    cut = gz[: len(gz) * 3 // 5]
    partial = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut)
    cut_starts, cut_end = record_starts(partial)
    expected = damage("GzipTruncated", cut_end, len(cut_starts), len(cut_starts))
    expected["decompressed_available"] = len(partial)
    files.append(("gzip_cut.tfrecord.gz", cut, expected,
                  "golden/tutorial.tfrecord.gz cut to 3/5 of its size; offset and index are "
                  "those of the first incomplete record in the decompressed stream zlib "
                  "recovers (decompressed_available bytes)"))

    second = tmp / "second.tfrecord.gz"
    tf_write(second, tutorial[:10], "GZIP")
    files.append(("gzip_concat.tfrecord.gz", gz + second.read_bytes(),
                  {"kind": "ok", "records": total + 10},
                  "golden/tutorial.tfrecord.gz followed by a second GZIP member TF wrote "
                  "holding tutorial records 0..10: 510 records"))

    # TensorFlow reads the 500 records and ignores the junk; a strict reader reports it at
    # the end of the decompressed stream.
    files.append(("zlib_trailing.tfrecord.zz", zz + b"trailing junk after the zlib stream\n",
                  damage("TrailingData", len(plain), total, total),
                  "golden/tutorial.tfrecord.zz followed by 36 bytes of junk"))
    shutil.rmtree(tmp)
    return files


def write_damaged():
    directory = TESTDATA / "damaged"
    directory.mkdir(parents=True, exist_ok=True)
    summary = {}
    for name, data, expected, description in damaged_files():
        path = directory / name
        path.write_bytes(data)
        compression = "GZIP" if name.endswith(".gz") else "ZLIB" if name.endswith(".zz") else ""
        records, error, error_class = tf_read(path, compression)
        expected["compression"] = compression or "NONE"
        expected["description"] = description
        expected["tf_records_read"] = len(records)
        expected["tf_error"] = error
        expected["tf_error_class"] = error_class
        summary[name] = expected
    write_json(directory / "expected.json", dict(VERSIONS, files=summary))


# ---------------------------------------------------------------------------------------------
# Sample dataset trees for the CLI


def write_tfds_mnist(base):
    directory = base / "tfds" / "mnist" / "3.0.1"
    splits = {"train": [mnist_payloads(40, 11), mnist_payloads(40, 12)],
              "test": [mnist_payloads(40, 13)]}
    split_info = []
    for split in sorted(splits):
        shards = splits[split]
        num_bytes = 0
        for i, payloads in enumerate(shards):
            path = directory / ("mnist-%s.tfrecord-%05d-of-%05d" % (split, i, len(shards)))
            tf_write(path, payloads)
            # TFDS's numBytes: the serialized examples, their framing left out.
            num_bytes += sum(len(p) for p in payloads)
        split_info.append({
            "filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}",
            "name": split,
            "numBytes": str(num_bytes),
            "shardLengths": [str(len(p)) for p in shards],
        })
    info = {
        "description": "Synthetic stand-in for MNIST in the TFDS layout: seven-segment digits, "
                       "28x28 grayscale PNG, written by testdata/generate.py.",
        "fileFormat": "tfrecord",
        "moduleName": "tensorflow_datasets.image_classification.mnist",
        "name": "mnist",
        "splits": split_info,
        "supervisedKeys": {"tuple": {"items": [{"featureKey": "image"}, {"featureKey": "label"}]}},
        "version": "3.0.1",
    }
    features = {
        "featuresDict": {"features": {
            "image": {
                "description": "",
                "image": {"dtype": "uint8", "encodingFormat": "png",
                          "shape": {"dimensions": ["28", "28", "1"]}},
                "pythonClassName": "tensorflow_datasets.core.features.image_feature.Image",
            },
            "label": {
                "classLabel": {"numClasses": "10"},
                "description": "",
                "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
            },
        }},
        "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
    }
    for name, obj in (("dataset_info.json", info), ("features.json", features)):
        (directory / name).write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_tfds(directory, name, version, splits, description, image_shape, extra_features,
               num_classes):
    """A TFDS folder: NAME-SPLIT.tfrecord-NNNNN-of-NNNNN shards, dataset_info.json (with the
    shard lengths) and features.json."""
    split_info = []
    for split in sorted(splits):
        shards = splits[split]
        num_bytes = 0
        for i, payloads in enumerate(shards):
            path = directory / ("%s-%s.tfrecord-%05d-of-%05d" % (name, split, i, len(shards)))
            tf_write(path, payloads)
            # TFDS's numBytes: the serialized examples, their framing left out.
            num_bytes += sum(len(p) for p in payloads)
        split_info.append({
            "filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}",
            "name": split,
            "numBytes": str(num_bytes),
            "shardLengths": [str(len(p)) for p in shards],
        })
    info = {
        "description": description,
        "fileFormat": "tfrecord",
        "moduleName": "tensorflow_datasets.image_classification.%s" % name,
        "name": name,
        "splits": split_info,
        "supervisedKeys": {"tuple": {"items": [{"featureKey": "image"}, {"featureKey": "label"}]}},
        "version": version,
    }
    features = dict(extra_features)
    features["image"] = {
        "description": "",
        "image": {"dtype": "uint8", "encodingFormat": "png",
                  "shape": {"dimensions": [str(d) for d in image_shape]}},
        "pythonClassName": "tensorflow_datasets.core.features.image_feature.Image",
    }
    features["label"] = {
        "classLabel": {"numClasses": str(num_classes)},
        "description": "",
        "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
    }
    features = {
        "featuresDict": {"features": features},
        "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
    }
    for file_name, obj in (("dataset_info.json", info), ("features.json", features)):
        (directory / file_name).write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def cifar_payloads(n, seed, split):
    """CIFAR-10 in TFDS's form: `id` (text), `image` (32x32 RGB PNG), `label` int64 0..9."""
    rng = np.random.RandomState(seed)
    payloads = []
    for i in range(n):
        label = rng.randint(0, 10)
        pixels = synthetic_image(rng, 32, 32)
        png = tf.io.encode_png(pixels).numpy()
        payloads.append(ser(example({
            "id": bytes_feature([b"%s_%05d" % (split.encode(), seed * 1000 + i)]),
            "image": bytes_feature([png]),
            "label": int64_feature([label]),
        })))
    return payloads


def write_tfds_cifar10(base):
    write_tfds(
        base / "tfds" / "cifar10" / "3.0.2", "cifar10", "3.0.2",
        {"train": [cifar_payloads(16, 41, "train"), cifar_payloads(16, 42, "train")],
         "test": [cifar_payloads(16, 43, "test")]},
        "Synthetic stand-in for CIFAR-10 in the TFDS layout: 32x32 RGB PNG, written by "
        "testdata/generate.py.",
        (32, 32, 3),
        {"id": {"description": "", "pythonClassName":
                "tensorflow_datasets.core.features.text_feature.Text", "text": {}}},
        10,
    )


def cmyk_jpeg(pixels):
    """A CMYK JPEG as Photoshop-era ImageNet files are: TensorFlow cannot write one, Pillow
    can (with the Adobe marker)."""
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(pixels).convert("CMYK").save(out, "JPEG", quality=90)
    return out.getvalue()


def mixed_imagenet_payloads():
    """An inception-style shard whose images the script left as they were: RGB JPEG,
    grayscale JPEG, CMYK JPEG, RGB PNG and grayscale PNG, in a fixed cycle."""
    rng = np.random.RandomState(23)
    kinds = ["jpeg", "gray-jpeg", "cmyk-jpeg", "png", "gray-png"]
    payloads = []
    for index in range(15):
        kind = kinds[index % len(kinds)]
        height, width = 24 + index % 3 * 8, 32
        pixels = synthetic_image(rng, height, width)
        gray = pixels[:, :, :1]
        if kind == "jpeg":
            encoded, fmt, colorspace, channels = tf.io.encode_jpeg(pixels, quality=90), "JPEG", "RGB", 3
        elif kind == "gray-jpeg":
            encoded, fmt, colorspace, channels = tf.io.encode_jpeg(gray, quality=90), "JPEG", "Grayscale", 1
        elif kind == "cmyk-jpeg":
            encoded, fmt, colorspace, channels = cmyk_jpeg(pixels), "JPEG", "CMYK", 4
        elif kind == "png":
            encoded, fmt, colorspace, channels = tf.io.encode_png(pixels), "PNG", "RGB", 3
        else:
            encoded, fmt, colorspace, channels = tf.io.encode_png(gray), "PNG", "Grayscale", 1
        if not isinstance(encoded, bytes):
            encoded = encoded.numpy()
        label = index % len(SYNSETS)
        synset, human = SYNSETS[label]
        x0, x1 = sorted(rng.uniform(0, 1, 2).tolist())
        y0, y1 = sorted(rng.uniform(0, 1, 2).tolist())
        filename = "%s_%d.%s" % (synset, 2000 + index, fmt)
        payloads.append(ser(example({
            "image/height": int64_feature([height]),
            "image/width": int64_feature([width]),
            "image/colorspace": bytes_feature([colorspace.encode()]),
            "image/channels": int64_feature([channels]),
            "image/class/label": int64_feature([label + 1]),
            "image/class/synset": bytes_feature([synset.encode()]),
            "image/class/text": bytes_feature([human]),
            "image/object/bbox/xmin": float_feature([x0]),
            "image/object/bbox/ymin": float_feature([y0]),
            "image/object/bbox/xmax": float_feature([x1]),
            "image/object/bbox/ymax": float_feature([y1]),
            "image/object/bbox/label": int64_feature([label + 1]),
            "image/format": bytes_feature([fmt.encode()]),
            "image/filename": bytes_feature([filename.encode()]),
            "image/encoded": bytes_feature([encoded]),
        })))
    return payloads


def write_datasets(tutorial):
    base = TESTDATA / "datasets"
    write_tfds_mnist(base)
    write_tfds_cifar10(base)
    tf_write(base / "imagenet" / "mixed" / "train-00000-of-00001", mixed_imagenet_payloads())
    rng = np.random.RandomState(21)
    index = 0
    for split, shards in (("train", 2), ("validation", 1)):
        for shard in range(shards):
            payloads = []
            for _ in range(10):
                payloads.append(imagenet_example(rng, index, "JPEG", 24 + index % 3 * 8, 32,
                                                 1 + index % 2))
                index += 1
            tf_write(base / "imagenet" / split / ("%s-%05d-of-%05d" % (split, shard, shards)),
                     payloads)
    tf_write(base / "tutorial" / "tutorial.tfrecord", tutorial[:100])
    tf_write(base / "bert" / "pretrain.tfrecord", bert_payloads(16, 31))

    rng = np.random.RandomState(22)
    parts = []
    for part in range(2):
        records = []
        for i in range(8):
            jpeg = tf.io.encode_jpeg(synthetic_image(rng, 24, 32), quality=90).numpy()
            label = (part * 8 + i) % len(SYNSETS)
            records.append(ofrecord({
                "encoded": of_feature("bytes_list", [jpeg]),
                "class/label": of_feature("int32_list", [label]),
            }))
        parts.append(records)
    for i, records in enumerate(parts):
        of_write(TESTDATA / "ofdatasets" / "imagenet_of" / "train" / ("part-%05d" % i), records)


def main():
    global RECORD_PB2
    os.chdir(ROOT)
    for name in OUTPUT_DIRS:
        shutil.rmtree(TESTDATA / name, ignore_errors=True)
    RECORD_PB2 = load_ofrecord_proto()

    tutorial = tutorial_payloads()
    write_golden("tutorial.tfrecord", tutorial, "example", ("", "GZIP", "ZLIB"))
    write_golden("images.tfrecord", images_payloads(), "example")
    write_golden("edge.tfrecord", edge_payloads(), "example")
    write_golden("sequence.tfrecord", sequence_payloads(), "sequence_example")
    write_golden("empty.tfrecord", [], "example")
    write_golden("bert.tfrecord", bert_payloads(4, 30), "example")
    write_damaged()
    write_of_dataset(TESTDATA / "ofrecord" / "all_kinds", of_all_kinds_parts())
    write_of_dataset(TESTDATA / "ofrecord" / "no_double", of_no_double_parts())
    write_datasets(tutorial)

    for path in sorted(p for d in OUTPUT_DIRS for p in (TESTDATA / d).rglob("*") if p.is_file()):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        print("%10d  %s  %s" % (path.stat().st_size, digest, path))


if __name__ == "__main__":
    main()
