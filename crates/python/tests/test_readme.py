"""The README's Python section runs: its code blocks, in order, in one namespace, in an
empty directory."""

import re

from conftest import ROOT


def python_blocks():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_readme_python_section_runs(tmp_path, monkeypatch, capsys):
    blocks = python_blocks()
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "readme"}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    printed = capsys.readouterr().out
    # The last example prints where the damage is.
    assert printed.splitlines()[-1] == "labels.tfrecord 46 1"
