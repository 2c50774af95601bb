"""Training straight from the records, without converting them first: TFRecord (plain, GZIP,
ZLIB), ArrayRecord and OFRecord files, local or in a bucket, as a map-style dataset with
random access (:class:`RecordDataset`) and as an iterable stream (:class:`RecordStream`)
that shuffles through the index, splits by rank and data-loader worker, batches in Rust and
resumes mid-epoch. Neither imports a framework: ``ofconvert.torch`` and ``ofconvert.oneflow``
give the same classes as subclasses of each framework's ``Dataset``/``IterableDataset``.

Random access goes through an index of each file (``OFFSET LENGTH`` per record, the
format of ``ofconvert index``): a ``FILE.idx`` beside the file is used where it fits the file,
else one is built on first use in a single streaming pass and kept beside a local file, or
in the cache directory (``cache_dir=``, else ``$OFCONVERT_CACHE_DIR``, else
``~/.cache/ofconvert``) for a bucket or a place that cannot be written. An ArrayRecord
file's own footer is its index: opening one reads its postscript and footer (in a bucket, a
few requests of a few kilobytes), and a record read is its chunk, read whole, checked and
decoded; nothing is copied. A compressed TFRecord has no random access: it is copied once
into the cache as an uncompressed TFRecord (a warning says so and how big the copy is), or
refused with ``decompress=False``.
"""

import os
import sys
import tempfile
import warnings
import weakref
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._convert import network
from ._errors import UsageError
from ._inspect import _paths

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]
Record = Dict[str, Any]

