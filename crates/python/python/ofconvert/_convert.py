"""tf2of, of2tf and commit: the command line's conversions as functions, each flag a keyword
argument. The values are checked by the same configuration as the command line's, and
errors name the keyword arguments (``resume=True``), not the flags."""

import json
import operator
import os
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._errors import UsageError

PathLike = Union[str, "os.PathLike[str]"]
Inputs = Union[PathLike, Sequence[PathLike]]
Progress = Optional[Callable[[Dict[str, Any]], Any]]


def _pairs(what: str, mapping: Optional[Mapping[str, Any]]) -> list:
    if mapping is None:
        return []
    if not isinstance(mapping, Mapping):
        raise UsageError(f"{what} must be a dict, not {type(mapping).__name__}")
    return [(str(name), value) for name, value in mapping.items()]


_INT64 = range(-(2**63), 2**63)


def _delta(what: str, name: str, delta: Any) -> int:
    """An offset's int, checked here to name its keyword and feature: a float or a string
    would be truncated or parsed by ``int()``."""
    try:
        whole = operator.index(delta)
    except TypeError:
        raise TypeError(
            f"{what}: expected an int for {name!r}, got {type(delta).__name__} {delta!r}"
        ) from None
    if whole not in _INT64:
        raise UsageError(f"{what}: {whole} for {name!r} is out of int64's range")
    return whole


def _names(what: str, names: Optional[Iterable[str]]) -> list:
    if names is None:
        return []
    if isinstance(names, (str, bytes)):
        raise UsageError(f"{what} must be a list of feature names, not one string")
    return [str(name) for name in names]


def _inputs(src: Inputs) -> list:
    if isinstance(src, (str, bytes, os.PathLike)):
        return [os.fspath(src)]
    inputs = [os.fspath(path) for path in src]
    if not inputs:
        raise UsageError("no input given")
    return inputs


def _shard(shard: Optional[Tuple[int, int]]) -> Optional[Tuple[int, int]]:
    if shard is None:
        return None
    try:
        index, count = shard
        return int(index), int(count)
    except (TypeError, ValueError):
        raise UsageError(f"shard={shard!r}: expected (k, n): worker k of n, counted from 0") from None


def network(
    retries: int, retry_timeout: float, request_timeout: float, anonymous: bool, in_flight: int = 4
) -> Dict[str, Any]:
    """How every request to an object store is made, as the native functions take it: its
    bounds, whether it is sent unsigned (a public bucket), and how many transfers each job
    keeps going at once (ranges of one object read side by side; a dataset of ofconvert.data
    also reads ahead its own way, a batch's objects side by side). They are the process's
    settings from then on, for every store opened after."""
    counts = {}
    for name, value in (("retries", retries), ("in_flight", in_flight)):
        try:
            counts[name] = operator.index(value)
        except TypeError:
            raise UsageError(f"{name}={value!r}: expected a whole number") from None
        if counts[name] < 0:
            raise UsageError(f"{name}={value!r}: expected a whole number of at least 0")
    seconds = {}
    for name, value in (("retry_timeout", retry_timeout), ("request_timeout", request_timeout)):
        try:
            seconds[name] = float(value)
        except (TypeError, ValueError):
            raise TypeError(
                f"{name}: expected a number of seconds, got {type(value).__name__} {value!r}"
            ) from None
    return dict(
        retries=counts["retries"], retry_timeout=seconds["retry_timeout"],
        request_timeout=seconds["request_timeout"], anonymous=bool(anonymous),
        in_flight=counts["in_flight"],
    )


