"""Reading records of both formats as dicts of numpy arrays, and writing them."""

import atexit
import os
import sys
import warnings
import weakref
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _native
from ._convert import network
from ._errors import UsageError

PathLike = Union[str, "os.PathLike[str]"]
Value = Union[np.ndarray, List[bytes], None]
Record = Dict[str, Any]


def read(
    path: Union[PathLike, Sequence[PathLike]],
    *,
    raw: bool = False,
    batch_size: Optional[int] = None,
    verify: bool = True,
    anonymous: bool = False,
    retries: int = 10,
    retry_timeout: float = 180.0,
    request_timeout: float = 60.0,
    in_flight: int = 4,
    on_corrupt: str = "fail",
) -> Iterator[Any]:
    """Iterates over the records of TFRecord and OFRecord files.

    ``path`` is a file, a directory (its record files are read in name order, hidden ones
    left out) or a list of them; each may be a URL the command line takes (``s3://``,
    ``gs://``, ``az://``, ``http(s)://``...). ``anonymous``, ``retries``, ``retry_timeout``,
    ``request_timeout`` and ``in_flight`` are those of :func:`ofconvert.count`. The format
    of each file is told from its content, and so is the compression of a TFRecord file
    (GZIP, ZLIB).

    Each record is a dict of feature name to value: a 1-D numpy array (int64 or float32 for
    TFRecord; int64, int32, float32 or float64 for OFRecord) or a ``list[bytes]``; ``None``
    for a feature with no kind set. A ``tf.train.SequenceExample`` gives its context
    features plus, for each feature list, a list of its steps' values.

    With ``raw=True`` each record is the serialized payload (``bytes``), as TensorFlow's
    ``TFRecordDataset`` yields it. With ``batch_size=N`` the iterator yields dicts of N
    records (fewer in the last): a numeric feature whose arrays agree in dtype and length
    across the batch is stacked into one 2-D array, any other feature is a list with one
    entry per record (``None`` where a record lacks it).

    ``on_corrupt="skip"`` steps over damage as ``tf2of`` does: a record whose data checksum
    fails is left out, and past damaged framing (a truncated or overwritten stretch) reading
    goes on at the next good record, the stretch counting as one record. The iterator's
    ``skipped`` then says what was stepped over so far, as ``tf2of``'s summary does:
    ``{"corrupt": N, "recovered": N, "details": ["path: offset ... what", ...]}``.

    Raises:
        FileError: a path that does not exist or cannot be read, or a directory without
            record files (at once, as :func:`ofconvert.count` does).
        FormatError: a named file that is neither TFRecord nor OFRecord.
        UsageError: an ``on_corrupt`` other than ``"fail"`` or ``"skip"``.

    Raises (while iterating):
        CorruptRecordError: damaged framing, with ``path``, ``offset`` and ``record``
            (with ``on_corrupt="skip"``: a file in which no record is framed at all).
        MappingError: a payload that does not parse.
    """
    paths = [path] if isinstance(path, (str, bytes, os.PathLike)) else list(path)
    reader = _native.Reader(
        [os.fspath(p) for p in paths],
        network(retries, retry_timeout, request_timeout, anonymous, in_flight),
        raw=raw, verify=verify, skip_corrupt=skips_corrupt(on_corrupt),
    )
    if batch_size is None:
        return reader
    if batch_size < 1:
        raise UsageError(f"batch_size must be at least 1, not {batch_size}")
    return _Batches(reader, batch_size, raw)


def skips_corrupt(on_corrupt: str) -> bool:
    """Whether ``on_corrupt`` asks for damage to be stepped over."""
    if on_corrupt not in ("fail", "skip"):
        raise UsageError(f'on_corrupt must be "fail" or "skip", not {on_corrupt!r}')
    return on_corrupt == "skip"


