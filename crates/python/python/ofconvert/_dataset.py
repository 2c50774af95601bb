"""Records by index: :class:`RecordDataset`, the record files of some paths opened through
their indexes (found, built or kept: see :mod:`ofconvert.data`), each record read, checked
and decoded at random, alone or with others as a batch, and what the dataset pickles as.
Below the streams, which read through it; it knows nothing of epochs, ranks or loaders.
"""

import os
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._convert import network
from ._errors import UsageError
from ._inspect import _paths
from ._records import skips_corrupt

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]
Record = Dict[str, Any]


def _features(features: Optional[Sequence[str]]) -> Optional[List[str]]:
    if features is None:
        return None
    if isinstance(features, str):
        return [features]
    return [str(name) for name in features]


def _cache_limit(limit: Union[int, str, None]) -> Optional[str]:
    """``cache_limit`` as the native side parses it: bytes, or a size with its unit."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, (int, str)):
        raise UsageError(f'cache_limit must be bytes (an int) or a size like "20GB", not {limit!r}')
    if isinstance(limit, int) and limit < 1:
        raise UsageError(f"cache_limit must be at least 1 byte, not {limit}")
    return str(limit)


def _shapes(
    features: Optional[List[str]], lengths: Optional[Sequence[str]], pad: Optional[Mapping[str, int]]
) -> Tuple[List[str], Dict[str, int]]:
    """``lengths=`` and ``pad=``, checked: names of numeric features, none in both, each
    among ``features`` when those are named, and widths of at least 1."""
    if isinstance(lengths, (str, bytes)):
        raise UsageError(f"lengths is a list of feature names, not {lengths!r}")
    named = [str(name) for name in lengths or []]
    if pad is not None and not isinstance(pad, Mapping):
        raise UsageError(f"pad maps feature names to lengths ({{'input_ids': 512}}), not {pad!r}")
    widths = {}
    for name, width in (pad or {}).items():
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise UsageError(f"pad={{{name!r}: {width!r}}}: a length is a whole number, at least 1")
        widths[str(name)] = width
    both = sorted(set(named) & set(widths))
    if both:
        raise UsageError(f"{', '.join(map(repr, both))} in both lengths= and pad=: give each feature one shape")
    if features is not None:
        unread = [name for name in named + sorted(widths) if name not in features]
        if unread:
            raise UsageError(f"{', '.join(map(repr, unread))} in lengths= or pad= but not in features={features!r}")
    return named, widths


class RecordDataset:
    """The records of TFRecord and OFRecord files by index: ``len(ds)`` and ``ds[i]``, the
    same dict :func:`ofconvert.read` gives for record ``i`` (files in ``read()``'s order:
    directories walked in name order). ``features=[...]`` decodes only those features; a
    name that none of the records checked when the dataset is opened has (its first 1,000
    records, at most 4 MB of them, and the first record of each file) is refused with a
    :class:`UsageError` naming it, the features those records have and the closest of them,
    as the command line refuses a rule's misspelt feature. A feature that only records past
    those have is refused too: leave ``features`` out to read every feature.

    ``ds[i:j]`` and ``ds.__getitems__(indices)`` (which PyTorch's loader calls for a batch)
    give lists of dicts; :meth:`batch` gives one dict of columns, as a stream's batches.

    Paths are files, directories or URLs, as the command line takes them (``s3://``,
    ``gs://``, ``az://``, ``http(s)://``...); records in a bucket are read with ranged
    requests side by side, a batch's records of one object in one request only where the gap
    between them is small (the bytes fetched stay within twice the records'), each of the
    version (ETag) the dataset opened: an object replaced since fails its reads with a
    :class:`FileError` that says so (open the dataset again to read the new one), never
    reading its new bytes against the former index. TFRecord checksums,
    and the hashes of ArrayRecord chunks' data, are checked as each record is read
    (``verify=False`` skips them; an ArrayRecord chunk's header is checked all the same).

    ``cache_limit=`` (bytes, or a size such as ``"20GB"`` or ``"512MiB"``) keeps the spans a
    :class:`RecordStream` reads from a bucket in the cache directory, within that many bytes
    (least recently used out first), keyed by each object's URL, size and ETag: the next
    epoch, and the other processes of the machine, read them from there; ``ds[i]`` and a
    global shuffle read each record out of its chunk's piece kept there. When the dataset
    fits in it, the pass that builds an object's index keeps what it reads there too, so a
    cold start reads each object once. Processes sharing the cache directory fetch each span,
    and build each index, once between them (a lock per entry, which a killed process does
    not leave behind). Default: nothing kept.

    **Ragged features.** A numeric feature whose length varies from record to record is, in a
    batch, a list of one 1-D array a record. ``lengths=["boxes"]`` makes it one 1-D array of
    every record's values in turn, with ``"boxes/lengths"`` (int64, one a record) beside it;
    ``pad={"input_ids": 512}`` makes it one ``(N, 512)`` array, each record's values then
    zeros, with ``"input_ids/lengths"`` beside it. A record with more values than its pad
    fails the batch with a :class:`UsageError` (values are never cut). Either is one array
    a batch, which a loader's worker sends through shared memory at once, not one a record.

    Indexes a dataset builds go to the cache directory: reading writes nothing into the
    data's folders, which may be shared or read-only. ``FILE.idx`` files beside the data
    (``ofconvert index`` writes them) are read when present and right for the file as it is
    now; one that does not cover the file is passed over and left as it is.
    ``index_beside=True`` keeps the indexes of local files beside them instead, on purpose.

    **Damaged files.** By default (``on_corrupt="fail"``) a damaged file fails where the
    damage is: when the dataset is opened if the framing is damaged, else at the read of
    the record whose checksum fails. ``on_corrupt="skip"`` steps over damage as
    ``tf2of --on-corrupt skip`` does: the dataset is opened in a pass that reads and checks
    every record (once: its index is kept in the cache, under a name of its own), and holds
    the sound records alone, ``len()`` counting them; :attr:`skipped` counts what was stepped
    over, and a warning says so when the dataset is opened. A record whose length alone was
    damaged, which ``read()`` and ``tf2of`` bring back, is left out of a file read in place
    and counted as damaged (random access reads a record by its framing); in a compressed
    file's copy, framed anew, it is kept and counted as recovered. In an ArrayRecord file, whose
    chunks' checks are read with the records, damage is found when it is read and fails
    that read, as without ``on_corrupt``. A file in which no record at all is framed is not
    taken for a record file, and fails the open.

    **Counts stated, each byte once per job.** Where a dataset's metadata states each file's
    record count (the parts its ``ofconvert-manifest.json`` lists, at the sizes it lists; a
    TFDS folder's shards, by the ``shardLengths`` of its ``dataset_info.json``), an object in
    a store is opened by it, with one small ranged read (its kind and first record), and
    indexed only when a record past its first is read: a stream's processes then read, and
    index, only the objects their lanes read, so that the nodes of a job fetch the dataset
    about once between them, not once a node. When such an object's index is made, it must
    count what was stated (and end where the object does), or reading fails naming the file
    and both counts; ``stated_counts=False`` counts every file by its index when the dataset
    is opened, as without metadata. Until then the check of ``features=`` looks at each
    file's first record alone. With ``on_corrupt="skip"``, and for local files, counts are not
    taken from metadata.

    It pickles (the indexes are found again by the copy, not sent): a data loader's workers
    started with ``spawn`` each open it anew.
    """

    def __init__(
        self,
        paths: Paths,
        features: Optional[Sequence[str]] = None,
        *,
        verify: bool = True,
        cache_dir: Optional[PathLike] = None,
        decompress: bool = True,
        anonymous: bool = False,
        retries: int = 10,
        retry_timeout: float = 180.0,
        request_timeout: float = 60.0,
        in_flight: int = 4,
        cache_limit: Union[int, str, None] = None,
        index_beside: bool = False,
        lengths: Optional[Sequence[str]] = None,
        pad: Optional[Mapping[str, int]] = None,
        on_corrupt: str = "fail",
        stated_counts: bool = True,
    ) -> None:
        skip = skips_corrupt(on_corrupt)
        named = _features(features)
        shaped, widths = _shapes(named, lengths, pad)
        self._config: Dict[str, Any] = dict(
            paths=_paths(paths),
            features=named,
            verify=bool(verify),
            cache_dir=None if cache_dir is None else os.fspath(cache_dir),
            decompress=bool(decompress),
            network=network(retries, retry_timeout, request_timeout, anonymous, in_flight),
            cache_limit=_cache_limit(cache_limit),
            index_beside=bool(index_beside),
            lengths=shaped,
            pad=widths,
            skip_corrupt=skip,
            stated_counts=bool(stated_counts),
        )
        self._native = self._open(None)
        self._files = self._native.files()
        self._warn_decompressed()
        self._warn_indexed()
        self._warn_skipped()

    def _open(
        self, files: Optional[List[Tuple[str, str, Optional[Tuple[int, str]], bool]]], keys: Optional[List[str]] = None
    ) -> "_native.Records":
        config = self._config
        return _native.Records(
            config["paths"], config["network"], features=config["features"], verify=config["verify"],
            cache_dir=config["cache_dir"], decompress=config["decompress"], files=files,
            cache_limit=config.get("cache_limit"), index_beside=config.get("index_beside", False), keys=keys,
            lengths=config.get("lengths"), pad=config.get("pad"), skip_corrupt=config.get("skip_corrupt", False),
            stated_counts=config.get("stated_counts", True),
        )

    def _warn_decompressed(self) -> None:
        made = [f for f in self._files if f[5] is not None and f[6]]
        if made:
            size = sum(os.path.getsize(f[4]) for f in made)
            where = os.path.dirname(made[0][4])
            warnings.warn(
                f"{len(made)} compressed TFRecord file(s) copied into {where} "
                f"({size / 1e6:,.1f} MB) for random access; later runs reuse the copies "
                "(decompress=False refuses compressed files instead)",
                UserWarning,
                stacklevel=3,
            )

    def _warn_indexed(self) -> None:
        # Objects in a store indexed now: each was read whole for it, on this machine.
        made = [f for f in self._files if f[6] and f[5] is None and "://" in f[0] and f[7] is not None]
        if made:
            size = sum(f[7][0] for f in made)
            where = os.path.dirname(made[0][3]) if made[0][3] else "nowhere (the cache cannot be written)"
            if self._config.get("skip_corrupt"):
                # Stepping over damage takes a pass that checks every record: no index
                # beside the objects stands for it.
                how = "give the processes of a machine one cache_dir, so that one of them reads them"
            else:
                how = ("`ofconvert index` over the same URL writes FILE.idx objects beside them, which "
                       "every machine then reads instead of the objects; a folder whose "
                       "ofconvert-manifest.json (tf2of and of2tf write one) or TFDS dataset_info.json "
                       "states each file's record count needs no index before a read, and each machine "
                       "then reads only the files its processes read (or give the processes of a "
                       "machine one cache_dir)")
            warnings.warn(
                f"{len(made)} object(s) in a store read whole to index them ({size / 1e6:,.1f} MB), "
                f"their indexes kept in {where}: {how}",
                UserWarning,
                stacklevel=3,
            )

    def _warn_skipped(self) -> None:
        skipped = self.skipped
        if skipped and (skipped["corrupt"] or skipped["recovered"]):
            first = skipped["details"][0] if skipped["details"] else ""
            warnings.warn(
                f"{skipped['corrupt']:,} damaged record(s) stepped over, {skipped['recovered']:,} "
                f"recovered (on_corrupt=\"skip\"); the dataset's skipped says where, the first: {first}",
                UserWarning,
                stacklevel=3,
            )

    @property
    def skipped(self) -> Optional[Dict[str, Any]]:
        """With ``on_corrupt="skip"``: the damage stepped over, found when the dataset was
        opened, as ``tf2of`` counts it: ``{"corrupt": N, "recovered": N, "details": [...]}``
        (``details`` says where, the first 1,000; ``recovered`` only in compressed files' copies).
        ``None`` with ``on_corrupt="fail"``."""
        if not self._config.get("skip_corrupt"):
            return None
        return self._native.skipped()

    def __getstate__(self) -> Dict[str, Any]:
        # Each file with the size and version (ETag) it was opened at, where it is an object
        # in a store, and whether its records are framed as they are (neither compressed nor
        # ArrayRecord): a loader's worker opens the same version without asking the store.
        # And the record count its metadata stated, where it was opened by it: the copy
        # makes its index when it reads it, as this one does. And the keys of its batches, where they were looked for: a copy's batches have the
        # same without looking again.
        return {
            "config": self._config,
            "files": [(f[0], f[1], f[7], f[5] is None, f[8]) for f in self._files],
            "keys": self._native.keys(look=False),
        }

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._config = state["config"]
        self._native = self._open(state["files"], state.get("keys"))
        self._files = self._native.files()

    @property
    def files(self) -> List[Dict[str, Any]]:
        """Each file: ``path``, ``format`` (``"tfrecord"``/``"ofrecord"``), ``records``,
        ``index`` (where its index is kept, None if nowhere), ``data`` (where its bytes are
        read: the file, or the uncompressed copy of a compressed TFRecord), ``compression``
        (``"GZIP"``, ``"ZLIB"``, ``"ArrayRecord"`` for an ArrayRecord file read through its
        footer, or None) and ``stated`` (the record count its dataset's metadata states, where
        it was opened by it: its index is made when it is first read, and ``index`` is None
        in this list until then)."""
        return [
            dict(path=f[0], format=f[1], records=f[2], index=f[3], data=f[4], compression=f[5], stated=f[8])
            for f in self._files
        ]

    def __len__(self) -> int:
        return len(self._native)

    def __getitem__(self, index: Union[int, slice]) -> Any:
        if isinstance(index, slice):
            return self._native.get_many(list(range(*index.indices(len(self)))))
        return self._native.get(index)

    def __getitems__(self, indices: Sequence[int]) -> List[Record]:
        return self._native.get_many([int(i) for i in indices])

    def batch(self, indices: Sequence[int]) -> Record:
        """The records ``indices`` as one dict: a numeric feature whose values agree in dtype
        and length over them is one 2-D array (stacked in Rust); any other feature (bytes,
        variable-length lists) is a list with one entry per record (None where a record
        lacks it)."""
        return self._native.batch([int(i) for i in indices])

    def raw(self, index: int) -> bytes:
        """Record ``index`` as its serialized payload."""
        return self._native.get_raw(index)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._files)} files, {len(self)} records)"
