"""MixedStream: several datasets, each a weighted share of every epoch, dealt to ranks and
workers as one stream and resumed as one."""

import collections

import pytest

import ofconvert
from ofconvert import UsageError
from ofconvert.data import MixedStream, RecordDataset, RecordStream
from record_helpers import ids, taken_in_turn


@pytest.fixture
def sources(tmp_path):
    """Three datasets of 100, 50 and 30 records, ids from 0, 1000 and 2000."""
    roots = []
    for number, size in enumerate((100, 50, 30)):
        path = tmp_path / f"source-{number}.tfrecord"
        with ofconvert.TFRecordWriter(path) as writer:
            for i in range(size):
                writer.write({"id": number * 1000 + i})
        roots.append(path)
    return roots


def batches_of(mixture_args, world, workers, take=None, state=None, epoch=0, **options):
    """Every rank's batches behind `workers` workers taken one from each in turn (the first
    `take` steps of each rank), each batch as its list of ids."""
    ranks = []
    for rank in range(world):

        def make(worker, rank=rank):
            return MixedStream(*mixture_args, rank=rank, world_size=world, worker=(worker, workers), **options)

        ranks.append([ids([item]) for item in taken_in_turn(make, workers, take, state, epoch)])
    return ranks


def test_each_source_gives_its_weighted_share_once_or_repeated_as_it_must(sources):
    args = (sources, [0.5, 0.3, 0.2])
    for shuffle in (False, True, "block"):
        options = dict(size=200, shuffle=shuffle, seed=1, batch_size=4, drop_last=False)
        if shuffle == "block":
            options["block_size"] = 8
        assert MixedStream(*args, **options).shares == [100, 60, 40]
        ranks = batches_of(args, 2, 2, **options)
        everything = [i for rank in ranks for batch in rank for i in batch]
        counts = collections.Counter(everything)
        by_source = collections.Counter(i // 1000 for i in everything)
        assert by_source == {0: 100, 1: 60, 2: 40}, shuffle
        # The first source once; the others whole once and in part twice, never more.
        assert all(counts[i] == 1 for i in range(100))
        assert sorted(counts[1000 + i] for i in range(50)) == [1] * 40 + [2] * 10
        assert sorted(counts[2000 + i] for i in range(30)) == [1] * 20 + [2] * 10
        # A batch holds one source's records; the sources' batches are interleaved.
        for rank in ranks:
            assert all(len({i // 1000 for i in batch}) == 1 for batch in rank)
            order = [batch[0] // 1000 for batch in rank]
            assert order != sorted(order), (shuffle, order)


def test_a_source_drawn_below_its_length_gives_another_part_each_shuffled_epoch(sources):
    args = (sources, [0.1, 0.45, 0.45])
    stream = MixedStream(*args, size=100, shuffle=True, seed=3, batch_size=5, drop_last=False)
    assert stream.shares == [10, 45, 45]
    epochs = []
    for epoch in range(2):
        stream.set_epoch(epoch)
        got = ids(stream)
        first = [i for i in got if i < 1000]
        assert len(first) == len(set(first)) == 10
        epochs.append(set(first))
    assert epochs[0] != epochs[1]


def test_ranks_yield_as_many_batches_with_drop_last(sources):
    ranks = batches_of((sources, [1, 1, 1]), 3, 2, size=150, batch_size=4, drop_last=True)
    assert len({len(rank) for rank in ranks}) == 1
    assert all(len(batch) == 4 for rank in ranks for batch in rank)
    everything = [i for rank in ranks for batch in rank for i in batch]
    assert len(everything) == len(set(everything))


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_mixture_resumes_on_another_layout_with_the_rest_of_its_shares(sources, shuffle):
    args = (sources, [0.5, 0.3, 0.2])
    options = dict(size=200, shuffle=shuffle, seed=5, batch_size=4, drop_last=False)
    whole = collections.Counter(i for rank in batches_of(args, 2, 2, epoch=1, **options) for b in rank for i in b)
    # Two ranks of two workers take 7 steps each, then rank 0's state.
    taken = [i for rank in batches_of(args, 2, 2, take=7, epoch=1, **options) for b in rank for i in b]
    stopped = MixedStream(*args, rank=0, world_size=2, **options)
    stopped.set_epoch(1)
    state = stopped.state_dict(position=7 * 4, workers=2)
    # A source's last batch of a lane may be short, and may come in the first steps.
    assert state["position"] == len(taken) > 2 * 7 * 3
    for world, workers in ((1, 1), (3, 2)):
        rest = [i for rank in batches_of(args, world, workers, state=state, epoch=1, **options) for b in rank for i in b]
        assert collections.Counter(taken + rest) == whole, (world, workers)
        # Stopped again after 2 steps there, then resumed on one process.
        more = [i for rank in batches_of(args, world, workers, take=2, state=state, epoch=1, **options) for b in rank for i in b]
        again = MixedStream(*args, rank=0, world_size=world, **options)
        again.load_state_dict(state)
        second = again.state_dict(position=2 * 4, workers=workers)
        last = MixedStream(*args, **options)
        last.load_state_dict(second)
        assert collections.Counter(taken + more + ids(last)) == whole, (world, workers)


def test_a_mixture_iterated_here_counts_its_batches_and_resumes(sources):
    args = (sources, [2, 1, 1])
    options = dict(size=120, shuffle=True, seed=2, batch_size=8, drop_last=False)
    stream = MixedStream(*args, **options)
    whole = collections.Counter(ids(stream))
    items = iter(stream)
    first = ids([next(items) for _ in range(4)])
    resumed = MixedStream(*args, **options)
    resumed.load_state_dict(stream.state_dict())
    expected = len(resumed)
    rest = list(resumed)
    assert len(rest) == expected and collections.Counter(first + ids(rest)) == whole
    other = MixedStream(sources, [1, 1, 1], size=120, shuffle=True, seed=3, batch_size=8)
    with pytest.raises(UsageError, match="seed"):
        other.load_state_dict(stream.state_dict())


def test_each_source_reads_from_its_own_store(sources, moto_s3, tmp_path):
    client, _ = moto_s3
    client.create_bucket(Bucket="mixture")
    client.put_object(Bucket="mixture", Key="b/source-1.tfrecord", Body=sources[1].read_bytes())
    remote = RecordDataset("s3://mixture/b", cache_dir=tmp_path / "cache")
    stream = MixedStream([sources[0], remote], [1, 1], size=100, batch_size=10, drop_last=False)
    # In order: the first 50 records of the first source, the second's 50 whole.
    assert sorted(ids(stream)) == list(range(50)) + list(range(1000, 1050))


def test_a_mixture_refuses_what_it_cannot_draw(sources):
    for weights, match in (([1, 1], "3 sources"), ([1, -1, 1], "positive"), ([1, 0, 1], "positive")):
        with pytest.raises(UsageError, match=match):
            MixedStream(sources, weights)
    with pytest.raises(UsageError, match="list of datasets"):
        MixedStream(str(sources[0]))
    with pytest.raises(UsageError, match="workers="):
        MixedStream(sources).state_dict(position=4)


@pytest.mark.parametrize(
    "change, refusal",
    [
        ({"world_size": 0}, "world_size, workers and unit of at least 1"),
        ({"workers": 0}, "world_size, workers and unit of at least 1"),
        ({"unit": 0}, "world_size, workers and unit of at least 1"),
        ({"steps": -1}, "world_size, workers and unit of at least 1"),
        ({"steps": "2"}, "holds integers"),
        ({"drop_last": 1}, "world_size, workers and unit of at least 1"),
        ({"extra": 1}, "a pass of a state is a dict of"),
    ],
)
def test_a_mixture_refuses_the_passes_a_stream_refuses_in_the_same_words(sources, change, refusal):
    args = (sources, [0.5, 0.3, 0.2])
    options = dict(size=60, seed=5, batch_size=4, drop_last=False)
    mixture = MixedStream(*args, rank=0, world_size=2, **options)
    mixed = mixture.state_dict(position=8, workers=2)
    stream = RecordStream(sources[0], rank=0, world_size=2, batch_size=4, drop_last=False)
    alone = stream.state_dict(position=8, workers=2)
    targets = (
        (lambda: MixedStream(*args, **options), mixed),
        (lambda: RecordStream(sources[0], batch_size=4, drop_last=False), alone),
    )
    for make, state in targets:
        target = make()
        bad = dict(state, passes=[dict(state["passes"][0], **change)])
        with pytest.raises(UsageError, match=refusal):
            target.load_state_dict(bad)
        # Refused, it stands where it stood: at the epoch's start.
        assert len(target) == len(make())


def test_a_mixture_refuses_passes_that_do_not_add_up_to_the_position(sources):
    args = (sources, [0.5, 0.3, 0.2])
    options = dict(size=60, seed=5, batch_size=4, drop_last=False)
    state = MixedStream(*args, rank=0, world_size=2, **options).state_dict(position=8, workers=2)
    assert state["position"] == 2 * 8
    for position in (0, 15, 17, 60):
        resumed = MixedStream(*args, **options)
        with pytest.raises(UsageError, match="do not add up to its position"):
            resumed.load_state_dict(dict(state, position=position))
        assert len(resumed) == len(MixedStream(*args, **options))
    # The state as it was resumes.
    resumed = MixedStream(*args, **options)
    resumed.load_state_dict(state)
    assert sum(len(batch["id"]) for batch in resumed) == 60 - 16


def test_a_mixture_state_of_the_first_version_is_refused_as_one(sources):
    """Version 1 drew each lane's order of sources in Python: another order of the same
    batches, so that its states cannot be resumed exactly."""
    mixture = MixedStream(sources, batch_size=4)
    state = mixture.state_dict(position=8, workers=1)
    assert state["version"] == 2
    state["version"] = 1
    with pytest.raises(UsageError, match="before version 2 of its states"):
        MixedStream(sources, batch_size=4).load_state_dict(state)


def test_a_mixture_knows_its_loaders_worker_count_where_a_stream_does(sources, monkeypatch):
    """Inside a loader's worker, state_dict(position=) takes the loader's worker count, as a
    RecordStream's does; where none can be known, the refusal gives the line to write."""
    with pytest.raises(UsageError, match=r"workers=loader\.num_workers"):
        MixedStream(sources, batch_size=4).state_dict(position=8)
    with pytest.raises(UsageError, match="workers must be at least 0"):
        MixedStream(sources, batch_size=4).state_dict(position=8, workers=-1)
    monkeypatch.setattr(ofconvert._layout, "_loader_info", lambda: (1, 2, 99))
    inside = MixedStream(sources, batch_size=4, rank=0, world_size=1).state_dict(position=8)
    given = MixedStream(sources, batch_size=4, rank=0, world_size=1).state_dict(position=8, workers=2)
    assert inside == given and inside["passes"][0]["workers"] == 2
