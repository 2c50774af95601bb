"""What :class:`RecordStream` and :class:`MixedStream` share about epochs: the check of the
arguments that order and deal them, the epoch itself, the passes of it that stopped (and the
check of a state's passes), and the
claim by which the first data-loader pass after a resume, and no later one, resumes. Below
both streams, above the layout; it names neither stream.
"""

import json
import os
import tempfile
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _layout
from ._errors import UsageError

# A stopped pass in a state: the layout that read it and the units (batches, or records) each
# rank consumed. Both streams' states hold their passes so.
_PASS_KEYS = ("world_size", "workers", "unit", "drop_last", "steps")


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


def _claim_path(token: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"ofconvert-resumed-{token}")


# Forks of this process so far: a stream made before a fork may have copies in loader
# workers, which claims and plans are for; one that never was copied needs neither file.
_FORKS = [0]
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=lambda: _FORKS.__setitem__(0, _FORKS[0] + 1))


def _plan_path(token: str, publisher: int) -> str:
    """The plan of the stream named `token` that process `publisher` leaves for its loader's
    workers (whose parent it is): each process of a job its own, though the stream was
    pickled to them all."""
    return os.path.join(tempfile.gettempdir(), f"ofconvert-plan-{token}-{publisher}")


def _workers_path(token: str, parent: int) -> str:
    """Where the workers of a loader over the stream named `token`, in process `parent`, say
    how many they are: what `state_dict(position=...)` there counts with when not told."""
    return os.path.join(tempfile.gettempdir(), f"ofconvert-workers-{token}-{parent}")


def _write_whole(path: str, text: str) -> None:
    """Writes `text` to `path` whole (a temporary file renamed over it)."""
    handle, written = tempfile.mkstemp(prefix=".ofconvert-", dir=os.path.dirname(path))
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.replace(written, path)


def _remove(path: str, publisher: int) -> None:
    """Removes the plan at `path`, in the process that published it only (a forked worker's
    copy of the stream going away leaves it)."""
    if os.getpid() != publisher:
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _claim(token: str, loader_pass: str) -> bool:
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


class _Copies:
    """Whether a stream may have copies that are a loader's workers: it was pickled (for
    spawned workers, say), or this process forked since it was made."""

    def __init__(self) -> None:
        self.pickled = False
        self.forks = _FORKS[0]

    def may_be(self) -> bool:
        return self.pickled or _FORKS[0] != self.forks


def _unclaim_if_copied(resumed: Tuple[str, int], copies: _Copies) -> None:
    """`_unclaim` when the stream is collected, where a copy of it may have claimed."""
    if copies.may_be():
        _unclaim(*resumed)


def _unclaim(token: str, owner: int) -> None:
    """Removes the claim of `token`, in the process that loaded the state only."""
    if os.getpid() == owner:
        try:
            os.unlink(_claim_path(token))
        except FileNotFoundError:
            pass


_SHUFFLES = {False: "none", True: "global", "block": "block"}


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


def _check_transform(transform: Any) -> Optional[Callable[[Any], Any]]:
    """A stream's ``transform=``: a callable of one item (a batch or a record), or None."""
    if transform is not None and not callable(transform):
        raise UsageError(f"transform is a function of one item (a batch's dict, or a record's), not {transform!r}")
    return transform


def _with_keys(batch: Dict[str, Any], keys: Sequence[str]) -> Dict[str, Any]:
    """``batch`` (a dict of columns) with every name of ``keys`` among its keys, in name order,
    a list of None (one a row) where its records had none of that feature (a shaped feature's
    lengths too: the source it came from has no such feature)."""
    if all(key in batch for key in keys):
        return batch
    # A shaped feature's values may be longer than the batch: its lengths are one a row.
    lengths = [value for key, value in batch.items() if key.endswith("/lengths")]
    rows = len(lengths[0]) if lengths else len(next(iter(batch.values()))) if batch else 0
    missing = [None] * rows
    return {key: batch[key] if key in batch else missing for key in sorted(set(keys).union(batch))}


