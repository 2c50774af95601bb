"""damaged/: the golden tutorial files with a byte flipped, cut short, followed by junk or
framing a payload that is no Example, and what TensorFlow reads of each (expected.json)."""

import shutil
import struct
import tempfile
import zlib
from pathlib import Path

import google.protobuf
import numpy as np
import tensorflow as tf

from . import TESTDATA
from .expected import VERSIONS, write_json
from .tfio import tf_read, tf_write


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
