"""``ofconvert.data``'s classes as OneFlow datasets: :class:`RecordDataset` is a
``oneflow.utils.data.Dataset`` and :class:`RecordStream` a
``oneflow.utils.data.IterableDataset`` that splits itself by ``oneflow.env`` rank and
``DataLoader`` worker. They read TFRecords as well as OFRecords, local or in a bucket,
and pickle, as OneFlow's multi-process loader needs. Importing this module imports oneflow;
``ofconvert`` itself never does.

>>> import oneflow as flow  # doctest: +SKIP
>>> stream = ofconvert.oneflow.RecordStream("imagenet/train", shuffle=True, batch_size=256)
>>> loader = flow.utils.data.DataLoader(
...     stream, batch_size=None, num_workers=4, collate_fn=ofconvert.oneflow.collate)
"""

from typing import Any

import numpy as np
import oneflow
import oneflow.utils.data

from . import data

__all__ = ["MixedStream", "RecordDataset", "RecordStream", "collate"]


class RecordDataset(data.RecordDataset, oneflow.utils.data.Dataset):
    __doc__ = data.RecordDataset.__doc__


class RecordStream(data.RecordStream, oneflow.utils.data.IterableDataset):
    __doc__ = data.RecordStream.__doc__


class MixedStream(data.MixedStream, oneflow.utils.data.IterableDataset):
    __doc__ = data.MixedStream.__doc__


def collate(item: Any) -> Any:
    """A ``collate_fn`` for a loader over a :class:`RecordStream` that batches itself
    (``DataLoader(stream, batch_size=None, collate_fn=ofconvert.oneflow.collate)``): numpy
    arrays become tensors, lists of bytes (images, strings) stay lists. OneFlow's own
    conversion refuses ``bytes``."""
    if isinstance(item, dict):
        return {name: collate(value) for name, value in item.items()}
    if isinstance(item, np.ndarray):
        return oneflow.from_numpy(np.ascontiguousarray(item))
    if isinstance(item, list):
        return [collate(value) for value in item]
    return item
