"""One conversion on Ray (a local cluster, ray.init(num_cpus=2)) and on Spark (local[2,2]:
two cores, a task tried twice), into a local directory and into a bucket of moto's S3
server on 127.0.0.1: the result is byte for byte what one machine makes; a worker killed
once is run again and the result is still the same; a worker that keeps failing makes the
call raise naming it, with nothing published.

They need ray, pyspark (with Java), moto and boto3; ci.sh installs them and sets
OFCONVERT_REQUIRE_ENGINES=1, which turns their absence into a failure, not a skip."""

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

import ofconvert
from conftest import TESTDATA, need


SOURCE = TESTDATA / "datasets"
WORKERS = 3


@pytest.fixture(scope="module")
def s3(moto_s3, tmp_path_factory):
    """moto's S3 server (conftest), and a folder of kill triggers every worker is told of."""
    client, env = moto_s3
    triggers = tmp_path_factory.mktemp("triggers")
    os.environ["OFCONVERT_TEST_KILL_WORKER_ONCE"] = str(triggers)
    yield client, env, triggers
    del os.environ["OFCONVERT_TEST_KILL_WORKER_ONCE"]


def local_files(root):
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(Path(root).rglob("*"))
        if p.is_file() and not p.name.endswith("ofconvert-manifest.json")
    }


def bucket_files(client, prefix):
    found = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket="data", Prefix=prefix + "/"):
        for item in page.get("Contents", []):
            key = item["Key"]
            found[key[len(prefix) + 1:]] = client.get_object(Bucket="data", Key=key)["Body"].read()
    return found


def without_manifests(files):
    return {name: data for name, data in files.items() if not name.endswith("ofconvert-manifest.json")}


def manifests(files, root):
    """Manifests by name, their time left out, and their inputs' versions (a modification
    time or an ETag: two runs may read two copies of the same inputs, written at other times);
    none names its output root (a manifest names no place but its own directory, so that
    the output can move)."""
    found = {}
    for name, data in files.items():
        if name.endswith("ofconvert-manifest.json"):
            text = data.decode()
            assert root not in text, f"{name} names {root}"
            manifest = json.loads(text)
            manifest.pop("seconds", None)
            for entry in manifest["inputs"]:
                assert entry.pop("changed").split(":", 1)[0] in ("mtime", "etag"), (name, entry)
            found[name] = manifest
    return found


def local_all(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(Path(root).rglob("*")) if p.is_file()}


def check_same_as_one_run(one, many, one_root, many_root):
    assert without_manifests(many) == without_manifests(one)
    assert manifests(many, many_root) == manifests(one, one_root)


@pytest.fixture(scope="module")
def single_runs(tmp_path_factory, s3):
    """What one machine makes, on disk and in the bucket."""
    client, _, _ = s3
    root = tmp_path_factory.mktemp("single")
    ofconvert.tf2of(SOURCE, root / "of", sync=False)
    ofconvert.tf2of(SOURCE, "s3://data/single/of")
    ofconvert.of2tf(root / "of", root / "tf", sync=False)
    return root


