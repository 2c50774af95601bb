"""tfds/: a dataset TensorFlow Datasets itself prepares, in each of its formats that
ofconvert reads, from one builder defined here (offline: no download, no network).

- tfds/tfrecord/pets/1.0.0 and tfds/parquet/pets/1.0.0: `pets` (8x8 RGB images, a
  `ClassLabel(names=['cat', 'dog', 'bird'])`, a float weight; train of 24 and test of 9
  examples, two shards a split), prepared with file_format='tfrecord' and 'parquet'. The two
  hold the same serialized examples: the Parquet files' `data` column is TFDS's serializer's
  output, as the TFRecord files' records are.
- tfds/parquet-short/long/1.0.0: `long`, one split of 300 examples in one shard, prepared as
  Parquet. TFDS 4.9.10's Parquet writer slices its examples in batches of 100 with a growing
  start, so the shard holds 200 rows while dataset_info.json counts 300: a folder whose metadata
  its shards do not match, as TFDS itself leaves it.

Needs tensorflow-datasets and pyarrow beside TensorFlow. TFDS_DATA_DIR is pointed at an empty
temporary directory, which must stay empty.
"""

import json
import os
import shutil
import socket
import tempfile

from generator import TESTDATA

NAMES = ["cat", "dog", "bird"]


def no_network(*_args, **_kwargs):
    raise AssertionError("TensorFlow Datasets tried to reach the network")


def builders():
    import numpy as np
    import tensorflow_datasets as tfds

    def features():
        return tfds.features.FeaturesDict({
            "image": tfds.features.Image(shape=(8, 8, 3)),
            "label": tfds.features.ClassLabel(names=NAMES),
            "weight": tfds.features.Tensor(shape=(), dtype=np.float32),
        })

    def examples(count, seed):
        rng = np.random.default_rng(seed)
        for index in range(count):
            yield index, {
                "image": rng.integers(0, 256, (8, 8, 3), dtype=np.uint8),
                "label": int(rng.integers(0, len(NAMES))),
                "weight": np.float32(rng.random()),
            }

    class Pets(tfds.core.GeneratorBasedBuilder):
        """Small deterministic images of three classes."""

        VERSION = tfds.core.Version("1.0.0")

        def _info(self):
            return tfds.core.DatasetInfo(builder=self, features=features())

        def _split_generators(self, dl_manager):
            return {"train": examples(24, 1), "test": examples(9, 2)}

        def _generate_examples(self):
            raise NotImplementedError

    class Long(tfds.core.GeneratorBasedBuilder):
        """One split of 300 examples, in one shard."""

        VERSION = tfds.core.Version("1.0.0")

        def _info(self):
            return tfds.core.DatasetInfo(builder=self, features=features())

        def _split_generators(self, dl_manager):
            return {"train": examples(300, 3)}

        def _generate_examples(self):
            raise NotImplementedError

    # TFDS 4.9.10 looks for a builder's code as a package resource when its module's name has
    # a dot, through importlib_resources, which it does not install: as a script's they are.
    Pets.__module__ = Long.__module__ = "__main__"
    return tfds, Pets, Long


def prepare(tfds, builder_class, file_format, out, num_shards):
    with tempfile.TemporaryDirectory() as data_dir:
        builder = builder_class(data_dir=data_dir, file_format=file_format)
        config = tfds.download.DownloadConfig(num_shards=num_shards)
        builder.download_and_prepare(download_config=config)
        name = builder.name
        shutil.copytree(os.path.join(data_dir, name), out / name)


def write_tfds_formats():
    base = TESTDATA / "tfds"
    saved = (socket.socket.connect, socket.create_connection)
    socket.socket.connect = no_network
    socket.create_connection = no_network
    with tempfile.TemporaryDirectory() as empty:
        os.environ["TFDS_DATA_DIR"] = empty
        try:
            tfds, pets, long = builders()
            prepare(tfds, pets, "tfrecord", base / "tfrecord", 2)
            prepare(tfds, pets, "parquet", base / "parquet", 2)
            prepare(tfds, long, "parquet", base / "parquet-short", 1)
        finally:
            socket.socket.connect, socket.create_connection = saved
        if os.listdir(empty):
            raise AssertionError(f"TensorFlow Datasets wrote into TFDS_DATA_DIR: {os.listdir(empty)}")
    check_parquet(base)


def check_parquet(base):
    """The Parquet preparation holds the TFRecord one's very records; the short shard is short."""
    import pyarrow.parquet as pq
    import tensorflow as tf

    for split in ("train", "test"):
        folder = "pets/1.0.0"
        tf_files = sorted((base / "tfrecord" / folder).glob(f"pets-{split}.tfrecord-*"))
        pq_files = sorted((base / "parquet" / folder).glob(f"pets-{split}.parquet-*"))
        records = [bytes(r.numpy()) for f in tf_files for r in tf.data.TFRecordDataset(str(f))]
        rows = [cell for f in pq_files for cell in pq.read_table(f).column("data").to_pylist()]
        if sorted(records) != sorted(rows):
            raise AssertionError(f"{split}: the Parquet shards hold other records than the TFRecord ones")
    info = json.loads((base / "parquet-short" / "long/1.0.0/dataset_info.json").read_text())
    stated = [int(n) for split in info["splits"] for n in split["shardLengths"]]
    (shard,) = sorted((base / "parquet-short" / "long/1.0.0").glob("long-train.parquet-*"))
    rows = pq.read_metadata(shard).num_rows
    if stated != [300] or rows != 200:
        raise AssertionError(f"expected TFDS's short shard (300 stated, 200 rows), got {stated} and {rows}")
