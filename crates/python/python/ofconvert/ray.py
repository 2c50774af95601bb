"""One conversion on a Ray cluster: each worker of a sharded run (``shard=(k, n)``) is a Ray
task, which Ray runs again when it fails (its process dies, its node is lost, or it raises);
a rerun keeps the parts its earlier try finished. Once every worker is done the driver
commits the run, which publishes it as one machine would have.

>>> import ray, ofconvert.ray  # doctest: +SKIP
>>> ray.init()  # doctest: +SKIP
>>> ofconvert.ray.tf2of("s3://bucket/tfrecords", "s3://bucket/ofrecord", workers=16, parts=1024)  # doctest: +SKIP

Ray is imported only here: ``pip install ofconvert[ray]``. Every path is read and written by
the workers themselves, so it must be one they all reach: a bucket, or a file system they
all mount.
"""

from typing import Any, Dict, List, Tuple

from . import _workers


def _reason(error: BaseException) -> str:
    """What went wrong in a task: the worker's own exception when Ray kept it."""
    cause = getattr(error, "cause", None)
    text = str(cause if isinstance(cause, BaseException) else error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _run(direction: str, src: Any, dst: Any, workers: int, max_retries: int, options: Dict[str, Any]) -> Dict[str, Any]:
    import ray

    _workers.check(workers, options)
    src, dst = _workers.as_path(src), _workers.as_path(dst)
    # Each task converts with `jobs` threads and asks Ray for as many CPUs.
    jobs = int(options.pop("jobs", None) or 1)
    task = ray.remote(_workers.run_worker).options(
        num_cpus=jobs, max_retries=max_retries, retry_exceptions=True
    )
    refs = [task.remote(direction, src, dst, k, workers, dict(options, jobs=jobs)) for k in range(workers)]
    summaries: List[Dict[str, Any]] = []
    failures: List[Tuple[int, str]] = []
    for worker, ref in enumerate(refs):
        try:
            summaries.append(ray.get(ref))
        except Exception as error:  # every way a task can fail, after Ray's retries
            failures.append((worker, _reason(error)))
    if failures:
        raise _workers.failed_workers(failures, workers)
    summary = _workers.finish(dst, options)
    summary["workers"] = summaries
    return summary


def tf2of(src: Any, dst: Any, *, workers: int, max_retries: int = 3, **options: Any) -> Dict[str, Any]:
    """Converts TFRecord trees into OneFlow datasets with ``workers`` Ray tasks, then commits;
    returns the commit's summary (:func:`ofconvert.commit`), with each worker's own summary
    under ``"workers"``.

    ``options`` are :func:`ofconvert.tf2of`'s keyword arguments (not ``shard``, ``overwrite``,
    ``resume`` or ``max_part_bytes``, which a sharded run cannot take); ``jobs`` is the
    threads (and Ray CPUs) of each task, 1 by default. A task that fails is tried again up
    to ``max_retries`` times.

    Raises:
        ConversionError: workers that failed every try, each named with why; nothing is
            published, and calling again keeps the parts they finished.
    """
    return _run("tf2of", src, dst, workers, max_retries, options)


def of2tf(src: Any, dst: Any, *, workers: int, max_retries: int = 3, **options: Any) -> Dict[str, Any]:
    """Converts OneFlow datasets into TFRecord files with ``workers`` Ray tasks, then
    commits, as :func:`tf2of` does; ``options`` are :func:`ofconvert.of2tf`'s."""
    return _run("of2tf", src, dst, workers, max_retries, options)