def rules(settings: Dict[str, Any]) -> Dict[str, Any]:
    """The mapping keywords of ``settings`` (``rename``, ``cast``, ``offset``, ``keep``,
    ``drop`` and their ``_if_present`` forms) as the native functions take them: dicts as
    lists of pairs, names as lists; ``settings`` is changed in place and returned."""
    for rule in ("", "_if_present"):
        settings["rename" + rule] = [
            (old, str(new)) for old, new in _pairs("rename" + rule, settings["rename" + rule])
        ]
        settings["cast" + rule] = [
            (name, str(kind)) for name, kind in _pairs("cast" + rule, settings["cast" + rule])
        ]
        settings["offset" + rule] = [
            (name, _delta("offset" + rule, name, delta))
            for name, delta in _pairs("offset" + rule, settings["offset" + rule])
        ]
        settings["keep" + rule] = _names("keep" + rule, settings["keep" + rule])
        settings["drop" + rule] = _names("drop" + rule, settings["drop" + rule])
    return settings


def _run(direction: str, src: Inputs, dst: PathLike, settings: Dict[str, Any]) -> Dict[str, Any]:
    size = settings["max_part_bytes"]
    if size is not None and not isinstance(size, (int, str)):
        raise UsageError(f"max_part_bytes must be an int or a size such as \"256M\", not {size!r}")
    rules(settings)
    compression = settings["compression"]
    settings["compression"] = None if compression is None else str(compression)
    settings["shard"] = _shard(settings["shard"])
    settings["network"] = network(
        settings.pop("retries"), settings.pop("retry_timeout"), settings.pop("request_timeout"),
        settings.pop("anonymous"), settings.pop("in_flight"),
    )
    progress = settings.pop("progress")
    if progress is not None and not callable(progress):
        raise UsageError(f"progress must be a function that takes a dict, not {progress!r}")
    summary = _native.convert(direction, _inputs(src), os.fspath(dst), settings, progress)
    return json.loads(summary)


