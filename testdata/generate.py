#!/usr/bin/env python3
"""Regenerates the golden data under testdata/ with real TensorFlow and protobuf.

Run from the repository root, in a virtualenv made with
    pip install tensorflow-cpu protobuf grpcio-tools pillow numpy tensorflow-datasets pyarrow
as
    python testdata/generate.py

TensorFlow writes every TFRecord file (tf.io.TFRecordWriter, with tf.io.TFRecordOptions for
GZIP and ZLIB) and reads it back (tf.data.TFRecordDataset); the expected values are the parse
of what TensorFlow read, by tf.train.Example.FromString / SequenceExample.FromString, checked
against TensorFlow's own C++ parser (tf.io.parse_single_example). OFRecord files are written
the way OneFlow documents: the protobuf message from proto/oneflow/core/record/record.proto,
compiled here with grpc_tools.protoc, framed by an 8-byte little-endian length.

Messages are serialized with deterministic=True: the upb backend otherwise writes map entries
in an order that changes from one process to the next, and the files would not be
reproducible. testdata/README.md describes the output; the package generator/ beside this
script holds the modules that write it (its __init__ lists them).
"""

import hashlib
import os
import shutil
from pathlib import Path

from generator import TESTDATA
from generator.damaged import write_damaged
from generator.datasets import write_datasets
from generator.golden import write_golden, write_of_dataset
from generator.ofrecord import record_proto
from generator.tfds_formats import write_tfds_formats
from generator.payloads import (
    bert_payloads,
    edge_payloads,
    images_payloads,
    of_all_kinds_parts,
    of_no_double_parts,
    sequence_payloads,
    tutorial_payloads,
)

ROOT = Path(__file__).resolve().parent.parent
OUTPUT_DIRS = ["golden", "damaged", "ofrecord", "datasets", "ofdatasets", "tfds"]


def main():
    os.chdir(ROOT)
    for name in OUTPUT_DIRS:
        shutil.rmtree(TESTDATA / name, ignore_errors=True)
    # Compiled first: without grpc_tools the run stops before it writes anything.
    record_proto()

    tutorial = tutorial_payloads()
    write_golden("tutorial.tfrecord", tutorial, "example", ("", "GZIP", "ZLIB"))
    write_golden("images.tfrecord", images_payloads(), "example")
    write_golden("edge.tfrecord", edge_payloads(), "example")
    write_golden("sequence.tfrecord", sequence_payloads(), "sequence_example")
    write_golden("empty.tfrecord", [], "example")
    write_golden("bert.tfrecord", bert_payloads(4, 30), "example")
    write_damaged()
    write_of_dataset(TESTDATA / "ofrecord" / "all_kinds", of_all_kinds_parts())
    write_of_dataset(TESTDATA / "ofrecord" / "no_double", of_no_double_parts())
    write_datasets(tutorial)
    write_tfds_formats()

    for path in sorted(p for d in OUTPUT_DIRS for p in (TESTDATA / d).rglob("*") if p.is_file()):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        print("%10d  %s  %s" % (path.stat().st_size, digest, path))


if __name__ == "__main__":
    main()
