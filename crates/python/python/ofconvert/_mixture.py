"""A mixture of datasets: each epoch draws a weighted share of records from each source, every
source read through its own store and options, dealt to ranks and loader workers as a
:class:`RecordStream` deals one dataset (see :class:`MixedStream`)."""

import math
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._dataset import RecordDataset
from ._epochs import _PASS_KEYS, _check_epochs, _check_transform, _Epochs, _stopped_pass, _with_keys
from ._errors import UsageError

# Version 2: each lane's schedule drawn in Rust (version 1's, drawn by Python's random, is
# another order of the same batches).
_MIXTURE_VERSION = 2


def _shares(size: int, weights: Sequence[float]) -> List[int]:
    """`size` records cut by `weights` into whole numbers that add up to it: each its floor,
    the records left to the largest remainders (the first source first on a tie)."""
    return list(_native.shares(size, [float(weight) for weight in weights]))


def _check_weights(weights: Any, sources: int) -> List[float]:
    """Weights, checked: a positive finite number a source."""
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
        raise UsageError(f"weights is a list of numbers, one a source, not {weights!r}")
    if len(weights) != sources:
        raise UsageError(f"weights holds {len(weights)} numbers for {sources} sources: give one a source")
    try:
        checked = [float(weight) for weight in weights]
    except (TypeError, ValueError):
        raise UsageError(f"weights must be positive numbers, not {list(weights)!r}") from None
    if any(not weight > 0 or math.isinf(weight) for weight in checked):
        raise UsageError(f"weights must be positive numbers, not {checked}")
    return checked


