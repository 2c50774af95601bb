"""The README's Python examples run: the Python section's code blocks, in order, in one
namespace, in an empty directory; the Ray and Spark examples, in a directory holding the
sample data as a clone does (they need ray and pyspark: see test_engines.py); and the examples
of "Train without converting", each with its framework."""

import os
import re
import subprocess
import sys

import pytest

import ofconvert
from conftest import ROOT, TESTDATA


def python_blocks(heading):
    readme = (ROOT / "README.md").read_text()
    section = readme.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_readme_python_section_runs(tmp_path, monkeypatch, capsys):
    blocks = python_blocks("## Python")
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "readme"}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    printed = capsys.readouterr().out
    # The last example prints where the damage is.
    assert printed.splitlines()[-1] == "labels.tfrecord 46 1"


def test_readme_ray_and_spark_examples_run(tmp_path, monkeypatch, capsys):
    for module in ("ray", "pyspark"):
        try:
            __import__(module)
        except ImportError:
            if os.environ.get("OFCONVERT_REQUIRE_ENGINES"):
                pytest.fail(f"{module} is not installed")
            pytest.skip(f"{module} is not installed")
    blocks = python_blocks("#### Ray and Spark")
    assert len(blocks) == 2
    (tmp_path / "testdata").symlink_to(TESTDATA)
    monkeypatch.chdir(tmp_path)
    # Spark's executors run python3 from PATH, as in an activated virtualenv: this Python.
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    namespace = {"__name__": "readme"}
    try:
        for block in blocks:
            exec(compile(block, "README.md", "exec"), namespace)
    finally:
        if "spark" in namespace:
            namespace["spark"].stop()
        if "ray" in namespace:
            namespace["ray"].shutdown()
    ray_line, spark_line = capsys.readouterr().out.splitlines()[-2:]
    assert ray_line == spark_line == "329 records, 3 workers"
    assert (tmp_path / "spark-tf" / "bert").is_dir()


@pytest.mark.parametrize("framework", ["torch", "oneflow"])
def test_readme_training_examples_run(framework, tmp_path):
    """Each framework's example, run by that framework's Python (see test_loaders.py) over
    600 records in `train/`, prints the shape of its last labels."""
    blocks = {
        ("oneflow" if "import oneflow" in block else "torch"): block
        for block in python_blocks("## Train without converting")
    }
    assert set(blocks) == {"torch", "oneflow"}
    python = os.environ.get(f"OFCONVERT_{framework.upper()}_PYTHON")
    if not python:
        if os.environ.get(f"OFCONVERT_REQUIRE_{framework.upper()}"):
            pytest.fail(f"OFCONVERT_{framework.upper()}_PYTHON is not set")
        pytest.skip(f"set OFCONVERT_{framework.upper()}_PYTHON to a Python with {framework} and ofconvert")
    (tmp_path / "train").mkdir()
    for part in range(3):
        with ofconvert.TFRecordWriter(tmp_path / "train" / f"train-{part:05}-of-00003") as writer:
            for label in range(200):
                writer.write({"image/encoded": b"\xff\xd8" + bytes(label), "image/class/label": label})
    script = blocks[framework] + "\nprint(tuple(labels.shape))\n"
    done = subprocess.run(
        [python, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
        env=dict(os.environ, GLOG_minloglevel="2"),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.splitlines()[-1] == "(256, 1)"


def test_training_docs_install_the_torch_and_numpy_the_loader_tests_run():
    """docs/training.md's install line for an older torch is the pairing CI's loader tests
    run (tests/interop/oneflow_venv.sh): the same torch, with the numpy below 2 it needs."""
    venv = (ROOT / "tests" / "interop" / "oneflow_venv.sh").read_text()
    torch = re.search(r"torch==([\d.]+)", venv).group(1)
    numpy = re.search(r"'(numpy<[\d.]+)'", venv).group(1)
    docs = (ROOT / "docs" / "training.md").read_text()
    installs = [
        line
        for block in re.findall(r"```sh\n(.*?)```", docs, flags=re.S)
        for line in block.splitlines()
        if line.startswith("pip install ./crates/python")
    ]
    assert any(f'"torch=={torch}"' in line and f'"{numpy}"' in line for line in installs), installs
