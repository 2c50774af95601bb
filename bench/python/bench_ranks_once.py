"""Each record exactly once: a 64-bit digest of each record a process of bench_ranks.py read,
and the check that the digests of all its processes are the dataset's, each as often.

A record's digest is that of its decoded features as a stream's batches give them (FNV-1a of
a numeric feature's bytes, BLAKE2b of a bytes feature's), or of its serialized bytes (what
Mosaic's samples hold). Two records of equal content have one digest: the check compares
multisets, so that only a record read twice where another of the same content was missed
would pass unseen.
"""

import hashlib
from typing import Any, Dict, List

import numpy as np

from bench_bucket_tasks import tfrecord_payloads

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


def _row_digests(rows: Any) -> Any:
    """FNV-1a of each row's bytes, 64 bits (rows: a 2-D numpy array)."""
    data = np.ascontiguousarray(rows).view(np.uint8).reshape(len(rows), -1)
    digests = np.full(len(rows), FNV_OFFSET, np.uint64)
    for column in data.T:
        digests ^= column
        digests *= np.uint64(FNV_PRIME)
    return digests


def bytes_digest(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def batch_digests(batch: Dict[str, Any]) -> Any:
    """A digest of each record of a stream's batch, from its features' values. A numeric
    feature is the same whether the batch stacked it or listed it (a list where the records'
    lengths differ)."""
    count = len(next(iter(batch.values())))
    digests = np.zeros(count, np.uint64)
    for name in sorted(batch):
        column = batch[name]
        if isinstance(column, np.ndarray):
            values = _row_digests(column.reshape(count, -1))
        else:
            values = np.fromiter((0 if value is None else bytes_digest(value) if isinstance(value, bytes)
                                  else int(_row_digests(np.asarray(value).reshape(1, -1))[0]) for value in column),
                                 np.uint64, count)
        digests = (digests * np.uint64(FNV_PRIME)) ^ values
    return digests


def reference_digests(files: List[str], serialized: bool) -> Any:
    """The sorted digests of every record of `files`: of their features (as a stream's
    batches give them), or of their serialized bytes (as Mosaic's samples hold them)."""
    if serialized:
        return np.sort(np.fromiter((bytes_digest(p) for f in files for p in tfrecord_payloads(f)), np.uint64))
    from ofconvert.data import RecordDataset

    dataset = RecordDataset(files)
    parts = [batch_digests(dataset.batch(list(range(start, min(start + 4096, len(dataset))))))
             for start in range(0, len(dataset), 4096)]
    return np.sort(np.concatenate(parts))


def each_once(paths: List[str], reference: Any) -> str:
    """"yes" if the digests saved in `paths` are the reference's, each as often; else what
    differs."""
    parts = [np.load(path) for path in paths]
    got = np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.uint64)
    if np.array_equal(got, reference):
        return "yes"
    keys = np.union1d(reference, got)
    wanted = np.zeros(len(keys), np.int64)
    read = np.zeros(len(keys), np.int64)
    for counts, digests in ((wanted, reference), (read, got)):
        unique, times = np.unique(digests, return_counts=True)
        counts[np.searchsorted(keys, unique)] = times
    extra = int(np.clip(read - wanted, 0, None).sum())
    missing = int(np.clip(wanted - read, 0, None).sum())
    return f"NO: {extra:,} reads too many, {missing:,} records never read"
