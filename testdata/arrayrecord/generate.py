"""Writes the ArrayRecord golden files with Google's own writer, and what they hold.

Run from the repository root with `array-record==0.8.6` installed (a virtualenv is enough;
no TensorFlow needed):

    python3 testdata/arrayrecord/generate.py

For each case NAME it writes NAME.array_record (written by `ArrayRecordWriter` with the
case's options string) and NAME.expected, the records as `array_record`'s own reader reads
them back: each an 8-byte little-endian length followed by the bytes. manifest.json lists
the cases with their options and record counts. The records are deterministic, so running
the script again writes the same records; the files themselves differ only if the library's
compressors do.

TFDS names its ArrayRecord shards as it names TFRecord ones, with `array_record` for
`tfrecord`: `NAME-SPLIT.array_record-00000-of-00004`.
"""

import json
import os
import random
import struct

from array_record.python.array_record_module import ArrayRecordReader, ArrayRecordWriter

HERE = os.path.dirname(os.path.abspath(__file__))


def small_records(count, seed):
    """Records of 0 to 300 bytes, mostly text-like (compressible), some random."""
    rng = random.Random(seed)
    records = []
    for i in range(count):
        kind = rng.randrange(4)
        if kind == 0:
            records.append(b"")
        elif kind == 1:
            records.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))))
        else:
            records.append(("record %d " % i).encode() * rng.randrange(1, 20))
    return records


def large_records(seed):
    """Records that span 64 KiB block boundaries: random (incompressible) bytes."""
    rng = random.Random(seed)
    sizes = [70000, 1, 0, 30000, 5000]
    return [rng.randbytes(size) for size in sizes]


def tutorial_examples():
    """The tf.train.Examples of testdata/golden/tutorial.tfrecord, which TensorFlow wrote:
    the same records in an ArrayRecord file, for tests that convert both and compare."""
    path = os.path.join(HERE, "..", "golden", "tutorial.tfrecord")
    with open(path, "rb") as f:
        data = f.read()
    records, at = [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        records.append(data[at + 12 : at + 12 + length])
        at += 12 + length + 4
    return records


CASES = [
    # name, options string, records
    ("default", "", small_records(100, 1)),
    ("group1", "group_size:1", small_records(10, 2)),
    ("group7_uncompressed", "group_size:7,uncompressed", small_records(50, 3)),
    ("zstd1", "group_size:16,zstd:1", small_records(60, 4)),
    ("brotli", "group_size:16,brotli", small_records(60, 5)),
    ("brotli9", "group_size:32,brotli:9", small_records(60, 6)),
    ("snappy", "group_size:16,snappy", small_records(60, 7)),
    ("padded", "group_size:8,pad_to_block_boundary:true,uncompressed", small_records(12, 8)),
    ("large_uncompressed", "group_size:2,uncompressed", large_records(9)),
    ("large_zstd", "group_size:2", large_records(10)),
    ("empty", "", []),
    ("transposed", "group_size:16,transpose:true", small_records(40, 11)),
    ("examples", "", tutorial_examples()),
]


def main():
    manifest = []
    for name, options, records in CASES:
        path = os.path.join(HERE, name + ".array_record")
        writer = ArrayRecordWriter(path, options)
        for record in records:
            writer.write(record)
        writer.close()

        reader = ArrayRecordReader(path)
        read_back = [reader.read() for _ in range(reader.num_records())] if records else []
        writer_options = reader.writer_options_string()
        reader.close()
        assert read_back == records, name

        with open(os.path.join(HERE, name + ".expected"), "wb") as out:
            for record in read_back:
                out.write(struct.pack("<Q", len(record)))
                out.write(record)
        manifest.append(
            {
                "name": name,
                "options": options,
                "writer_options": writer_options,
                "records": len(records),
                "bytes": os.path.getsize(path),
            }
        )
    with open(os.path.join(HERE, "manifest.json"), "w") as out:
        json.dump(manifest, out, indent=1)
        out.write("\n")


if __name__ == "__main__":
    main()
