"""ofconvert: convert TensorFlow TFRecord datasets to OneFlow OFRecord and back, and read and
write records of both formats without TensorFlow.

>>> import ofconvert
>>> summary = ofconvert.tf2of("tfrecords/", "ofrecords/", parts=8)  # doctest: +SKIP
>>> for record in ofconvert.read("ofrecords/train"):  # doctest: +SKIP
...     print(record["class/label"])

Training reads the records where they are, TFRecord or OFRecord, local or in a bucket:
:mod:`ofconvert.data` (framework-free), :mod:`ofconvert.torch` and :mod:`ofconvert.oneflow`.
"""

from ._convert import commit, of2tf, tf2of
from ._errors import (
    ConversionError,
    CorruptRecordError,
    Error,
    FileError,
    FormatError,
    MappingError,
    UsageError,
)
from ._inspect import count, diff, index, schema, verify
from ._records import ArrayRecordWriter, OFRecordWriter, TFRecordWriter, read
from . import data

__all__ = [
    "ArrayRecordWriter",
    "ConversionError",
    "CorruptRecordError",
    "Error",
    "FileError",
    "FormatError",
    "MappingError",
    "OFRecordWriter",
    "TFRecordWriter",
    "UsageError",
    "commit",
    "count",
    "data",
    "diff",
    "index",
    "of2tf",
    "read",
    "schema",
    "tf2of",
    "verify",
]

try:
    from importlib.metadata import version as _version

    __version__ = _version("ofconvert")
except Exception:  # not installed as a distribution (run from a source tree)
    __version__ = "unknown"
