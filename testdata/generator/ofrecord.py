"""OFRecord as OneFlow documents it: the protobuf messages of the vendored
proto/oneflow/core/record/record.proto, compiled at run time with grpc_tools.protoc, and files
framed by an 8-byte little-endian length. The lowest module: it imports no other."""

import atexit
import functools
import shutil
import struct
import subprocess
import sys
import tempfile


@functools.lru_cache(maxsize=None)
def record_proto():
    """Compiles the vendored record.proto with grpc_tools.protoc and imports it, on the first
    call (from the repository's root); later calls give the same module."""
    # In a child process: grpc_tools' protobuf runtime and TensorFlow's crash in one process.
    out = tempfile.mkdtemp(prefix="ofrecord_pb2_")
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    args = [sys.executable, "-m", "grpc_tools.protoc", "-Iproto", "--python_out=" + out,
            "proto/oneflow/core/record/record.proto"]
    subprocess.run(args, check=True)
    sys.path.insert(0, out)
    from oneflow.core.record import record_pb2

    return record_pb2


def of_feature(kind, values):
    f = record_proto().Feature()
    getattr(f, kind).SetInParent()
    getattr(f, kind).value.extend(values)
    return f


def ofrecord(features):
    rec = record_proto().OFRecord()
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
