"""Shared helpers: where the repository's test data is, and TensorFlow in a virtualenv of
its own (OFCONVERT_TF_PYTHON names its interpreter; ci.sh sets it and
OFCONVERT_REQUIRE_TF=1, which turns a missing TensorFlow into a failure, not a skip)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TESTDATA = ROOT / "testdata"


@pytest.fixture
def testdata() -> Path:
    return TESTDATA


def tf_python() -> str:
    python = os.environ.get("OFCONVERT_TF_PYTHON")
    if not python:
        if os.environ.get("OFCONVERT_REQUIRE_TF"):
            pytest.fail("OFCONVERT_TF_PYTHON is not set")
        pytest.skip("TensorFlow: set OFCONVERT_TF_PYTHON to a Python that has it")
    return python


def run_tensorflow(script: str, *args: str):
    """Runs `script` with TensorFlow's Python; returns what it printed, parsed as JSON."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [tf_python(), "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"TensorFlow script failed:\n{done.stderr}")
    return json.loads(done.stdout)


@pytest.fixture
def python_exe() -> str:
    return sys.executable
