"""golden/ and ofrecord/: each file written (by TensorFlow, or framed as OneFlow does), read
back, and its expected JSON taken from what was read."""

from . import TESTDATA
from .expected import VERSIONS, record_json, write_json
from .ofrecord import of_read, of_write
from .tfio import COMPRESSION_SUFFIX, tf_parse_check, tf_read, tf_write


def write_golden(name, payloads, message_type, compressions=("",)):
    """Writes golden/NAME (+ compressed copies) with TF, and their expected JSON from TF's read."""
    for compression in compressions:
        path = TESTDATA / "golden" / (name + COMPRESSION_SUFFIX[compression])
        tf_write(path, payloads, compression)
        records = tf_read(path, compression)[0]
        expected = [record_json(r, message_type) for r in records]
        if message_type == "example":
            for serialized, e in zip(records, expected):
                tf_parse_check(serialized, e)
        top = dict(VERSIONS, file=path.name, compression=compression or "NONE")
        top["record_count"] = len(records)
        write_json(path.with_name(path.name + ".expected.json"), top, expected)


def write_of_dataset(directory, parts):
    expected = []
    for i, payloads in enumerate(parts):
        path = directory / ("part-%05d" % i)
        of_write(path, payloads)
        records = of_read(path)
        assert records == payloads
        for r in records:
            e = record_json(r, "ofrecord")
            e["part"] = path.name
            expected.append(e)
    top = dict(VERSIONS, dataset=directory.name, parts=["part-%05d" % i for i in range(len(parts))])
    top["record_count"] = len(expected)
    write_json(directory.with_name(directory.name + ".expected.json"), top, expected)
