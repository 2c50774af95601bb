"""ofconvert.data: RecordDataset gives read()'s records by index for every format and
compression, local and in moto's S3 server, through indexes found, built and kept;
RecordStream splits epochs over ranks and loader workers, shuffles through the index and
resumes where a state says."""

import itertools
import os
import pickle
import shutil
import stat
import warnings

import numpy as np
import pytest

import ofconvert
from ofconvert.data import RecordDataset, RecordStream
from conftest import TESTDATA

SIZES = (7, 50, 23)


def same_value(x, y):
    if isinstance(x, np.ndarray):
        # Bits, so that NaNs compare.
        return isinstance(y, np.ndarray) and x.dtype == y.dtype and x.tobytes() == y.tobytes()
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(map(same_value, x, y))
    return x == y


def same(a, b):
    assert list(a) == list(b)
    for name in a:
        assert same_value(a[name], b[name]), name


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


def ids(items):
    """The ids of records or batches."""
    out = []
    for item in items:
        values = item["id"]
        out.extend(int(v) for v in (values[:, 0] if isinstance(values, np.ndarray) and values.ndim == 2 else values))
    return out


@pytest.mark.parametrize(
    "path",
    ["golden/tutorial.tfrecord", "golden/tutorial.tfrecord.gz", "golden/tutorial.tfrecord.zz",
     "golden/edge.tfrecord", "golden/sequence.tfrecord", "ofrecord/all_kinds", "datasets", "ofdatasets",
     "arrayrecord/examples.array_record"],
)
def test_every_record_by_index_is_what_read_gives(path, tmp_path):
    source = TESTDATA / path
    copy = tmp_path / "data" / source.name
    copy.parent.mkdir()
    (shutil.copytree if source.is_dir() else shutil.copy)(source, copy)
    expected = list(ofconvert.read(copy))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        ds = RecordDataset(copy, cache_dir=tmp_path / "cache")
    assert len(ds) == len(expected)
    for i in range(len(ds)):
        same(ds[i], expected[i])
    same(ds[-1], expected[-1])
    assert [list(r) for r in ds[2:5]] == [list(r) for r in expected[2:5]]
    with pytest.raises(IndexError):
        ds[len(ds)]


def test_indexes_are_built_once_kept_beside_and_those_of_the_index_command_used(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", data / "a.tfrecord")
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", data / "b.tfrecord")
    ofconvert.index(data / "a.tfrecord")
    made_by_command = (data / "a.tfrecord.idx").read_bytes()
    ds = RecordDataset(data, cache_dir=tmp_path / "cache")
    assert [f["index"] for f in ds.files] == [str(data / "a.tfrecord.idx"), str(data / "b.tfrecord.idx")]
    # Built beside the file, in the command's format.
    assert (data / "b.tfrecord.idx").read_bytes() == made_by_command
    assert not (tmp_path / "cache").exists()
    # An index that does not fit its file is not trusted.
    (data / "a.tfrecord.idx").write_text("0 16\n")
    assert len(RecordDataset(data / "a.tfrecord", cache_dir=tmp_path / "cache")) == 500
    assert (data / "a.tfrecord.idx").read_bytes() == made_by_command


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_place_keeps_its_index_in_the_cache(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(TESTDATA / "golden" / "tutorial.tfrecord", data / "a.tfrecord")
    data.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        ds = RecordDataset(data, cache_dir=tmp_path / "cache")
    finally:
        data.chmod(stat.S_IRWXU)
    assert ds.files[0]["index"].startswith(str(tmp_path / "cache"))


def test_a_compressed_file_is_decompressed_once_with_a_warning_or_refused(tmp_path):
    cache = tmp_path / "cache"
    path = TESTDATA / "golden" / "tutorial.tfrecord.gz"
    with pytest.warns(UserWarning, match="copied into"):
        ds = RecordDataset(path, cache_dir=cache)
    assert ds.files[0]["compression"] == "GZIP" and ds.files[0]["data"].startswith(str(cache))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = RecordDataset(path, cache_dir=cache)
    same(again[499], ds[499])
    with pytest.raises(ofconvert.UsageError, match="no random access"):
        RecordDataset(path, cache_dir=tmp_path / "other", decompress=False)


def test_features_decodes_only_those_in_the_order_asked(uneven):
    ds = RecordDataset(uneven, features=["v", "id"])
    assert list(ds[8]) == ["id", "v"]
    assert list(ds.batch([0, 1, 2])) == ["v", "id"]
    assert ds.batch([0, 1, 2])["id"].shape == (3, 1)
    # Variable-length lists stay lists of arrays.
    assert [len(v) for v in ds.batch([0, 1, 2])["v"]] == [0, 1, 2]


def test_damage_is_raised_at_the_record_with_where_it_is(tmp_path):
    path = tmp_path / "labels.tfrecord"
    with ofconvert.TFRecordWriter(path) as writer:
        writer.write({"label": 1})
        writer.write({"label": 2})
    data = bytearray(path.read_bytes())
    data[-5] ^= 1
    path.write_bytes(bytes(data))
    ds = RecordDataset(path)
    assert int(ds[0]["label"][0]) == 1
    with pytest.raises(ofconvert.CorruptRecordError) as raised:
        ds[1]
    assert (raised.value.path, raised.value.offset, raised.value.record) == (str(path), 46, 1)
    # Unchecked, the flipped bit is read as it is.
    assert RecordDataset(path, verify=False)[1]["label"][0] == 3


def test_threads_read_one_dataset_at_once(uneven):
    from concurrent.futures import ThreadPoolExecutor

    ds = RecordDataset(uneven)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: int(ds[i]["id"][0]), list(range(len(ds))) * 20))
    assert got == list(range(len(ds))) * 20


