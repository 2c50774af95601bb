"""What the ofconvert.data tests share besides their fixtures (conftest.py has those):
records compared bit for bit, the ids that records or batches hold, and the ids each rank
reads, its loader workers' streams read through or taken in turn as a loader takes them."""

import numpy as np

from ofconvert.data import RecordStream


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


def ids(items):
    """The ids of records or batches."""
    out = []
    for item in items:
        values = item["id"]
        out.extend(int(v) for v in (values[:, 0] if isinstance(values, np.ndarray) and values.ndim == 2 else values))
    return out


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


def taken_in_turn(make, workers, take=None, state=None, epoch=0):
    """The items of `workers` loader workers' streams (``make(worker)`` makes each, loaded
    with `state`, at `epoch`) taken one from each in turn, an exhausted worker passed over,
    as a loader takes them; the first `take` of them."""
    streams = []
    for worker in range(workers):
        stream = make(worker)
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
    return out


def in_turn(root, rank, world, workers, take=None, state=None, epoch=0, **options):
    """A rank's items behind `workers` loader workers taken one from each in turn (as a
    loader does), the first `take` of them; each worker's stream loaded with `state`."""

    def make(worker):
        return RecordStream(root, rank=rank, world_size=world, worker=(worker, workers), **options)

    return ids(taken_in_turn(make, workers, take, state, epoch))
