"""How well each shuffle mixes an epoch: MosaicML Streaming's measure, for ofconvert's
``shuffle="block"`` and ``shuffle=True`` and for Mosaic's default ``py1e`` at the same block
size, on one layout of files.

    python3 bench/python/bench_shuffle.py [--files 1024] [--records 1251] [--block 262144]

The measure: the Shannon entropy (bits) of the absolute differences between the numbers of
consecutive records in the epoch's order, and the same over the numbers of the files they come
from; their harmonic mean is the score. File order scores 0 on records (every step is 1) and
near 0 on files; a global permutation scores highest. It is Mosaic's own yardstick for its
shuffles, written here from its description.

The script writes a TFRecord dataset of ``--files`` files of ``--records`` records in a
temporary folder, each record holding its file and record number, and reads one epoch with
``ofconvert.data.RecordStream`` (the real stream, not a model of it) for each seed. Mosaic's
order comes from ``streaming.base.shuffle.py1e`` (``pip install --no-deps
mosaicml-streaming``: the shuffle needs numpy only); without it that row is left out.
"""

import argparse
import importlib.util
import os
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

import ofconvert
from ofconvert.data import RecordStream


def gap_entropy(ids: np.ndarray) -> float:
    """Entropy in bits of |ids[i+1] - ids[i]|."""
    _, counts = np.unique(np.abs(np.diff(ids)), return_counts=True)
    p = counts / counts.sum()
    return max(0.0, float(-(p * np.log2(p)).sum()))


def score(order: np.ndarray, file_of: np.ndarray) -> tuple:
    """(score, entropy over records, entropy over files) of an epoch's record numbers."""
    records = gap_entropy(order)
    files = gap_entropy(file_of[order])
    mean = 0.0 if records == 0 or files == 0 else 2 * records * files / (records + files)
    return mean, records, files


def write_dataset(folder: Path, files: int, records: int) -> None:
    for f in range(files):
        with ofconvert.TFRecordWriter(folder / f"part-{f:05d}.tfrecord") as writer:
            for r in range(records):
                writer.write({"n": f * records + r})


def stream_order(folder: Path, shuffle, seed: int, block: int) -> np.ndarray:
    options = {"block_size": block} if shuffle == "block" else {}
    stream = RecordStream(
        sorted(str(p) for p in folder.glob("*.tfrecord")), shuffle=shuffle, seed=seed,
        rank=0, world_size=1, batch_size=65536, drop_last=False, features=["n"], **options,
    )
    return np.concatenate([batch["n"].ravel() for batch in stream])


def mosaic_py1e():
    """Mosaic's py1e, loaded without `streaming`'s package (which imports torch)."""
    spec = importlib.util.find_spec("streaming")
    if spec is None or not spec.submodule_search_locations:
        return None
    shuffle_dir = Path(list(spec.submodule_search_locations)[0]) / "base" / "shuffle"
    for name, path in [("streaming", shuffle_dir.parent.parent),
                       ("streaming.base", shuffle_dir.parent),
                       ("streaming.base.shuffle", shuffle_dir)]:
        package = types.ModuleType(name)
        package.__path__ = [str(path)]
        sys.modules.setdefault(name, package)
    modules = {}
    for name in ["py1s", "py1e"]:
        spec = importlib.util.spec_from_file_location(
            f"streaming.base.shuffle.{name}", shuffle_dir / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        modules[name] = module
    return modules["py1e"].get_shuffle_py1e


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1024)
    parser.add_argument("--records", type=int, default=1251, help="records a file")
    parser.add_argument("--block", type=int, default=262144, help="block size in records")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    total = args.files * args.records
    file_of = np.repeat(np.arange(args.files), args.records)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_dataset(folder, args.files, args.records)
        for name, shuffle in [("in order", False), ('"block"', "block"), ("True", True)]:
            for seed in range(args.seeds if shuffle else 1):
                order = stream_order(folder, shuffle, seed, args.block)
                assert sorted(order.tolist()) == list(range(total)), name
                rows.append((f"ofconvert shuffle={name}", seed, *score(order, file_of)))
    py1e = mosaic_py1e()
    if py1e is not None:
        shard_sizes = np.full(args.files, args.records, dtype=np.int64)
        for seed in range(args.seeds):
            order = py1e(shard_sizes, 1, seed, 0, args.block)
            assert sorted(order.tolist()) == list(range(total))
            rows.append(("Mosaic py1e", seed, *score(np.asarray(order), file_of)))
    else:
        print("(mosaicml-streaming is not installed: no py1e row)", file=sys.stderr)
    print(f"{args.files} files x {args.records} records = {total}, block {args.block} records")
    print("| order | seed | score | records | files |")
    print("|---|---|---|---|---|")
    for name, seed, mean, records, files in rows:
        print(f"| {name} | {seed} | {mean:.2f} | {records:.2f} | {files:.2f} |")


if __name__ == "__main__":
    main()
