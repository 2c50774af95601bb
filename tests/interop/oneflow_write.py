"""Writes OFRecord datasets the way OneFlow's docs do, with the wheel's own protobuf module
(`oneflow.core.record.record_pb2`, then an 8-byte little-endian length before each record),
for of2tf to convert and check.py to compare with what TensorFlow reads back.

    oneflow_write.py OUT

OUT/exact/part-0000{0,1,2}: all five kinds, with doubles float holds exactly (of2tf's
default refuses others); OUT/lossy/part-0000{0,1}: doubles that round (of2tf --lossy).
Values cover empty lists, several values, negative int32 (10-byte varints), int64 and
int32 extremes, float specials and bytes of every value.
"""

import os
import struct
import sys

import numpy as np
from oneflow.core.record import record_pb2


def feature(kind, values):
    f = record_pb2.Feature()
    getattr(f, kind).SetInParent()
    getattr(f, kind).value.extend(values)
    return f


def record(features):
    r = record_pb2.OFRecord()
    for name, f in features.items():
        r.feature[name].CopyFrom(f)
    return r.SerializeToString()


def write_part(path, records):
    with open(path, "wb") as f:
        for serialized in records:
            f.write(struct.pack("<q", len(serialized)))
            f.write(serialized)


def exact_records(rng, n):
    out = []
    for i in range(n):
        out.append(record({
            "encoded": feature("bytes_list", [bytes(rng.randint(0, 256, 1 + i * 7, dtype=np.uint8))]),
            "tags": feature("bytes_list", [b"t%d" % j for j in range(i % 4)] + [bytes(range(256))][: i % 2]),
            "float": feature("float_list", [0.1, -0.0, 3.4028234663852886e38, 1e-45, float("inf"),
                                            float(i)][: 1 + i % 6]),
            "double": feature("double_list", [0.5, -2.0, 1.25, -0.0, float("inf"), 65536.0][: i % 7]),
            "int32": feature("int32_list", [-1, -2**31, 2**31 - 1, 0, 7 * i][: 1 + i % 5]),
            "int64": feature("int64_list", [-2**63, 2**63 - 1, -1, 0, 2**40 + i]),
            "class/label": feature("int32_list", [i % 10]),
        }))
    return out


def lossy_records(n):
    return [
        record({
            "double": feature("double_list", [0.1 * i, 1.0 / 3.0, -2.5e-10, 123456789.123]),
            "label": feature("int64_list", [i]),
        })
        for i in range(n)
    ]


def main(out):
    rng = np.random.RandomState(13)
    records = exact_records(rng, 12)
    os.makedirs(os.path.join(out, "exact"))
    for part, chunk in enumerate([records[:5], records[5:9], records[9:]]):
        write_part(os.path.join(out, "exact", "part-%05d" % part), chunk)
    records = lossy_records(6)
    os.makedirs(os.path.join(out, "lossy"))
    for part, chunk in enumerate([records[:3], records[3:]]):
        write_part(os.path.join(out, "lossy", "part-%05d" % part), chunk)
    print("oneflow wrote %s/exact (3 parts, 12 records) and %s/lossy (2 parts, 6 records)"
          % (out, out))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
