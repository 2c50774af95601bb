"""TensorFlow's side: tf.train messages built and serialized deterministically, TFRecord
files written by tf.io.TFRecordWriter (plain, GZIP, ZLIB) and read back by
tf.data.TFRecordDataset, and protobuf's parse checked against TensorFlow's C++ parser."""

import numpy as np
import tensorflow as tf

from .expected import bytes_json

COMPRESSION_SUFFIX = {"": "", "GZIP": ".gz", "ZLIB": ".zz"}


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
