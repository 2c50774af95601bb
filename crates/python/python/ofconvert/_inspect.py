"""count, verify, schema and index: the command line's inspections as functions returning
what ``--json`` prints, as dicts. Paths are files, directories or URLs, as for the command
line; warnings about them (files passed over, parts without their manifest) are issued as
:class:`UserWarning`."""

import json
import os
import warnings
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._convert import network, rules
from ._errors import UsageError

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]


def _paths(paths: Paths) -> List[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        return [os.fspath(paths)]
    listed = [os.fspath(path) for path in paths]
    if not listed:
        raise UsageError("no path given")
    return listed


def _jobs(jobs: Optional[int]) -> int:
    if jobs is None:
        return 0
    if int(jobs) < 1:
        raise UsageError(f"jobs must be at least 1, not {jobs}")
    return int(jobs)


def _loaded(result: Tuple[str, List[str]]) -> Dict[str, Any]:
    text, found = result
    for message in found:
        warnings.warn(message, UserWarning, stacklevel=3)
    return json.loads(text)


def count(
    paths: Paths,
    *,
    format: Optional[str] = None,
    verify: bool = True,
    jobs: Optional[int] = None,
    retries: int = 10,
    retry_timeout: float = 180.0,
    request_timeout: float = 60.0,
    anonymous: bool = False,
    in_flight: int = 4,
) -> Dict[str, Any]:
    """Counts the records of record files without reading their data, as ``ofconvert count
    --json`` does: ``{"files": [{"path", "format", "compression", "records", "bytes"}, ...],
    "total": N}``. ``format="tf"`` or ``"of"`` forces the format; ``verify=False`` skips the
    TFRecord length checksums.

    Raises:
        FileError: a path that does not exist or cannot be read, a directory holding no
            record file.
        CorruptRecordError: damaged framing.
    """
    return _loaded(_native.count(
        _paths(paths), format, bool(verify), _jobs(jobs),
        network(retries, retry_timeout, request_timeout, anonymous, in_flight),
    ))


def verify(
    paths: Paths,
    *,
    format: Optional[str] = None,
    jobs: Optional[int] = None,
    retries: int = 10,
    retry_timeout: float = 180.0,
    request_timeout: float = 60.0,
    anonymous: bool = False,
    in_flight: int = 4,
) -> Dict[str, Any]:
    """Checks every checksum and parses every payload, as ``ofconvert verify --json`` does:
    ``{"files": [{"path", "format", "good_records", "problems": [...]}, ...],
    "good_records": N, "problems": N}``. Problems found in the records are in the result,
    each with its offset and record; they raise nothing.

    Raises:
        FileError: a path that does not exist or cannot be read, a directory holding no
            record file.
    """
    return _loaded(_native.verify(
        _paths(paths), format, _jobs(jobs), network(retries, retry_timeout, request_timeout, anonymous, in_flight)
    ))


def schema(
    paths: Paths,
    *,
    format: Optional[str] = None,
    sample: Optional[int] = None,
    oneflow: bool = False,
    tf: bool = False,
    jobs: Optional[int] = None,
    retries: int = 10,
    retry_timeout: float = 180.0,
    request_timeout: float = 60.0,
    anonymous: bool = False,
    in_flight: int = 4,
) -> Any:
    """The features of the records, taken together, as ``ofconvert schema --json`` gives
    them: names, kinds, value counts, presence, integer ranges, images, and the
    ``warnings`` of what would abort OneFlow. ``sample=N`` reads only the first N records of
    each dataset. ``oneflow=True`` returns instead the OneFlow reader and decoder code
    (``schema --oneflow``), ``tf=True`` the ``feature_description`` for
    ``tf.io.parse_single_example`` (``schema --tf``), as text.
    """
    if oneflow and tf:
        raise UsageError("oneflow=True and tf=True exclude each other")
    code = "oneflow" if oneflow else "tf" if tf else None
    text, found = _native.schema(
        _paths(paths), format, sample, code, _jobs(jobs),
        network(retries, retry_timeout, request_timeout, anonymous, in_flight),
    )
    if code is not None:
        for message in found:
            warnings.warn(message, UserWarning, stacklevel=2)
        return text
    return _loaded((text, found))


def index(
    paths: Paths,
    *,
    output_dir: Optional[PathLike] = None,
    format: Optional[str] = None,
    jobs: Optional[int] = None,
    retries: int = 10,
    retry_timeout: float = 180.0,
    request_timeout: float = 60.0,
    anonymous: bool = False,
    in_flight: int = 4,
) -> Dict[str, Any]:
    """Writes ``.idx`` files (``OFFSET LENGTH`` per record, for DALI and the ``tfrecord``
    package) of uncompressed TFRecord files, beside each or under ``output_dir`` at its
    relative path, as ``ofconvert index --json`` does: ``{"files": [{"path", "index",
    "records"}, ...], "total": N}``. ``format="tf"`` forces the format (an OFRecord file has
    no index to write); ``jobs`` files are indexed at a time (default: one per core).
    """
    out = None if output_dir is None else os.fspath(output_dir)
    return _loaded(_native.index(
        _paths(paths), out, format, _jobs(jobs),
        network(retries, retry_timeout, request_timeout, anonymous, in_flight),
    ))


def diff(
    a: PathLike,
    b: PathLike,
    *,
    unordered: bool = False,
    format_a: Optional[str] = None,
    format_b: Optional[str] = None,
    jobs: Optional[int] = None,
    preset: Optional[str] = None,
    rename: Optional[Mapping[str, str]] = None,
    cast: Optional[Mapping[str, str]] = None,
    offset: Optional[Mapping[str, int]] = None,
    keep: Optional[Iterable[str]] = None,
    drop: Optional[Iterable[str]] = None,
    rename_if_present: Optional[Mapping[str, str]] = None,
    cast_if_present: Optional[Mapping[str, str]] = None,
    offset_if_present: Optional[Mapping[str, int]] = None,
    keep_if_present: Optional[Iterable[str]] = None,
    drop_if_present: Optional[Iterable[str]] = None,
    lossy: bool = False,
    retries: int = 10,
    retry_timeout: float = 180.0,
    request_timeout: float = 60.0,
    anonymous: bool = False,
    in_flight: int = 4,
) -> Dict[str, Any]:
    """Compares two datasets (each a TFRecord or OFRecord file or tree, local or a URL) record
    by record, as the default mapping relates them, as ``ofconvert diff A B --json`` does:
    ``result["same"]`` tells; otherwise ``result["difference"]`` names the dataset, record,
    feature and both values (cut short) of the first. ``unordered=True`` compares them as
    multisets.

    ``preset``, ``rename``, ``cast``, ``offset``, ``keep``, ``drop`` (and their
    ``_if_present`` forms) and ``lossy`` are the mapping the conversion of ``a`` into ``b``
    was given, as :func:`tf2of` and :func:`of2tf` take them: ``a``'s records are mapped by
    them before they are compared (``result["mapped"]`` says so), so that
    ``diff(src, dst, preset="imagenet")`` proves ``tf2of(src, dst, preset="imagenet")``.

    Raises:
        UsageError: for a mapping value that is not one (``cast={"x": "int8"}``) or rules
            that contradict each other.
        Error: when the two cannot be compared (a missing path, damaged records, a tree
            holding both formats).
    """
    mapping = rules(dict(
        preset=preset, rename=rename, cast=cast, offset=offset, keep=keep, drop=drop,
        rename_if_present=rename_if_present, cast_if_present=cast_if_present,
        offset_if_present=offset_if_present, keep_if_present=keep_if_present,
        drop_if_present=drop_if_present, lossy=lossy,
    ))
    out = _native.diff(
        os.fspath(a), os.fspath(b), format_a, format_b, bool(unordered), _jobs(jobs), mapping,
        network(retries, retry_timeout, request_timeout, anonymous, in_flight),
    )
    return json.loads(out)
