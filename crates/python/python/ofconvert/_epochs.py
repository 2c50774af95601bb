"""What :class:`RecordStream` and :class:`MixedStream` share about epochs: the check of the
arguments that order and deal them, the epoch itself, the passes of it that stopped (and the
check of a state's passes), and the
claim by which the first data-loader pass after a resume, and no later one, resumes. Below
both streams, above the layout; it names neither stream.
"""

import os
import tempfile
import weakref
from typing import Any, Dict, List, Mapping, Optional, Tuple

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
        info = _layout._loader_info() if worker is None else None
        return self._resumed is not None and info is not None and not _claim(self._resumed[0], info[2])

