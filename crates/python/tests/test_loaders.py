"""The frameworks' own DataLoaders, two workers each, over ofconvert.oneflow and
ofconvert.torch (loader_check.py, run with the framework's Python): every record once per
epoch over two ranks (drop_last=False), equal counts per rank (drop_last=True), workers
started by fork and by spawn (which pickles the datasets).

CI has both: OneFlow 0.9 (its virtualenv from tests/interop/oneflow_venv.sh) and PyTorch
1.13.1 installed beside it over OneFlow's CUDA libraries.

OFCONVERT_ONEFLOW_PYTHON and OFCONVERT_TORCH_PYTHON name a Python that has the framework and
ofconvert; unset, the test is skipped, unless OFCONVERT_REQUIRE_<NAME>=1 (ci.sh sets both)
turns that into a failure."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ofconvert

SIZES = (9, 40, 17)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("loaders")
    start = 0
    for number, size in enumerate(SIZES):
        with ofconvert.TFRecordWriter(root / f"part-{number}.tfrecord") as writer:
            for i in range(start, start + size):
                writer.write({"id": i, "image": b"\xff\xd8" + bytes(i % 7), "box": np.zeros(4, np.float32)})
        start += size
    return root


def run(framework, data):
    python = os.environ.get(f"OFCONVERT_{framework.upper()}_PYTHON")
    if not python:
        if os.environ.get(f"OFCONVERT_REQUIRE_{framework.upper()}"):
            pytest.fail(f"OFCONVERT_{framework.upper()}_PYTHON is not set")
        pytest.skip(f"set OFCONVERT_{framework.upper()}_PYTHON to a Python with {framework} and ofconvert")
    script = Path(__file__).with_name("loader_check.py")
    env = dict(os.environ, GLOG_minloglevel="2")
    done = subprocess.run(
        [python, str(script), framework, str(data)], capture_output=True, text=True, env=env, timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("framework", ["oneflow", "torch"])
def test_a_frameworks_loader_reads_every_record_once(framework, data):
    result = run(framework, data)
    total = sum(SIZES)
    assert result["records"] == total
    for context in ("fork", "spawn"):
        every = result[f"stream-{context}-drop_last=False"]
        assert sorted(every[0] + every[1]) == list(range(total)), context
        # A shuffled epoch, not file order.
        assert every[0] != sorted(every[0])
        assert sorted(result[f"dataset-{context}"]) == list(range(total)), context
        # The resumed pass reads the rest of the epoch, the pass after it all of it.
        resumed, after = result[f"resumed-{context}"]
        assert sorted(resumed) == list(range(8, total)) and sorted(after) == list(range(total)), context
        # Persistent workers: each epoch whole in its own order; a pass broken off, then a
        # whole pass; a state loaded between epochs, its rest, then the next epoch whole.
        kept = result[f"persistent-{context}"]
        for name in ("epoch-0", "epoch-1", "epoch-2", "after-broken", "epoch-4"):
            assert sorted(kept[name]) == list(range(total)), (context, name)
        assert kept["epoch-0"] != kept["epoch-1"] != kept["epoch-2"], context
        assert len(kept["broken"]) == 8, context
        if framework == "torch":
            # The same epoch again, in the same order. OneFlow 0.9's loader goes on taking
            # turns from the worker after the last pass's last one, so its batches come in
            # another interleaving (docs/training.md, "Loader settings").
            assert kept["after-broken"] == kept["epoch-2"], context
        # A mixture's weights changed at a state loaded between epochs: the persistent
        # workers follow them, reading the rest the same state gives in process, then
        # the next epoch by the new weights.
        mixed = result[f"reweighted-{context}"]
        assert sorted(mixed["rest"]) == sorted(mixed["rest-here"]), context
        assert len(mixed["taken"]) + len(mixed["rest"]) == 60, context
        assert sorted(mixed["epoch-2"]) == sorted(mixed["epoch-2-here"]), context
        edges = [0, SIZES[0], SIZES[0] + SIZES[1]]
        by_source = [sum(1 for i in mixed["epoch-2"] if i >= edge) for edge in edges]
        by_source = [by_source[0] - by_source[1], by_source[1] - by_source[2], by_source[2]]
        assert by_source == ofconvert._native.shares(60, [1.0, 1.0, 6.0]), context
        # state_dict(position=...) without workers=: the count the loader's workers told.
        assert kept["told-workers"] is True, context
        rest = kept["resumed-3"]
        assert len(rest) == len(set(rest)) == total - 12, context
    equal = result["stream-fork-drop_last=True"]
    assert len(equal[0]) == len(equal[1]) == total // 2 // 4 * 4
    assert len(set(equal[0]) | set(equal[1])) == 2 * len(equal[0])
