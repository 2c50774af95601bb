"""An epoch of one dataset's records as an iterable: :class:`RecordStream`, its order drawn
in Rust, dealt to ranks and loader workers, batched, and its state saved and resumed on any
layout. Above the dataset, the epochs and the layout; the mixture stands beside it, built on
the same three.
"""

import warnings
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._dataset import Paths, RecordDataset
from ._epochs import _PASS_KEYS, _check_epochs, _check_transform, _Epochs, _stopped_pass
from ._errors import UsageError

_STATE_VERSION = 3
# The keys of a state of version 1, which had no "version": its position counted one rank's
# records.
_STATE_VERSION_1 = {"epoch", "position", "seed", "shuffle", "records"}
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
      bytes or variable-length feature is a list with one entry per record). Every batch has
      the same keys: the dataset's features (those of each file's first record, looked for
      once when the stream is made and kept in the cache), ``features=`` when given, and any
      feature an earlier batch had, ``None`` in the rows of records that lack it. Give the
      loader ``batch_size=None``. Without it, each item is a record's dict, as ``read()``
      gives it.
    - ``transform=f``: each item (a batch, or a record) is ``f(item)``, called where the
      stream is iterated (in a data loader's worker, so that images are decoded there); with
      ``spawn``, ``f`` is pickled (a function defined at a module's top level).
    - :meth:`state_dict` / :meth:`load_state_dict`: where the epoch stands (ranks stepping
      together, a loader taking a batch from each worker in turn), a few integers for each
      pass of the epoch that stopped, so that a state saved by rank 0 after any step (by
      any rank, but after an uneven last step of ``drop_last=False``) resumes on any number of
      ranks and workers with the rest of the epoch read exactly once between them. Iterated
      in this process the stream counts its records itself; behind a data loader's workers,
      count them where the batches arrive and give the loader's worker count
      (``stream.state_dict(position=batches_done * batch_size, workers=num_workers)``,
      counted from where the pass started), which is exact when the stream batches
      (``batch_size=N`` here, ``batch_size=None`` in the loader). ``workers`` may be left out
      once the loader's workers started a pass: they tell this process their count.

    Iterating again after a whole pass starts the epoch again; :meth:`set_epoch` draws the
    next order. The pass a loaded state resumes reads what it left, even nothing. Data
    loaders with ``persistent_workers=True`` follow :meth:`set_epoch` and
    :meth:`load_state_dict` from one pass to the next (see ``docs/training.md``).
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
        transform: Optional[Callable[[Any], Any]] = None,
        **options: Any,
    ) -> None:
        mode = _check_epochs(shuffle, seed, rank, world_size, worker, batch_size, block_size)
        self.transform = _check_transform(transform)
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
        if self.batch_size is not None:
            # The keys of every batch, looked for once here, not in each loader worker.
            self.dataset._native.keys()
        self._start_epochs()
        # The records of this rank's share read since this pass started.
        self._position = 0

    def _begin(self) -> None:
        super()._begin()
        self._position = 0

    @property
    def block(self) -> Optional[Tuple[int, int]]:
        """With ``shuffle="block"``: the records a window holds and a chunk of it holds."""
        if self._mode != "block":
            return None
        return self.dataset._native.block_geometry(self.block_size)

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

    def _pass(self, before: List[Any], workers: Optional[int] = None) -> "_native.Stream":
        return self._stream(worker=(0, 1), before=before)

    def __iter__(self) -> Iterator[Any]:
        self._start_pass()
        self._position = 0
        stream = self._stream()
        for item in stream:
            self._position = stream.yielded
            yield self._finished(item)

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
        "shuffle", "block_size", "records", "fingerprint"}``, and ``"skipped"`` (the damaged
        records stepped over in the dataset: ``{"corrupt", "recovered"}``) with
        ``on_corrupt="skip"``. ``passes`` are the passes of the
        epoch that stopped before its end, each its layout and how far its ranks got (a few
        integers: ``world_size``, ``workers``, ``unit``, ``drop_last``, ``steps``), and
        ``position`` the records of the epoch consumed in all.

        Iterated in this process, the stream counts the records it read itself. Behind a data
        loader's workers, give ``position``, the records this rank consumed since the pass
        started (``batches_done * batch_size``), and ``workers``, the loader's
        ``num_workers``: a worker reads a run of the rank's batches, so which records the
        batches consumed were depends on how many workers took turns."""
        workers = self._loader_workers(position, workers)
        passes = self._passes(position, workers)
        state: Dict[str, Any] = {
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
        skipped = self.dataset.skipped
        if skipped is not None:
            state["skipped"] = {"corrupt": skipped["corrupt"], "recovered": skipped["recovered"]}
        return state

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
        # What was stepped over is said, not checked: the fingerprint is of the records read.
        missing = sorted(expected - set(state) - {"skipped"})
        unknown = sorted(set(state) - expected - {"skipped"}, key=str)
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
            f"position={len(self.dataset) - self._pass(self._passes(None, None)).left})"
        )

