"""Training straight from the records, without converting them first: TFRecord (plain, GZIP,
ZLIB), ArrayRecord and OFRecord files, local or in a bucket, as a map-style dataset with
random access (:class:`RecordDataset`) and as an iterable stream (:class:`RecordStream`)
that shuffles through the index, splits by rank and data-loader worker, batches in Rust and
resumes mid-epoch. Neither imports a framework: ``ofconvert.torch`` and ``ofconvert.oneflow``
give the same classes as subclasses of each framework's ``Dataset``/``IterableDataset``.

Random access goes through an index of each file (``OFFSET LENGTH`` per record, the
format of ``ofconvert index``): a ``FILE.idx`` beside the file is used where it fits the file,
else one is built on first use in a single streaming pass and kept in the cache directory
(``cache_dir=``, else ``$OFCONVERT_CACHE_DIR``, else ``~/.cache/ofconvert``): reading writes
nothing into the data's folders unless ``index_beside=True`` asks it to keep a local file's
index beside it. An ArrayRecord
file's own footer is its index: opening one reads its postscript and footer (in a bucket, a
few requests of a few kilobytes), and a record read is its chunk, read whole, checked and
decoded; nothing is copied. A compressed TFRecord has no random access: it is copied once
into the cache as an uncompressed TFRecord (a warning says so and how big the copy is), or
refused with ``decompress=False``.

The classes live in modules of their own, each below the next: ``_layout`` (this process's
rank and loader worker), ``_dataset`` (:class:`RecordDataset`), ``_epochs`` (what the streams
share), ``_stream`` (:class:`RecordStream`) and ``_mixture`` (:class:`MixedStream`). This
module is where they are imported from, and the name they go by.
"""

from ._dataset import PathLike, Paths, Record  # noqa: F401 (type names, importable as before)
from ._dataset import RecordDataset
from ._mixture import MixedStream
from ._stream import RecordStream

__all__ = ["MixedStream", "RecordDataset", "RecordStream"]

# Pickles, reprs and help() name the classes' public home, where they were defined before
# they had modules of their own: a pickle reads the same on either side of that move.
for _class in (RecordDataset, RecordStream, MixedStream):
    _class.__module__ = __name__
del _class