__all__ = ["MixedStream", "RecordDataset", "RecordStream"]


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
    ) -> None:
        self._config: Dict[str, Any] = dict(
            paths=_paths(paths),
            features=_features(features),
            verify=bool(verify),
            cache_dir=None if cache_dir is None else os.fspath(cache_dir),
            decompress=bool(decompress),
            network=network(retries, retry_timeout, request_timeout, anonymous, in_flight),
            cache_limit=_cache_limit(cache_limit),
        )
        self._native = self._open(None)
        self._files = self._native.files()
        self._warn_decompressed()

    def _open(
        self, files: Optional[List[Tuple[str, str, Optional[Tuple[int, str]], bool]]]
    ) -> "_native.Records":
        config = self._config
        return _native.Records(
            config["paths"], config["network"], features=config["features"], verify=config["verify"],
            cache_dir=config["cache_dir"], decompress=config["decompress"], files=files,
            cache_limit=config.get("cache_limit"),
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

    def __getstate__(self) -> Dict[str, Any]:
        # Each file with the size and version (ETag) it was opened at, where it is an object
        # in a store, and whether its records are framed as they are (neither compressed nor
        # ArrayRecord): a loader's worker opens the same version without asking the store.
        return {"config": self._config, "files": [(f[0], f[1], f[7], f[5] is None) for f in self._files]}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._config = state["config"]
        self._native = self._open(state["files"])
        self._files = self._native.files()

    @property
    def files(self) -> List[Dict[str, Any]]:
        """Each file: ``path``, ``format`` (``"tfrecord"``/``"ofrecord"``), ``records``,
        ``index`` (where its index is kept, None if nowhere), ``data`` (where its bytes are
        read: the file, or the uncompressed copy of a compressed TFRecord) and ``compression``
        (``"GZIP"``, ``"ZLIB"``, ``"ArrayRecord"`` for an ArrayRecord file read through its
        footer, or None)."""
        return [
            dict(path=f[0], format=f[1], records=f[2], index=f[3], data=f[4], compression=f[5])
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


def _distributed() -> Tuple[int, int]:
    """This process's rank and the world size, from a framework that is imported and
    initialised (PyTorch's ``torch.distributed``, OneFlow's ``oneflow.env``); else 0 of 1."""
    torch = sys.modules.get("torch")
    if torch is not None:
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    oneflow = sys.modules.get("oneflow")
    if oneflow is not None:
        env = getattr(oneflow, "env", None)
        if env is not None:
            try:
                return int(env.get_rank()), int(env.get_world_size())
            except Exception:  # an environment not set up: one process
                pass
    return 0, 1


def _loader_info() -> Optional[Tuple[int, int, int]]:
    """This data-loader worker, their count and the pass they serve (the seed the loader drew
    for the pass, which all its workers share: their own seed less their number), from the
    framework whose loader started the process; None outside one."""
    for name in ("torch.utils.data", "oneflow.utils.data"):
        module = sys.modules.get(name)
        info = module.get_worker_info() if module is not None else None
        if info is not None:
            return int(info.id), int(info.num_workers), int(info.seed) - int(info.id)
    return None


def _loader_info_count() -> Optional[int]:
    """The worker count of the loader whose worker this process is; None outside one."""
    info = _loader_info()
    return None if info is None else info[1]


def _stopped_pass(entry: Any) -> Tuple[int, int, int, bool, int]:
    """A stopped pass of a state, checked: a dict of `_PASS_KEYS`."""
    if not isinstance(entry, Mapping) or set(entry) != set(_PASS_KEYS):
        raise UsageError(f"a pass of a state is a dict of {', '.join(_PASS_KEYS)}, not {entry!r}")
    world, workers, unit, drop_last, steps = (entry[key] for key in _PASS_KEYS)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (world, workers, unit, steps)):
        raise UsageError(f"a pass of a state holds integers, not {entry!r}")
    if world < 1 or workers < 1 or unit < 1 or steps < 0 or not isinstance(drop_last, bool):
        raise UsageError(f"a pass of a state has world_size, workers and unit of at least 1: {entry!r}")
    return (world, workers, unit, drop_last, steps)


def _loader_worker() -> Tuple[int, int]:
    """This data-loader worker and their count; 0 of 1 outside a loader."""
    info = _loader_info()
    return (info[0], info[1]) if info is not None else (0, 1)


def _claim_path(token: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"ofconvert-resumed-{token}")


def _claim(token: str, loader_pass: int) -> bool:
    """Whether the loader pass `loader_pass` is the one that resumes the state loaded as
    `token`: the first pass one of whose workers asks. The answer is a file in the temporary
    directory, put in place whole (linked) by the first to ask: the workers of a pass, forked
    or spawned, and of the passes after it all read the same one."""
    path, mine = _claim_path(token), str(loader_pass)
    try:
        with open(path) as claimed:
            return claimed.read() == mine
    except FileNotFoundError:
        pass
    handle, written = tempfile.mkstemp(prefix=".ofconvert-resumed-", dir=os.path.dirname(path))
    try:
        with os.fdopen(handle, "w") as claim:
            claim.write(mine)
        try:
            os.link(written, path)
            return True
        except FileExistsError:
            with open(path) as claimed:
                return claimed.read() == mine
    finally:
        os.unlink(written)


def _unclaim(token: str, owner: int) -> None:
    """Removes the claim of `token`, in the process that loaded the state only."""
    if os.getpid() == owner:
        try:
            os.unlink(_claim_path(token))
        except FileNotFoundError:
            pass


def _warn_request_a_record(dataset: RecordDataset, mode: str) -> None:
    """Says once, when a stream is made, that a global shuffle of files in a bucket with no
    cache reads a request a record (tens of times slower than in spans), and the ways out."""
    stored = dataset._native.store_bytes()
    if mode != "global" or stored is None or dataset._config.get("cache_limit") is not None:
        return
    warnings.warn(
        "shuffle=True reads files in a bucket a request a record, tens of times slower than "
        'in large spans: give shuffle="block" (chunks of neighbouring records in a random '
        "order, each read whole once, mixing within a few percent of shuffle=True), or "
        f"cache_limit= of at least the dataset's {stored} bytes ({stored / 1e6:,.1f} MB) so "
        "that records are read out of the spans kept in the cache",
        UserWarning,
        stacklevel=3,
    )


_SHUFFLES = {False: "none", True: "global", "block": "block"}
_STATE_VERSION = 3
# The keys of a state of version 1, which had no "version": its position counted one rank's
# records.
_STATE_VERSION_1 = {"epoch", "position", "seed", "shuffle", "records"}
# A stopped pass in a state: the layout that read it and the units each rank consumed.
_PASS_KEYS = ("world_size", "workers", "unit", "drop_last", "steps")


def _check_epochs(
    shuffle: Any, seed: Any, rank: Any, world_size: Any, worker: Any, batch_size: Any, block_size: Any
) -> str:
    """Checks what orders and deals a stream's epochs (:class:`RecordStream`'s and
    :class:`MixedStream`'s arguments of the same names); the order's name."""
    if (rank is None) != (world_size is None):
        raise UsageError("give rank and world_size together, or neither")
    if world_size is not None and not 0 <= int(rank) < int(world_size):
        raise UsageError(f"rank={rank}, world_size={world_size}: expected 0 <= rank < world_size")
    if worker is not None and not 0 <= int(worker[0]) < int(worker[1]):
        raise UsageError(f"worker={tuple(worker)}: expected (id, count) with 0 <= id < count")
    if batch_size is not None and int(batch_size) < 1:
        raise UsageError(f"batch_size must be at least 1, not {batch_size}")
    if not 0 <= int(seed) < 2**64:
        raise UsageError(f"seed must be in 0..2**64, not {seed}")
    if not any(shuffle is key or shuffle == key and type(shuffle) is type(key) for key in _SHUFFLES):
        raise UsageError(f'shuffle must be False, True or "block", not {shuffle!r}')
    mode = _SHUFFLES[shuffle]
    if block_size is not None:
        if mode != "block":
            raise UsageError('block_size is the window of shuffle="block"; give both, or neither')
        if int(block_size) < 1:
            raise UsageError(f"block_size must be at least 1, not {block_size}")
    return mode


class _Epochs:
    """What :class:`RecordStream` and :class:`MixedStream` share: the epoch, the passes of it
    that stopped, and the claim of a resumed pass by the first loader pass that starts."""

    _epoch: int
    _before: List[Any]
    _resumed: Optional[Tuple[str, int]]
    world_size: Optional[int]

    def __getstate__(self) -> Dict[str, Any]:
        # Pickled in the training process for workers started with `spawn`, which have no
        # process group of their own: the rank travels with the stream.
        state = self.__dict__.copy()
        if self.world_size is None:
            state["rank"], state["world_size"] = _distributed()
        return state

    @property
    def epoch(self) -> int:
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Draws epoch ``epoch``'s order from its start. Called with the epoch a state was
        loaded at, before that epoch's pass, it keeps the resumed position."""
        if int(epoch) < 0:
            raise UsageError(f"epoch must be at least 0, not {epoch}")
        claimed = self._resumed is not None and os.path.exists(_claim_path(self._resumed[0]))
        if int(epoch) != self._epoch or claimed:
            self._begin()
        self._epoch = int(epoch)

    def _begin(self) -> None:
        """The epoch from its start."""
        self._before = []
        if self._resumed is not None:
            _unclaim(*self._resumed)
            self._resumed = None

    def _resume(self, passes: List[Any]) -> None:
        """The next pass resumes after `passes`: the first loader pass to start claims them
        (a fork or a copy in between does not count)."""
        self._begin()
        self._before = passes
        if passes:
            self._resumed = (os.urandom(8).hex(), os.getpid())
            weakref.finalize(self, _unclaim, *self._resumed)

    def _later_loader_pass(self, worker: Optional[Tuple[int, int]]) -> bool:
        """Whether this copy is a loader's worker of a pass after the one that resumed."""
        info = _loader_info() if worker is None else None
        return self._resumed is not None and info is not None and not _claim(self._resumed[0], info[2])


class RecordStream(_Epochs):
    """An epoch of records as an iterable: each record read at most once per epoch over all
    ranks and data-loader workers, in the order ``shuffle`` says.

    - ``shuffle=False``: the records' own order. ``shuffle=True``: a permutation of every
      record (not file order plus a buffer), the best mixing, one ranged read a record from
      a bucket (a warning says so when the stream is made, unless ``cache_limit=`` holds
      the dataset). ``shuffle="block"``: chunks of neighbouring records in a random order, and
      the records of each window of ``block_size`` records (default: 256 MB of records, at
      most 262,144) spread over the window; a bucket is read in a few large reads, each byte
      once. Each order is drawn from ``seed``, the epoch (:meth:`set_epoch`), the dataset
      and the layout (ranks, workers): the same for the same seed and layout.
    - ``rank``/``world_size``: this process's share (default: ``torch.distributed`` or
      ``oneflow.env`` when initialised, else 0 of 1), and ``worker=(id, count)``: the share
      of one data-loader worker (default: the framework's ``get_worker_info()``). Each
      ``(rank, worker)`` reads a *lane* of its own: a run of neighbouring places of the
      epoch's order (rank 0 the first run, its worker 0 the first part of it), whose
      windows are counted from the lane's start, so that processes need different bytes and
      a job fetches a bucket about once between them, not once a process. A lane smaller
      than a window of ``"block"`` shuffles within itself only (its records are the chunks
      its run of the chunks' order holds): a process's share then mixes fewer chunks.
      With ``drop_last=True`` every rank yields the same number of whole units (batches, or
      records), the remainder of the epoch dropped (a different one each epoch when
      shuffled), so that no rank waits for another; with ``drop_last=False`` every record
      comes exactly once, ranks' counts differ by one unit at most, and rank 0 has the most.
    - ``batch_size=N``: each item is a dict of N records (stacked in Rust: a numeric feature
      of one dtype and length is one ``(N, length)`` array, no Python object per record; a
      bytes or variable-length feature is a list with one entry per record). Give the loader
      ``batch_size=None``. Without it, each item is a record's dict, as ``read()`` gives it.
    - :meth:`state_dict` / :meth:`load_state_dict`: where the epoch stands (ranks stepping
      together, a loader taking a batch from each worker in turn), a few integers for each
      pass of the epoch that stopped, so that a state saved by rank 0 after any step (by
      any rank, but after an uneven last step of ``drop_last=False``) resumes on any number of
      ranks and workers with the rest of the epoch read exactly once between them. Iterated
      in this process the stream counts its records itself; behind a data loader's workers,
      count them where the batches arrive and give the loader's worker count
      (``stream.state_dict(position=batches_done * batch_size, workers=num_workers)``,
      counted from where the pass started), which is exact when the stream batches
      (``batch_size=N`` here, ``batch_size=None`` in the loader).

    Iterating again after a whole pass starts the epoch again; :meth:`set_epoch` draws the
    next order. Data loaders with ``persistent_workers=True`` keep the epoch their workers
    started with: leave it off, as for any iterable dataset that changes per epoch.
    """

    def __init__(
        self,
        paths: Paths,
        shuffle: Union[bool, str] = False,
        seed: int = 0,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        worker: Optional[Tuple[int, int]] = None,
        batch_size: Optional[int] = None,
        drop_last: bool = True,
        features: Optional[Sequence[str]] = None,
        *,
        block_size: Optional[int] = None,
        **options: Any,
    ) -> None:
        mode = _check_epochs(shuffle, seed, rank, world_size, worker, batch_size, block_size)
        worker = None if worker is None else (int(worker[0]), int(worker[1]))
        self.dataset = RecordDataset(paths, features, **options)
        # A cache too small for the window is refused now, not at the first batch.
        self.dataset._native.check_cache(mode, None if block_size is None else int(block_size))
        _warn_request_a_record(self.dataset, mode)
        self.shuffle = shuffle
        self.block_size = None if block_size is None else int(block_size)
        self.seed = int(seed)
        self.rank = None if rank is None else int(rank)
        self.world_size = None if world_size is None else int(world_size)
        self.worker = worker
        self.batch_size = None if batch_size is None else int(batch_size)
        self.drop_last = bool(drop_last)
        self._mode = mode
        self._epoch = 0
        # The passes of this epoch that stopped before this one (each a tuple of the integers
        # of `_PASS_KEYS`), and the records of this rank's share read since this pass started.
        self._before: List[Tuple[int, int, int, bool, int]] = []
        self._position = 0
        # The state loaded, while its passes are to be resumed: the name of its claim (see
        # `_claim`), and the process that loaded it.
        self._resumed: Optional[Tuple[str, int]] = None

    def _begin(self) -> None:
        super()._begin()
        self._position = 0

    @property
    def block(self) -> Optional[Tuple[int, int]]:
        """With ``shuffle="block"``: the records a window holds and a chunk of it holds."""
        if self._mode != "block":
            return None
        return self.dataset._native.block_geometry(self.block_size)

    def _placement(self) -> Tuple[int, int, int, int]:
        rank, world = (self.rank, self.world_size) if self.world_size is not None else _distributed()
        worker, workers = self.worker if self.worker is not None else _loader_worker()
        return int(rank), int(world), worker, workers  # type: ignore[arg-type]

    def _stream(
        self, worker: Optional[Tuple[int, int]] = None, before: Optional[List[Tuple[int, int, int, bool, int]]] = None
    ) -> "_native.Stream":
        rank, world, this, workers = self._placement()
        if worker is not None:
            this, workers = worker
        unit = self.batch_size or 1
        return _native.Stream(
            self.dataset._native, self._mode, self.block_size, self.seed, self._epoch,
            self._before if before is None else before, rank, world, this, workers, unit,
            self.batch_size is not None, self.drop_last,
        )

    def __iter__(self) -> Iterator[Any]:
        if self._later_loader_pass(self.worker):
            # A worker of a loader's pass after the one that resumed: the epoch again.
            self._begin()
        # A pass iterated here and broken off stopped where it stood.
        self._before = self._passes(None, None)
        self._position = 0
        if self._stream(worker=(0, 1)).units == 0:
            # A whole pass is behind: the epoch again.
            self._begin()
        stream = self._stream()
        for item in stream:
            self._position = stream.yielded
            yield item

    def __len__(self) -> int:
        """Items (batches, or records) this rank yields in the epoch from where it stands,
        all its workers together."""
        return self._stream(worker=(0, 1), before=self._passes(None, None)).units

    def _passes(self, position: Optional[int], workers: Optional[int]) -> List[Tuple[int, int, int, bool, int]]:
        """The passes of the epoch so far, this one stopped once this rank consumed
        ``position`` records of it (None: those it read in this process) with ``workers``
        loader workers (None: this process's)."""
        records = self._position if position is None else int(position)
        if records < 0:
            raise UsageError(f"position must be at least 0, not {records}")
        if records == 0:
            return list(self._before)
        if workers is None:
            workers = self._placement()[3]
        stopped, _ = self._stream(worker=(0, max(int(workers), 1))).stopped_after(records)
        return self._before + [tuple(stopped)]  # type: ignore[list-item]

    def state_dict(self, position: Optional[int] = None, workers: Optional[int] = None) -> Dict[str, Any]:
        """Where the epoch stands: ``{"version", "epoch", "position", "passes", "seed",
        "shuffle", "block_size", "records", "fingerprint"}``. ``passes`` are the passes of the
        epoch that stopped before its end, each its layout and how far its ranks got (a few
        integers: ``world_size``, ``workers``, ``unit``, ``drop_last``, ``steps``), and
        ``position`` the records of the epoch consumed in all.

        Iterated in this process, the stream counts the records it read itself. Behind a data
        loader's workers, give ``position``, the records this rank consumed since the pass
        started (``batches_done * batch_size``), and ``workers``, the loader's
        ``num_workers``: a worker reads a run of the rank's batches, so which records the
        batches consumed were depends on how many workers took turns."""
        if position is not None and workers is None:
            workers = self.worker[1] if self.worker is not None else _loader_info_count()
            if workers is None:
                raise UsageError(
                    "state_dict(position=...) needs workers=: the data loader's num_workers "
                    "(0 or 1 for a loader without workers), as which records its batches held "
                    "depends on how many workers took turns"
                )
        if workers is not None and int(workers) < 0:
            raise UsageError(f"workers must be at least 0, not {workers}")
        passes = self._passes(position, workers)
        return {
            "version": _STATE_VERSION,
            "epoch": self._epoch,
            "position": len(self.dataset) - self._stream(worker=(0, 1), before=passes).left,
            "passes": [dict(zip(_PASS_KEYS, stopped)) for stopped in passes],
            "seed": self.seed,
            "shuffle": self._mode,
            "block_size": self.block[0] if self.block else None,
            "records": len(self.dataset),
            "fingerprint": self.dataset._native.fingerprint(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resumes at ``state`` (from :meth:`state_dict` of any rank, on any number of ranks
        and workers): the next pass yields the rest of that epoch, each record once over
        every rank. A state of another order (seed, shuffle, block) or of another dataset is
        refused, and so is a dict that is no state, naming the keys it lacks or has
        besides. A state of version 2 (ofconvert before passes) is resumed as the prefix of
        the epoch it counted."""
        if not isinstance(state, Mapping):
            raise TypeError(f"a state is the dict state_dict() returns, not {type(state).__name__}")
        mine = self.state_dict()
        version = state.get("version")
        if "version" in state and version not in (2, _STATE_VERSION) or set(state) == _STATE_VERSION_1:
            raise UsageError(
                "the state is not one this version of ofconvert writes (version 3, or 2 before "
                "it): its position counts one rank's records, which cannot be resumed on another "
                "layout; start the epoch over with set_epoch(epoch)"
            )
        expected = set(mine) - ({"passes"} if version == 2 else set())
        missing = sorted(expected - set(state))
        unknown = sorted(set(state) - expected, key=str)
        if missing or unknown:
            said = [f"it lacks {', '.join(map(repr, missing))}"] if missing else []
            said += [f"it has {', '.join(map(repr, unknown))}, which a state has not"] if unknown else []
            raise UsageError(
                f"not a state of a RecordStream: {'; '.join(said)}; a state is the dict "
                f"state_dict() returns, such as this stream's: {mine!r}"
            )
        if state.get("fingerprint") != self.dataset._native.fingerprint() or state.get("records") != len(self.dataset):
            raise UsageError(
                f"the state is of another dataset ({state.get('records')} records, fingerprint "
                f"{state.get('fingerprint')}; this one has {len(self.dataset)} records, fingerprint "
                f"{self.dataset._native.fingerprint()}): its files changed, were added or removed"
            )
        for name in ("seed", "shuffle", "block_size"):
            if state.get(name) != mine[name]:
                raise UsageError(f"the state is of a stream with {name}={state.get(name)!r}, this one has {mine[name]!r}")
        position = int(state["position"])
        if not 0 <= position <= len(self.dataset):
            raise UsageError(f"position must be in 0..{len(self.dataset)}, not {position}")
        if version == 2:
            # The first `position` places of the epoch's order, which one process reading a
            # record at a time reads first.
            passes = [(1, 1, 1, False, position)] if position else []
        else:
            passes = [_stopped_pass(entry) for entry in state["passes"]]
        self._epoch = int(state["epoch"])
        self._begin()
        self._before = passes
        if self._stream(worker=(0, 1)).left != len(self.dataset) - position:
            self._before = []
            raise UsageError(f"the state's passes {state['passes']!r} do not add up to its position {position}")
        self._resume(passes)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({len(self.dataset)} records, shuffle={self.shuffle!r}, "
            f"batch_size={self.batch_size}, epoch={self._epoch}, "
            f"position={len(self.dataset) - self._stream(worker=(0, 1), before=self._passes(None, None)).left})"
        )


# Below the names it uses from this module.
from ._mixture import MixedStream  # noqa: E402
