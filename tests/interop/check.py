"""Checks ofconvert's output with the real readers.

    check.py tf2of IN OUT   every OFRecord part under OUT, parsed by the protobuf runtime with
                            OneFlow's record.proto, equals TensorFlow's parse of the inputs
    check.py of2tf IN OUT [--lossy]
                            every TFRecord file under OUT, read by tf.data.TFRecordDataset and
                            parsed by tf.train.Example and tf.io.parse_single_example, equals
                            the OneFlow parts it came from (int32 widened, double narrowed)

Datasets are found by their ofconvert-manifest.json (name-split.ofconvert-manifest.json for
the splits of a TFDS dataset given back in TFDS's layout), which names the inputs (relative to IN)
and the parts in order. `record_pb2` must be importable (compile record.proto with
grpc_tools.protoc first). Exits 1 on the first dataset that differs, naming the record.
"""

import json
import math
import os
import struct
import sys

import numpy as np
import tensorflow as tf
from record_pb2 import OFRecord

MANIFEST = "ofconvert-manifest.json"


def manifests(root):
    """Every manifest under root: MANIFEST, or name-split.MANIFEST for the splits of a TFDS
    dataset, which share a folder."""
    for directory, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name == MANIFEST or name.endswith("." + MANIFEST):
                with open(os.path.join(directory, name)) as f:
                    yield directory, json.load(f)


def f32_bits(value):
    return struct.unpack("<I", struct.pack("<f", value))[0]


def canonical(kind, values):
    """A comparable form of a feature: floats by their f32 bit pattern."""
    if kind == "float_list":
        return kind, [f32_bits(v) for v in values]
    if kind == "bytes_list":
        return kind, [bytes(v) for v in values]
    return kind, [int(v) for v in values]


def example_features(example):
    features = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        values = getattr(feature, kind).value if kind else []
        features[name] = canonical(kind, values)
    return features


def ofrecord_features(record, lossy):
    """An OFRecord's features as of2tf writes them into an Example."""
    features = {}
    for name, feature in record.feature.items():
        kind = feature.WhichOneof("kind")
        values = list(getattr(feature, kind).value) if kind else []
        if kind == "int32_list":
            kind = "int64_list"
        elif kind == "double_list":
            with np.errstate(over="ignore"):
                narrowed = [float(np.float32(v)) for v in values]
            for wide, narrow in zip(values, narrowed):
                # Narrowing would make it an infinity: not rounding, refused even when lossy.
                if math.isfinite(wide) and math.isinf(narrow):
                    raise AssertionError(f"{name}: double {wide!r} is beyond float's range")
                exact = wide == narrow or (math.isnan(wide) and math.isnan(narrow))
                if not exact and not lossy:
                    raise AssertionError(f"{name}: double {wide!r} is not a float")
            kind, values = "float_list", narrowed
        features[name] = canonical(kind, values)
    return features


def rounded_values(record):
    """How many doubles of an OFRecord narrowing to float changes."""
    changed = 0
    for feature in record.feature.values():
        if feature.WhichOneof("kind") == "double_list":
            for wide in feature.double_list.value:
                narrow = float(np.float32(wide))
                changed += not (wide == narrow or math.isnan(wide))
    return changed


def ofrecord_as_is(record):
    return {
        name: canonical(
            feature.WhichOneof("kind"),
            getattr(feature, feature.WhichOneof("kind")).value
            if feature.WhichOneof("kind")
            else [],
        )
        for name, feature in record.feature.items()
    }


def read_ofrecord_file(path):
    with open(path, "rb") as f:
        data = f.read()
    offset, payloads = 0, []
    while offset < len(data):
        if offset + 8 > len(data):
            raise AssertionError(f"{path}: truncated length at {offset}")
        (length,) = struct.unpack_from("<q", data, offset)
        if length <= 0 or offset + 8 + length > len(data):
            raise AssertionError(f"{path}: bad length {length} at {offset}")
        payloads.append(data[offset + 8 : offset + 8 + length])
        offset += 8 + length
    return payloads


def tf_records(paths, compression_type=""):
    dataset = tf.data.TFRecordDataset(paths, compression_type=compression_type)
    return [record.numpy() for record in dataset]