@pytest.fixture(scope="module")
def ray_cluster(s3):
    ray = need("ray")
    _, env, triggers = s3
    env = dict(env, OFCONVERT_TEST_KILL_WORKER_ONCE=str(triggers))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def spark(s3):
    need("pyspark")
    from pyspark.sql import SparkSession

    # The executors' Python must have ofconvert: this one (python3 on PATH by default).
    saved = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("ofconvert-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    yield session
    session.stop()
    if saved is None:
        del os.environ["PYSPARK_PYTHON"]
    else:
        os.environ["PYSPARK_PYTHON"] = saved


def _runner(engine, request):
    if engine == "ray":
        request.getfixturevalue("ray_cluster")
        import ofconvert.ray as runner

        return lambda direction, src, dst, **options: getattr(runner, direction)(src, dst, workers=WORKERS, **options)
    session = request.getfixturevalue("spark")
    import ofconvert.spark as runner

    return lambda direction, src, dst, **options: getattr(runner, direction)(session, src, dst, workers=WORKERS, **options)


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_a_local_conversion_is_one_machines_byte_for_byte(engine, request, tmp_path, single_runs, s3):
    run = _runner(engine, request)
    _, _, triggers = s3
    summary = run("tf2of", SOURCE, tmp_path / "of", sync=False)
    assert summary["failed"] == 0 and len(summary["workers"]) == WORKERS
    assert sum(worker["planned"] for worker in summary["workers"]) == 1
    check_same_as_one_run(local_all(single_runs / "of"), local_all(tmp_path / "of"), str(single_runs / "of"), str(tmp_path / "of"))

    # Worker 1 dies once after converting its share: run again, it keeps every part.
    (triggers / "worker-1").write_text("")
    summary = run("of2tf", tmp_path / "of", tmp_path / "tf", sync=False)
    assert not (triggers / "worker-1").exists(), "the worker was not killed"
    rerun = summary["workers"][1]
    assert rerun["converted"] == 0 and rerun["kept"] > 0, rerun
    check_same_as_one_run(local_all(single_runs / "tf"), local_all(tmp_path / "tf"), str(single_runs / "tf"), str(tmp_path / "tf"))


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_a_bucket_conversion_is_one_machines_byte_for_byte(engine, request, single_runs, s3):
    client, _, triggers = s3
    run = _runner(engine, request)
    (triggers / "worker-2").write_text("")
    summary = run("tf2of", SOURCE, f"s3://data/{engine}/of")
    assert summary["failed"] == 0
    assert not (triggers / "worker-2").exists(), "the worker was not killed"
    one = bucket_files(client, "single/of")
    check_same_as_one_run(one, bucket_files(client, f"{engine}/of"), "s3://data/single/of", f"s3://data/{engine}/of")


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_a_worker_that_keeps_failing_names_itself_and_nothing_is_published(engine, request, tmp_path):
    run = _runner(engine, request)
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a.tfrecord", "b.tfrecord", "c.tfrecord"):
        shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", src / name)
    shutil.copy(TESTDATA / "damaged" / "flipped_data.tfrecord", src / "d.tfrecord")
    with pytest.raises(ofconvert.ConversionError) as raised:
        run("tf2of", src, tmp_path / "of", sync=False)
    message = str(raised.value)
    assert "nothing was published" in message
    assert any(f"worker {k} of {WORKERS}" in message for k in range(WORKERS)), message
    assert "d.tfrecord" in message and "offset 312" in message, message
    assert not list((tmp_path / "of").rglob("ofconvert-manifest.json"))
    assert not list((tmp_path / "of").glob("part-*"))


def test_options_a_sharded_run_cannot_take_are_refused_before_anything_starts(tmp_path):
    import ofconvert.ray
    import ofconvert.spark

    with pytest.raises(ofconvert.UsageError, match="max_part_bytes"):
        ofconvert.ray.tf2of(SOURCE, tmp_path / "of", workers=2, max_part_bytes="1M")
    with pytest.raises(ofconvert.UsageError, match="workers must be"):
        ofconvert.spark.tf2of(None, SOURCE, tmp_path / "of", workers=0)
    with pytest.raises(ofconvert.UsageError, match=r"break_lock=True does not go with workers.*commit\(dst, break_lock=True\)"):
        ofconvert.spark.tf2of(None, SOURCE, tmp_path / "of", workers=2, break_lock=True)
    assert not (tmp_path / "of").exists()


def test_executors_without_the_package_are_told_apart_from_a_failed_conversion():
    """What Spark raises when its executors' Python lacks ofconvert (as seen with python3
    from outside a virtualenv) names the task and says what to set."""
    from ofconvert.spark import _reason

    spark_said = (
        "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 0.0 "
        "failed 2 times, most recent failure: Lost task 1.1 in stage 0.0 (TID 3) (192.0.2.2 "
        "executor driver): org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An "
        "exception was thrown from the Python worker: Traceback (most recent call last):\n"
        '  File "pyspark/serializers.py", line 483, in loads\n'
        "    return cloudpickle.loads(obj, encoding=encoding)\n"
        "ModuleNotFoundError: No module named 'ofconvert'\n SQLSTATE: 38000"
    )
    worker, why = _reason(Exception(spark_said), WORKERS)
    assert worker == 1
    assert why.startswith("its Python cannot import ofconvert"), why
    assert "PYSPARK_PYTHON" in why and why.endswith("(2 tries)"), why


def test_read_and_the_inspections_take_bucket_urls(single_runs, s3):
    records = sum(1 for _ in ofconvert.read("s3://data/single/of"))
    assert records == ofconvert.count("s3://data/single/of")["total"] == 329
    assert ofconvert.verify("s3://data/single/of/tutorial")["problems"] == 0
    assert next(ofconvert.read("s3://data/single/of/bert", batch_size=4)).keys()
