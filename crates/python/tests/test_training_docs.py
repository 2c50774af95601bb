"""docs/training.md as a new user meets it: its opening example, run as it says under
`torchrun` (two processes of two loader workers, by the Python with PyTorch that the loader
tests use), trains two epochs of every record once; its install recipes are the ones CI
installs (tests/interop/oneflow_venv.sh)."""

import os
import re
import socket
import subprocess

import pytest

import ofconvert
from conftest import ROOT, framework_python

DOCS = ROOT / "docs" / "training.md"


def _torch_python():
    return framework_python("TORCH", "set OFCONVERT_TORCH_PYTHON to a Python with torch and ofconvert")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_opening_example_trains_under_torchrun_with_every_record_once_an_epoch(tmp_path):
    python = _torch_python()
    text = DOCS.read_text()
    opening = text.split("\n## ", 1)[0]
    (example,) = re.findall(r"```python\n(.*?)```", opening, flags=re.S)
    assert example.startswith("# train.py\n") and "torchrun --nproc_per_node 2 train.py" in opening
    (tmp_path / "train.py").write_text(example)
    (tmp_path / "train").mkdir()
    for part in range(3):
        with ofconvert.TFRecordWriter(tmp_path / "train" / f"train-{part:05}-of-00003") as writer:
            for i in range(200):
                writer.write({"image/encoded": b"\xff\xd8" + bytes(i % 7), "image/class/label": part * 200 + i})
    torchrun = [
        python, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
        "--master_addr", "127.0.0.1", "--master_port", str(_free_port()), "train.py",
    ]
    done = subprocess.run(
        torchrun, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
        env=dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1"),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    # 600 records, 2 ranks, batches of 64, drop_last: 4 whole batches a rank, 512 records.
    lines = [line for line in done.stdout.splitlines() if line.startswith("epoch ")]
    assert lines == ["epoch 0: 512 records, 512 distinct", "epoch 1: 512 records, 512 distinct"], done.stdout
    assert (tmp_path / "state.pt").is_file()


def _sh_lines(text):
    return [line for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S) for line in block.splitlines()]


def test_the_install_recipes_are_the_ones_ci_installs():
    venv = (ROOT / "tests" / "interop" / "oneflow_venv.sh").read_text()
    lines = _sh_lines(DOCS.read_text())
    # OneFlow 0.9 with its CUDA wheels, in a venv of CPython 3.10.
    called = re.search(r'venv "\$oneflow_venv" "\$python310" ((?:.*\\\n)*.*)', venv).group(1)
    oneflow = called.replace("\\\n", " ").split()
    assert oneflow, venv
    installs = [line for line in lines if "oneflow==" in line]
    assert len(installs) == 1, installs
    for pin in oneflow:
        assert f'"{pin.strip(chr(39))}"' in installs[0], (pin, installs[0])
    assert any(line.startswith("python3.10 -m venv") for line in lines)
    # PyTorch for CPUs: the wheel without its dependencies, and the CUDA runtime it loads.
    torch = re.search(r'local wanted="(torch==[^"]+)"', venv).group(1).split()
    cpu = [line for line in lines if line.startswith("pip install --no-deps")]
    assert len(cpu) == 1, cpu
    for pin in torch:
        if "==" in pin:
            assert f'"{pin}"' in cpu[0], (pin, cpu[0])
        else:
            assert any(pin in line for line in lines if line.startswith("pip install ./crates/python")), pin
