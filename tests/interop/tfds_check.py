"""Checks that TensorFlow Datasets loads what of2tf gave back in TFDS's layout.

    tfds_check.py ORIGINAL WRITTEN [--resharded] [--raw]

ORIGINAL is a TFDS folder (name-split.tfrecord-NNNNN-of-NNNNN beside dataset_info.json and
features.json); WRITTEN is the folder of2tf wrote from its tf2of conversion. Both are opened
with tfds.builder_from_directory and every split is read with as_dataset: the same splits,
the same number of examples per split as dataset_info.json says, and every example's values
equal, in order. Unless --resharded, the shard lengths must be those of the original too.
With --raw (WRITTEN comes from tf2of --images raw), each image's pixels must be those TFDS
decodes from the original, and its NAME/shape, a feature of WRITTEN's only, their shape.

No network: TFDS_DATA_DIR must point to an empty directory, which must still be empty at the
end, and any attempt to connect a socket fails the check. Exits 1 on the first difference.
"""

import os
import socket
import sys

import numpy as np


def no_network(*_args, **_kwargs):
    raise AssertionError("TensorFlow Datasets tried to reach the network")


socket.socket.connect = no_network
socket.create_connection = no_network

import tensorflow_datasets as tfds  # noqa: E402  (after the network is cut)


def fail(message):
    print(f"FAIL {message}", file=sys.stderr)
    sys.exit(1)


def examples(builder, split):
    # One file after the other: TFDS interleaves blocks of 16 examples from 16 files at a
    # time by default, an order that depends on the shard lengths.
    config = tfds.ReadConfig(interleave_cycle_length=1)
    dataset = builder.as_dataset(split=split, shuffle_files=False, read_config=config)
    return list(tfds.as_numpy(dataset))


def same(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return np.array_equal(np.asarray(a), np.asarray(b))


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    original_dir, written_dir = argv[1:3]
    resharded = "--resharded" in argv[3:]
    raw = "--raw" in argv[3:]
    data_dir = os.environ.get("TFDS_DATA_DIR")
    if not data_dir or os.listdir(data_dir):
        fail("TFDS_DATA_DIR must name an empty directory")
    original = tfds.builder_from_directory(original_dir)
    written = tfds.builder_from_directory(written_dir)
    if sorted(original.info.splits) != sorted(written.info.splits):
        fail(f"{written_dir}: splits {sorted(written.info.splits)}, "
             f"the original has {sorted(original.info.splits)}")
    for split in sorted(original.info.splits):
        info = written.info.splits[split]
        if not resharded and info.shard_lengths != original.info.splits[split].shard_lengths:
            fail(f"{written_dir}: {split} shard lengths {info.shard_lengths}, "
                 f"the original has {original.info.splits[split].shard_lengths}")
        expected = examples(original, split)
        got = examples(written, split)
        if len(got) != len(expected) or len(got) != info.num_examples:
            fail(f"{written_dir}: {split} gave {len(got)} examples, the original "
                 f"{len(expected)}, dataset_info.json says {info.num_examples}")
        for index, (a, b) in enumerate(zip(expected, got)):
            if raw:
                b = dict(b)
                for name in [key for key in b if key.endswith("/shape") and key not in a]:
                    image = name[: -len("/shape")]
                    if list(b.pop(name)) != list(np.asarray(a[image]).shape):
                        fail(f"{written_dir}: {split} example #{index}: {name} is not "
                             f"the shape of {image}")
            if not same(a, b):
                fail(f"{written_dir}: {split} example #{index} differs from the original")
        print(f"ok  tfds {written.info.name} {split}: {len(got)} examples "
              f"in {len(info.shard_lengths)} shards")
    if os.listdir(data_dir):
        fail(f"TensorFlow Datasets wrote into TFDS_DATA_DIR: {os.listdir(data_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
