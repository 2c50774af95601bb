"""Checks that Google's `array_record` reads the files ofconvert's writer makes.

For every golden case's records (NAME.expected) and each compression, writes an ArrayRecord
file with `cargo build --release -p ofconvert-arrayrecord --example write_arrayrecord`, then reads it with
`array_record`'s ArrayRecordReader, in order and by record number (backwards), and through
`ArrayRecordDataSource` (the class Grain's `grain.python.ArrayRecordDataSource` is), and compares
every record. Run from the repository root with `array-record==0.8.6` installed (CI runs it in
tests/interop/run.sh, with the array_record TFDS brings):

    python3 testdata/arrayrecord/check_ours.py
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

from array_record.python.array_record_data_source import ArrayRecordDataSource
from array_record.python.array_record_module import ArrayRecordReader

HERE = os.path.dirname(os.path.abspath(__file__))
COMPRESSIONS = ["uncompressed", "zstd:3", "zstd:-1", "brotli:6", "snappy"]
GROUP_SIZES = [1, 5]


def expected(name):
    with open(os.path.join(HERE, name + ".expected"), "rb") as f:
        data = f.read()
    records, at = [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        records.append(data[at + 8 : at + 8 + length])
        at += 8 + length
    return records


def main():
    # The release build, which `cargo test --workspace --release` (CI's) has already made.
    subprocess.run(
        ["cargo", "build", "-q", "--release", "--locked", "-p", "ofconvert-arrayrecord",
         "--example", "write_arrayrecord"],
        check=True,
    )
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    writer = os.path.join(target, "release", "examples", "write_arrayrecord")
    with open(os.path.join(HERE, "manifest.json")) as f:
        cases = [case["name"] for case in json.load(f)]
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in cases:
            records = expected(name)
            for compression in COMPRESSIONS:
                for group_size in GROUP_SIZES:
                    path = os.path.join(tmp, "%s-%s-%d.array_record" % (name, compression, group_size))
                    subprocess.run(
                        [writer, os.path.join(HERE, name + ".expected"), path, compression, str(group_size)],
                        check=True,
                    )
                    reader = ArrayRecordReader(path)
                    assert reader.num_records() == len(records), path
                    in_order = [reader.read() for _ in range(len(records))]
                    assert in_order == records, path
                    for index in reversed(range(len(records))):
                        assert reader.read([index])[0] == records[index], (path, index)
                    reader.close()
                    source = ArrayRecordDataSource([path])
                    assert len(source) == len(records), path
                    assert [source[i] for i in range(len(source))] == records, path
                    checked += 1
    print("array_record read back all %d files ofconvert wrote" % checked)


if __name__ == "__main__":
    sys.exit(main())