def test_a_dataset_pickles_and_its_copy_reads_the_same(uneven):
    ds = RecordDataset(uneven, features=["id"])
    copy = pickle.loads(pickle.dumps(ds))
    assert len(copy) == len(ds) and copy.files == ds.files
    same(copy[40], ds[40])


def shares(root, world, workers, **options):
    """The ids each rank reads, its workers' streams together."""
    out = []
    for rank in range(world):
        got = []
        for worker in range(workers):
            stream = RecordStream(root, rank=rank, world_size=world, worker=(worker, workers), **options)
            got.extend(ids(stream))
        out.append(got)
    return out


@pytest.mark.parametrize("batch_size", [None, 4])
@pytest.mark.parametrize("shuffle", [False, True])
def test_two_ranks_of_two_workers_read_every_record_once(uneven, batch_size, shuffle):
    total = sum(SIZES)
    every = shares(uneven, 2, 2, shuffle=shuffle, batch_size=batch_size, drop_last=False, seed=5)
    assert sorted(every[0] + every[1]) == list(range(total))
    assert abs(len(every[0]) - len(every[1])) <= 1

    equal = shares(uneven, 2, 2, shuffle=shuffle, batch_size=batch_size, drop_last=True, seed=5)
    assert len(equal[0]) == len(equal[1]) > 0
    assert len(set(equal[0] + equal[1])) == len(equal[0]) * 2
    assert len(equal[0]) == (total // 2 if batch_size is None else total // 2 // batch_size * batch_size)


def test_epochs_differ_and_a_seed_gives_the_same_order(uneven):
    stream = RecordStream(uneven, shuffle=True, seed=7, batch_size=10, drop_last=False)
    first = ids(stream)
    assert ids(stream) == first
    stream.set_epoch(1)
    second = ids(stream)
    assert second != first and sorted(second) == sorted(first) == list(range(sum(SIZES)))
    again = RecordStream(uneven, shuffle=True, seed=7, batch_size=10, drop_last=False)
    again.set_epoch(1)
    assert ids(again) == second
    other = RecordStream(uneven, shuffle=True, seed=8, batch_size=10, drop_last=False)
    assert ids(other) != first


def test_a_shuffled_file_mixes_its_whole_length_from_the_first_records_on(tmp_path):
    path = tmp_path / "one.tfrecord"
    total = 2000
    with ofconvert.TFRecordWriter(path) as writer:
        for i in range(total):
            writer.write({"id": i})
    for epoch in range(3):
        stream = RecordStream(path, shuffle=True, seed=1, batch_size=100)
        stream.set_epoch(epoch)
        first = ids([next(iter(stream))])
        # The first 100 records come from every tenth of the file, not from its start.
        tenths = {i * 10 // total for i in first}
        assert tenths == set(range(10)), sorted(first)


@pytest.mark.parametrize("batch_size", [None, 8])
def test_a_stream_resumes_with_exactly_the_rest_of_the_epoch(uneven, batch_size):
    options = dict(shuffle=True, seed=3, batch_size=batch_size, drop_last=False, rank=1, world_size=2)
    stream = RecordStream(uneven, **options)
    stream.set_epoch(2)
    whole = ids(stream)
    stream.set_epoch(2)
    items = iter(stream)
    taken = ids([next(items) for _ in range(3)])
    state = stream.state_dict()
    # Every rank of the two has consumed as many: the position counts them all.
    assert state["position"] == 2 * len(taken) and state["epoch"] == 2
    resumed = RecordStream(uneven, **options)
    resumed.load_state_dict(pickle.loads(pickle.dumps(state)))
    assert len(resumed) == (len(whole) - len(taken) if batch_size is None else -(-(len(whole) - len(taken)) // 8))
    assert taken + ids(resumed) == whole
    # Behind two loader workers, each reads a run of the rank's items: taken one from each in
    # turn, they are the rank's records, each once. The state of 3 items taken so by each
    # rank (two of its first worker's, one of its second's) resumes with the rest.
    layout = {k: v for k, v in options.items() if k not in ("rank", "world_size")}
    behind = in_turn(uneven, 1, 2, 2, epoch=2, **layout)
    assert sorted(behind) == sorted(whole) and behind != whole
    first = sum((in_turn(uneven, rank, 2, 2, take=3, epoch=2, **layout) for rank in range(2)), [])
    unit = batch_size or 1
    saved = RecordStream(uneven, **options).state_dict(position=3 * unit, workers=2)
    saved["epoch"] = 2
    assert saved["position"] == 2 * 3 * unit == len(first)
    rest = []
    for rank in range(2):
        resumed = RecordStream(uneven, **dict(options, rank=rank))
        resumed.load_state_dict(saved)
        rest += ids(resumed)
    assert sorted(first + rest) == list(range(sum(SIZES)))
    with pytest.raises(ofconvert.UsageError, match="seed"):
        RecordStream(uneven, **dict(options, seed=4)).load_state_dict(state)


def test_a_pickled_stream_carries_the_rank_of_the_process_that_pickled_it(uneven, monkeypatch):
    stream = RecordStream(uneven, batch_size=4)
    monkeypatch.setattr(ofconvert._layout, "_distributed", lambda: (1, 2))
    copy = pickle.loads(pickle.dumps(stream))
    monkeypatch.undo()
    # A spawned worker has no process group: the copy keeps rank 1 of 2.
    assert (copy.rank, copy.world_size) == (1, 2)
    assert ids(copy) == ids(RecordStream(uneven, batch_size=4, rank=1, world_size=2))
    assert (stream.rank, stream.world_size) == (None, None)


def test_batches_are_stacked_and_ragged_features_are_lists(uneven):
    batch = next(iter(RecordStream(uneven, batch_size=6)))
    assert batch["id"].dtype == np.int64 and batch["id"].shape == (6, 1)
    assert batch["pad"] == [[b"x" * (i % 13)] for i in range(6)]
    assert [len(v) for v in batch["v"]] == [i % 3 for i in range(6)]


def test_read_batches_are_the_records_stacked():
    path = TESTDATA / "golden" / "tutorial.tfrecord"
    records = list(ofconvert.read(path))
    batches = list(ofconvert.read(path, batch_size=128))
    assert [len(b["feature2"]) for b in batches] == [128, 128, 128, 116]
    rebuilt = np.concatenate([b["feature3"][:, 0] for b in batches])
    assert rebuilt.tobytes() == np.array([r["feature3"][0] for r in records]).tobytes()


def test_a_bucket_reads_by_ranges_and_keeps_its_indexes_in_the_cache(moto_s3, tmp_path, uneven):
    client, _ = moto_s3
    for path in sorted(uneven.iterdir()):
        client.put_object(Bucket="data", Key=f"train/{path.name}", Body=path.read_bytes())
    client.put_object(
        Bucket="data", Key="gz/a.tfrecord.gz",
        Body=(TESTDATA / "golden" / "tutorial.tfrecord.gz").read_bytes(),
    )
    cache = tmp_path / "cache"
    local = RecordDataset(uneven)
    remote = RecordDataset("s3://data/train", cache_dir=cache)
    assert len(remote) == len(local) == sum(SIZES)
    for i in (0, 6, 7, 56, 79):
        same(remote[i], local[i])
    assert all(f["index"].startswith(str(cache)) for f in remote.files)
    keys = [item["Key"] for item in client.list_objects_v2(Bucket="data", Prefix="train/")["Contents"]]
    assert not any(key.endswith(".idx") for key in keys)

    stream = RecordStream("s3://data/train", shuffle=True, seed=2, batch_size=16, drop_last=False, cache_dir=cache)
    assert sorted(ids(stream)) == list(range(sum(SIZES)))
    with pytest.warns(UserWarning, match="copied into"):
        gz = RecordDataset("s3://data/gz/a.tfrecord.gz", cache_dir=cache)
    same(gz[10], list(ofconvert.read(TESTDATA / "golden" / "tutorial.tfrecord"))[10])


def in_turn(root, rank, world, workers, take=None, state=None, epoch=0, **options):
    """A rank's items behind `workers` loader workers taken one from each in turn (as a
    loader does), the first `take` of them; each worker's stream loaded with `state`."""
    streams = []
    for worker in range(workers):
        stream = RecordStream(root, rank=rank, world_size=world, worker=(worker, workers), **options)
        if state is not None:
            stream.load_state_dict(state)
        stream.set_epoch(epoch)
        streams.append(iter(stream))
    out = []
    while streams and (take is None or len(out) < take):
        for stream in list(streams):
            if take is not None and len(out) == take:
                break
            item = next(stream, None)
            if item is None:
                streams.remove(stream)
            else:
                out.append(item)
    return ids(out)


@pytest.mark.parametrize("shuffle", [False, True, "block"])
def test_a_state_saved_on_two_ranks_resumes_on_four_or_one_with_the_rest_once(uneven, shuffle):
    options = dict(shuffle=shuffle, seed=3, batch_size=4, drop_last=False)
    if shuffle == "block":
        options["block_size"] = 16
    # Two ranks of two workers each, three batches a rank, then a checkpoint of rank 1.
    taken = [in_turn(uneven, rank, 2, 2, take=3, epoch=1, **options) for rank in range(2)]
    stream = RecordStream(uneven, rank=1, world_size=2, **options)
    stream.set_epoch(1)
    state = stream.state_dict(position=3 * 4, workers=2)
    assert state["position"] == 24 and state["epoch"] == 1
    before = taken[0] + taken[1]
    for world, workers in ((4, 2), (1, 1), (3, 2)):
        rest = [in_turn(uneven, rank, world, workers, state=state, epoch=1, **options) for rank in range(world)]
        assert sorted(before + sum(rest, [])) == list(range(sum(SIZES))), (world, workers)
    # The same seed and layout give the same order.
    once, again = RecordStream(uneven, **options), RecordStream(uneven, **options)
    once.load_state_dict(state)
    again.load_state_dict(state)
    assert ids(once) == ids(again)


def test_a_state_of_another_dataset_or_order_is_refused(uneven, tmp_path):
    stream = RecordStream(uneven, shuffle="block", block_size=16, batch_size=4)
    state = stream.state_dict(position=8, workers=1)
    for other, match in (
        (dict(shuffle=True), "shuffle"),
        (dict(shuffle="block", block_size=32), "block_size"),
        (dict(shuffle="block", block_size=16, seed=1), "seed"),
    ):
        with pytest.raises(ofconvert.UsageError, match=match):
            RecordStream(uneven, batch_size=4, **other).load_state_dict(state)
    changed = tmp_path / "changed"
    shutil.copytree(uneven, changed)
    with ofconvert.TFRecordWriter(changed / "part-1.tfrecord") as writer:
        for i in range(50):
            writer.write({"id": i, "pad": b"y" * 20})
    with pytest.raises(ofconvert.UsageError, match="another dataset"):
        RecordStream(changed, shuffle="block", block_size=16, batch_size=4).load_state_dict(state)
    old = {"epoch": 0, "position": 4, "seed": 0, "shuffle": False, "records": sum(SIZES)}
    with pytest.raises(ofconvert.UsageError, match="version"):
        RecordStream(uneven).load_state_dict(old)
    # A copy of the same files elsewhere is the same dataset.
    copy = tmp_path / "copy"
    shutil.copytree(uneven, copy)
    again = RecordStream(copy, shuffle="block", block_size=16, batch_size=4)
    again.load_state_dict(state)
    assert len(again) == (sum(SIZES) - 8) // 4


_LOADER_PASSES = itertools.count(1000)


def _loader_pass(stream, workers):
    """One pass of `stream` behind `workers` forked loader workers: the ids each read. The
    workers of a pass share the seed a loader draws for it."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    seed = next(_LOADER_PASSES)

    def work(worker):
        ofconvert._layout._loader_info = lambda: (worker, workers, seed)
        queue.put(ids(stream))

    processes = [context.Process(target=work, args=(w,)) for w in range(workers)]
    for process in processes:
        process.start()
    got = sorted(sum((queue.get(timeout=60) for _ in processes), []))
    for process in processes:
        process.join(timeout=60)
    return got


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers")
def test_a_resumed_epoch_behind_loader_workers_skips_only_once(uneven):
    options = dict(batch_size=4, drop_last=False, rank=0, world_size=1)
    stream = RecordStream(uneven, **options)
    stream.load_state_dict(RecordStream(uneven, **options).state_dict(position=20, workers=1))
    # The resumed pass: the rest of the epoch; the next pass of the same epoch, whole.
    assert _loader_pass(stream, 2) == list(range(20, sum(SIZES)))
    assert _loader_pass(stream, 2) == list(range(sum(SIZES)))
    assert _loader_pass(stream, 2) == list(range(sum(SIZES)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers")
def test_processes_forked_between_a_resume_and_its_pass_do_not_count_as_its_workers(uneven):
    import multiprocessing

    options = dict(batch_size=4, drop_last=False, rank=0, world_size=1)
    stream = RecordStream(uneven, **options)
    stream.load_state_dict(RecordStream(uneven, **options).state_dict(position=20, workers=1))
    # Another loader's workers, a pool, a subprocess: forks and copies of the stream in between.
    for _ in range(3):
        process = multiprocessing.get_context("fork").Process(target=len, args=([],))
        process.start()
        process.join(timeout=60)
    pickle.dumps(stream)
    assert _loader_pass(stream, 2) == list(range(20, sum(SIZES)))
    # set_epoch of the same epoch once the resumed pass began: the epoch from its start.
    stream.set_epoch(stream.epoch)
    assert _loader_pass(stream, 2) == list(range(sum(SIZES)))


@pytest.mark.parametrize("where", ["disk", "bucket"])
def test_a_block_shuffle_keeps_every_promise_of_the_stream(uneven, where, request, tmp_path):
    root = uneven
    options = dict(shuffle="block", block_size=16, seed=4)
    if where == "bucket":
        client, _ = request.getfixturevalue("moto_s3")
        for path in sorted(uneven.iterdir()):
            client.put_object(Bucket="data", Key=f"block/{path.name}", Body=path.read_bytes())
        root = "s3://data/block"
        options["cache_dir"] = tmp_path / "cache"
    total = sum(SIZES)
    every = shares(root, 2, 2, batch_size=4, drop_last=False, **options)
    assert sorted(every[0] + every[1]) == list(range(total))
    assert abs(len(every[0]) - len(every[1])) <= 1
    equal = shares(root, 2, 2, batch_size=4, drop_last=True, **options)
    assert len(equal[0]) == len(equal[1]) == total // 8 * 4
    assert len(set(equal[0] + equal[1])) == total // 8 * 8
    # The same order on every rank, another each epoch; a window of 16 records mixes chunks.
    orders = []
    for epoch in range(2):
        stream = RecordStream(root, batch_size=4, drop_last=False, **options)
        stream.set_epoch(epoch)
        orders.append(ids(stream))
    assert orders[0] != orders[1] and sorted(orders[0]) == sorted(orders[1]) == list(range(total))
    assert orders[0] != list(range(total))
    window, chunk = RecordStream(root, **options).block
    assert (window, chunk) == (16, 1)
    for start in range(0, total - 16, 16):
        assert max(orders[0][start:start + 16]) - min(orders[0][start:start + 16]) > 1
    # Resumed mid-epoch on another layout: the rest once.
    taken = [in_turn(root, rank, 2, 2, take=2, epoch=1, batch_size=4, drop_last=False, **options) for rank in range(2)]
    state = RecordStream(root, rank=0, world_size=2, batch_size=4, **options).state_dict(position=8, workers=2)
    state["epoch"] = 1
    rest = in_turn(root, 0, 1, 2, state=state, epoch=1, batch_size=4, drop_last=False, **options)
    assert sorted(taken[0] + taken[1] + rest) == list(range(total))


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="Linux's /proc")
def test_a_shuffled_epoch_over_many_files_keeps_few_of_them_mapped(tmp_path):
    root = tmp_path / "many"
    root.mkdir()
    for number in range(120):
        with ofconvert.TFRecordWriter(root / f"part-{number:03}.tfrecord") as writer:
            writer.write({"id": number})

    def mapped():
        with open("/proc/self/maps") as maps:
            return len({line.split()[-1] for line in maps if str(root) in line})

    stream = RecordStream(root, shuffle=True, batch_size=4)
    assert sorted(ids(stream)) == list(range(120))
    assert mapped() <= 64
    del stream
    ds = RecordDataset(root)
    for i in range(0, 120, 7):
        ds[(i * 37) % 120]
    assert mapped() <= 64


class _Counting:
    """An HTTP proxy on 127.0.0.1 in front of `upstream` that counts the body bytes of the
    answers to GETs (what a store's egress bill counts)."""

    def __init__(self, upstream, fail_every=0):
        import http.client
        import http.server
        import threading

        host, port = upstream.rsplit("//", 1)[1].split(":")
        counter = self
        self.bytes = 0
        self.requests = 0
        self.gets = 0
        self.faults = 0
        self.fail_every = fail_every
        self.seen = []  # every request: its method, target and Range header
        self.bodies = []  # every GET answered: its target, Range header and body bytes
        # While cleared, GETs of byte ranges wait (30 s at most) before they are forwarded: a
        # reader is held in the middle of what it fetches (listings go on).
        self.flowing = threading.Event()
        self.flowing.set()
        self.arrived = 0  # GETs come in, held or not
        # GETs wait until this many are in flight together (or 10 s pass, once) before they
        # are forwarded: requests sent side by side are then seen together, whatever the timing.
        self.gather = 0
        self.gave_up = False
        self.in_flight = self.most_in_flight = 0  # GETs being answered: now, at most
        self.lock = threading.Lock()
        self.gathered = threading.Condition(self.lock)

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self):
                with counter.lock:
                    counter.seen.append((self.command, self.path, self.headers.get("Range")))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                connection = http.client.HTTPConnection(host, int(port), timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = f"{host}:{port}"
                connection.request(self.command, self.path, body=body, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                fault = None
                if self.command == "GET" and counter.fail_every:
                    with counter.lock:
                        counter.gets += 1
                        if counter.gets % counter.fail_every == 0:
                            counter.faults += 1
                            fault = ("503", "cut", "reset")[counter.faults % 3]
                if fault == "503":
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if fault == "reset":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault == "cut":
                    # The headers promise the whole body; half of it comes, then the end.
                    self.send_response(answer.status)
                    for name, value in answer.getheaders():
                        if name.lower() not in ("transfer-encoding", "connection"):
                            self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                if self.command == "GET":
                    with counter.lock:
                        counter.bytes += len(data)
                        counter.requests += 1
                        counter.bodies.append((self.path, self.headers.get("Range"), len(data)))
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                length = answer.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                connection.close()

            def held_get(self):
                with counter.lock:
                    counter.arrived += 1
                if self.headers.get("Range"):
                    counter.flowing.wait(timeout=30)
                with counter.gathered:
                    counter.in_flight += 1
                    counter.most_in_flight = max(counter.most_in_flight, counter.in_flight)
                    counter.gathered.notify_all()
                    if not counter.gathered.wait_for(counter.all_in, timeout=10):
                        counter.gave_up = True  # the others go on at once
                        counter.gathered.notify_all()
                try:
                    self.forward()
                finally:
                    with counter.lock:
                        counter.in_flight -= 1

            do_GET = held_get
            do_HEAD = do_PUT = do_POST = do_DELETE = forward

        class Server(http.server.ThreadingHTTPServer):
            # Connections a reader opens side by side are not dropped (the default is 5).
            request_queue_size = 128

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def all_in(self):
        """Whether the GETs held back may go on (called with the lock held)."""
        return self.most_in_flight >= self.gather or self.gave_up

    def reset(self):
        with self.lock:
            self.bytes = self.requests = self.most_in_flight = 0
            self.gave_up = False
            self.seen = []
            self.bodies = []
            self.arrived = 0


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
    proxy = _Counting(env["AWS_ENDPOINT_URL"], getattr(request, "param", 0))
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    yield proxy, f"s3://{bucket}/c", sum(sizes.values()), tmp_path / "cache"
    proxy.server.shutdown()
    proxy.server.server_close()


def test_a_shuffled_batch_from_a_bucket_fetches_little_more_than_its_records(counted):
    proxy, url, _, cache = counted
    ds = RecordDataset(url, cache_dir=cache)
    local = RecordDataset(sorted(p for p in cache.parent.glob("part-*.tfrecord")))
    import random

    indices = random.Random(1).sample(range(len(ds)), 256)
    wanted = sum(len(local.raw(i)) + 16 for i in indices)
    proxy.reset()
    batch = ds.batch(indices)
    assert [int(v) for v in batch["id"][:, 0]] == indices
    assert wanted <= proxy.bytes <= 2 * wanted, (proxy.bytes, wanted, proxy.requests)
    proxy.reset()
    got = ds.__getitems__(indices[:64])
    assert [int(r["id"][0]) for r in got] == indices[:64]
    assert proxy.bytes <= 2 * sum(len(local.raw(i)) + 16 for i in indices[:64])


@pytest.mark.parametrize("named", ["by prefix", "each by its URL"])
def test_a_dataset_in_a_bucket_opened_again_asks_each_object_once_for_its_size_and_version(counted, named):
    proxy, url, _, cache = counted
    if named != "by prefix":
        # The listing of a URL that names an object asks for its size and ETag; opening it
        # does not ask again.
        url = [f"{url}/part-{number}.tfrecord" for number in range(4)]
    first = RecordDataset(url, cache_dir=cache)
    proxy.reset()
    again = RecordDataset(url, cache_dir=cache)
    assert len(again) == len(first) == 8000
    heads = sorted(target for method, target, _ in proxy.seen if method == "HEAD")
    objects = sorted({target for method, target, _ in proxy.seen if method == "HEAD"})
    # One HEAD an object (size and ETag together); the cache's indexes of those very versions
    # are read before any index beside the objects is asked for.
    assert heads == objects and len(objects) == 4, proxy.seen
    assert not [target for _, target, _ in proxy.seen if ".idx" in target], proxy.seen


def test_a_dataset_from_a_bucket_unpickled_in_a_worker_sends_the_bucket_no_request(counted):
    proxy, url, _, cache = counted
    ds = RecordDataset(url, cache_dir=cache)
    proxy.reset()
    # What a loader's worker does with the dataset its process was handed: each object's
    # size, version and kind come with it, its index from the cache.
    copy = pickle.loads(pickle.dumps(ds))
    assert proxy.seen == []
    assert len(copy) == len(ds) == 8000
    assert [copy.raw(i) for i in (0, 2500, 7999)] == [ds.raw(i) for i in (0, 2500, 7999)]
    assert [f["path"] for f in copy.files] == [f["path"] for f in ds.files]


def test_a_batch_far_apart_in_a_bucket_is_sent_64_requests_at_a_time(counted):
    proxy, url, _, cache = counted
    ds = RecordDataset(url, cache_dir=cache)
    local = RecordDataset(sorted(cache.parent.glob("part-*.tfrecord")))
    import random

    # 256 records of 8,000: far apart, a request each. The first answers wait for 33
    # requests in flight together (10 s at most: 32 side by side never make 33).
    indices = random.Random(2).sample(range(len(ds)), 256)
    proxy.reset()
    proxy.gather = 33
    got = ds.__getitems__(indices)
    proxy.gather = 0
    assert [r["id"] for r in got] == [local[i]["id"] for i in indices]
    assert 32 < proxy.most_in_flight <= 64, proxy.most_in_flight


def test_a_shuffled_epoch_from_a_bucket_fetches_its_first_batch_before_reading_further_ahead(counted):
    proxy, url, _, cache = counted
    stream = RecordStream(url, shuffle=True, seed=4, batch_size=64, drop_last=False, cache_dir=cache)
    local = RecordStream(sorted(cache.parent.glob("part-*.tfrecord")), shuffle=True, seed=4, batch_size=64)
    first = {int(v) for v in next(iter(local))["id"][:, 0]}
    # The record each request starts at (a request reads a record, or neighbours merged,
    # from the first one's start), from the indexes kept beside the local copies.
    starts = {}
    for number in range(4):
        lines = (cache.parent / f"part-{number}.tfrecord.idx").read_text().split()
        for i, offset in enumerate(lines[::2]):
            starts[(f"/c/part-{number}.tfrecord", int(offset))] = number * 2000 + i
    proxy.reset()
    batches = iter(stream)
    assert {int(v) for v in next(batches)["id"][:, 0]} == first
    next(batches)  # the second batch's requests have been sent by now, whatever the timing
    firsts = [
        starts[(target[target.index("/c/"):], int(header.split("=")[1].split("-")[0]))] in first
        for method, target, header in proxy.seen
        if method == "GET" and header
    ]
    # Every request for the first batch's records came before any for the batches after it.
    assert True in firsts and False in firsts, firsts
    assert firsts == sorted(firsts, reverse=True), firsts


def test_a_block_shuffle_resumed_inside_a_window_fetches_its_first_batch_before_the_window(counted):
    proxy, url, _, cache = counted
    # Windows of 2,000 records, chunks of 125 (about 23 KB): a resume at record 1,000 is
    # halfway through the first window, whose every chunk the next batch draws from.
    options = dict(shuffle="block", block_size=2000, seed=4, batch_size=64, drop_last=False)
    local = RecordStream(sorted(cache.parent.glob("part-*.tfrecord")), **options)
    state = local.state_dict(position=1000, workers=1)
    local.load_state_dict(state)
    want = ids(local)
    stream = RecordStream(url, cache_dir=cache, **options)
    stream.load_state_dict(state)
    proxy.reset()
    batches = iter(stream)
    first = ids([next(batches)])
    assert first == want[:64]
    # The rest of the epoch, each record once, in the epoch's order.
    assert first + ids(batches) == want
    ranges = [header.split("=")[1].split("-") for method, _, header in proxy.seen if method == "GET" and header]
    spans = [int(end) - int(start) + 1 for start, end in ranges]
    # A request a record (or a few neighbours merged) for the first batch, then the window's
    # chunks, and never a record's request once the chunks are asked for.
    chunks = [span > 10_000 for span in spans]
    assert chunks == sorted(chunks) and chunks.count(False) >= 32 and chunks.count(True) >= 16, spans


@pytest.mark.parametrize("shuffle", [False, "block"])
def test_an_epoch_from_a_bucket_in_order_or_block_shuffled_fetches_each_byte_once(counted, shuffle):
    proxy, url, size, cache = counted
    options = dict(block_size=2000) if shuffle == "block" else {}
    stream = RecordStream(url, shuffle=shuffle, batch_size=64, drop_last=False, cache_dir=cache, **options)
    proxy.reset()
    assert sorted(ids(stream)) == list(range(8000))
    assert size <= proxy.bytes <= 1.05 * size, (proxy.bytes, size, proxy.requests)
    # A request a chunk of records, not one a record or a batch.
    assert proxy.requests <= 8000 // stream.block[1] + 8 if shuffle else proxy.requests < 50


@pytest.mark.parametrize("counted", [10], indirect=True)
@pytest.mark.parametrize("shuffle", ["block", True, False])
def test_an_epoch_through_a_proxy_failing_a_tenth_of_the_reads_gives_every_record_once(counted, shuffle):
    proxy, url, _, cache = counted
    proxy.fail_every = 0
    options = dict(block_size=2000) if shuffle == "block" else {}
    stream = RecordStream(url, shuffle=shuffle, seed=1, batch_size=64, drop_last=False, cache_dir=cache, retries=10, **options)
    local = RecordStream(sorted(cache.parent.glob("part-*.tfrecord")), shuffle=shuffle, seed=1, batch_size=64, drop_last=False, **options)
    # In order, the epoch is four requests (a whole file each): every second one fails.
    proxy.fail_every = 10 if shuffle else 2
    # A global shuffle asks for each record apart: its first ten batches, to stay quick.
    batches = 10 if shuffle is True else None
    got = list(itertools.islice(stream, batches))
    want = list(itertools.islice(local, batches))
    assert proxy.faults >= 2, proxy.gets
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a["id"].tobytes() == b["id"].tobytes() and a["pad"] == b["pad"]


@pytest.mark.parametrize("counted", [1], indirect=True)
@pytest.mark.parametrize("retries", [0, 2])
def test_a_span_that_keeps_failing_is_sent_as_often_as_retries_says_and_no_more(counted, retries):
    proxy, url, _, cache = counted
    proxy.fail_every = 0
    # One file of 2,000 small records: in order, its epoch is one span, one request.
    stream = RecordStream(f"{url}/part-0.tfrecord", batch_size=64, cache_dir=cache, retries=retries, retry_timeout=5)
    proxy.fail_every = 1
    with pytest.raises(OSError):
        list(stream)
    assert proxy.gets == 1 + retries, proxy.gets