class _Batches(Iterator[Any]):
    """Batches of a reader's records, with its ``skipped``."""

    def __init__(self, reader: "_native.Reader", size: int, raw: bool) -> None:
        self._reader = reader
        self._size = size
        self._raw = raw

    @property
    def skipped(self) -> Optional[Dict[str, Any]]:
        return self._reader.skipped

    def __iter__(self) -> "_Batches":
        return self

    def __next__(self) -> Any:
        if not self._raw:
            # Read, decoded and stacked in Rust, without a Python object per record for
            # numbers.
            batch = self._reader.next_batch(self._size)
            if batch is None:
                raise StopIteration
            return batch
        records: List[bytes] = []
        for record in self._reader:
            records.append(record)
            if len(records) == self._size:
                break
        if not records:
            raise StopIteration
        return records


_WIDENED = (np.int8, np.int16, np.uint8, np.uint16, np.uint32)
_INT64 = np.iinfo(np.int64)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _holds_bool(value: Any) -> bool:
    """Whether a value is a bool, a bool array, or a (nested) list or tuple holding one."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype == np.bool_
    if isinstance(value, (list, tuple)):
        return any(_holds_bool(item) for item in value)
    return False


def _flat(name: str, array: np.ndarray) -> np.ndarray:
    """The values of an array of one value or of a row of them. An array of more dimensions
    is refused: a feature is a flat list of values, and its shape would be lost."""
    if array.ndim > 1:
        raise UsageError(
            f"feature {name!r}: a {array.shape} array would lose its shape, a feature being a "
            f"flat list of values: pass x.ravel() and keep the shape in a feature of its own, "
            f"{name + '/shape'!r}: {list(array.shape)}, as images=\"raw\" keeps an image's"
        )
    return array.ravel()


def _bools(name: str, value: Any) -> TypeError:
    return TypeError(
        f"feature {name!r}: {_shown(value)} holds bools, which no record format has: pass "
        "int(x) to store 1 or 0 (x.astype(np.int64) for an array)"
    )


def _out_of_int64(name: str, value: int) -> UsageError:
    return UsageError(
        f"feature {name!r}: {value} is out of int64's range (-2**63 to 2**63 - 1), the widest "
        "integer a record holds"
    )


def _python_numbers(value: Any) -> Optional[bool]:
    """For a Python number or a (nested) list or tuple of them: whether one is a float.
    ``None`` for anything else, numpy values included."""
    if isinstance(value, np.generic):
        return None
    if isinstance(value, float):
        return True
    if isinstance(value, int):
        return False
    if isinstance(value, (list, tuple)):
        floats = False
        for item in value:
            found = _python_numbers(item)
            if found is None:
                return None
            floats = floats or found
        return floats
    return None


def _float32(name: str, value: Any) -> Optional[np.ndarray]:
    """Python floats as ``tf.train.FloatList`` stores them: rounded to float32. ``None``
    when one is beyond float32's range (it would become an infinity)."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (ValueError, TypeError, OverflowError) as err:
        raise UsageError(f"feature {name!r}: {err}") from None
    array = _flat(name, array)
    with np.errstate(over="ignore"):
        narrowed = array.astype(np.float32)
    if (np.isinf(narrowed) & np.isfinite(array)).any():
        return None
    return narrowed


