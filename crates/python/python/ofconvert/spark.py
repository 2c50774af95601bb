"""One conversion on Spark: each worker of a sharded run (``shard=(k, n)``) is one Spark task
(a partition of its own), which Spark runs again when it fails, up to
``spark.task.maxFailures`` tries (in local mode, the ``F`` of ``local[N,F]``); a rerun
keeps the parts its earlier try finished. Once every task is done the driver commits the
run, which publishes it as one machine would have.

>>> from pyspark.sql import SparkSession  # doctest: +SKIP
>>> import ofconvert.spark  # doctest: +SKIP
>>> spark = SparkSession.builder.getOrCreate()  # doctest: +SKIP
>>> ofconvert.spark.tf2of(spark, "s3://bucket/tfrecords", "s3://bucket/ofrecord", workers=16)  # doctest: +SKIP

PySpark is imported only by the caller: ``pip install ofconvert[spark]``. The executors need
the ``ofconvert`` package too, in the Python they run (``PYSPARK_PYTHON``, or ``python3``
on their PATH; in local mode too), and every path must be one they all reach: a bucket, or
a file system they all mount.
"""

import re
from typing import Any, Dict, List, Tuple

from . import _workers

_FAILED_TASK = re.compile(r"Task (\d+) in stage \S+ failed (\d+) times")
_RAISED = re.compile(r"ofconvert\._errors\.\w+: (.*)")
_WORKER = re.compile(r"worker (\d+) of \d+: ")


def _reason(error: BaseException, workers: int) -> Tuple[int, str]:
    """Which task failed for good, and why: Spark's message names the task (the worker:
    one partition each) and carries the Python exception the task raised."""
    text = str(error)
    task = _FAILED_TASK.search(text)
    raised = _RAISED.search(text)
    named = _WORKER.match(raised.group(1)) if raised else None
    if named:
        worker = int(named.group(1))
    elif task and int(task.group(1)) < workers:
        worker = int(task.group(1))
    else:
        worker = -1
    if raised:
        why = raised.group(1).strip()
    elif "No module named 'ofconvert'" in text:
        why = (
            "its Python cannot import ofconvert: install the package for the Python "
            "Spark's executors run (PYSPARK_PYTHON, python3 on their PATH by default), or "
            "set PYSPARK_PYTHON to one that has it before the session starts"
        )
    elif "exited unexpectedly" in text or "crashed" in text:
        why = "its Python worker process died"
    else:
        why = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    if task:
        why += f" ({task.group(2)} tries)"
    return worker, why


def _run(spark: Any, direction: str, src: Any, dst: Any, workers: int, options: Dict[str, Any]) -> Dict[str, Any]:
    _workers.check(workers, options)
    src, dst = _workers.as_path(src), _workers.as_path(dst)
    options = dict(options, jobs=int(options.get("jobs") or 1))
    run_worker = _workers.run_worker
    tasks = spark.sparkContext.parallelize(range(workers), workers)
    try:
        summaries: List[Dict[str, Any]] = tasks.map(
            lambda worker: run_worker(direction, src, dst, worker, workers, options)
        ).collect()
    except Exception as error:  # the job failed: a task failed every try
        raise _workers.failed_workers([_reason(error, workers)], workers) from None
    summary = _workers.finish(dst, options)
    summary["workers"] = summaries
    return summary


def tf2of(spark: Any, src: Any, dst: Any, *, workers: int, **options: Any) -> Dict[str, Any]:
    """Converts TFRecord trees into OneFlow datasets with ``workers`` Spark tasks of the
    session ``spark``, then commits; returns the commit's summary
    (:func:`ofconvert.commit`), with each worker's own summary under ``"workers"``.

    ``options`` are :func:`ofconvert.tf2of`'s keyword arguments (not ``shard``, ``overwrite``,
    ``resume`` or ``max_part_bytes``, which a sharded run cannot take); ``jobs`` is the
    threads of each task, 1 by default.

    Raises:
        ConversionError: a task that failed every try, named with why (Spark ends the job
            at the first); nothing is published, and calling again keeps the parts
            finished.
    """
    return _run(spark, "tf2of", src, dst, workers, options)


def of2tf(spark: Any, src: Any, dst: Any, *, workers: int, **options: Any) -> Dict[str, Any]:
    """Converts OneFlow datasets into TFRecord files with ``workers`` Spark tasks, then
    commits, as :func:`tf2of` does; ``options`` are :func:`ofconvert.of2tf`'s."""
    return _run(spark, "of2tf", src, dst, workers, options)
