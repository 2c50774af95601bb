#!/usr/bin/env python3
"""What a mixture's bookkeeping costs: `state_dict()`, `len()` after a load and the first
batch of the resumed pass, for a MixedStream of three sources on rank 0 of 8 ranks x 4
workers, at a few sizes. Medians of `--runs`, in milliseconds, with the same for a
RecordStream of the same records beside them.

    python bench/python/bench_mixture_state.py [--records 2000000] [--runs 5]

The Python needs ofconvert (the wheel, or `maturin develop`) and numpy. The sources are
written into the temporary folder: tiny records (an int64 id), so that the cost measured is
the bookkeeping's, not the reading's.
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import ofconvert
from ofconvert.data import MixedStream, RecordStream


def write(path: Path, first: int, count: int) -> Path:
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(first, first + count):
            writer.write({"id": i})
    return path


def timed(function, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000, help="records of the largest size")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=1)
    args = parser.parse_args()
    sizes = sorted({args.records // 100, args.records // 10, args.records})
    with tempfile.TemporaryDirectory() as scratch:
        print(f"rank 0 of 8 x 4, batch_size={args.batch_size}, shuffle=True, medians of {args.runs} (ms)")
        print(f"{'records':>10} {'class':<12} {'state_dict':>11} {'len after load':>15} {'first batch':>12}")
        for size in sizes:
            third = size // 3
            roots = [write(Path(scratch) / f"{size}-{n}.tfrecord", n * third, third) for n in range(3)]
            options = dict(shuffle=True, seed=1, rank=0, world_size=8, batch_size=args.batch_size, drop_last=False)
            for name, make in (
                ("MixedStream", lambda: MixedStream(roots, worker=(0, 4), **options)),
                ("RecordStream", lambda: RecordStream(roots, worker=(0, 4), **options)),
            ):
                stream = make()
                # Halfway through rank 0's share of the epoch.
                position = len(stream) // 2 * args.batch_size
                state_ms = timed(lambda: stream.state_dict(position=position, workers=4), args.runs)
                state = stream.state_dict(position=position, workers=4)
                loaded = make()
                loaded.load_state_dict(state)
                len_ms = timed(lambda: len(loaded), args.runs)

                def first_batch():
                    again = make()
                    again.load_state_dict(state)
                    next(iter(again))

                first_ms = timed(first_batch, args.runs)
                print(f"{3 * third:>10,} {name:<12} {state_ms:>11.1f} {len_ms:>15.1f} {first_ms:>12.1f}", flush=True)


if __name__ == "__main__":
    main()