def _normalize(name: str, value: Any, float32: bool = False) -> Union[np.ndarray, List[bytes]]:
    """A value as the writers take it: a list of bytes, or a contiguous 1-D array of int64,
    int32, float32 or float64 (integers of other widths widened to int64 when every value
    fits, float16 widened to float32). With ``float32``, Python floats are rounded to
    float32 as TensorFlow's Example does; numpy values keep their dtype. What would be
    written as something else is refused: bools (no format has them), arrays of more than
    one dimension (the shape would be lost), integers beyond int64."""
    if _holds_bool(value):
        raise _bools(name, value)
    if float32 and _python_numbers(value):
        narrowed = _float32(name, value)
        if narrowed is not None:
            return narrowed
    if isinstance(value, (bytes, bytearray, memoryview)):
        return [bytes(value)]
    if isinstance(value, str):
        return [value.encode()]
    if isinstance(value, (list, tuple)) and value and all(
        isinstance(v, (bytes, bytearray, memoryview, str)) for v in value
    ):
        return [v.encode() if isinstance(v, str) else bytes(v) for v in value]
    if isinstance(value, (list, tuple)) and any(
        isinstance(v, (bytes, bytearray, memoryview, str)) for v in value
    ):
        raise UsageError(f"feature {name!r}: values must all be bytes/str or all numbers")
    if isinstance(value, (list, tuple)) and not value:
        raise UsageError(
            f"feature {name!r}: an empty list has no kind; give an empty numpy array of the "
            "kind wanted (np.array([], np.int64)) or [b''] for bytes"
        )
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as err:
        raise UsageError(f"feature {name!r}: {err}") from None
    if array.dtype == np.bool_:
        raise _bools(name, value)
    array = _flat(name, array)
    if array.dtype.kind in "SU" or array.dtype == object:
        items = array.tolist()
        if items and all(isinstance(v, (bytes, bytearray, memoryview, str)) for v in items):
            return _normalize(name, items, float32)
        # Python ints beyond int64 (numpy keeps them as objects).
        for item in items:
            if isinstance(item, (int, np.integer)) and not _INT64.min <= item <= _INT64.max:
                raise _out_of_int64(name, int(item))
        raise UsageError(
            f"feature {name!r}: values must all be numbers or all bytes/str, not {_shown(value)}"
        )
    if array.dtype in (np.int64, np.int32, np.float32, np.float64):
        return np.ascontiguousarray(array)
    if array.dtype.type in _WIDENED:
        return array.astype(np.int64)
    if array.dtype == np.uint64:
        if array.size and array.max() > _INT64.max:
            raise _out_of_int64(name, int(array.max()))
        return array.astype(np.int64)
    if array.dtype == np.float16:
        return array.astype(np.float32)
    raise UsageError(f"feature {name!r}: cannot store values of dtype {array.dtype}")


# The writers not closed yet: those still open when the interpreter ends are closed by
# _close_open_writers, while the modules a writer's finalizer needs are still there.
_OPEN: "weakref.WeakSet[_Writer]" = weakref.WeakSet()


class _Writer:
    _format = ""

    def __init__(
        self, path: PathLike, compression: Optional[str], lossy: bool, options: Optional[str] = None
    ) -> None:
        self.path = os.fspath(path)
        kind = "none" if compression is None else str(compression).lower()
        self._native = _native.Writer(self.path, self._format, kind, lossy, options)
        _OPEN.add(self)

    def write(self, record: Union[Mapping[str, Any], bytes]) -> None:
        """Writes one record: a dict of feature name to value, or a serialized payload
        (checked to parse).

        Feature names are ``str``. Values: ``bytes``/``str`` or lists of them (bytes
        features); numbers, lists of numbers or 1-D numpy arrays. int64 and int32 arrays,
        float32 and float64 arrays keep their kind as far as the format has it; other
        integer dtypes become int64. In a TFRecord, Python floats become float32 as
        ``tf.train.FloatList`` makes them; a float64 array is written only when float32
        holds it exactly (or with ``lossy=True``).

        Refused, rather than written as something else: a name that is not a ``str``
        (``TypeError``); a bool (``TypeError``: no format has bools, pass ``int(x)``); an
        array of more than one dimension (:class:`UsageError`: a feature is a flat list, so
        pass ``x.ravel()`` and keep the shape in a feature of its own, ``NAME/shape``, as
        ``images="raw"`` does); an integer beyond int64 (:class:`UsageError`).
        """
        if isinstance(record, (bytes, bytearray, memoryview)):
            self._native.write(bytes(record))
            return
        if not isinstance(record, Mapping):
            raise TypeError(
                "a record is a dict of feature name to values (or a serialized record, bytes), "
                f"not {type(record).__name__}"
            )
        float32 = self._format in ("tf", "array_record")
        normalized = {}
        for name, value in record.items():
            if not isinstance(name, str):
                raise TypeError(f"feature names are str, not {type(name).__name__} {_shown(name)}")
            normalized[name] = _normalize(name, value, float32)
        self._native.write(normalized)

    @property
    def records_written(self) -> int:
        """How many records were written."""
        return self._native.records_written

    @property
    def closed(self) -> bool:
        """Whether the writer is closed (or abandoned)."""
        return self._native.closed

    def close(self) -> None:
        """Finishes the file and gives it its name: until then it is written under a hidden
        temporary name beside it. A writer closed without a record written leaves no file.
        Closing twice does nothing. A writer never closed is closed when it is collected or
        when the interpreter ends, with a ``ResourceWarning``, as Python's files are."""
        _OPEN.discard(self)
        self._native.close()

    def abort(self) -> None:
        """Gives up the file: nothing is published, whatever was written."""
        _OPEN.discard(self)
        self._native.abort()

    def __enter__(self) -> "_Writer":
        return self

    def __exit__(self, exc_type: Any, *exc_info: Any) -> None:
        # An exception out of the block leaves the file half-written: it is not published.
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def _close_unclosed(self) -> None:
        native = self.__dict__.get("_native")  # None when __init__ failed
        if native is None or native.closed:
            return
        try:
            warnings.warn(
                f"unclosed {type(self).__name__} {self.path!r}: closed now, keeping its "
                f"{native.records_written} records; close it or use `with`",
                ResourceWarning,
                source=self,
            )
        finally:
            native.close()

    def __del__(self) -> None:
        self._close_unclosed()