def tf2of(
    src: Inputs,
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
    rename_if_present: Optional[Mapping[str, str]] = None,
    cast_if_present: Optional[Mapping[str, str]] = None,
    offset_if_present: Optional[Mapping[str, int]] = None,
    keep_if_present: Optional[Iterable[str]] = None,
    drop_if_present: Optional[Iterable[str]] = None,
    sequence: str = "refuse",
    raw_feature: Optional[str] = None,
    empty: str = "error",
    images: str = "keep",
    jpeg_quality: int = 100,
    on_corrupt: str = "fail",
    overwrite: bool = False,
    resume: bool = False,
    break_lock: bool = False,
    shard: Optional[Tuple[int, int]] = None,
    jobs: Optional[int] = None,
    sync: bool = True,
    verify: bool = True,
    side_files: bool = True,
    dry_run: bool = False,
    retries: int = 10,
    retry_timeout: float = 180.0,
    request_timeout: float = 60.0,
    anonymous: bool = False,
    in_flight: int = 4,
    progress: Progress = None,
) -> Dict[str, Any]:
    """Converts trees of TFRecord files into OneFlow OFRecord datasets, as
    ``ofconvert tf2of SRC... DST`` does, and returns the summary that ``--json`` prints.

    ``src`` is a directory tree, a record file, or a list of them (as ``cp -r`` places
    them: files named one by one are taken as their directory would be, each directory goes
    to ``DST/<its name>``); each may be a URL (``s3://``, ``gs://``, ``az://``, ``https://``),
    and so may ``dst``. Every directory's record files become a dataset of ``part-NNNNN``
    files with an ``ofconvert-manifest.json``.

    The keyword arguments are the command line's flags: ``parts``/``records_per_part``/
    ``max_part_bytes`` (an int or ``"256M"``) cut the parts; ``preset="imagenet"``,
    ``rename={old: new}``, ``cast={name: "int32"}``, ``offset={name: -1}``, ``keep=[...]``,
    ``drop=[...]``, ``sequence="flatten"`` and ``raw_feature=NAME`` map features (a dataset
    whose records lack a feature a rule names fails; ``rename_if_present``,
    ``cast_if_present``, ``offset_if_present``, ``keep_if_present`` and ``drop_if_present``
    apply where a dataset has the feature, for trees whose datasets differ);
    ``images="jpeg"`` (with ``jpeg_quality``) re-encodes the images OneFlow cannot decode,
    ``images="raw"`` decodes them to pixels; ``empty="skip"`` leaves out Examples without
    features; ``on_corrupt="skip"`` salvages damaged input; ``overwrite``/``resume`` deal with
    an output that exists; ``break_lock=True`` removes the lock a run that no longer runs left
    on it (a killed run's lock object in a bucket); ``shard=(k, n)`` converts worker k's share of a run spread over n
    workers (then :func:`commit`); ``jobs`` sets the worker threads; ``sync=False`` skips
    fsync; ``verify=False`` skips checksums; ``side_files=False`` carries only the parts (not
    the other files of a dataset's folder: TFDS metadata, class names, READMEs; nor those
    outside every dataset's folder, a LICENSE at the top of the tree); ``retries``, ``retry_timeout`` and
    ``request_timeout`` bound the requests to an object store, and ``in_flight`` sets how
    many transfers with one each job keeps going at once (ranges read ahead, parts
    uploading).

    ``progress`` is called in the calling thread with a dict for each step of the run, as
    the command line's progress bar is drawn: ``{"event": "started", "datasets", "files",
    "bytes"}`` once planned; ``{"event": "progress", "bytes", "records"}`` as input is read
    and converted (increments: bytes read, records converted; many are summed into one
    call when the function is slower than the run); ``{"event": "dataset_done", "name",
    "status", "records", "parts", "error", "files_only"}`` as each dataset ends, with
    ``status`` as in the summary. The run waits for the function on ``started`` and
    ``dataset_done``; an exception it raises stops the conversion as Ctrl-C does, and is
    raised once the run has cleaned up.

    The GIL is released while converting. Ctrl-C (KeyboardInterrupt) stops the conversion:
    finished datasets stay, and so do the finished parts of the others (with the journal
    that names them); ``resume=True`` finishes later, converting only what was not finished.
    With ``overwrite`` (or ``resume`` redoing a dataset), a dataset already there stays whole
    until its new version is complete: a conversion that fails or is stopped leaves it as it
    was.
    With ``shard``, the summary is the worker's (``ofconvert tf2of --shard K/N --json``).

    Raises:
        UsageError: a bad option, a missing input, an output that is not empty.
        ConversionError: some dataset failed or some input could not be read (the summary
            is its ``summary`` attribute).
    """
    return _run("tf2of", src, dst, dict(
        parts=parts, records_per_part=records_per_part, max_part_bytes=max_part_bytes,
        part_prefix=part_prefix, part_digits=part_digits, preset=preset, rename=rename,
        cast=cast, offset=offset, keep=keep, drop=drop, rename_if_present=rename_if_present,
        cast_if_present=cast_if_present, offset_if_present=offset_if_present,
        keep_if_present=keep_if_present, drop_if_present=drop_if_present, sequence=sequence,
        raw_feature=raw_feature, empty=empty, images=images, jpeg_quality=jpeg_quality,
        compression=None, to="tfrecord", array_record_options=None, lossy=False,
        on_corrupt=on_corrupt, overwrite=overwrite, resume=resume, break_lock=break_lock,
        shard=shard, jobs=jobs, sync=sync, verify=verify,
        side_files=side_files, dry_run=dry_run, retries=retries,
        retry_timeout=retry_timeout, request_timeout=request_timeout, anonymous=anonymous,
        in_flight=in_flight, progress=progress,
    ))


