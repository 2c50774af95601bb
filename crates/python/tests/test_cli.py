"""The `ofconvert` command the wheel puts on PATH: the command line itself, every
subcommand and flag of it (the Rust integration suite also runs against it in CI)."""

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
    # A path that does not exist is a usage error, for every command.
    done = run("tf2of", tmp_path / "missing", tmp_path / "of")
    assert done.returncode == 2 and "missing: no such file or directory" in done.stderr
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


SECOND_COMMAND = """
import sys
from ofconvert.__main__ import main
print("first", main(["tf2of", sys.argv[1], sys.argv[2], "-q"]), flush=True)
sys.exit(main(["tf2of", sys.argv[3], sys.argv[4], "-j", "1", "-q"]))
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGINT")
def test_sigint_stops_a_second_command_in_the_same_process_cleanly(tmp_path):
    """Python puts its own handlers back after each command: the second one must still
    stop cleanly on Ctrl-C, not die of the signal with its temporary files left."""
    src = long_input(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "-c", SECOND_COMMAND, str(TESTDATA / "datasets" / "tutorial"),
         str(tmp_path / "first"), str(src), str(tmp_path / "of")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline() == "first 0\n"
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


def test_every_subcommand_is_there(tmp_path):
    done = run("count", TESTDATA / "golden" / "tutorial.tfrecord")
    assert done.returncode == 0 and done.stdout.split() == ["500", str(TESTDATA / "golden" / "tutorial.tfrecord")]
    done = run("verify", TESTDATA / "damaged" / "flipped_data.tfrecord")
    assert done.returncode == 1 and "offset 312 (record #3)" in done.stdout
    done = run("schema", TESTDATA / "datasets" / "tutorial", "--oneflow")
    assert done.returncode == 0 and "flow.nn.OFRecordReader(" in done.stdout
    done = run("cat", TESTDATA / "golden" / "tutorial.tfrecord", "-n", "1")
    assert done.returncode == 0 and "features {" in done.stdout
    done = run("completions", "bash")
    assert done.returncode == 0 and "tf2of" in done.stdout and "commit" in done.stdout
    done = run("man")
    assert done.returncode == 0 and done.stdout.startswith(".ie")
    done = run("--version")
    assert done.returncode == 0 and done.stdout.startswith(f"ofconvert {ofconvert.__version__}")


def test_the_command_starts_without_numpy_or_the_readers():
    # Every command a script runs pays for what the package imports: the command line needs
    # the extension alone, not numpy (a tenth of a second) nor the readers and datasets.
    code = (
        "import sys\n"
        "from ofconvert.__main__ import main\n"
        "readers = ('numpy', 'ofconvert._records', 'ofconvert.data', 'ofconvert._dataset',\n"
        "           'ofconvert._epochs', 'ofconvert._stream', 'ofconvert._mixture')\n"
        "heavy = [m for m in readers if m in sys.modules]\n"
        "print(' '.join(heavy))\n"
        "sys.exit(main(['--version']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    heavy, version = done.stdout.split("\n", 1)
    assert heavy == "" and version.startswith("ofconvert "), done.stdout
    # What the package names is all there when asked for.
    assert ofconvert.read is ofconvert._records.read and ofconvert.data.RecordStream
    assert set(ofconvert.__all__) <= set(dir(ofconvert)) and ofconvert.__version__ != "unknown"


def test_the_report_and_its_warnings_are_the_binarys(tmp_path):
    done = run("tf2of", TESTDATA / "datasets" / "tfds" / "cifar10", tmp_path / "of", "--no-sync")
    assert done.returncode == 0, done.stderr
    assert "flow.nn.OFRecordReader(" in done.stdout
    assert "--images jpeg" in done.stderr
    done = run("tf2of", TESTDATA / "datasets" / "tfds" / "cifar10", tmp_path / "jpeg", "--images", "jpeg", "--no-sync")
    assert done.returncode == 0, done.stderr
    assert "re-encoded" in done.stdout and "PNG" in done.stdout


def test_sharded_workers_and_commit(tmp_path):
    for k in range(2):
        done = run("tf2of", TESTDATA / "datasets", tmp_path / "of", "--parts", "2", "--shard", f"{k}/2", "--no-sync")
        assert done.returncode == 0, done.stderr
        assert f"Worker {k}/2" in done.stdout
    done = run("commit", tmp_path / "of", "--verify", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["failed"] == 0
