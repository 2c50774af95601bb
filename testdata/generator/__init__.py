"""The modules of testdata/generate.py, which writes the golden data under testdata/ with real
TensorFlow and protobuf. Each imports only those above it in this list:

- ofrecord: OneFlow's record.proto compiled at run time, OFRecord messages and their framing;
- expected: the expected JSON, each value encoded as testdata/README.md says;
- tfio: tf.train messages, TFRecord files written and read back by TensorFlow and checked
  against its C++ parser;
- payloads: the synthetic records of golden/ and ofrecord/, each set from a fixed seed;
- golden: golden/ and ofrecord/, each file with its expected JSON;
- damaged: damaged/, the golden tutorial files cut and flipped, and what TensorFlow reads of them;
- datasets: the sample trees of datasets/ and ofdatasets/ (TFDS, ImageNet, BERT) for the CLI;
- tfds_formats: tfds/, one builder prepared by TensorFlow Datasets itself as TFRecord and as
  Parquet, and a Parquet split TFDS leaves short of its metadata.

The outputs are written under TESTDATA, relative to the repository's root, which generate.py
makes the working directory.
"""

import os
from pathlib import Path

# Before any module here imports TensorFlow, whose C++ logging would bury the listing.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

TESTDATA = Path("testdata")
