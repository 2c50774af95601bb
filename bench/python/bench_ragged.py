"""What a batch of a ragged feature costs in process and behind a PyTorch DataLoader's
workers, as a list of one array a record, as values and lengths (`lengths=`) and padded
(`pad=`), with the loader's default collate (each array a tensor sent through shared memory)
and with `collate_fn=keep` (numpy arrays sent through the loader's queue in one message).

Run by hand with a Python that has torch and ofconvert (CI's loader tests make one):

    PY bench/python/bench_ragged.py [--records 80000] [--batch 64] [--workers 2] [--dir DIR]

It prints one markdown row a shape: the median of the warm epochs (the first is not counted),
each in milliseconds, and the ratios to the in-process figure.
"""

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import torch
from torch.utils.data import DataLoader

import ofconvert
from ofconvert.torch import RecordStream


def keep(batch):
    """The collate that hands a batch over as it is (at the top of a module, for spawn)."""
    return batch


def write(path, records):
    """Two files of `records` records: "tokens" of 1-64 int64 values, and a label."""
    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(0)
    for part in range(2):
        with ofconvert.TFRecordWriter(os.path.join(path, f"part-{part}.tfrecord")) as writer:
            for i in range(records // 2):
                writer.write({"tokens": rng.integers(0, 30000, int(rng.integers(1, 65))), "label": [i]})


def epoch_ms(path, cache, batch, workers, collate, epochs, shape):
    stream = RecordStream(path, batch_size=batch, cache_dir=cache, **shape)
    loader = DataLoader(
        stream, batch_size=None, num_workers=workers, persistent_workers=workers > 0,
        **({"collate_fn": collate} if collate else {}),
    )
    times = []
    for epoch in range(epochs):
        stream.set_epoch(epoch)
        start = time.perf_counter()
        rows = 0
        for item in loader:
            if collate is not None:
                item = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in item.items()}
            rows += len(item["label"])
        times.append((time.perf_counter() - start) * 1000)
        assert rows == len(stream.dataset) // batch * batch, rows
    return statistics.median(times[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=80000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--dir", help="where the records are written (kept), else a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = args.dir or os.path.join(scratch, "ragged")
        if not os.path.isdir(path):
            write(path, args.records)
        cache = os.path.join(scratch, "cache")
        print(f"{args.records} records, batches of {args.batch}, {args.workers} workers, torch {torch.__version__}")
        print("| batches as | in process | default collate | ratio | `collate_fn=keep` | ratio |")
        print("|---|---|---|---|---|---|")
        shapes = [("lists", {}), ("lengths=", {"lengths": ["tokens"]}), ("pad=64", {"pad": {"tokens": 64}})]
        for name, shape in shapes:
            here = epoch_ms(path, cache, args.batch, 0, None, args.epochs, shape)
            default = epoch_ms(path, cache, args.batch, args.workers, None, args.epochs, shape)
            kept = epoch_ms(path, cache, args.batch, args.workers, keep, args.epochs, shape)
            print(
                f"| {name} | {here:,.0f} ms | {default:,.0f} ms | {default / here:.2f} "
                f"| {kept:,.0f} ms | {kept / here:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
