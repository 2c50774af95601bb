"""tf2of and of2tf: the conversions, their options, their errors and Ctrl-C."""

import json
import os
import shutil
import subprocess
import sys
import _thread

import numpy as np
import pytest

import ofconvert
from conftest import TESTDATA


def records_by_file(root):
    return {
        os.path.relpath(path, root): list(ofconvert.read(path))
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.endswith(".json"))
    }


def same(left, right):
    assert left.keys() == right.keys()
    for name in left:
        a, b = left[name], right[name]
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
        else:
            assert a == b, name


def test_tf2of_then_of2tf_gives_the_records_back(tmp_path):
    summary = ofconvert.tf2of(TESTDATA / "datasets", tmp_path / "of", parts=2, sync=False)
    assert summary["direction"] == "tf2of"
    assert summary["failed"] == 0 and not summary["interrupted"]
    assert summary["records"] > 0
    names = {d["name"] for d in summary["datasets"]}
    assert all(d["status"] == "converted" for d in summary["datasets"])
    for dataset in summary["datasets"]:
        parts = sorted(p.name for p in (tmp_path / "of" / dataset["name"]).glob("part-*"))
        assert parts == ["part-00000", "part-00001"], dataset["name"]
        assert dataset["manifest"]["records"] >= 2

    back = ofconvert.of2tf(tmp_path / "of", tmp_path / "back", compression="gzip", sync=False)
    assert back["direction"] == "of2tf" and back["records"] == summary["records"]
    assert {d["name"] for d in back["datasets"]} == names
    original = list(ofconvert.read(TESTDATA / "datasets"))
    returned = list(ofconvert.read(tmp_path / "back"))
    key = lambda record: sorted((k, repr(v)) for k, v in record.items())
    assert sorted(map(key, original)) == sorted(map(key, returned))
    # Compressed shards carry the suffix: DIR-NNNNN-of-NNNNN.tfrecord.gz, and TFDS's
    # name-split.tfrecord-NNNNN-of-NNNNN.gz for the TFDS samples.
    shards = list((tmp_path / "back").rglob("*-of-*"))
    assert shards and all(p.name.endswith(".gz") and ".tfrecord" in p.name for p in shards)
    assert (tmp_path / "back" / "tfds" / "mnist" / "3.0.1" / "mnist-train.tfrecord-00001-of-00002.gz").is_file()


def test_imagenet_preset_and_mapping_options(tmp_path):
    src = TESTDATA / "datasets" / "imagenet" / "train"
    ofconvert.tf2of(src, tmp_path / "of", preset="imagenet", records_per_part=3, sync=False)
    records = list(ofconvert.read(tmp_path / "of"))
    original = list(ofconvert.read(src))
    assert len(records) == len(original)
    assert {"encoded", "class/label"} <= set(records[0])
    assert records[0]["class/label"].dtype == np.int32
    assert sorted(r["class/label"][0] for r in records) == sorted(
        o["image/class/label"][0] - 1 for o in original
    )

    ofconvert.tf2of(
        src,
        tmp_path / "mapped",
        rename={"image/encoded": "jpeg"},
        cast={"image/class/label": "int32"},
        offset={"image/class/label": -1},
        keep=["image/encoded", "image/class/label"],
        sync=False,
    )
    mapped = list(ofconvert.read(tmp_path / "mapped"))
    assert all(set(r) == {"jpeg", "image/class/label"} for r in mapped)
    assert sorted(r["image/class/label"][0] for r in mapped) == sorted(
        o["image/class/label"][0] - 1 for o in original
    )
    ofconvert.tf2of(src, tmp_path / "dropped", drop=["image/encoded"], sync=False)
    assert all("image/encoded" not in r for r in ofconvert.read(tmp_path / "dropped"))


