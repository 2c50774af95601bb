"""The whole command line as functions: every flag has its keyword argument, the
inspections return what --json prints, a conversion spread over workers commits to what
one run writes, and errors name keyword arguments."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ofconvert
from conftest import TESTDATA

FUNCTIONS = {
    "tf2of": ofconvert.tf2of,
    "of2tf": ofconvert.of2tf,
    "commit": ofconvert.commit,
    "count": ofconvert.count,
    "verify": ofconvert.verify,
    "schema": ofconvert.schema,
    "index": ofconvert.index,
    "diff": ofconvert.diff,
}

# Flags with no keyword, and why: Python returns the report itself (json) and prints
# nothing (quiet, verbose: the summary holds every fact); cat, completions and man print
# text, which read() and the command itself serve.
NO_KEYWORD = {"json", "quiet", "verbose"}
NOT_FUNCTIONS = {"cat", "completions", "man"}


def keyword(flag):
    name = flag.replace("-", "_")
    return name[3:] if name.startswith("no_") else name


def cli(*args):
    script = Path(sys.executable).parent / "ofconvert"
    done = subprocess.run([str(script), *map(str, args)], capture_output=True, text=True, check=False)
    return done


def test_every_flag_of_every_command_has_its_keyword():
    import inspect

    commands = dict(ofconvert._native.cli_flags())
    assert set(commands) - NOT_FUNCTIONS == set(FUNCTIONS), "a command without its function"
    for command, flags in commands.items():
        if command in NOT_FUNCTIONS:
            continue
        parameters = inspect.signature(FUNCTIONS[command]).parameters
        for flag in flags:
            if flag in NO_KEYWORD:
                continue
            assert keyword(flag) in parameters, f"ofconvert {command} --{flag} has no keyword"


def test_inspections_return_what_json_prints(tmp_path):
    data = TESTDATA / "datasets"
    for name, args in [("count", []), ("verify", []), ("schema", ["--sample", "7"])]:
        printed = cli(name, data, "--json", *args)
        assert printed.returncode == 0, printed.stderr
        kwargs = {"sample": 7} if name == "schema" else {}
        assert FUNCTIONS[name](data, **kwargs) == json.loads(printed.stdout), name
    assert ofconvert.count([data / "tutorial", data / "bert"], verify=False)["total"] == sum(
        1 for _ in ofconvert.read([data / "tutorial", data / "bert"])
    )
    oneflow = cli("schema", data / "tutorial", "--oneflow")
    assert ofconvert.schema(data / "tutorial", oneflow=True) == oneflow.stdout
    assert ofconvert.schema(data / "tutorial", tf=True) == cli("schema", data / "tutorial", "--tf").stdout

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "t.tfrecord").write_bytes((TESTDATA / "golden" / "tutorial.tfrecord").read_bytes())
    indexed = ofconvert.index(tmp_path / "a", output_dir=tmp_path / "idx")
    assert indexed["total"] == 500
    assert indexed["files"] == [{
        "path": str(tmp_path / "a" / "t.tfrecord"),
        "index": str(tmp_path / "idx" / "t.tfrecord.idx"),
        "records": 500,
    }]
    assert len((tmp_path / "idx" / "t.tfrecord.idx").read_text().splitlines()) == 500


def test_diff_returns_what_json_prints(tmp_path):
    ofconvert.tf2of(TESTDATA / "datasets", tmp_path / "of", sync=False)
    same = ofconvert.diff(TESTDATA / "datasets", tmp_path / "of")
    printed = cli("diff", TESTDATA / "datasets", tmp_path / "of", "--json")
    assert printed.returncode == 0, printed.stderr
    expected = json.loads(printed.stdout)
    assert same["same"] and same.pop("seconds") >= 0 and expected.pop("seconds") >= 0
    assert same == expected
    other = ofconvert.diff(TESTDATA / "datasets" / "tutorial", TESTDATA / "datasets" / "bert")
    assert not other["same"] and other["difference"]["record"] == 0
    with pytest.raises(ofconvert.FileError):
        ofconvert.diff(tmp_path / "missing", tmp_path / "of")


def test_diff_maps_side_a_as_the_conversion_was_asked_to(tmp_path):
    train = TESTDATA / "datasets" / "imagenet" / "train"
    ofconvert.tf2of(train, tmp_path / "of", preset="imagenet", sync=False)
    assert not ofconvert.diff(train, tmp_path / "of")["same"]
    mapped = ofconvert.diff(train, tmp_path / "of", preset="imagenet")
    assert mapped["same"] and mapped["mapped"] and mapped["records"] == 20
    printed = cli("diff", train, tmp_path / "of", "--preset", "imagenet", "--json")
    assert printed.returncode == 0, printed.stderr
    expected = json.loads(printed.stdout)
    assert mapped.pop("seconds") >= 0 and expected.pop("seconds") >= 0
    assert mapped == expected

    rules = dict(rename={"image/encoded": "jpeg"}, offset={"image/class/label": -1})
    ofconvert.tf2of(train, tmp_path / "renamed", sync=False, **rules)
    assert ofconvert.diff(train, tmp_path / "renamed", unordered=True, **rules)["same"]
    other = ofconvert.diff(train, tmp_path / "renamed", rename={"image/encoded": "jpeg"})
    assert other["difference"]["feature"] == "image/class/label"
    with pytest.raises(ofconvert.UsageError, match="preset"):
        ofconvert.diff(train, tmp_path / "of", preset="bogus")
    with pytest.raises(ofconvert.UsageError, match="int8"):
        ofconvert.diff(train, tmp_path / "of", cast={"x": "int8"})
    with pytest.raises(ofconvert.UsageError, match="rename must be a dict"):
        ofconvert.diff(train, tmp_path / "of", rename=["x"])


def test_verify_reports_problems_and_inspections_raise_for_paths(tmp_path):
    damaged = TESTDATA / "damaged" / "flipped_data.tfrecord"
    report = ofconvert.verify(damaged)
    assert report["problems"] == 1 and "offset 312 (record #3)" in report["files"][0]["problems"][0]
    with pytest.raises(ofconvert.FileError) as raised:
        ofconvert.count(tmp_path / "missing")
    assert raised.value.path == str(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ofconvert.FileError, match="no record files found under"):
        ofconvert.verify(tmp_path / "empty")
    with pytest.raises(ofconvert.UsageError, match='format="xml"'):
        ofconvert.count(TESTDATA / "golden" / "tutorial.tfrecord", format="xml")


def manifests(root):
    """Every manifest under root, by relative path; none names root (a manifest names no
    place but its own directory, so that the output can move)."""
    found = {}
    for path in sorted(Path(root).rglob("*ofconvert-manifest.json")):
        text = path.read_text()
        assert str(root) not in text, f"{path} names its output root"
        manifest = json.loads(text)
        manifest.pop("seconds", None)
        found[str(path.relative_to(root))] = manifest
    return found


def files(root):
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(Path(root).rglob("*"))
        if path.is_file() and not path.name.endswith("ofconvert-manifest.json")
    }


def test_shards_and_a_commit_make_what_one_run_makes(tmp_path):
    src = TESTDATA / "datasets"
    ofconvert.tf2of(src, tmp_path / "one", parts=3, sync=False)
    workers = [ofconvert.tf2of(src, tmp_path / "many", parts=3, shard=(k, 3), sync=False) for k in range(3)]
    assert [w["worker"] for w in workers] == [0, 1, 2]
    assert sum(w["planned"] for w in workers) == 1
    summary = ofconvert.commit(tmp_path / "many", verify=True)
    assert summary["failed"] == 0 and summary["records"] == sum(w["records"] for w in workers)
    assert files(tmp_path / "many") == files(tmp_path / "one")
    one, many = manifests(tmp_path / "one"), manifests(tmp_path / "many")
    assert many.keys() == one.keys()
    for name in one:
        assert many[name] == one[name], name


def test_errors_name_keyword_arguments(tmp_path):
    src = TESTDATA / "datasets" / "tutorial"
    ofconvert.tf2of(src, tmp_path / "of", sync=False)
    with pytest.raises(ofconvert.UsageError, match=r"pass resume=True .* or overwrite=True"):
        ofconvert.tf2of(src, tmp_path / "of")
    with pytest.raises(ofconvert.UsageError, match=r"shard=\(0, 2\) does not go with resume=True"):
        ofconvert.tf2of(src, tmp_path / "x", shard=(0, 2), resume=True)
    with pytest.raises(ofconvert.UsageError, match=r"shard=\(2, 2\): workers are numbered from 0 to 1"):
        ofconvert.tf2of(src, tmp_path / "x", shard=(2, 2))
    ofconvert.tf2of(src, tmp_path / "sharded", parts=2, shard=(0, 2), sync=False)
    with pytest.raises(ofconvert.UsageError, match=r"parts=2 in the run's plan, parts=3 here"):
        ofconvert.tf2of(src, tmp_path / "sharded", parts=3, shard=(1, 2), sync=False)
    with pytest.raises(ofconvert.UsageError, match=r"run the workers with shard=\(K, N\) first"):
        ofconvert.commit(tmp_path / "of")
    with pytest.raises(ofconvert.UsageError, match='images="png": expected one of "keep", "jpeg", "raw"'):
        ofconvert.tf2of(src, tmp_path / "x", images="png")
    with pytest.raises(ofconvert.UsageError, match='compression="bzip2": expected one of "none"'):
        ofconvert.of2tf(tmp_path / "of", tmp_path / "x", compression="bzip2")
    with pytest.raises(ofconvert.ConversionError, match='rename={"featur0": "x"}') as raised:
        ofconvert.tf2of(src, tmp_path / "y", rename={"featur0": "x"}, sync=False)
    assert "--rename" not in str(raised.value)
    # The preset's keys are checked as the command line checks them.
    with pytest.raises(ofconvert.ConversionError, match='preset="imagenet"'):
        ofconvert.tf2of(src, tmp_path / "z", preset="imagenet", sync=False)
    assert not (tmp_path / "z").exists()


@pytest.mark.parametrize(
    "function,keywords,error,message",
    [
        ("tf2of", {"parts": "3"}, TypeError, "parts: expected an int of at least 1 or None, got str '3'"),
        ("tf2of", {"parts": -1}, ofconvert.UsageError, "parts: expected an int of at least 1 or None, got int -1"),
        ("tf2of", {"jobs": 2.0}, TypeError, "jobs: expected an int of at least 1 or None, got float 2.0"),
        ("tf2of", {"jpeg_quality": 300}, ofconvert.UsageError, "jpeg_quality: expected an int from 1 to 100, got int 300"),
        ("tf2of", {"overwrite": "yes"}, TypeError, "overwrite: expected True or False, got str 'yes'"),
        ("tf2of", {"part_prefix": 5}, TypeError, "part_prefix: expected a str, got int 5"),
        ("tf2of", {"raw_feature": b"x"}, TypeError, "raw_feature: expected a feature name (str) or None, got bytes b'x'"),
        ("of2tf", {"to": None}, TypeError, "to: expected a str, got NoneType None"),
        ("of2tf", {"lossy": 1}, TypeError, "lossy: expected True or False, got int 1"),
        ("tf2of", {"offset": {"id": "1"}}, TypeError, "offset: expected an int for 'id', got str '1'"),
        ("tf2of", {"offset": {"id": 2**70}}, ofconvert.UsageError, f"offset: {2**70} for 'id' is out of int64's range"),
        ("tf2of", {"retry_timeout": "soon"}, TypeError, "retry_timeout: expected a number of seconds, got str 'soon'"),
        ("diff", {"preset": 3}, TypeError, "preset: expected a str or None, got int 3"),
        ("diff", {"lossy": "no"}, TypeError, "lossy: expected True or False, got str 'no'"),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused_naming_its_keyword(tmp_path, function, keywords, error, message):
    src = TESTDATA / "datasets" / "tutorial"
    with pytest.raises(error) as raised:
        FUNCTIONS[function](src, tmp_path / "out", **keywords)
    assert str(raised.value) == message
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not Path("/proc/sys/kernel/hostname").exists(), reason="Linux host names")
def test_a_running_run_s_lock_is_named_first_and_not_broken(tmp_path):
    import fcntl

    src = TESTDATA / "datasets" / "tutorial"
    out = tmp_path / "of"
    (out / "tutorial").mkdir(parents=True)
    host = Path("/proc/sys/kernel/hostname").read_text().strip()
    with open(out / ".ofconvert-lock", "w") as lock:
        # What a run holds while it writes, this process standing for it.
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write(f"{os.getpid()} on {host}")
        lock.flush()
        running = rf"another ofconvert run \(process {os.getpid()} on this machine"
        with pytest.raises(ofconvert.UsageError, match=running):
            ofconvert.tf2of(src, out, sync=False)
        with pytest.raises(ofconvert.UsageError, match="break_lock=True breaks only a lock whose run has ended"):
            ofconvert.tf2of(src, out, resume=True, break_lock=True, sync=False)
    with pytest.raises(ofconvert.UsageError, match=r"shard=\(0, 2\) does not go with break_lock=True"):
        ofconvert.tf2of(src, tmp_path / "x", shard=(0, 2), break_lock=True)


def test_tensorflow_spellings_of_compression(tmp_path):
    ofconvert.tf2of(TESTDATA / "datasets" / "tutorial", tmp_path / "of", sync=False)
    for name, suffix in [("GZIP", ".gz"), ("ZLIB", ".zz"), ("", "")]:
        out = tmp_path / f"tf{suffix or '-none'}"
        ofconvert.of2tf(tmp_path / "of", out, compression=name, sync=False)
        (shard,) = [p for p in out.rglob("*.tfrecord*") if p.is_file()]
        assert shard.name.endswith(".tfrecord" + suffix), shard.name


def test_images_jpeg_makes_what_oneflow_decodes(tmp_path):
    src = TESTDATA / "datasets" / "tfds" / "cifar10"
    kept = ofconvert.tf2of(src, tmp_path / "kept", sync=False)
    assert any("--images jpeg" in w or 'images="jpeg"' in w for w in kept["warnings"]), kept["warnings"]
    summary = ofconvert.tf2of(src, tmp_path / "jpeg", images="jpeg", jpeg_quality=90, sync=False)
    converted = [d["manifest"]["image_conversion"] for d in summary["datasets"]]
    assert all(c and c["reencoded"].get("PNG") for c in converted), converted
    for record in ofconvert.read(tmp_path / "jpeg"):
        for value in record.values():
            if isinstance(value, list) and value and value[0][:2] == b"\xff\xd8":
                break
        else:
            pytest.fail("a record without a JPEG")


class TestWritersPublishNothingHalfDone:
    def test_a_refused_first_write_leaves_no_file(self, tmp_path):
        path = tmp_path / "bad.tfrecord"
        writer = ofconvert.TFRecordWriter(path)
        with pytest.raises(ofconvert.MappingError):
            writer.write({"x": np.array([0.1], np.float64)})
        writer.close()
        assert list(tmp_path.iterdir()) == []
        with ofconvert.OFRecordWriter(tmp_path / "part-00001") as writer:
            with pytest.raises(ofconvert.MappingError):
                writer.write({})
        assert list(tmp_path.iterdir()) == []

    def test_an_exception_out_of_the_block_publishes_nothing(self, tmp_path):
        with pytest.raises(RuntimeError):
            with ofconvert.TFRecordWriter(tmp_path / "x.tfrecord") as writer:
                writer.write({"x": 1})
                raise RuntimeError("the loop failed")
        assert list(tmp_path.iterdir()) == []

    def test_a_closed_file_is_there_alone(self, tmp_path):
        with ofconvert.TFRecordWriter(tmp_path / "x.tfrecord") as writer:
            writer.write({"x": 1})
            # Until it is closed, the file is under a hidden name every command passes over.
            assert not (tmp_path / "x.tfrecord").exists()
        assert [p.name for p in tmp_path.iterdir()] == ["x.tfrecord"]
        assert ofconvert.count(tmp_path)["total"] == 1

    def test_verify_no_longer_sees_an_empty_file(self, tmp_path):
        writer = ofconvert.TFRecordWriter(tmp_path / "bad.tfrecord")
        with pytest.raises(ofconvert.MappingError):
            writer.write({"x": np.array([0.1])})
        writer.close()
        with pytest.raises(ofconvert.FileError, match="no record files found"):
            ofconvert.verify(tmp_path)


def test_read_takes_urls(tmp_path):
    """read() opens what the commands open: a file:// URL here (object stores in
    test_engines.py, against an S3 server)."""
    url = (TESTDATA / "golden" / "tutorial.tfrecord").resolve().as_uri()
    assert sum(1 for _ in ofconvert.read(url)) == 500


NETWORK = {"anonymous", "retries", "retry_timeout", "request_timeout", "in_flight"}


def test_everything_that_reaches_a_store_takes_the_network_keywords():
    """read() and the datasets as well as every command: a URL read by any of them can be
    bounded and sent unsigned, as cat's can on the command line."""
    import inspect

    from ofconvert.data import RecordDataset

    for function in (*FUNCTIONS.values(), ofconvert.read, RecordDataset):
        parameters = set(inspect.signature(function).parameters)
        assert NETWORK <= parameters, f"{function.__name__} lacks {NETWORK - parameters}"


@pytest.mark.parametrize("bad", [0, -1, 257, 2.5])
def test_a_bad_in_flight_is_a_usage_error_before_anything_is_read(bad):
    path = TESTDATA / "golden" / "tutorial.tfrecord"
    with pytest.raises(ofconvert.UsageError, match="in_flight"):
        ofconvert.read(path, in_flight=bad)
    with pytest.raises(ofconvert.UsageError, match="in_flight"):
        ofconvert.count(path, in_flight=bad)


def test_dry_run_returns_what_the_run_would_do_and_writes_nothing(tmp_path):
    src = TESTDATA / "datasets" / "tutorial"
    preview = ofconvert.tf2of(src, tmp_path / "of", parts=2, dry_run=True)
    assert not (tmp_path / "of").exists()
    assert [(d["parts"], d["records"]) for d in preview["datasets"]] == [(2, 100)]
    printed = cli("tf2of", src, tmp_path / "of", "--parts", "2", "--dry-run", "--json")
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == preview
