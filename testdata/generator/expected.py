"""The expected JSON: each record as protobuf parses it, every value encoded as
testdata/README.md describes (bytes as hex or a digest, floats as their bits), written sorted
and stable with one record a line."""

import json
import struct

import google.protobuf
import tensorflow as tf
from google.protobuf import text_format

from .ofrecord import record_proto

# Bytes values longer than this, and text renderings longer than TEXT_INLINE_MAX, are stored
# as length + FNV-1a 64 digest instead of inline, to keep the expected files small.
BYTES_INLINE_MAX = 4096
TEXT_INLINE_MAX = 131072
# "serialized_hex" is stored for records smaller than this.
SERIALIZED_HEX_MAX = 4096

VERSIONS = {
    "tensorflow_version": tf.__version__,
    "protobuf_version": google.protobuf.__version__,
}


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
        msg = record_proto().OFRecord.FromString(serialized)
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
