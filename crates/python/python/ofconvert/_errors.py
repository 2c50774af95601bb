"""The exceptions of ofconvert. Each carries where the problem is, as far as it is known."""

from typing import Any, Dict, Optional


class Error(Exception):
    """Base class of ofconvert's errors.

    Attributes:
        path: the file concerned, or None.
        offset: the byte offset in that file (in the decompressed stream of a compressed
            TFRecord), or None.
        record: the 0-based index of the record in that file, or None.
    """

    def __init__(
        self,
        message: str,
        path: Optional[str] = None,
        offset: Optional[int] = None,
        record: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset
        self.record = record


class UsageError(Error, ValueError):
    """An argument that makes no sense, or an output directory in the way."""


class FileError(Error, OSError):
    """A file or directory that is missing or cannot be read or written."""


class FormatError(Error):
    """A file that is neither a TFRecord (nor ArrayRecord) nor an OFRecord file."""


class CorruptRecordError(Error):
    """Damaged framing: a checksum mismatch, a truncated record, a zero-length OFRecord,
    a broken compressed stream."""


class MappingError(Error, ValueError):
    """A payload that does not parse, or a value that cannot be written without loss
    (a float64 that float32 cannot hold exactly, an OFRecord without features)."""


class ConversionError(Error):
    """A conversion that ran but failed some datasets, could not read some inputs or found
    nothing to convert. ``path``, ``offset`` and ``record`` are those of the first failure;
    ``summary`` is the whole summary, as ``tf2of``/``of2tf`` return it on success."""

    def __init__(
        self,
        message: str,
        path: Optional[str] = None,
        offset: Optional[int] = None,
        record: Optional[int] = None,
        summary: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message, path, offset, record)
        self.summary = summary if summary is not None else {}