@atexit.register
def _close_open_writers() -> None:
    for writer in list(_OPEN):
        try:
            writer._close_unclosed()
        except Exception:  # a warning made an error: said, and the other writers closed
            sys.excepthook(*sys.exc_info())


class TFRecordWriter(_Writer):
    """Writes a TFRecord file of ``tf.train.Example`` records, TensorFlow's way.

    ``compression=None``, ``"gzip"`` or ``"zlib"`` (read it with TensorFlow's
    ``compression_type="GZIP"``/``"ZLIB"``). int32 values are widened to int64. Python
    floats become float32, rounded as ``tf.train.FloatList`` rounds them; numpy float64
    values are written as float32 only when float32 holds them exactly, else
    :class:`MappingError`, unless ``lossy=True`` rounds them.

    >>> with TFRecordWriter(path) as writer:  # doctest: +SKIP
    ...     writer.write({"label": 7, "image": jpeg_bytes})
    """

    _format = "tf"

    def __init__(self, path: PathLike, compression: Optional[str] = None, *, lossy: bool = False) -> None:
        super().__init__(path, compression, lossy)

    def __enter__(self) -> "TFRecordWriter":
        return self


class ArrayRecordWriter(_Writer):
    """Writes an ArrayRecord file of ``tf.train.Example`` records, as TFDS's
    ``file_format='array_record'`` and Grain read them: a record a chunk, zstd, as Google's
    ``array_record`` writer makes them by default, or as ``options`` says in that writer's
    own words: ``"group_size:64"`` (larger chunks compress better and write faster; a record
    read at random then decodes its whole chunk), ``"zstd:9"``, ``"brotli:6"``, ``"snappy"``,
    ``"uncompressed"``, joined with commas. Records are taken as
    :class:`TFRecordWriter` takes them (dicts or serialized Examples, float32 rounding and
    ``lossy=`` alike); :func:`read` and :mod:`ofconvert.data` read the file back.

    >>> with ArrayRecordWriter(path) as writer:  # doctest: +SKIP
    ...     writer.write({"label": 7, "image": jpeg_bytes})
    """

    _format = "array_record"

    def __init__(
        self, path: PathLike, *, options: Optional[str] = None, lossy: bool = False
    ) -> None:
        super().__init__(path, None, lossy, options)

    def __enter__(self) -> "ArrayRecordWriter":
        return self


class OFRecordWriter(_Writer):
    """Writes a OneFlow OFRecord file (one part of a dataset: name it ``part-00000``...).

    Every kind OneFlow has is kept: int64, int32, float32, float64 and bytes. A record
    without features is refused (:class:`MappingError`): OneFlow's reader aborts on one.
    """

    _format = "of"

    def __init__(self, path: PathLike) -> None:
        super().__init__(path, None, False)

    def __enter__(self) -> "OFRecordWriter":
        return self
