"""What the cluster runners share: one worker of a sharded conversion, run wherever the
engine puts it, and the commit on the driver once every worker is done."""

import os
from typing import Any, Dict, List, Tuple

from ._convert import commit, of2tf, tf2of
from ._errors import ConversionError, UsageError

_DIRECTIONS = {"tf2of": tf2of, "of2tf": of2tf}

# A test hook: with this set to a directory, worker K's process dies at once (as on a lost
# machine) after converting its share when the file `worker-K` is there, which it removes
# first: the engine then runs the worker again, which keeps the parts it finished.
_KILL_ONCE = "OFCONVERT_TEST_KILL_WORKER_ONCE"


_REFUSED = {
    "shard": "the runner gives each worker its share",
    "overwrite": "a worker cannot clear what the others write; remove the output first",
    "resume": "a worker run again always keeps the parts it finished",
    "break_lock": "workers take no lock on the output; ofconvert.commit(dst, break_lock=True) breaks one a killed commit left",
    "max_part_bytes": (
        "where a part ends depends on the parts before it, which other workers write; use "
        "parts or records_per_part"
    ),
}


def check(workers: int, options: Dict[str, Any]) -> None:
    """The checks made before anything is started on the cluster."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise UsageError(f"workers must be a whole number of at least 1, not {workers!r}")
    for refused, why in _REFUSED.items():
        if options.get(refused) not in (None, False):
            raise UsageError(f"{refused}={options[refused]!r} does not go with workers: {why}")


def run_worker(direction: str, src: Any, dst: str, worker: int, workers: int, options: Dict[str, Any]) -> Dict[str, Any]:
    """Converts worker `worker`'s share of the run; returns its summary (a dict)."""
    summary = _DIRECTIONS[direction](src, dst, shard=(worker, workers), **options)
    triggers = os.environ.get(_KILL_ONCE)
    if triggers:
        trigger = os.path.join(triggers, f"worker-{worker}")
        try:
            os.remove(trigger)
        except FileNotFoundError:
            pass
        else:
            os._exit(17)
    return summary


def failed_workers(failures: List[Tuple[int, str]], workers: int) -> ConversionError:
    """The error a run whose workers failed for good raises, naming each and why."""
    lines = []
    for worker, reason in sorted(failures):
        named = f"worker {worker} of {workers}: " if worker >= 0 else ""
        lines.append(reason if named and reason.startswith(named) else named + reason)
    return ConversionError(
        f"{len(failures)} of {workers} workers failed and nothing was published; once the "
        "cause is fixed, run the same call again (the parts finished are kept):\n  "
        + "\n  ".join(lines)
    )


def finish(dst: str, options: Dict[str, Any]) -> Dict[str, Any]:
    """Commits the run on the driver; returns the commit's summary."""
    network = {
        name: options[name]
        for name in ("retries", "retry_timeout", "request_timeout", "anonymous", "in_flight")
        if name in options
    }
    return commit(dst, **network)


def _absolute(path: Any) -> str:
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    return text if "://" in text else os.path.abspath(text)


def as_path(path: Any) -> Any:
    """Paths as text that means the same to every worker: a local path made absolute on the
    driver (a worker's working directory is the engine's, not the caller's), a URL as it
    is."""
    if isinstance(path, (str, bytes, os.PathLike)):
        return _absolute(path)
    return [_absolute(p) for p in path]