class MixedStream(_Epochs):
    """Several datasets read as one stream, each a weighted share of every epoch.

    ``sources`` are :class:`RecordDataset` objects (each opened with its own options: a
    bucket of its own, credentials, a cache) or paths, opened with the defaults.
    ``weights`` (positive, one a source; default: each source's records) cut each epoch of
    ``size`` records (default: all the sources' records) into the sources' shares, in whole
    records that add up to ``size``. A source whose share is below its length gives the first
    places of its order that epoch (another part of it each epoch when shuffled); a source
    whose share is above it is read whole as many times as fits, each time in an order of its
    own (all of them the same when not shuffled), then the first places of one more. Within
    a source's share each record comes once (twice only where the source is repeated).

    Each batch (or record, without ``batch_size``) comes from one source, the sources' batches
    interleaved at random in proportion (in turn when not shuffled). Ranks and loader workers
    each read a lane of each source's share as :class:`RecordStream` deals one dataset, so a
    job fetches each source's share about once; ``shuffle``, ``block_size``, ``seed``,
    ``rank``, ``world_size``, ``worker``, ``batch_size`` and ``drop_last`` are
    :class:`RecordStream`'s, and so is ``transform=``. Every batch holds the keys of every
    source's batches, ``None`` in the rows of records that lack one. With ``drop_last=True``
    every rank yields as many whole batches; with ``drop_last=False`` every record of every
    share comes, ranks' counts differ by a batch a source at most.

    :meth:`state_dict` / :meth:`load_state_dict` resume the whole mixture, on any number of
    ranks and workers: iterated here the stream counts its batches itself; behind a loader
    give ``position=batches_done * batch_size`` and ``workers=num_workers`` (which may be left
    out once the loader's workers started a pass, as :class:`RecordStream`'s).
    """

    def __init__(
        self,
        sources: Sequence[Union[RecordDataset, Any]],
        weights: Optional[Sequence[float]] = None,
        *,
        size: Optional[int] = None,
        shuffle: Union[bool, str] = False,
        seed: int = 0,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        worker: Optional[Tuple[int, int]] = None,
        batch_size: Optional[int] = None,
        drop_last: bool = True,
        block_size: Optional[int] = None,
        transform: Optional[Callable[[Any], Any]] = None,
    ) -> None:
        self.transform = _check_transform(transform)
        if isinstance(sources, (str, bytes, os.PathLike)) or not len(sources):
            raise UsageError("sources is a list of datasets (RecordDataset or paths), at least one")
        self.sources = [s if isinstance(s, RecordDataset) else RecordDataset(s) for s in sources]
        lengths = [len(source) for source in self.sources]
        if weights is None:
            weights = [float(length) for length in lengths]
        weights = _check_weights(weights, len(self.sources))
        if size is None:
            size = sum(lengths)
        if isinstance(size, bool) or int(size) < 0:
            raise UsageError(f"size must be a number of records, at least 0, not {size!r}")
        if any(length == 0 for length in lengths):
            empty = [str(at) for at, length in enumerate(lengths) if length == 0]
            raise UsageError(f"source {', '.join(empty)} holds no record: a share of it cannot be drawn")
        self._mode = _check_epochs(shuffle, seed, rank, world_size, worker, batch_size, block_size)
        self.weights = weights
        self.size = int(size)
        self.shares = _shares(self.size, weights)
        self.shuffle = shuffle
        self.block_size = None if block_size is None else int(block_size)
        self.seed = int(seed)
        self.rank = None if rank is None else int(rank)
        self.world_size = None if world_size is None else int(world_size)
        self.worker = None if worker is None else (int(worker[0]), int(worker[1]))
        self.batch_size = None if batch_size is None else int(batch_size)
        self.drop_last = bool(drop_last)
        # Every batch holds every source's keys, whichever source it comes from.
        self._keys: List[str] = []
        if self.batch_size is not None:
            keys = {key for source in self.sources for key in source._native.keys_of_batches()}
            self._keys = sorted(keys)
        # The weights the epoch began with where a state loaded says other than `weights`,
        # and those of each pass of it the state holds (None: the epoch's): the rest of the
        # epoch follows `weights`.
        self._epoch_weights: Optional[List[float]] = None
        self._pass_weights: List[Optional[List[float]]] = []
        self._keep_weights = False
        self._start_epochs()
        # The items this process yielded since this pass started.
        self._yielded = 0

    # The epoch's readings and how each lane reads them: in Rust (`_native.Mixture`).

    def _weights_of(self, passes: int) -> List[List[float]]:
        """The weights each of the epoch's first `passes` passes, then the next, followed:
        those a loaded state says, then `weights`."""
        began = self._epoch_weights or self.weights
        said = [w or began for w in self._pass_weights[:passes]]
        return said + [self.weights] * (passes + 1 - len(said))

    def _pass(self, before: List[Any], workers: Optional[int] = None) -> "_native.Mixture":
        rank, world, _, placed = self._placement()
        began = self._epoch_weights or self.weights
        # Where the weights changed, as each pass began.
        changes: List[Optional[List[float]]] = []
        last = began
        for weights in self._weights_of(len(before)):
            changes.append(None if weights == last else weights)
            last = weights
        return _native.Mixture(
            [source._native for source in self.sources], _shares(self.size, began), self._mode,
            self.block_size, self.seed, self._epoch, before, rank, world,
            placed if workers is None else workers, self.batch_size or 1, self.batch_size is not None,
            self.drop_last, changes,
        )

    # Iterating.

    def __iter__(self) -> Iterator[Any]:
        self._start_pass()
        self._yielded = 0
        _, _, worker, _ = self._placement()
        keys = self._keys
        for item in self._pass(self._before).lane(worker):
            self._yielded += 1
            yield self._finished(_with_keys(item, keys) if keys else item)

    # Epochs and states.

    def _begin(self) -> None:
        super()._begin()
        self._yielded = 0
        if not self._keep_weights:
            self._epoch_weights, self._pass_weights = None, []

    def _plan_extra(self) -> Dict[str, Any]:
        return {"weights": [self._epoch_weights, self._pass_weights]}

    def _follow_extra(self, plan: Mapping[str, Any]) -> None:
        self._epoch_weights, self._pass_weights = plan.get("weights") or (None, [])

    def _passes(self, position: Optional[int], workers: Optional[int]) -> List[Tuple[int, int, int, bool, int]]:
        unit = self.batch_size or 1
        if position is None:
            steps, workers = self._yielded, None
        else:
            if int(position) < 0:
                raise UsageError(f"position must be at least 0, not {position}")
            steps = -(-int(position) // unit)
        if steps == 0:
            return list(self._before)
        workers = None if workers is None else max(int(workers), 1)
        return self._before + [tuple(self._pass(self._before, workers).stopped_after(steps))]  # type: ignore[list-item]

    def _identity(self) -> Dict[str, Any]:
        return {
            "seed": self.seed,
            "shuffle": self._mode,
            "block_size": self.block_size,
            "weights": list(self._epoch_weights or self.weights),
            "size": self.size,
            "sources": [[len(s), s._native.fingerprint()] for s in self.sources],
        }

    def state_dict(self, position: Optional[int] = None, workers: Optional[int] = None) -> Dict[str, Any]:
        """Where the epoch stands: ``{"version", "mixture", "epoch", "position", "passes",
        "seed", "shuffle", "block_size", "weights", "size", "sources"}``, ``passes`` being
        the mixture's passes that stopped (``world_size``, ``workers``, ``unit``,
        ``drop_last``, ``steps``: the batches each rank took) and ``position`` the records
        consumed in all; and ``"skipped"``, each source's damage stepped over (``None`` for
        one that fails on it), where a source has ``on_corrupt="skip"``.
        Behind a loader give ``position`` (records this rank consumed since the pass started,
        ``batches_done * batch_size``) and ``workers`` (the loader's ``num_workers``)."""
        workers = self._loader_workers(position, workers)
        passes = self._passes(position, workers)
        left = self._pass(passes).left
        began = self._epoch_weights or self.weights
        entries = []
        for stopped, weights in zip(passes, self._weights_of(len(passes))):
            entry: Dict[str, Any] = dict(zip(_PASS_KEYS, stopped))
            if weights != began:
                entry["weights"] = list(weights)
            entries.append(entry)
        state = {
            "version": _MIXTURE_VERSION,
            "mixture": True,
            "epoch": self._epoch,
            "position": self.size - left,
            "passes": entries,
            **self._identity(),
        }
        skipped = [source.skipped for source in self.sources]
        if any(said is not None for said in skipped):
            # Each source's damage stepped over (on_corrupt="skip"), as a stream's state says it.
            state["skipped"] = [
                None if said is None else {"corrupt": said["corrupt"], "recovered": said["recovered"]}
                for said in skipped
            ]
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resumes at ``state`` (from :meth:`state_dict`, on any number of ranks and workers):
        the next pass yields the rest of that epoch. A state of another mixture (sources,
        size, order) is refused. This mixture's ``weights`` may differ from the state's, as
        Grain allows: the rest of the epoch (the records the state did not consume) is then
        cut by the new weights into each source's share of it, each source reading on where
        it stood (no record of its order twice; again, in an order of its own, only once the
        new share draws it past its length), and later epochs follow the new weights."""
        if not isinstance(state, Mapping):
            raise TypeError(f"a state is the dict state_dict() returns, not {type(state).__name__}")
        if state.get("mixture") and state.get("version") == 1:
            raise UsageError(
                "the state is of a mixture of ofconvert before version 2 of its states, whose "
                "batches came from the sources in another order: it cannot be resumed exactly; "
                "start the epoch over with set_epoch(epoch)"
            )
        if state.get("version") != _MIXTURE_VERSION or not state.get("mixture"):
            raise UsageError(f"not a state of a MixedStream: {dict(state)!r}")
        # Everything is checked before anything changes: a refused state leaves the mixture
        # where it stood.
        mine = self._identity()
        for name, value in mine.items():
            if name != "weights" and state.get(name) != value:
                raise UsageError(f"the state is of a mixture with {name}={state.get(name)!r}, this one has {value!r}")
        began = _check_weights(state.get("weights"), len(self.sources))
        passes, weights = [], []
        for entry in state.get("passes", []):
            if isinstance(entry, Mapping) and "weights" in entry:
                weights.append(_check_weights(entry["weights"], len(self.sources)))
                entry = {key: value for key, value in entry.items() if key != "weights"}
            else:
                weights.append(None)
            passes.append(_stopped_pass(entry))
        was = (self._epoch, self._epoch_weights, self._pass_weights)
        self._epoch = int(state["epoch"])
        # The epoch goes on as the state's weights had it; from this pass on, it follows
        # this mixture's weights. A state of no pass consumed nothing: the epoch is this
        # mixture's from its start.
        self._epoch_weights = None if began == self.weights or not passes else began
        self._pass_weights = weights
        # The passes must consume what the state says was consumed, as a stream's must.
        left = self._pass(passes).left
        if state.get("position") != self.size - left:
            self._epoch, self._epoch_weights, self._pass_weights = was
            raise UsageError(
                f"the state's passes {state.get('passes')!r} do not add up to its position {state.get('position')}"
            )
        self._keep_weights = True
        try:
            self._resume(passes)
        finally:
            self._keep_weights = False

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({len(self.sources)} sources, shares={self.shares}, "
            f"shuffle={self.shuffle!r}, batch_size={self.batch_size}, epoch={self._epoch})"
        )
