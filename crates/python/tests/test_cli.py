"""The `ofconvert` command the wheel puts on PATH."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ofconvert
from conftest import TESTDATA
from test_convert import long_input


def command():
    script = Path(sys.executable).parent / "ofconvert"
    found = str(script) if script.exists() else shutil.which("ofconvert")
    assert found, "the ofconvert command is not installed beside this Python"
    return found


def run(*args):
    return subprocess.run([command(), *map(str, args)], capture_output=True, text=True, check=False)


def test_tf2of_and_of2tf_with_json(tmp_path):
    done = run("tf2of", TESTDATA / "datasets", tmp_path / "of", "--json", "--parts", "2", "--no-sync")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["failed"] == 0 and summary["records"] > 0
    done = run("of2tf", tmp_path / "of", tmp_path / "tf", "--compression", "zlib", "-q")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert len(list(ofconvert.read(tmp_path / "tf"))) == summary["records"]


def test_exit_statuses(tmp_path):
    done = run("tf2of", TESTDATA / "datasets", tmp_path / "of", "--preset", "nope")
    assert done.returncode == 2
    done = run("tf2of", tmp_path / "missing", tmp_path / "of")
    assert done.returncode == 1 and "missing" in done.stderr
    (tmp_path / "in").mkdir()
    shutil.copy(TESTDATA / "damaged" / "flipped_data.tfrecord", tmp_path / "in")
    done = run("tf2of", tmp_path / "in", tmp_path / "of", "--json")
    assert done.returncode == 1
    assert "offset 312 (record #3)" in done.stderr
    assert json.loads(done.stdout)["failed"] == 1
    (tmp_path / "of2").mkdir()
    (tmp_path / "of2" / "keep.txt").write_text("mine")
    done = run("tf2of", TESTDATA / "datasets", tmp_path / "of2")
    assert done.returncode == 2 and "not empty" in done.stderr


@pytest.mark.skipif(os.name != "posix", reason="SIGINT")
def test_sigint_stops_the_command_with_status_130(tmp_path):
    src = long_input(tmp_path)
    process = subprocess.Popen(
        [command(), "tf2of", str(src), str(tmp_path / "of"), "-j", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Once the first dataset is published the run is under way, and far from done.
    for _ in range(12000):
        if any((tmp_path / "of").glob("*/ofconvert-manifest.json")) or process.poll() is not None:
            break
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "--resume" in stderr
    assert len(list((tmp_path / "of").glob("*/ofconvert-manifest.json"))) < 48
    temporary = [p for p in (tmp_path / "of").rglob(".ofconvert-*") if p.name != ".ofconvert-lock"]
    assert temporary == []