def test_summary_is_the_cli_json(tmp_path):
    src = TESTDATA / "datasets" / "tutorial"
    summary = ofconvert.tf2of(src, tmp_path / "of", jobs=1)
    # The command line's --json, from the same package, has the same fields.
    done = subprocess.run(
        [sys.executable, "-m", "ofconvert", "tf2of", str(src), str(tmp_path / "cli"),
         "--jobs", "1", "--json"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert set(summary) == set(json.loads(done.stdout))
    assert {"datasets", "records", "input_bytes", "output_bytes", "kept_parts",
            "kept_records", "failed", "warnings"} <= set(summary)
    assert summary["kept_parts"] == 0 and summary["kept_records"] == 0
    assert summary["records"] == len(list(ofconvert.read(TESTDATA / "datasets" / "tutorial")))


def test_output_in_the_way_is_a_usage_error_then_overwrite_and_resume(tmp_path):
    src = TESTDATA / "datasets" / "tutorial"
    ofconvert.tf2of(src, tmp_path / "of", sync=False)
    with pytest.raises(ofconvert.UsageError) as raised:
        ofconvert.tf2of(src, tmp_path / "of", sync=False)
    assert raised.value.path == str(tmp_path / "of")
    assert "not empty" in str(raised.value)
    again = ofconvert.tf2of(src, tmp_path / "of", overwrite=True, sync=False)
    assert again["datasets"][0]["status"] == "converted"
    kept = ofconvert.tf2of(src, tmp_path / "of", resume=True, sync=False)
    assert kept["datasets"][0]["status"] == "kept"


@pytest.mark.parametrize(
    "options",
    [
        {"preset": "mnist"},
        {"on_corrupt": "maybe"},
        {"cast": {"x": "int8"}},
        {"parts": 0},
        {"part_prefix": "a/b"},
        {"overwrite": True, "resume": True},
        {"max_part_bytes": "lots"},
        {"keep": "image/encoded"},
    ],
)
def test_bad_options_are_usage_errors(tmp_path, options):
    with pytest.raises(ofconvert.UsageError):
        ofconvert.tf2of(TESTDATA / "datasets" / "tutorial", tmp_path / "of", **options)
    assert not (tmp_path / "of").exists()


def test_a_rule_naming_a_missing_feature_fails_its_dataset(tmp_path):
    with pytest.raises(ofconvert.ConversionError) as raised:
        ofconvert.tf2of(
            TESTDATA / "datasets" / "tutorial", tmp_path / "of", rename={"featur0": "x"}, sync=False
        )
    assert "featur0" in str(raised.value)
    assert raised.value.summary["failed"] == 1
    assert not (tmp_path / "of").exists()


def test_rules_if_present_apply_where_a_dataset_of_a_mixed_tree_has_the_feature(tmp_path):
    src = TESTDATA / "datasets"
    with pytest.raises(ofconvert.ConversionError, match=r'drop=\["feature0"\] matches nothing') as raised:
        ofconvert.tf2of(src, tmp_path / "strict", drop=["feature0"], sync=False)
    datasets = len(raised.value.summary["datasets"])
    assert raised.value.summary["failed"] == datasets - 1
    summary = ofconvert.tf2of(src, tmp_path / "of", drop_if_present=["feature0"], sync=False)
    assert summary["failed"] == 0 and len(summary["datasets"]) == datasets
    (tutorial,) = [d for d in summary["datasets"] if d["name"] == "tutorial"]
    names = [f["name"] for f in tutorial["manifest"]["schema"]["features"]]
    assert names == ["feature1", "feature2", "feature3"]


def test_unknown_keyword_is_a_type_error(tmp_path):
    with pytest.raises(TypeError):
        ofconvert.of2tf(TESTDATA / "ofdatasets", tmp_path / "tf", preset="imagenet")


def test_missing_input(tmp_path):
    with pytest.raises(ofconvert.Error) as raised:
        ofconvert.tf2of(tmp_path / "missing", tmp_path / "of")
    assert raised.value.path == str(tmp_path / "missing")


def test_damaged_input_fails_its_dataset_with_the_place(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(TESTDATA / "damaged" / "flipped_data.tfrecord", src)
    with pytest.raises(ofconvert.ConversionError) as raised:
        ofconvert.tf2of(src, tmp_path / "of", sync=False)
    err = raised.value
    assert err.path == str(src / "flipped_data.tfrecord")
    assert (err.offset, err.record) == (312, 3)
    assert err.summary["failed"] == 1
    assert err.summary["datasets"][0]["status"] == "failed"
    assert err.summary["datasets"][0]["error_kind"] == "damaged"
    # The way out, in Python's words.
    assert 'pass on_corrupt="skip"' in str(err) and "--on-corrupt" not in str(err)
    assert not list((tmp_path / "of").glob("part-*"))

    salvaged = ofconvert.tf2of(src, tmp_path / "salvaged", on_corrupt="skip", sync=False)
    manifest = salvaged["datasets"][0]["manifest"]
    assert salvaged["failed"] == 0
    assert manifest["records"] == len(list(ofconvert.read(tmp_path / "salvaged"))) > 0


def test_doubles_that_float_cannot_hold_need_lossy(tmp_path):
    src = tmp_path / "doubles"
    src.mkdir()
    with ofconvert.OFRecordWriter(src / "part-00000") as writer:
        writer.write({"x": np.float64([0.1, 0.5, 1e-300])})
        writer.write({"x": np.float64([1.0 / 3.0, float("nan")])})
    with pytest.raises(ofconvert.ConversionError) as raised:
        ofconvert.of2tf(src, tmp_path / "tf", sync=False)
    assert raised.value.path is not None and raised.value.record == 0
    summary = ofconvert.of2tf(src, tmp_path / "lossy", lossy=True, sync=False)
    assert summary["datasets"][0]["manifest"]["rounded_values"] == 3
    assert len(list(ofconvert.read(tmp_path / "lossy"))) == 2


def test_lossy_refuses_doubles_beyond_float_range(tmp_path):
    # all_kinds holds 1e300, which would become an infinity: not rounding.
    src = TESTDATA / "ofrecord" / "all_kinds"
    for lossy in (False, True):
        with pytest.raises(ofconvert.ConversionError) as raised:
            ofconvert.of2tf(src, tmp_path / f"tf{lossy}", lossy=lossy, jobs=1, sync=False)
        assert raised.value.record == 1
        assert "beyond the range of float" in str(raised.value)
        assert not (tmp_path / f"tf{lossy}").exists() or not any((tmp_path / f"tf{lossy}").iterdir())


def test_empty_examples_skip(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(TESTDATA / "golden" / "edge.tfrecord", src)
    with pytest.raises(ofconvert.ConversionError, match='pass empty="skip"') as raised:
        ofconvert.tf2of(src, tmp_path / "of", sync=False)
    assert raised.value.summary["datasets"][0]["error_kind"] == "empty_record"
    summary = ofconvert.tf2of(src, tmp_path / "skipped", empty="skip", sync=False)
    assert summary["failed"] == 0


def long_input(root, datasets=48, records=40000):
    """Many datasets of many records: long enough that an interrupt lands mid-run."""
    one = root / "one.tfrecord"
    payload = None
    with ofconvert.TFRecordWriter(one) as writer:
        writer.write({"label": np.int64([1]), "image": [b"x" * 64]})
    payload = next(iter(ofconvert.read(one, raw=True)))
    one.unlink()
    with ofconvert.TFRecordWriter(root / "seed.tfrecord") as writer:
        for _ in range(records):
            writer.write(payload)
    for index in range(datasets):
        (root / "in" / f"d{index:02}").mkdir(parents=True)
        shutil.copy(root / "seed.tfrecord", root / "in" / f"d{index:02}" / "train.tfrecord")
    return root / "in"


def interrupt_once_a_dataset_is_published():
    """A progress callback that presses Ctrl-C (a pending SIGINT, as the terminal sends) once
    the first dataset is published: the run is then surely under way, and far from done. The
    run waits for the callback at each dataset, so the signal is seen before the next one."""
    pressed = []

    def progress(event):
        if event["event"] == "dataset_done" and event["status"] == "converted" and not pressed:
            pressed.append(event["name"])
            _thread.interrupt_main()

    return progress


def test_keyboard_interrupt_stops_a_long_conversion_cleanly(tmp_path):
    src = long_input(tmp_path, datasets=8, records=5000)
    out = tmp_path / "of"
    with pytest.raises(KeyboardInterrupt) as raised:
        ofconvert.tf2of(src, out, jobs=1, progress=interrupt_once_a_dataset_is_published())
    # It says what to do next, as the command line does.
    message = str(raised.value)
    assert "interrupted" in message and "resume=True" in message, message
    assert "keeps the finished datasets and parts" in message, message
    # Nothing half-written: of a dataset not finished, at most its finished parts are left,
    # each noted in the journal that lets resume=True keep it; every dataset published is
    # complete.
    for dataset in [d for d in out.iterdir() if d.is_dir()]:
        journals = list(dataset.glob(".ofconvert-done-*.jsonl"))
        noted = sum(journal.read_bytes().count(b"\n") for journal in journals)
        parts = list(dataset.glob(".ofconvert-part-*"))
        others = [p for p in dataset.glob(".ofconvert-*") if p not in journals + parts]
        assert (noted, others) == (len(parts), []), sorted(dataset.iterdir())
    # One thread converts one dataset at a time, and Ctrl-C is seen before the next starts.
    finished = [d for d in out.iterdir() if (d / "ofconvert-manifest.json").is_file()]
    assert len(finished) == 1
    # Resuming keeps what was finished and converts the rest.
    resumed = ofconvert.tf2of(src, out, jobs=1, resume=True, sync=False)
    statuses = [d["status"] for d in resumed["datasets"]]
    assert statuses.count("kept") == 1
    assert statuses.count("converted") == 7
    assert resumed["records"] == 8 * 5000


def test_progress_reports_every_record_and_dataset(tmp_path):
    src = long_input(tmp_path, datasets=3, records=3000)
    events = []
    summary = ofconvert.tf2of(src, tmp_path / "of", jobs=2, sync=False, progress=events.append)
    started = [e for e in events if e["event"] == "started"]
    assert started == [{"event": "started", "datasets": 3, "files": 3,
                        "bytes": sum(f.stat().st_size for f in src.rglob("*.tfrecord"))}]
    assert events[0] == started[0]
    done = sorted((e["name"], e["status"], e["records"]) for e in events
                  if e["event"] == "dataset_done")
    assert done == [(f"d{i:02}", "converted", 3000) for i in range(3)]
    progress = [e for e in events if e["event"] == "progress"]
    assert sum(e["records"] for e in progress) == summary["records"] == 9000
    assert sum(e["bytes"] for e in progress) == started[0]["bytes"]
    with pytest.raises(ofconvert.UsageError, match="progress must be a function"):
        ofconvert.of2tf(tmp_path / "of", tmp_path / "tf", progress="bar")


def test_an_error_in_progress_stops_the_run_and_is_raised(tmp_path):
    src = long_input(tmp_path, datasets=4, records=2000)
    out = tmp_path / "of"

    def progress(event):
        if event["event"] == "dataset_done":
            raise ValueError(f"enough after {event['name']}")

    with pytest.raises(ValueError, match="enough after d0"):
        ofconvert.tf2of(src, out, jobs=1, progress=progress)
    published = sorted(d.name for d in out.iterdir() if (d / "ofconvert-manifest.json").is_file())
    assert len(published) == 1
    assert [p for p in out.rglob(".ofconvert-*") if p.name != ".ofconvert-lock"
            and not p.name.startswith((".ofconvert-part-", ".ofconvert-done-"))] == []
