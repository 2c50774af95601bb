"""Run by test_loaders.py with a framework's own Python: the framework's DataLoader, with two
worker processes started by `fork` and by `spawn`, over ofconvert's RecordStream and
RecordDataset for that framework. Prints what each loader yielded, as JSON.

    python loader_check.py oneflow|torch DATA_DIR
"""

import json
import multiprocessing
import sys


def main(framework: str, data: str) -> None:
    if framework == "oneflow":
        import oneflow.utils.data as loading

        import ofconvert.oneflow as classes

        collate = classes.collate
    else:
        import torch.utils.data as loading

        import ofconvert.torch as classes

        collate = None

    def ids(batch):
        values = batch["id"]
        return [int(v) for v in values.numpy().reshape(-1)]

    result = {}
    for context in ("fork", "spawn"):
        # Spawned workers each import the framework anew: one configuration is enough to
        # show that the datasets pickle.
        for drop_last in (False, True) if context == "fork" else (False,):
            per_rank = []
            for rank in range(2):
                stream = classes.RecordStream(
                    data, shuffle=True, seed=11, rank=rank, world_size=2, batch_size=4, drop_last=drop_last,
                )
                stream.set_epoch(1)
                options = dict(batch_size=None, num_workers=2, multiprocessing_context=multiprocessing.get_context(context))
                if collate is not None:
                    options["collate_fn"] = collate
                loader = loading.DataLoader(stream, **options)
                assert len(loader) == len(stream), (len(loader), len(stream))
                per_rank.append([i for batch in loader for i in ids(batch)])
            result[f"stream-{context}-drop_last={drop_last}"] = per_rank
        # A state of 8 records resumed behind the loader's two workers, after an unrelated
        # process forked in between, and the pass after it.
        stream = classes.RecordStream(data, batch_size=4, drop_last=False)
        stream.load_state_dict(classes.RecordStream(data, batch_size=4, drop_last=False).state_dict(position=8, workers=1))
        other = multiprocessing.get_context("fork").Process(target=len, args=([],))
        other.start()
        other.join(timeout=60)
        options = dict(batch_size=None, num_workers=2, multiprocessing_context=multiprocessing.get_context(context))
        if collate is not None:
            options["collate_fn"] = collate
        loader = loading.DataLoader(stream, **options)
        result[f"resumed-{context}"] = [[i for batch in loader for i in ids(batch)] for _ in range(2)]
        result[f"persistent-{context}"] = persistent(classes, loading, collate, data, context)
        result[f"reweighted-{context}"] = reweighted(classes, loading, collate, data, context)
        dataset = classes.RecordDataset(data, features=["id"])
        loader = loading.DataLoader(
            dataset, batch_size=8, shuffle=True, num_workers=2,
            multiprocessing_context=multiprocessing.get_context(context),
        )
        result[f"dataset-{context}"] = [i for batch in loader for i in ids(batch)]
        result["records"] = len(dataset)
    print(json.dumps(result))


def persistent(classes, loading, collate, data, context):
    """Loaders that keep their workers from pass to pass (`persistent_workers=True`, with
    `prefetch_factor` and, for PyTorch, `pin_memory`): three epochs with set_epoch, a pass
    broken off after two batches and the pass after it, a state loaded between epochs and
    the epoch after it. The ids each pass read."""
    stream = classes.RecordStream(data, shuffle=True, seed=5, batch_size=4, drop_last=False)
    options = dict(
        batch_size=None, num_workers=2, persistent_workers=True, prefetch_factor=3,
        multiprocessing_context=multiprocessing.get_context(context),
    )
    if collate is not None:
        options["collate_fn"] = collate
    else:
        options["pin_memory"] = True
    loader = loading.DataLoader(stream, **options)

    def ids(batch):
        return [int(v) for v in batch["id"].numpy().reshape(-1)]

    passes = {}
    for epoch in range(3):
        stream.set_epoch(epoch)
        read = []
        for step, batch in enumerate(loader):
            read.extend(ids(batch))
            if epoch == 1 and step == 2:
                # A state counted where the batches arrive, without workers=: the loader's
                # workers told the training process how many they are.
                told = stream.state_dict(position=12)
                passes["told-workers"] = told == stream.state_dict(position=12, workers=2)
        passes[f"epoch-{epoch}"] = read
    broken = []
    for batch in loader:
        broken.extend(ids(batch))
        if len(broken) >= 8:
            break
    passes["broken"] = broken
    passes["after-broken"] = [i for batch in loader for i in ids(batch)]
    state = classes.RecordStream(data, shuffle=True, seed=5, batch_size=4, drop_last=False)
    state.set_epoch(3)
    stream.load_state_dict(state.state_dict(position=12, workers=1))
    passes["resumed-3"] = [i for batch in loader for i in ids(batch)]
    stream.set_epoch(4)
    passes["epoch-4"] = [i for batch in loader for i in ids(batch)]
    return passes


def reweighted(classes, loading, collate, data, context):
    """A mixture of the data's files behind persistent workers, with other weights than a
    state it loads between epochs (the workers then follow the plan): what the pass after
    the load read, and what the same state gives in this process; then the next epoch."""
    import os

    sources = sorted(os.path.join(data, name) for name in os.listdir(data) if name.endswith(".tfrecord"))
    options = dict(size=60, shuffle=True, seed=3, batch_size=4, drop_last=False)
    mixture = classes.MixedStream(sources, [1, 1, 6], **options)
    loader_options = dict(
        batch_size=None, num_workers=2, persistent_workers=True,
        multiprocessing_context=multiprocessing.get_context(context),
    )
    if collate is not None:
        loader_options["collate_fn"] = collate
    loader = loading.DataLoader(mixture, **loader_options)

    def ids(batch):
        # A loader's tensors, or the arrays a stream iterated here gives.
        values = batch["id"]
        values = values.numpy() if hasattr(values, "numpy") else values
        return [int(v) for v in values.reshape(-1)]

    out = {"epoch-0": [i for batch in loader for i in ids(batch)]}
    saved = classes.MixedStream(sources, [1, 1, 1], **options)
    saved.set_epoch(1)
    items = iter(saved)
    out["taken"] = [i for _ in range(3) for i in ids(next(items))]
    state = saved.state_dict()
    mixture.load_state_dict(state)
    out["rest"] = [i for batch in loader for i in ids(batch)]
    here = classes.MixedStream(sources, [1, 1, 6], **options)
    here.load_state_dict(state)
    out["rest-here"] = [i for batch in here for i in ids(batch)]
    mixture.set_epoch(2)
    out["epoch-2"] = [i for batch in loader for i in ids(batch)]
    here.set_epoch(2)
    out["epoch-2-here"] = [i for batch in here for i in ids(batch)]
    return out


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
