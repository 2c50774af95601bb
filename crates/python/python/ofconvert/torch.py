"""``ofconvert.data``'s classes as PyTorch datasets: :class:`RecordDataset` is a
``torch.utils.data.Dataset`` (for any sampler, ``DistributedSampler`` included) and
:class:`RecordStream` a ``torch.utils.data.IterableDataset`` that splits itself by
``torch.distributed`` rank and ``DataLoader`` worker. Importing this module imports torch;
``ofconvert`` itself never does.

>>> from torch.utils.data import DataLoader  # doctest: +SKIP
>>> stream = ofconvert.torch.RecordStream("s3://bucket/train", shuffle=True, batch_size=256)
>>> for epoch in range(3):
...     stream.set_epoch(epoch)
...     for batch in DataLoader(stream, batch_size=None, num_workers=4):
...         ...
"""

import torch.utils.data

from . import data

__all__ = ["MixedStream", "RecordDataset", "RecordStream"]


class RecordDataset(data.RecordDataset, torch.utils.data.Dataset):
    __doc__ = data.RecordDataset.__doc__


class RecordStream(data.RecordStream, torch.utils.data.IterableDataset):
    __doc__ = data.RecordStream.__doc__


class MixedStream(data.MixedStream, torch.utils.data.IterableDataset):
    __doc__ = data.MixedStream.__doc__
