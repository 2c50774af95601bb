"""How well the shuffles mix, by MosaicML Streaming's measure (bench/python/bench_shuffle.py):
a block shuffle mixes about as well as a global permutation, and as well as Mosaic's py1e at
the same block size when mosaicml-streaming is there to compare with (ci.sh installs it)."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

# The script lives with the other benchmarks, at the root of the repository.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench" / "python"))
import bench_shuffle  # noqa: E402

FILES, RECORDS, BLOCK = 32, 500, 4096
SEEDS = range(3)


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shuffle")
    bench_shuffle.write_dataset(folder, FILES, RECORDS)
    file_of = np.repeat(np.arange(FILES), RECORDS)
    found = {}
    for name, shuffle in [("order", False), ("block", "block"), ("global", True)]:
        found[name] = []
        for seed in SEEDS:
            order = bench_shuffle.stream_order(folder, shuffle, seed, BLOCK)
            assert sorted(order.tolist()) == list(range(FILES * RECORDS))
            found[name].append(bench_shuffle.score(order, file_of)[0])
    return found


def test_file_order_does_not_mix(scores):
    assert max(scores["order"]) < 0.1


def test_a_block_shuffle_mixes_nearly_as_well_as_a_global_one(scores):
    # On this layout: block 6.79-6.90 over the three seeds, global 6.95.
    block, whole = np.mean(scores["block"]), np.mean(scores["global"])
    assert block >= 0.95 * whole, (scores["block"], scores["global"])


def test_a_block_shuffle_mixes_as_well_as_mosaics_py1e(scores):
    py1e = bench_shuffle.mosaic_py1e()
    if py1e is None:
        if os.environ.get("OFCONVERT_REQUIRE_MOSAIC"):
            pytest.fail("mosaicml-streaming is not installed")
        pytest.skip("mosaicml-streaming is not installed")
    file_of = np.repeat(np.arange(FILES), RECORDS)
    sizes = np.full(FILES, RECORDS, dtype=np.int64)
    theirs = [bench_shuffle.score(np.asarray(py1e(sizes, 1, seed, 0, BLOCK)), file_of)[0]
              for seed in SEEDS]
    # On this layout: py1e 6.63-6.68.
    assert np.mean(scores["block"]) >= 0.99 * np.mean(theirs), (scores["block"], theirs)
