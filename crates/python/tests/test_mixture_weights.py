"""MixedStream's weights changed at a resume, as Grain allows: the rest of the epoch is cut
by the new weights, each source reading on where it stood, on any layout; a state saved
after the change resumes as it was; later epochs follow the new weights."""

import collections

import pytest

import ofconvert
from ofconvert import UsageError
from ofconvert.data import MixedStream
from record_helpers import ids
from test_mixture import batches_of, sources  # noqa: F401 (a fixture)


def flat(ranks):
    return [i for rank in ranks for batch in rank for i in batch]


def by_source(records):
    return collections.Counter(i // 1000 for i in records)


@pytest.mark.parametrize("shuffle", [False, True, "block"])
def test_the_rest_of_an_epoch_follows_weights_changed_at_a_resume(sources, shuffle):  # noqa: F811
    before = (sources, [0.5, 0.3, 0.2])
    options = dict(size=200, shuffle=shuffle, seed=5, batch_size=4, drop_last=False)
    if shuffle == "block":
        options["block_size"] = 8
    taken = flat(batches_of(before, 2, 2, take=7, epoch=1, **options))
    stopped = MixedStream(*before, rank=0, world_size=2, **options)
    stopped.set_epoch(1)
    state = stopped.state_dict(position=7 * 4, workers=2)
    assert state["position"] == len(taken)
    new = [1, 1, 8]
    after = (sources, new)
    wanted = ofconvert._native.shares(200 - len(taken), [float(w) for w in new])
    rests = []
    for world, workers in ((1, 1), (3, 2), (2, 1)):
        rest = flat(batches_of(after, world, workers, state=state, epoch=1, **options))
        assert [by_source(rest)[s] for s in range(3)] == wanted, (world, workers)
        # The first source, whose share was its length, reads on where it stood: no record
        # twice. The third, drawn past its 30 records, reads again.
        read = collections.Counter(taken + rest)
        assert all(read[i] == 1 for i in read if i < 1000), (world, workers)
        assert sum(n for i, n in read.items() if i >= 2000) == by_source(taken)[2] + wanted[2]
        rests.append(collections.Counter(rest))
    # Which records the rest holds does not depend on the layout reading it.
    assert rests[0] == rests[1] == rests[2]

    # Stopped again after 2 steps on 3 ranks, its state says each pass's weights, and a
    # mixture of the new weights resumes it on one process with the rest of the epoch.
    more = flat(batches_of(after, 3, 2, take=2, state=state, epoch=1, **options))
    again = MixedStream(*after, rank=0, world_size=3, **options)
    again.load_state_dict(state)
    second = again.state_dict(position=2 * 4, workers=2)
    assert second["weights"] == [0.5, 0.3, 0.2]
    assert [p.get("weights") for p in second["passes"]] == [None, [1.0, 1.0, 8.0]]
    last = MixedStream(*after, **options)
    last.load_state_dict(second)
    assert collections.Counter(taken + more + ids(last)) == collections.Counter(taken) + rests[0]

    # The next epoch follows the new weights from its start.
    last.set_epoch(2)
    assert [by_source(ids(last))[s] for s in range(3)] == ofconvert._native.shares(200, [1.0, 1.0, 8.0])


def test_a_state_with_weights_that_are_no_weights_is_refused(sources):  # noqa: F811
    stream = MixedStream(sources, [1, 1, 1], size=60, batch_size=4)
    items = iter(stream)
    next(items)
    state = stream.state_dict()
    for weights, match in (([1, -1, 1], "positive"), ([1, 1], "3 sources"), ("abc", "list of numbers")):
        broken = dict(state, weights=weights)
        with pytest.raises(UsageError, match=match):
            MixedStream(sources, [1, 1, 1], size=60, batch_size=4).load_state_dict(broken)
        passes = [dict(p, weights=weights) for p in state["passes"]]
        with pytest.raises(UsageError, match=match):
            MixedStream(sources, [1, 1, 1], size=60, batch_size=4).load_state_dict(dict(state, passes=passes))
    # Refused, a mixture is where it stood: here, after a state loaded and a batch taken.
    standing = MixedStream(sources, [1, 1, 1], size=60, batch_size=4)
    standing.load_state_dict(state)
    items = iter(standing)
    taken = ids([next(items)])
    where = standing.state_dict()
    broken = [dict(state, weights=[0, 1, 1]), dict(state, seed=9), dict(state, position=59),
              dict(state, passes=[dict(p, steps=-1) for p in state["passes"]])]
    for refused in broken:
        with pytest.raises(UsageError):
            standing.load_state_dict(refused)
        assert standing.state_dict() == where
    assert len(taken) + len(ids(items)) == 60 - state["position"]


def test_a_state_of_no_step_takes_the_new_weights_from_the_epochs_start(sources):  # noqa: F811
    options = dict(size=60, batch_size=4, drop_last=False)
    state = MixedStream(sources, [1, 1, 1], **options).state_dict()
    assert state["passes"] == []
    resumed = MixedStream(sources, [4, 1, 1], **options)
    resumed.load_state_dict(state)
    said = len(resumed)
    batches = list(resumed)
    got = ids(batches)
    assert said == len(batches)
    assert [by_source(got)[s] for s in range(3)] == ofconvert._native.shares(60, [4.0, 1.0, 1.0])