def of2tf(
    src: Inputs,
    dst: PathLike,
    *,
    parts: Optional[int] = None,
    records_per_part: Optional[int] = None,
    max_part_bytes: Union[int, str, None] = None,
    part_prefix: str = "part-",
    compression: Optional[str] = None,
    to: str = "tfrecord",
    array_record_options: Optional[str] = None,
    lossy: bool = False,
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
    on_corrupt: str = "fail",
    overwrite: bool = False,
    resume: bool = False,
    break_lock: bool = False,
    shard: Optional[Tuple[int, int]] = None,
    jobs: Optional[int] = None,
    sync: bool = True,
    verify: bool = True,
    side_files: bool = True,
    dry_run: bool = False,
    retries: int = 10,
    retry_timeout: float = 180.0,
    request_timeout: float = 60.0,
    anonymous: bool = False,
    in_flight: int = 4,
    progress: Progress = None,
) -> Dict[str, Any]:
    """Converts OneFlow OFRecord datasets (directories of ``part-N`` files) into TFRecord
    files, as ``ofconvert of2tf SRC DST`` does, and returns the summary that ``--json``
    prints.

    Each dataset goes back compressed as its manifest records its inputs: each file as it
    was when the files go back under their names, else as most of them were (plain for a
    dataset without a manifest). ``compression="gzip"``, ``"zlib"`` or ``"none"``
    (TensorFlow's ``"GZIP"``, ``"ZLIB"`` and ``""`` too) writes every file so, as TensorFlow
    does; ``to="array_record"`` writes ArrayRecord files
    instead (TFDS's ``file_format='array_record'``, read by Grain and ``array_record``: a record
    a chunk, zstd), grouped and compressed as ``array_record_options`` says in
    ``array_record``'s own words (``"group_size:64,brotli:6"``); ``lossy=True`` rounds doubles
    to float (without it a double that float cannot hold exactly fails its dataset) and counts
    the values it changed in each dataset's ``manifest["rounded_values"]``; a finite double
    beyond float's range fails its dataset either way. The other keyword arguments are those
    of :func:`tf2of`.
    """
    return _run("of2tf", src, dst, dict(
        parts=parts, records_per_part=records_per_part, max_part_bytes=max_part_bytes,
        part_prefix=part_prefix, part_digits=5, preset=None, rename=rename, cast=cast,
        offset=offset, keep=keep, drop=drop, rename_if_present=rename_if_present,
        cast_if_present=cast_if_present, offset_if_present=offset_if_present,
        keep_if_present=keep_if_present, drop_if_present=drop_if_present,
        sequence="refuse", raw_feature=None,
        empty="error", images="keep", jpeg_quality=100, compression=compression, to=to,
        array_record_options=array_record_options, lossy=lossy,
        on_corrupt=on_corrupt, overwrite=overwrite, resume=resume, break_lock=break_lock,
        shard=shard, jobs=jobs, sync=sync, verify=verify, side_files=side_files, dry_run=dry_run,
        retries=retries,
        retry_timeout=retry_timeout,
        request_timeout=request_timeout, anonymous=anonymous,
        in_flight=in_flight, progress=progress,
    ))


def commit(
    dst: PathLike,
    *,
    verify: bool = False,
    break_lock: bool = False,
    retries: int = 10,
    retry_timeout: float = 180.0,
    request_timeout: float = 60.0,
    anonymous: bool = False,
    in_flight: int = 4,
) -> Dict[str, Any]:
    """Publishes a conversion spread over many workers (``tf2of``/``of2tf`` with
    ``shard=(k, n)``) once every worker is done, as ``ofconvert commit DST`` does, and
    returns the summary that ``--json`` prints: each dataset's manifest, the one a single
    run writes. ``verify=True`` also reads every part back and compares its CRC32C with its
    worker's receipt. ``break_lock=True`` removes the lock a commit (or run) that no longer
    runs left on ``dst``. It converts nothing.

    Raises:
        UsageError: no sharded run in ``dst``, or a worker still running.
        ConversionError: parts not finished by their workers (each named with its worker;
            nothing is published), or a dataset that failed.
    """
    summary = _native.commit(
        os.fspath(dst), bool(verify), bool(break_lock),
        network(retries, retry_timeout, request_timeout, anonymous, in_flight),
    )
    return json.loads(summary)