class _Epochs:
    """What :class:`RecordStream` and :class:`MixedStream` share: the epoch, the passes of it
    that stopped, which passes the next one follows, the claim of a resumed pass by the first
    loader pass that starts, and the plan that tells persistent loader workers of a new
    epoch or state. Each stream gives ``_pass(before)``, its native pass after ``before``
    (``units``: the rank's, ``spent``, ``left``), and ``_passes``, the passes so far."""

    _epoch: int
    _before: List[Any]
    _resumed: Optional[Tuple[str, int]]
    transform: Optional[Callable[[Any], Any]]
    world_size: Optional[int]
    rank: Optional[int]
    worker: Optional[Tuple[int, int]]

    def _start_epochs(self) -> None:
        self._epoch = 0
        # The passes of this epoch that stopped before this one, each a tuple of the integers
        # of `_PASS_KEYS`.
        self._before = []
        # The state loaded, while its passes are to be resumed: the name of its claim (see
        # `_claim`), and the process that loaded it.
        self._resumed = None
        # Whether a state was loaded since this copy's last pass: that pass reads what the
        # state left, even nothing.
        self._loaded = False
        # The plan's name (see `_publish`), the processes that published one, and the loader
        # passes this copy served as a worker, by the loader's seed.
        self._plan = os.urandom(8).hex()
        self._published: List[int] = []
        # The processes that read what their loader's workers told them (and remove it).
        self._told: List[int] = []
        self._served: Dict[int, int] = {}
        self._copies = _Copies()

    def _finished(self, item: Any) -> Any:
        """An item as the loop receives it: the stream's ``transform`` applied, in the process
        that iterates (a data loader's worker)."""
        transform = self.transform
        return item if transform is None else transform(item)

    def _may_be_copied(self) -> bool:
        return self._copies.may_be()

    def __getstate__(self) -> Dict[str, Any]:
        # Pickled in the training process for workers started with `spawn`, which have no
        # process group of their own: the rank travels with the stream.
        self._copies.pickled = True
        state = self.__dict__.copy()
        if self.world_size is None:
            state["rank"], state["world_size"] = _layout._distributed()
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
        self._publish()

    def _placement(self) -> Tuple[int, int, int, int]:
        """This process's rank, the world size, its loader worker and their count: as given
        when the stream was made, else from the framework."""
        rank, world = (self.rank, self.world_size) if self.world_size is not None else _layout._distributed()
        worker, workers = self.worker if self.worker is not None else _layout._loader_worker()
        return int(rank), int(world), int(worker), int(workers)  # type: ignore[arg-type]

    def _loader_workers(self, position: Optional[int], workers: Optional[int]) -> Optional[int]:
        """The loader worker count a state counted at `position` (the records this rank took
        behind a loader) was counted with: `workers` as given, else this worker's loader's, or
        that of the worker the stream was given; refused where none can be known."""
        if position is not None and workers is None:
            workers = self.worker[1] if self.worker is not None else _layout._loader_info_count()
            if workers is None:
                workers = self._told_workers()
            if workers is None:
                raise UsageError(
                    "state_dict(position=...) needs workers=: the data loader's num_workers "
                    "(0 or 1 for a loader without workers), as which records its batches held "
                    "depends on how many workers took turns, and no loader's workers have "
                    "started a pass over this stream in this process to tell; write "
                    "stream.state_dict(position=batches_done * batch_size, workers=loader.num_workers)"
                )
        if workers is not None and int(workers) < 0:
            raise UsageError(f"workers must be at least 0, not {workers}")
        return workers

    def _told_workers(self) -> Optional[int]:
        """How many workers the loader whose workers last started a pass over this stream (a
        copy of it) has, as they told this process; None if none did."""
        me = os.getpid()
        path = _workers_path(self._plan, me)
        try:
            with open(path) as told:
                count = int(told.read())
        except (FileNotFoundError, ValueError):
            return None
        if me not in self._told:
            self._told.append(me)
            weakref.finalize(self, _remove, path, me)
        return count

    def _pass(self, before: List[Any], workers: Optional[int] = None) -> Any:
        raise NotImplementedError

    def _passes(self, position: Optional[int], workers: Optional[int]) -> List[Any]:
        raise NotImplementedError

    def _upcoming(self) -> Tuple[List[Any], Any]:
        """The passes the next pass here follows: those a state loaded left, read even if
        they leave nothing; else those so far, this process's pass stopped where it stood,
        or none once no rank has a unit left (the epoch again). With them, the native pass
        after them where telling needed it, else None."""
        if self._loaded:
            return list(self._before), None
        before = self._passes(None, None)
        upcoming = self._pass(before, None)
        return ([], None) if upcoming.spent else (before, upcoming)

    def _start_pass(self) -> None:
        """What a pass does first: a loader's worker follows the plan, a later loader pass
        than the one that resumed starts the epoch again, and a pass iterated here goes on
        from where the last one stopped."""
        info = _layout._loader_info() if self.worker is None else None
        if info is not None:
            _, count, seed = info
            # Told to the training process, whose state_dict(position=...) then needs no
            # workers=.
            try:
                _write_whole(_workers_path(self._plan, os.getppid()), str(count))
            except OSError:
                pass
            served = self._served.get(seed, 0)
            self._served[seed] = served + 1
            if served:
                # A persistent worker's next pass: the training process's epoch and state.
                self._follow_plan()
            if self._resumed is not None and not _claim(self._resumed[0], f"{seed}.{served}"):
                self._begin()
        else:
            self._before, _ = self._upcoming()
            if not self._before:
                self._begin()
        self._loaded = False

    def __len__(self) -> int:
        """Items (batches, or records) this rank yields in the epoch from where it stands,
        all its workers together."""
        before, upcoming = self._upcoming()
        return int((upcoming if upcoming is not None else self._pass(before, None)).units)

    def _begin(self) -> None:
        """The epoch from its start."""
        self._before = []
        self._loaded = False
        if self._resumed is not None:
            if self._may_be_copied():
                _unclaim(*self._resumed)
            self._resumed = None

    def _resume(self, passes: List[Any]) -> None:
        """The next pass resumes after `passes`: the first loader pass to start claims them
        (a fork or a copy in between does not count)."""
        self._begin()
        self._before = passes
        self._loaded = True
        if passes:
            self._resumed = (os.urandom(8).hex(), os.getpid())
            weakref.finalize(self, _unclaim_if_copied, self._resumed, self._copies)
        self._publish()

    def _publish(self) -> None:
        """Writes where the epoch stands for persistent loader workers, whose copy of the
        stream outlives a pass: this process's epoch, passes and claim, read by each of its
        workers when their loader starts a pass after the first. A worker publishes nothing,
        nor does a stream that no worker can have a copy of yet (one made later takes this
        state with it)."""
        if _layout._loader_info() is not None or not self._may_be_copied():
            return
        me = os.getpid()
        path = _plan_path(self._plan, me)
        plan = {"epoch": self._epoch, "before": [list(p) for p in self._before], "resumed": self._resumed}
        plan.update(self._plan_extra())
        _write_whole(path, json.dumps(plan))
        if me not in self._published:
            self._published.append(me)
            weakref.finalize(self, _remove, path, me)

    def _follow_plan(self) -> None:
        """A persistent worker's next pass follows the plan its parent, the training
        process, published; none published: the epoch it started with, from its start."""
        try:
            with open(_plan_path(self._plan, os.getppid())) as written:
                plan = json.load(written)
        except FileNotFoundError:
            self._begin()
            return
        self._epoch = int(plan["epoch"])
        self._before = [tuple(p) for p in plan["before"]]
        self._resumed = None if plan["resumed"] is None else tuple(plan["resumed"])  # type: ignore[assignment]
        self._loaded = self._resumed is not None
        self._follow_extra(plan)

    def _plan_extra(self) -> Dict[str, Any]:
        """What else a plan tells persistent workers of where the epoch stands (a
        mixture's weights)."""
        return {}

    def _follow_extra(self, plan: Mapping[str, Any]) -> None:
        """Takes what `_plan_extra` wrote into `plan`."""
