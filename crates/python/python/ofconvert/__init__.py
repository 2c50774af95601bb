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
from typing import TYPE_CHECKING as _TYPE_CHECKING, Any as _Any, List as _List

from ._inspect import count, diff, index, schema, verify

if _TYPE_CHECKING:
    from ._records import ArrayRecordWriter, OFRecordWriter, TFRecordWriter, read
    from . import data

# Reading and writing records (numpy) and the training datasets are imported when first named:
# the `ofconvert` command, which needs neither, starts without them (a tenth of a second, not
# half a second, for every command a script runs).
_FROM_RECORDS = ("ArrayRecordWriter", "OFRecordWriter", "TFRecordWriter", "read")

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


def __getattr__(name: str) -> _Any:
    import importlib

    if name in _FROM_RECORDS:
        value = getattr(importlib.import_module("._records", __name__), name)
    elif name == "data":
        value = importlib.import_module(".data", __name__)
    elif name == "__version__":
        try:
            value = importlib.import_module("importlib.metadata").version("ofconvert")
        except Exception:  # not installed as a distribution (run from a source tree)
            value = "unknown"
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> _List[str]:
    return sorted(set(globals()) | set(__all__) | {"__version__"})
