"""tf2of and of2tf: the command line's conversions as functions."""

import json
import os
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from . import _native
from ._errors import UsageError

PathLike = Union[str, "os.PathLike[str]"]

_SIZE_SHIFTS = {"K": 10, "M": 20, "G": 30, "T": 40}


def _size(value: Union[int, str, None]) -> Optional[int]:
    """A byte count: an int, or a string such as ``"256M"`` (powers of 1024)."""
    if value is None or isinstance(value, int):
        return value
    text = value.strip().upper()
    for suffix in ("IB", "B"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
            break
    shift = _SIZE_SHIFTS.get(text[-1:], 0)
    if shift:
        text = text[:-1]
    try:
        return int(text.strip()) << shift
    except ValueError:
        raise UsageError(f"{value!r} is not a size (like 1048576, 512K, 256M or 2G)") from None


def _pairs(what: str, mapping: Optional[Mapping[str, Any]]) -> list:
    if mapping is None:
        return []
    if not isinstance(mapping, Mapping):
        raise UsageError(f"{what} must be a dict, not {type(mapping).__name__}")
    return [(str(name), value) for name, value in mapping.items()]


def _names(what: str, names: Optional[Iterable[str]]) -> list:
    if names is None:
        return []
    if isinstance(names, (str, bytes)):
        raise UsageError(f"{what} must be a list of feature names, not one string")
    return [str(name) for name in names]


def _run(direction: str, src: PathLike, dst: PathLike, settings: Dict[str, Any]) -> Dict[str, Any]:
    settings["max_part_bytes"] = _size(settings["max_part_bytes"])
    settings["rename"] = [(old, str(new)) for old, new in _pairs("rename", settings["rename"])]
    settings["cast"] = [(name, str(kind)) for name, kind in _pairs("cast", settings["cast"])]
    settings["offset"] = [(name, int(delta)) for name, delta in _pairs("offset", settings["offset"])]
    settings["keep"] = _names("keep", settings["keep"])
    settings["drop"] = _names("drop", settings["drop"])
    compression = settings["compression"]
    settings["compression"] = "none" if compression is None else str(compression).lower()
    summary = _native.convert(direction, os.fspath(src), os.fspath(dst), settings)
    return json.loads(summary)


def tf2of(
    src: PathLike,
    dst: PathLike,
    *,
    parts: Optional[int] = None,
    records_per_part: Optional[int] = None,
    max_part_bytes: Union[int, str, None] = None,
    part_prefix: str = "part-",
    part_digits: int = 5,
    preset: Optional[str] = None,
    rename: Optional[Mapping[str, str]] = None,
    cast: Optional[Mapping[str, str]] = None,
    offset: Optional[Mapping[str, int]] = None,
    keep: Optional[Iterable[str]] = None,
    drop: Optional[Iterable[str]] = None,
    sequence: str = "refuse",
    raw_feature: Optional[str] = None,
    empty: str = "error",
    on_corrupt: str = "fail",
    overwrite: bool = False,
    resume: bool = False,
    jobs: Optional[int] = None,
    sync: bool = True,
    verify: bool = True,
) -> Dict[str, Any]:
    """Converts a tree of TFRecord files into OneFlow OFRecord datasets, as
    ``ofconvert tf2of SRC DST`` does, and returns the summary that ``--json`` prints.

    Every directory's record files become a dataset of ``part-NNNNN`` files with an
    ``ofconvert-manifest.json``. The keyword arguments are the command line's options:
    ``parts``/``records_per_part``/``max_part_bytes`` (an int or ``"256M"``) cut the parts;
    ``preset="imagenet"``, ``rename={old: new}``, ``cast={name: "int32"}``,
    ``offset={name: -1}``, ``keep=[...]``, ``drop=[...]``, ``sequence="flatten"`` and
    ``raw_feature=NAME`` map features; ``empty="skip"`` leaves out Examples without
    features; ``on_corrupt="skip"`` salvages damaged input; ``overwrite``/``resume`` deal
    with an output that exists; ``jobs`` sets the worker threads; ``sync=False`` skips
    fsync; ``verify=False`` skips checksums.

    The GIL is released while converting. Ctrl-C (KeyboardInterrupt) stops the conversion:
    temporary files are removed, finished datasets stay, and ``resume=True`` finishes later.

    Raises:
        UsageError: a bad option, a missing input, an output that is not empty.
        ConversionError: some dataset failed or some input could not be read (the summary
            is its ``summary`` attribute).
    """
    return _run("tf2of", src, dst, dict(
        parts=parts, records_per_part=records_per_part, max_part_bytes=max_part_bytes,
        part_prefix=part_prefix, part_digits=part_digits, preset=preset, rename=rename,
        cast=cast, offset=offset, keep=keep, drop=drop, sequence=sequence,
        raw_feature=raw_feature, empty=empty, on_corrupt=on_corrupt, compression=None,
        lossy=False, overwrite=overwrite, resume=resume, jobs=jobs, sync=sync, verify=verify,
    ))


def of2tf(
    src: PathLike,
    dst: PathLike,
    *,
    parts: Optional[int] = None,
    records_per_part: Optional[int] = None,
    max_part_bytes: Union[int, str, None] = None,
    part_prefix: str = "part-",
    compression: Optional[str] = None,
    lossy: bool = False,
    rename: Optional[Mapping[str, str]] = None,
    cast: Optional[Mapping[str, str]] = None,
    offset: Optional[Mapping[str, int]] = None,
    keep: Optional[Iterable[str]] = None,
    drop: Optional[Iterable[str]] = None,
    on_corrupt: str = "fail",
    overwrite: bool = False,
    resume: bool = False,
    jobs: Optional[int] = None,
    sync: bool = True,
    verify: bool = True,
) -> Dict[str, Any]:
    """Converts OneFlow OFRecord datasets (directories of ``part-N`` files) into TFRecord
    files, as ``ofconvert of2tf SRC DST`` does, and returns the summary that ``--json``
    prints.

    ``compression="gzip"`` or ``"zlib"`` compresses the files as TensorFlow does;
    ``lossy=True`` rounds doubles to float (without it a double that float cannot hold
    exactly fails its dataset) and counts the values it changed in each dataset's
    ``manifest["rounded_values"]``; a finite double beyond float's range fails its dataset
    either way. The other keyword arguments are those of :func:`tf2of`.
    """
    return _run("of2tf", src, dst, dict(
        parts=parts, records_per_part=records_per_part, max_part_bytes=max_part_bytes,
        part_prefix=part_prefix, part_digits=5, preset=None, rename=rename, cast=cast,
        offset=offset, keep=keep, drop=drop, sequence="refuse", raw_feature=None,
        empty="error", on_corrupt=on_corrupt, compression=compression, lossy=lossy,
        overwrite=overwrite, resume=resume, jobs=jobs, sync=sync, verify=verify,
    ))
