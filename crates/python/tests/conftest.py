"""Shared helpers: where the repository's test data is, TensorFlow in a virtualenv of its
own (OFCONVERT_TF_PYTHON names its interpreter; ci.sh sets it and OFCONVERT_REQUIRE_TF=1,
which turns a missing TensorFlow into a failure, not a skip), moto's S3 server, and the
records the ofconvert.data tests read: the `uneven` files and the `counted` bucket."""

import importlib
import itertools
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import ofconvert
from counting_proxy import CountingProxy

ROOT = Path(__file__).resolve().parents[3]
TESTDATA = ROOT / "testdata"
# The records of the `uneven` files, file by file.
SIZES = (7, 50, 23)


@pytest.fixture
def testdata() -> Path:
    return TESTDATA


def framework_python(name: str, skipped: str) -> str:
    """The Python that `OFCONVERT_{name}_PYTHON` names; the test fails without one where
    `OFCONVERT_REQUIRE_{name}` is set (CI), else is skipped saying `skipped`."""
    python = os.environ.get(f"OFCONVERT_{name}_PYTHON")
    if not python:
        if os.environ.get(f"OFCONVERT_REQUIRE_{name}"):
            pytest.fail(f"OFCONVERT_{name}_PYTHON is not set")
        pytest.skip(skipped)
    return python


def tf_python() -> str:
    return framework_python("TF", "TensorFlow: set OFCONVERT_TF_PYTHON to a Python that has it")


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


def need(module, variable="OFCONVERT_REQUIRE_ENGINES"):
    """Imports `module`, or skips the test (fails it when `variable` is set: CI installs it)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get(variable):
            pytest.fail(f"{module} is not installed")
        pytest.skip(f"{module} is not installed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def moto_s3():
    """moto's S3 server on 127.0.0.1 with a bucket `data`, and the environment every process
    needs to reach it (set here; workers inherit it). One for the whole session: a process
    builds one client per bucket, which must not outlive its server."""
    moto_server = need("moto.server", "OFCONVERT_REQUIRE_MOTO")
    boto3 = need("boto3", "OFCONVERT_REQUIRE_MOTO")
    port = free_port()
    # A process of its own, as a real store is: a server thread here would wait for the GIL.
    server = subprocess.Popen(
        [sys.executable, "-m", moto_server.__name__, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        server.kill()
        pytest.fail("moto's S3 server did not start within 30 s")
    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ALLOW_HTTP": "true",
    }
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    client.create_bucket(Bucket="data")
    yield client, env
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture
def uneven(tmp_path):
    """Three TFRecord files of 7, 50 and 23 records, each with its global `id`."""
    root = tmp_path / "uneven"
    root.mkdir()
    start = 0
    for number, size in enumerate(SIZES):
        with ofconvert.TFRecordWriter(root / f"part-{number}.tfrecord") as writer:
            for i in range(start, start + size):
                writer.write({"id": i, "pad": b"x" * (i % 13), "v": np.arange(i % 3, dtype=np.float32)})
        start += size
    return root


_BUCKETS = itertools.count()


@pytest.fixture
def counted(moto_s3, tmp_path, monkeypatch, request):
    """A bucket of its own of 4 files of 2,000 records reached through a counting proxy (a
    bucket of its own: a process keeps one client per bucket, built with the endpoint of its
    first use)."""
    client, env = moto_s3
    bucket = f"counted{next(_BUCKETS)}"
    client.create_bucket(Bucket=bucket)
    sizes = {}
    for number in range(4):
        path = tmp_path / f"part-{number}.tfrecord"
        with ofconvert.TFRecordWriter(path) as writer:
            for i in range(2000):
                writer.write({"id": number * 2000 + i, "pad": b"p" * 150})
        client.put_object(Bucket=bucket, Key=f"c/{path.name}", Body=path.read_bytes())
        sizes[path.name] = path.stat().st_size
    proxy = CountingProxy(env["AWS_ENDPOINT_URL"], getattr(request, "param", 0))
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    yield proxy, f"s3://{bucket}/c", sum(sizes.values()), tmp_path / "cache"
    proxy.server.shutdown()
    proxy.server.server_close()
