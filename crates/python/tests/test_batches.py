"""What a training loop receives from a stream: the same keys in every batch, whichever
records it holds, and ``transform=`` applied where the stream is iterated (a loader's worker
process, pickled there with ``spawn``)."""

import multiprocessing
import pickle

import numpy as np
import pytest

import ofconvert
from ofconvert import UsageError
from ofconvert.data import MixedStream, RecordDataset, RecordStream


def _write(path, records):
    with ofconvert.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)


@pytest.fixture
def sparse(tmp_path):
    """Two files of 30 records: a caption on every third record (the first of each file's
    among them), a weight only on the second file's records, and one late feature that only
    record 50 has."""
    data = tmp_path / "sparse"
    data.mkdir()
    for number in range(2):
        records = []
        for i in range(30):
            at = number * 30 + i
            record = {"id": at}
            if i % 3 == 0:
                record["caption"] = f"caption {at}".encode()
            if number == 1:
                record["weight"] = [float(at)]
            if at == 50:
                record["late"] = [1]
            records.append(record)
        _write(data / f"part-{number}.tfrecord", records)
    return data


def test_every_batch_has_the_dataset_s_keys_none_where_a_record_lacks_one(sparse, tmp_path):
    stream = RecordStream(sparse, batch_size=4, drop_last=False, cache_dir=tmp_path / "cache")
    batches = list(stream)
    assert len(batches) == 15
    late_from = next(n for n, batch in enumerate(batches) if 50 in batch["id"][:, 0])
    for n, batch in enumerate(batches):
        # A batch of none of the first file's third records lacked "caption" before, and
        # every batch of the first file lacked "weight".
        keys = ["caption", "id", "weight"] + (["late"] if n >= late_from else [])
        assert sorted(batch) == sorted(keys), (n, sorted(batch))
        ids = [int(i) for i in batch["id"][:, 0]]
        assert batch["caption"] == [[f"caption {i}".encode()] if i % 3 == 0 else None for i in ids]
        weights = batch["weight"]
        assert [None if w is None else float(w[0]) for w in weights] == [float(i) if i >= 30 else None for i in ids]
    # The feature only a record past each file's first has comes from its batch on.
    assert batches[late_from]["late"][[int(i) for i in batches[late_from]["id"][:, 0]].index(50)].tolist() == [1]
    # A batch of random access has them too, and so does a copy handed the dataset.
    copy = pickle.loads(pickle.dumps(stream))
    assert sorted(copy.dataset.batch([1, 2])) == ["caption", "id", "weight"]
    assert copy.dataset._native.keys(look=False) == ["caption", "id", "weight"]
    # features= names the keys itself.
    named = RecordStream(sparse, batch_size=4, features=["id", "weight"])
    assert {tuple(batch) for batch in named} == {("id", "weight")}


def test_a_mixture_s_batches_hold_every_source_s_keys(sparse, tmp_path):
    other = tmp_path / "other.tfrecord"
    _write(other, [{"id": 100 + i, "label": [i]} for i in range(8)])
    mixed = MixedStream([RecordDataset(sparse), RecordDataset(other)], batch_size=4, drop_last=False)
    batches = list(mixed)
    # ("late" joins them from the batch of its record on.)
    assert all({"caption", "id", "label", "weight"} <= set(batch) for batch in batches)
    assert sorted(int(i) for batch in batches for i in batch["id"][:, 0]) == list(range(60)) + list(range(100, 108))
    labelled = [batch for batch in batches if int(batch["id"][0, 0]) >= 100]
    assert labelled and all(batch["caption"] == [None] * len(batch["id"]) for batch in labelled)


def _decoded(batch):
    """A transform, defined at the top of a module so that ``spawn`` pickles it."""
    return {"rows": len(batch["id"]), "ids": batch["id"][:, 0] * 10}


def _worker_ids(stream, worker):
    import os

    stream.worker = (worker, 2)
    return os.getpid(), [int(i) for batch in stream for i in batch["ids"]]


