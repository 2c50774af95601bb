"""Writes the text-format fixtures that tests/text_format.rs checks the bridge's renderings against.

Run from the repository root, with a Python that has tensorflow (or tensorflow-cpu), protobuf and
grpcio-tools installed:

    python testdata/text/generate.py

It writes, next to this script:

- floats.json: f32 bit patterns and the exact text google.protobuf.text_format prints for each
  as a FloatList value;
- doubles.json: f64 bit patterns and the text it prints for each as a OneFlow DoubleList value
  (Python's repr);
- messages.json: small Examples, SequenceExamples and OFRecords, each serialized (hex) with
  text_format.MessageToString and json_format.MessageToDict of the parsed message; plus inputs
  that the protobuf runtime refuses to parse (invalid UTF-8 in a map key), which the bridge must
  refuse too.

TF messages are TensorFlow's own tf.train classes; OFRecord is compiled from proto/'s copy of
OneFlow's record.proto into a temporary directory. Everything random uses a fixed seed, so a
rerun with the same protobuf version rewrites identical files.
"""

import importlib.util
import json
import math
import os
import pathlib
import random
import struct
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import google.protobuf  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import json_format, text_format  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SEED = 20240607


def load_record_pb2():
    out_dir = tempfile.mkdtemp(prefix="ofrecord_pb2_")
    proto = "oneflow/core/record/record.proto"
    # In a child process: grpc_tools' protoc and TensorFlow's protobuf library cannot share
    # one process (it dies silently).
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{ROOT / 'proto'}", f"--python_out={out_dir}", proto],
                   check=True)
    path = pathlib.Path(out_dir, "oneflow/core/record/record_pb2.py")
    spec = importlib.util.spec_from_file_location("record_pb2", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


record_pb2 = load_record_pb2()


def f32_from_bits(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def f32_bits(value):
    return struct.unpack("<I", struct.pack("<f", value))[0]


def f64_from_bits(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def f64_bits(value):
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def float_bit_patterns(rng):
    patterns = {
        0x00000000, 0x80000000,  # zeros
        0x7F800000, 0xFF800000,  # infinities
        0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF,  # NaNs, quiet and signalling
        0x00000001, 0x00000002, 0x007FFFFF, 0x00800000, 0x00800001,  # subnormal edges
        0x7F7FFFFF, 0x7F7FFFFE, 0x3F800000, 0x3F7FFFFF, 0x3F800001,
    }
    for exponent in range(-46, 40):
        bits = f32_bits_nearest(10.0**exponent)
        if bits is not None:
            patterns.update(bits + delta for delta in (-1, 0, 1) if 0 < bits + delta < 0x7F800000)
    for exponent in range(-149, 128):
        patterns.add(f32_bits(2.0**exponent))
    for value in range(0, 1025):
        patterns.add(f32_bits(float(value)))
    # Values with an exact short decimal expansion: where rounding to 6..9 digits meets ties.
    for base in (1048576, 4194304, 8388608, 999999, 9999999, 123456):
        for numerator in range(0, 8):
            patterns.add(f32_bits(base + numerator / 8))
    # Around the switch to exponent form (repr uses it below 1e-4 and from 1e16 on).
    for anchor in (1e-4, 1e-5, 1e15, 1e16, 1e17):
        bits = f32_bits(anchor)
        patterns.update(bits + delta for delta in range(-3, 4))
    # Short decimals as users write them: 0.1, 2.5, -0.7910465...
    for _ in range(600):
        digits = rng.randint(1, 9)
        mantissa = rng.randrange(10 ** (digits - 1), 10**digits)
        value = mantissa * 10.0 ** rng.randint(-40, 30)
        bits = f32_bits_nearest(value)
        if bits is not None:
            patterns.add(bits | (rng.getrandbits(1) << 31))
    while len(patterns) < 4000:
        patterns.add(rng.getrandbits(32))
    return sorted(patterns)


def f32_bits_nearest(value):
    try:
        return f32_bits(value)
    except OverflowError:
        return None


def double_bit_patterns(rng):
    patterns = {
        0x0000000000000000, 0x8000000000000000,
        0x7FF0000000000000, 0xFFF0000000000000,
        0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
        0x0000000000000001, 0x000FFFFFFFFFFFFF, 0x0010000000000000,
        0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000, 0x3FEFFFFFFFFFFFFF, 0x3FF0000000000001,
    }
    for exponent in range(-324, 309):
        bits = f64_bits(float(f"1e{exponent}"))
        patterns.update(bits + delta for delta in (-1, 0, 1) if 0 < bits + delta < 0x7FF0000000000000)
    for exponent in range(-1074, 1024, 7):
        patterns.add(f64_bits(math.ldexp(1.0, exponent)))
    for value in (9999999999999998.0, 1e16, 1e15, 123456789012345678.0, 0.0001, 0.00001, 0.5, 2.5):
        bits = f64_bits(value)
        patterns.update(bits + delta for delta in (-1, 0, 1))
    # Doubles that came from f32 (a DoubleList written from float data).
    for bits in float_bit_patterns(random.Random(SEED))[::10]:
        value = f32_from_bits(bits)
        if math.isfinite(value):
            patterns.add(f64_bits(value))
    for _ in range(400):
        digits = rng.randint(1, 17)
        mantissa = rng.randrange(10 ** (digits - 1), 10**digits)
        value = float(f"{mantissa}e{rng.randint(-320, 290)}")
        if math.isfinite(value) and value != 0.0:
            patterns.add(f64_bits(value) | (rng.getrandbits(1) << 63))
    while len(patterns) < 4000:
        patterns.add(rng.getrandbits(64))
    return sorted(patterns)


def value_lines(text, count):
    """The `value: X` spellings of a printed list message, in order."""
    values = [line.strip()[len("value: "):] for line in text.splitlines() if line.strip().startswith("value: ")]
    if len(values) != count:
        sys.exit(f"expected {count} values, found {len(values)}")
    return values


def floats_fixture(rng):
    patterns = float_bit_patterns(rng)
    feature = tf.train.Feature(float_list=tf.train.FloatList(value=[f32_from_bits(bits) for bits in patterns]))
    spellings = value_lines(text_format.MessageToString(feature), len(patterns))
    return [{"bits": f"{bits:08x}", "text": text} for bits, text in zip(patterns, spellings)]


def doubles_fixture(rng):
    patterns = double_bit_patterns(rng)
    feature = record_pb2.Feature(double_list=record_pb2.DoubleList(value=[f64_from_bits(bits) for bits in patterns]))
    spellings = value_lines(text_format.MessageToString(feature), len(patterns))
    return [{"bits": f"{bits:016x}", "text": text} for bits, text in zip(patterns, spellings)]


ALL_BYTES = bytes(range(256))
ESCAPES = b"\n\r\t\"'\\ \x00\x07\x1f\x7f\x80\xff?{}"
UTF8_KEYS = ["é", "日本語", "emoji \U0001F600", "tab\there", "new\nline", 'quote"', "apos'", "back\\slash",
             "ctl\x01\x1f\x7f", "c1\u0080\u009f", "sep\u2028", "nbsp\u00a0", "a/b", "image/class/label"]


def tf_bytes(*values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))


def tf_floats(*values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def tf_ints(*values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def example(features):
    ex = tf.train.Example()
    ex.features.SetInParent()
    for key, feature in features.items():
        ex.features.feature[key].CopyFrom(feature)
    return ex


def of_feature(kind, values):
    feature = record_pb2.Feature()
    getattr(feature, kind).SetInParent()
    getattr(feature, kind).value.extend(values)
    return feature


def ofrecord(features):
    record = record_pb2.OFRecord()
    for key, feature in features.items():
        record.feature[key].CopyFrom(feature)
    return record


def sequence_example(context, lists):
    seq = tf.train.SequenceExample()
    if context is not None:
        seq.context.SetInParent()
        for key, feature in context.items():
            seq.context.feature[key].CopyFrom(feature)
    if lists is not None:
        seq.feature_lists.SetInParent()
        for key, features in lists.items():
            entry = seq.feature_lists.feature_list[key]
            for feature in features:
                entry.feature.add().CopyFrom(feature)
    return seq


def message_cases(rng):
    nan, inf = float("nan"), float("inf")
    cases = [
        ("example_unset_features", tf.train.Example()),
        ("example_empty_features", example({})),
        ("example_kindless_feature", example({"none": tf.train.Feature()})),
        ("example_empty_lists", example({"b": tf_bytes(), "f": tf_floats(), "i": tf_ints()})),
        ("example_all_bytes", example({"raw": tf_bytes(ALL_BYTES)})),
        ("example_escapes", example({"esc": tf_bytes(*[bytes([b]) for b in ESCAPES], ESCAPES, b"")})),
        ("example_utf8_in_bytes", example({"text": tf_bytes("héllo 日本".encode(), "\U0001F600".encode())})),
        ("example_invalid_utf8_in_bytes", example({"bin": tf_bytes(b"\xff\xfe", b"\xc3", b"\xed\xa0\x80")})),
        ("example_i64_extremes", example({"i": tf_ints(-(2**63), 2**63 - 1, 0, -1, 1, 2**31, -(2**31) - 1)})),
        ("example_float_specials", example({"f": tf_floats(nan, inf, -inf, -0.0, 0.0, 1e-45, 3.4028234663852886e38,
                                                          -3.4028234663852886e38, 1.1754943508222875e-38)})),
        ("example_float_spellings", example({"f": tf_floats(0.1, -0.7910465, 1e16, 1e-5, 1e-4, 123456789.0,
                                                            0.3333333, 2.5, 1e15, 16777217.0)})),
        ("example_empty_key", example({"": tf_ints(7), "a": tf_ints(1)})),
        ("example_empty_key_kindless", example({"": tf.train.Feature()})),
        ("example_key_order", example({k: tf_ints(i) for i, k in enumerate(["b", "a", "B", "_", "a/b", "a0", "é",
                                                                            "z", "Z", "aa", "\U0001F600", "\uffff"])})),
        ("example_imagenet_like", example({
            "image/encoded": tf_bytes(bytes([0xFF, 0xD8, 0xFF, 0xE0]) + bytes(rng.getrandbits(8) for _ in range(60))),
            "image/class/label": tf_ints(417),
            "image/class/text": tf_bytes(b"balloon"),
            "image/height": tf_ints(375),
            "image/width": tf_ints(500),
            "image/object/bbox/xmin": tf_floats(0.1, 0.25),
        })),
        ("example_many_values", example({
            "floats": tf_floats(*[rng.uniform(-1000, 1000) for _ in range(64)]),
            "ints": tf_ints(*[rng.randint(-(2**63), 2**63 - 1) for _ in range(64)]),
        })),
    ]
    for index, key in enumerate(UTF8_KEYS):
        cases.append((f"example_key_{index:02}", example({key: tf_bytes(key.encode())})))
    cases += [
        ("sequence_empty", tf.train.SequenceExample()),
        ("sequence_empty_parts", sequence_example({}, {})),
        ("sequence_context_only", sequence_example({"id": tf_bytes(b"seq-1"), "len": tf_ints(3)}, None)),
        ("sequence_lists_only", sequence_example(None, {"tokens": [tf_ints(1), tf_ints(2, 3), tf_ints()]})),
        ("sequence_empty_feature_list", sequence_example(None, {"empty": []})),
        ("sequence_kindless_in_list", sequence_example(None, {"x": [tf.train.Feature(), tf_floats(0.5)]})),
        ("sequence_full", sequence_example(
            {"": tf_ints(0), "ctx": tf_floats(nan, -0.0)},
            {"": [tf_bytes(b"")], "frames": [tf_bytes(b"\x00\x01"), tf_bytes(b"\xff")], "é": [tf_floats(1.5)]},
        )),
        ("ofrecord_empty", record_pb2.OFRecord()),
        ("ofrecord_kindless", ofrecord({"none": record_pb2.Feature()})),
        ("ofrecord_empty_key", ofrecord({"": of_feature("int32_list", [1]), "b": record_pb2.Feature()})),
        ("ofrecord_empty_lists", ofrecord({kind: of_feature(kind, []) for kind in
                                           ("bytes_list", "float_list", "double_list", "int32_list", "int64_list")})),
        ("ofrecord_all_bytes", ofrecord({"encoded": of_feature("bytes_list", [ALL_BYTES, ESCAPES])})),
        ("ofrecord_int_extremes", ofrecord({
            "i32": of_feature("int32_list", [-(2**31), 2**31 - 1, 0, -1]),
            "i64": of_feature("int64_list", [-(2**63), 2**63 - 1, 0, -1]),
        })),
        ("ofrecord_double_specials", ofrecord({"d": of_feature("double_list", [
            nan, inf, -inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 0.1,
            1e16, 1e15, 1e-4, 1e-5, 1 / 3, -123456.789, 0.1 + 0.2])})),
        ("ofrecord_float_specials", ofrecord({"f": of_feature("float_list", [nan, inf, -inf, -0.0, 1e-45, 0.1])})),
        ("ofrecord_imagenet_like", ofrecord({
            "encoded": of_feature("bytes_list", [bytes([0xFF, 0xD8]) + bytes(rng.getrandbits(8) for _ in range(40))]),
            "class/label": of_feature("int32_list", [416]),
        })),
        ("ofrecord_utf8_keys", ofrecord({key: of_feature("int64_list", [index]) for index, key in enumerate(UTF8_KEYS)})),
        ("ofrecord_many_values", ofrecord({
            "d": of_feature("double_list", [rng.uniform(-1e6, 1e6) for _ in range(32)]),
            "f": of_feature("float_list", [rng.uniform(-1, 1) for _ in range(32)]),
            "i": of_feature("int32_list", [rng.randint(-(2**31), 2**31 - 1) for _ in range(32)]),
        })),
    ]
    return cases


def type_name(message):
    if isinstance(message, record_pb2.OFRecord):
        return "OFRecord"
    return type(message).__name__


def messages_fixture(rng):
    fixtures = []
    for name, message in message_cases(rng):
        # Plain SerializeToString() on upb writes map entries in an order that changes from one
        # process to the next; deterministic=True keeps reruns byte-identical (its order is
        # still not key order, which the renderers must not depend on anyway).
        serialized = message.SerializeToString(deterministic=True)
        parsed = type(message).FromString(serialized)
        fixtures.append({
            "name": name,
            "type": type_name(message),
            "hex": serialized.hex(),
            "text": text_format.MessageToString(parsed),
            "json": json_format.MessageToDict(parsed),
        })
    # A map entry whose key is not UTF-8: the protobuf runtime refuses the whole message.
    bad_entry = b"\x0a\x02\xff\xfe\x12\x00"
    bad_record = b"\x0a" + bytes([len(bad_entry)]) + bad_entry
    bad_example = b"\x0a" + bytes([len(bad_record)]) + bad_record
    for name, cls, serialized in (("example_invalid_utf8_key", tf.train.Example, bad_example),
                                  ("ofrecord_invalid_utf8_key", record_pb2.OFRecord, bad_record)):
        try:
            text_format.MessageToString(cls.FromString(serialized))
        except Exception:  # noqa: BLE001 - DecodeError or UnicodeDecodeError, depending on the runtime
            fixtures.append({"name": name, "type": "OFRecord" if cls is record_pb2.OFRecord else cls.__name__,
                             "hex": serialized.hex(), "refused": True})
        else:
            sys.exit(f"{name}: this protobuf runtime accepts a key that is not UTF-8; the fixture needs a rethink")
    return fixtures


def write(name, cases):
    document = {
        "generator": "testdata/text/generate.py",
        "protobuf": google.protobuf.__version__,
        "tensorflow": tf.__version__,
        "cases": cases,
    }
    with open(HERE / name, "w", encoding="utf-8") as out:
        json.dump(document, out, indent=1, ensure_ascii=False, sort_keys=True)
        out.write("\n")
    print(f"wrote {HERE / name}: {len(cases)} cases")


def main():
    write("floats.json", floats_fixture(random.Random(SEED)))
    write("doubles.json", doubles_fixture(random.Random(SEED + 1)))
    write("messages.json", messages_fixture(random.Random(SEED + 2)))


if __name__ == "__main__":
    main()