def fail(message):
    print(f"MISMATCH: {message}", file=sys.stderr)
    sys.exit(1)


def check_tf2of(input_root, output_root):
    datasets = 0
    for directory, manifest in manifests(output_root):
        reader = manifest["oneflow"]
        parts = [p["name"] for p in manifest["parts"]]
        width = reader["part_name_suffix_length"]
        expected_names = [
            reader["part_name_prefix"] + (str(i).zfill(width) if width > 0 else str(i))
            for i in range(reader["data_part_num"])
        ]
        if parts != expected_names:
            fail(f"{directory}: parts {parts} are not what OFRecordReader opens: {expected_names}")
        examples = []
        for source in manifest["inputs"]:
            path = os.path.join(input_root, source["path"])
            compression_type = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}[source["compression"]]
            examples += [tf.train.Example.FromString(r) for r in tf_records(path, compression_type)]
        # `--empty skip` leaves out the Examples without features, and counts them.
        kept = [e for e in examples if len(e.features.feature) > 0]
        if len(examples) - len(kept) != manifest["skipped"]["empty"]:
            fail(f"{directory}: {len(examples) - len(kept)} empty Examples, manifest says "
                 f"{manifest['skipped']['empty']} skipped")
        examples = kept
        written = []
        for part in parts:
            for payload in read_ofrecord_file(os.path.join(directory, part)):
                written.append(OFRecord.FromString(payload))
        if len(written) != len(examples):
            fail(f"{directory}: {len(written)} records written, {len(examples)} read by TensorFlow")
        for index, (record, example) in enumerate(zip(written, examples)):
            if ofrecord_as_is(record) != example_features(example):
                fail(f"{directory}: record #{index} differs from TensorFlow's parse")
        datasets += 1
        print(f"ok  tf2of {os.path.relpath(directory, output_root)}: {len(written)} records")
    if datasets == 0:
        fail(f"no dataset under {output_root}")


def check_of2tf(input_root, output_root, lossy):
    datasets = 0
    for directory, manifest in manifests(output_root):
        reader = manifest["tensorflow"]
        files = [os.path.join(directory, p["name"]) for p in manifest["parts"]]
        records = tf_records(files, reader["compression_type"])
        inputs = [os.path.join(input_root, i["path"]) for i in manifest["inputs"]]
        originals = [
            OFRecord.FromString(payload) for path in inputs for payload in read_ofrecord_file(path)
        ]
        if len(records) != len(originals):
            fail(f"{directory}: TensorFlow read {len(records)} records, the parts hold {len(originals)}")
        if lossy:
            want = sum(rounded_values(original) for original in originals)
            if manifest.get("rounded_values") != want:
                fail(f"{directory}: manifest counts {manifest.get('rounded_values')} rounded values, not {want}")
        for index, (serialized, original) in enumerate(zip(records, originals)):
            example = tf.train.Example.FromString(serialized)
            expected = ofrecord_features(original, lossy)
            if example_features(example) != expected:
                fail(f"{directory}: record #{index} differs from its OFRecord")
            # TensorFlow's C++ parser must accept the bytes too and agree on every value.
            description = {}
            for name, (kind, _) in expected.items():
                dtype = {"bytes_list": tf.string, "float_list": tf.float32}.get(kind, tf.int64)
                description[name] = tf.io.VarLenFeature(dtype)
            parsed = tf.io.parse_single_example(serialized, description)
            for name, (kind, values) in expected.items():
                got = parsed[name].values.numpy().tolist()
                if canonical(kind, got) != (kind, values):
                    fail(f"{directory}: record #{index} feature {name!r}: parse_single_example disagrees")
        datasets += 1
        print(f"ok  of2tf {os.path.relpath(directory, output_root)}: {len(records)} records")
    if datasets == 0:
        fail(f"no dataset under {output_root}")


def main(argv):
    if len(argv) < 4 or argv[1] not in ("tf2of", "of2tf"):
        print(__doc__, file=sys.stderr)
        return 2
    direction, input_root, output_root = argv[1:4]
    if direction == "tf2of":
        check_tf2of(input_root, output_root)
    else:
        check_of2tf(input_root, output_root, "--lossy" in argv[4:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