def test_a_transform_runs_in_each_loader_worker_process_it_was_pickled_to(sparse):
    stream = RecordStream(sparse, shuffle=True, seed=3, batch_size=4, drop_last=False, transform=_decoded)
    here = [int(i) for batch in stream for i in batch["ids"]]
    assert sorted(here) == [10 * i for i in range(60)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        got = pool.starmap_async(_worker_ids, [(stream, 0), (stream, 1)]).get(timeout=120)
    import os

    assert all(pid != os.getpid() for pid, _ in got)
    assert sorted(got[0][1] + got[1][1]) == [10 * i for i in range(60)]
    with pytest.raises(UsageError, match="transform is a function of one item"):
        RecordStream(sparse, transform="decode")
    mixed = MixedStream([sparse], batch_size=8, transform=lambda batch: len(batch["id"]))
    assert list(mixed) == [8] * 7


def test_the_docs_image_recipe_decodes_the_sample_imagenet_shards(monkeypatch):
    pytest.importorskip("PIL")
    from conftest import TESTDATA

    docs = (TESTDATA.parent / "docs" / "training.md").read_text()
    (recipe,) = [block for block in docs.split("```python\n")[1:] if "def decode(batch)" in block]
    monkeypatch.chdir(TESTDATA / "datasets" / "imagenet")
    scope = {}
    exec(recipe.split("```")[0], scope)
    expected = len(RecordDataset("train")) // 4
    assert expected > 0
    assert sum(1 for _ in scope["stream"]) == expected


@pytest.fixture
def ragged(tmp_path):
    """40 records whose "tokens" hold i % 5 + 1 int64 values, "boxes" i % 3 float32 values
    (none at all on every third record), and "label" one."""
    path = tmp_path / "ragged.tfrecord"
    records = []
    for i in range(40):
        record = {"tokens": [i * 10 + k for k in range(i % 5 + 1)], "label": [i]}
        if i % 3:
            record["boxes"] = np.arange(i % 3, dtype=np.float32) + i
        records.append(record)
    _write(path, records)
    return path


def test_ragged_features_as_values_and_lengths_or_padded(ragged):
    plain = list(RecordStream(ragged, batch_size=8))
    assert isinstance(plain[0]["tokens"], list)
    stream = RecordStream(ragged, batch_size=8, lengths=["tokens"], pad={"boxes": 3})
    for at, batch in enumerate(stream):
        rows = range(at * 8, at * 8 + 8)
        assert sorted(batch) == ["boxes", "boxes/lengths", "label", "tokens", "tokens/lengths"]
        assert batch["tokens/lengths"].tolist() == [i % 5 + 1 for i in rows]
        assert batch["tokens"].dtype == np.int64
        assert batch["tokens"].tolist() == [i * 10 + k for i in rows for k in range(i % 5 + 1)]
        assert batch["boxes"].shape == (8, 3) and batch["boxes"].dtype == np.float32
        assert batch["boxes/lengths"].tolist() == [i % 3 for i in rows]
        for row, i in enumerate(rows):
            assert batch["boxes"][row].tolist() == [float(i + k) for k in range(i % 3)] + [0.0] * (3 - i % 3)
            before = plain[at]["boxes"][row]
            assert ([] if before is None else before.tolist()) == batch["boxes"][row][: i % 3].tolist()
    # A batch of records none of which has the feature still has its keys, of its kind.
    few = RecordDataset(ragged, pad={"boxes": 2}).batch([0, 3])
    assert few["boxes"].tolist() == [[0, 0], [0, 0]] and few["boxes/lengths"].tolist() == [0, 0]


def test_a_mixture_fills_a_source_s_missing_keys_with_a_none_a_row_beside_shaped_values(ragged, tmp_path):
    other = tmp_path / "other.tfrecord"
    _write(other, [{"label": [100 + i], "weight": [0.5]} for i in range(8)])
    # "boxes" sorts first: its values are longer than the batch, its lengths are not.
    mixed = MixedStream([RecordDataset(ragged, lengths=["boxes"]), RecordDataset(other)], batch_size=8)
    for batch in mixed:
        rows = len(batch["label"])
        assert rows == 8
        assert sorted(batch) == ["boxes", "boxes/lengths", "label", "tokens", "weight"]
        if int(batch["label"][0, 0]) < 100:
            assert batch["weight"] == [None] * rows
            assert len(batch["boxes"]) == int(batch["boxes/lengths"].sum())
        else:
            assert batch["boxes"] == batch["boxes/lengths"] == batch["tokens"] == [None] * rows


def test_a_shape_that_cannot_hold_the_values_is_refused_by_name(ragged, tmp_path):
    with pytest.raises(UsageError, match=r'feature "tokens": a record holds 5 values, more than pad=4'):
        list(RecordStream(ragged, batch_size=8, pad={"tokens": 4}))
    # The batches before the one that does not fit are not refused.
    stream = iter(RecordStream(ragged, batch_size=4, pad={"tokens": 4}))
    assert next(stream)["tokens"].shape == (4, 4)
    with pytest.raises(UsageError):
        next(stream)
    text = tmp_path / "text.tfrecord"
    _write(text, [{"text": [b"a", b"b"]}, {"text": [b"c"]}])
    with pytest.raises(UsageError, match='feature "text" holds bytes: lengths= and pad= shape numeric features only'):
        RecordDataset(text, lengths=["text"]).batch([0, 1])
    with pytest.raises(UsageError, match="in both lengths= and pad="):
        RecordDataset(ragged, lengths=["tokens"], pad={"tokens": 5})
    with pytest.raises(UsageError, match="not in features="):
        RecordDataset(ragged, features=["label"], pad={"tokens": 5})
    with pytest.raises(UsageError, match="a length is a whole number"):
        RecordDataset(ragged, pad={"tokens": 0})
    with pytest.raises(UsageError, match="lengths is a list of feature names"):
        RecordDataset(ragged, lengths="tokens")
