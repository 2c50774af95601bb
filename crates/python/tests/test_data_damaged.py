"""ofconvert.data over damaged files: ``on_corrupt="skip"`` holds the sound records alone,
the ones ``read()`` and ``tf2of`` salvage (less a record whose length alone was damaged),
says what it stepped over, and a stream of them reads each once on every layout, resumed
on another; without it, damage fails where it is."""

import json
import pathlib
import pickle
import shutil
import warnings

import pytest

import ofconvert
from ofconvert.data import RecordDataset, RecordStream
from record_helpers import ids, in_turn

TESTDATA = pathlib.Path(__file__).resolve().parents[3] / "testdata"
DAMAGED = json.loads((TESTDATA / "damaged" / "expected.json").read_text())["files"]


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_a_dataset_that_skips_holds_what_read_salvages(tmp_path, name):
    path = tmp_path / name
    shutil.copyfile(TESTDATA / "damaged" / name, path)
    cache = tmp_path / "cache"
    reader = ofconvert.read(path, raw=True, on_corrupt="skip")
    try:
        salvaged = list(reader)
    except ofconvert.FormatError:
        # No record framed anywhere in it: not a record file, for both.
        with pytest.raises(ofconvert.FormatError, match="no TFRecord record is framed"):
            RecordDataset(path, on_corrupt="skip", cache_dir=cache)
        return
    said = reader.skipped
    if said["recovered"]:
        # Brought back by read() through its data checksum; random access reads a record by
        # its framing, which is what is damaged: left out, and counted.
        assert said["recovered"] == 1
        del salvaged[DAMAGED[name]["index"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = RecordDataset(path, on_corrupt="skip", cache_dir=cache)
    assert [ds.raw(i) for i in range(len(ds))] == salvaged
    damaged = said["corrupt"] + said["recovered"]
    assert ds.skipped["corrupt"] == damaged and ds.skipped["recovered"] == 0
    assert len(ds.skipped["details"]) == damaged
    told = [str(w.message) for w in caught if "stepped over" in str(w.message)]
    assert len(told) == (1 if damaged else 0), told
    # Every record it holds reads and decodes; a loader's copy holds the same, found again.
    if DAMAGED[name]["kind"] == "NotAnExample":
        # Sound framing around a payload that is no Example: held, read raw, and failing
        # its decode as read() does.
        with pytest.raises(ofconvert.MappingError):
            ds.batch(list(range(len(ds))))
    else:
        assert len(ds.batch(list(range(len(ds))))["feature0"]) == len(ds)
    copy = pickle.loads(pickle.dumps(ds))
    assert len(copy) == len(ds) and copy.skipped == ds.skipped
    assert not any(f["index"] is None for f in copy.files)
    # Nothing beside the data.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cache", name])


def test_without_skip_damage_fails_where_it_is(tmp_path):
    flipped = TESTDATA / "damaged" / "flipped_data.tfrecord"
    ds = RecordDataset(flipped, cache_dir=tmp_path)
    assert ds.skipped is None
    expected = DAMAGED["flipped_data.tfrecord"]
    # Its framing is sound: it opens, and the record whose data is damaged fails its read.
    with pytest.raises(ofconvert.CorruptRecordError) as raised:
        ds.raw(expected["index"])
    assert (raised.value.record, raised.value.offset) == (expected["index"], expected["offset"])
    with pytest.raises(ofconvert.CorruptRecordError):
        RecordDataset(TESTDATA / "damaged" / "truncated_payload.tfrecord", cache_dir=tmp_path)
    with pytest.raises(ofconvert.UsageError, match='on_corrupt must be "fail" or "skip", not \'ignore\''):
        RecordDataset(flipped, on_corrupt="ignore")


def _damaged_dataset(root, pad=7):
    """Three files of 10 records (ids 0-29, record i of a file with `pad` * i bytes besides)
    with damage in one record of each: data flipped (id 4), a tail cut (id 19) and a length
    flipped (id 22). The ids left sound."""
    root.mkdir()
    for f in range(3):
        with ofconvert.TFRecordWriter(root / f"part-{f}.tfrecord") as writer:
            for i in range(10):
                writer.write({"id": 10 * f + i, "pad": b"x" * (i * pad)})

    def starts(path):
        sizes = [len(r) + 16 for r in ofconvert.read(path, raw=True)]
        return [sum(sizes[:i]) for i in range(len(sizes) + 1)]

    a, b, c = (root / f"part-{f}.tfrecord" for f in range(3))
    for path, at in ((a, starts(a)[4] + 12 + 3), (c, starts(c)[2] + 7)):
        data = bytearray(path.read_bytes())
        data[at] ^= 0xFF
        path.write_bytes(bytes(data))
    cut = starts(b)
    b.write_bytes(b.read_bytes()[: cut[9] + 20])
    return sorted(set(range(30)) - {4, 19, 22})


def test_a_stream_that_skips_reads_each_sound_record_once_on_every_layout_resumed(tmp_path):
    root = tmp_path / "d"
    sound = _damaged_dataset(root)
    cache = tmp_path / "cache"
    with pytest.raises(ofconvert.CorruptRecordError):
        list(RecordStream(root, cache_dir=cache))
    layouts = [(1, 1), (2, 1), (2, 2), (3, 1), (1, 3)]
    tried = 0
    for shuffle in (False, "block", True):
        for batch_size in (None, 2):
            options = dict(shuffle=shuffle, seed=5, batch_size=batch_size, drop_last=False,
                           on_corrupt="skip", cache_dir=cache)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                whole = [ids(RecordStream(root, rank=r, world_size=2, **options)) for r in range(2)]
                assert sorted(sum(whole, [])) == sound
                saver = [RecordStream(root, rank=r, world_size=2, **options) for r in range(2)]
                taken = []
                for stream in saver:
                    items = iter(stream)
                    taken += ids([next(items) for _ in range(2)])
                state = saver[0].state_dict()
                assert state["skipped"] == {"corrupt": 3, "recovered": 0}
                state = pickle.loads(pickle.dumps(state))
                for world, workers in layouts:
                    rest = sum((in_turn(root, rank, world, workers, state=state, **options)
                                for rank in range(world)), [])
                    assert sorted(taken + rest) == sound, (shuffle, batch_size, world, workers)
                    tried += 1
    assert tried == 30


def test_a_damaged_bucket_is_read_skipping_with_each_byte_fetched_once(moto_s3, tmp_path, monkeypatch):
    """In a bucket through the counting proxy, with a cache holding the dataset: the pass
    that finds the damage keeps what it reads, the epoch reads it there, and a dataset opened
    again finds the salvaged indexes with no request."""
    from counting_proxy import CountingProxy

    client, env = moto_s3
    root = tmp_path / "d"
    sound = _damaged_dataset(root, pad=5000)
    client.create_bucket(Bucket="damaged")
    size = 0
    for path in sorted(root.iterdir()):
        client.put_object(Bucket="damaged", Key=f"d/{path.name}", Body=path.read_bytes())
        size += path.stat().st_size
    proxy = CountingProxy(env["AWS_ENDPOINT_URL"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    try:
        options = dict(on_corrupt="skip", cache_dir=tmp_path / "cache", cache_limit="4MB")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stream = RecordStream("s3://damaged/d", shuffle="block", batch_size=4, drop_last=False, **options)
        told = " | ".join(str(w.message) for w in caught)
        assert "3 damaged record" in told and "3 object(s) in a store read whole" in told, told
        # No index beside the objects stands for the pass that checks every record.
        assert "ofconvert index" not in told, told
        assert sorted(ids(stream)) == sound
        # Each object once, but for the first 4 KiB read to tell its kind, and the listing.
        listed = sum(body for target, _, body in proxy.bodies if "list-type" in target)
        assert size <= proxy.bytes - listed <= size + 3 * 4096, proxy.bodies
        proxy.reset()
        with pytest.warns(UserWarning, match="3 damaged record"):
            again = RecordDataset("s3://damaged/d", **options)
        assert sorted(ids([again.batch(list(range(len(again))))])) == sound
        assert again.skipped == stream.dataset.skipped and again.skipped["corrupt"] == 3
        # The listing alone: indexes and records come from the cache.
        assert all("list-type" in target for target, _, _ in proxy.bodies), proxy.bodies
    finally:
        proxy.server.shutdown()
        proxy.server.server_close()


def test_a_mixture_of_a_damaged_source_says_what_it_skipped_and_resumes(tmp_path):
    from ofconvert.data import MixedStream

    root = tmp_path / "d"
    sound = _damaged_dataset(root)
    clean = tmp_path / "clean.tfrecord"
    with ofconvert.TFRecordWriter(clean) as writer:
        for i in range(20):
            writer.write({"id": 1000 + i})
    with pytest.warns(UserWarning, match="3 damaged record"):
        damaged = RecordDataset(root, on_corrupt="skip", cache_dir=tmp_path / "cache")
    options = dict(shuffle=True, seed=4, batch_size=3, drop_last=False)
    mixture = MixedStream([damaged, RecordDataset(clean)], **options)
    items = iter(mixture)
    taken = ids([next(items) for _ in range(4)])
    state = mixture.state_dict()
    assert state["skipped"] == [{"corrupt": 3, "recovered": 0}, None]
    resumed = MixedStream([damaged, RecordDataset(clean)], **options)
    resumed.load_state_dict(state)
    assert sorted(taken + ids(resumed)) == sound + list(range(1000, 1020))
