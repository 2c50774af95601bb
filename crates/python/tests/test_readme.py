"""The README's Python examples run: the Python section's code blocks, in order, in one
namespace, in an empty directory; and the Ray and Spark examples, in a directory holding
the sample data as a clone does (they need ray and pyspark: see test_engines.py)."""

import os
import re

import pytest

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
