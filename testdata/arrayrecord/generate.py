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


def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number, wire_type, payload):
    """A protobuf field: its tag, then the payload as given (a length-delimited one's length
    is added here)."""
    if wire_type == 2:
        payload = varint(len(payload)) + payload
    return varint(number << 3 | wire_type) + payload


def protos(count, seed):
    """Protocol buffer messages in every wire type, as transposed chunks take them apart:
    varints of one to ten bytes and small ones (held inline), fixed32 and fixed64, strings,
    submessages nested three deep, groups, field numbers up to the largest (five-byte tags),
    and a hundred field numbers in one chunk (more than a transition byte reaches, so the
    writer adds nodes that only pass on). Between them, records that are not protocol buffers
    and empty ones."""
    rng = random.Random(seed)
    records = []
    for i in range(count):
        kind = rng.randrange(10)
        if kind == 0:
            records.append(b"")
            continue
        if kind == 1:
            # Not a protocol buffer: field 0 is invalid.
            records.append(b"\x00" + rng.randbytes(rng.randrange(1, 40)))
            continue
        fields = []
        for _ in range(rng.randrange(1, 8)):
            number = rng.choice([1, 2, 3, 15, 16, 2047, 2048, 262143, 262144, (1 << 29) - 1])
            if rng.random() < 0.3:
                number = 100 + rng.randrange(100)
            wire = rng.choice(["small", "varint", "fixed32", "fixed64", "string", "message", "group"])
            if wire == "small":
                fields.append(field(number, 0, varint(rng.randrange(128))))
            elif wire == "varint":
                fields.append(field(number, 0, varint(rng.getrandbits(rng.choice([7, 8, 14, 21, 35, 56, 63, 64])))))
            elif wire == "fixed32":
                fields.append(field(number, 5, rng.randbytes(4)))
            elif wire == "fixed64":
                fields.append(field(number, 1, rng.randbytes(8)))
            elif wire == "string":
                fields.append(field(number, 2, ("text %d " % i).encode() * rng.randrange(0, 5)))
            elif wire == "message":
                inner = field(1, 0, varint(i)) + field(2, 2, b"inner")
                if rng.random() < 0.5:
                    inner += field(3, 2, field(4, 1, rng.randbytes(8)) + field(5, 2, field(6, 0, varint(300))))
                fields.append(field(number, 2, inner))
            else:
                fields.append(varint(number << 3 | 3) + field(1, 0, varint(i)) + varint(number << 3 | 4))
        records.append(b"".join(fields))
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
    ("transposed_protos", "group_size:300,transpose:true", protos(900, 12)),
    ("transposed_uncompressed", "group_size:50,transpose:true,uncompressed", protos(120, 13)),
    ("transposed_brotli", "group_size:50,transpose:true,brotli", protos(120, 14)),
    ("transposed_snappy", "group_size:50,transpose:true,snappy", protos(120, 15)),
    ("transposed_buckets", "group_size:200,transpose:true,transpose_bucket_size:64", protos(400, 16)),
    ("transposed_examples", "group_size:100,transpose:true", tutorial_examples()),
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
