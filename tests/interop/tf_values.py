"""TensorFlow's parse of the inputs of every dataset tf2of wrote, for oneflow_read.py.

    tf_values.py ROOTS OF_ROOT OUT_DIR

ROOTS has one line per output tree, `NAME<TAB>INPUT_ROOT`: the datasets under OF_ROOT/NAME
were converted from INPUT_ROOT, to which their manifests' input paths are relative. For each
dataset (found by its ofconvert-manifest.json) this writes, under OUT_DIR, KEY.json (KEY is
the dataset's path under OF_ROOT with `/` as `~`):

    {"records": [{NAME: [KIND, VALUES]}, ...]}

in the order of the manifest's inputs (one it lists as `array_record` read with Google's
`array_record` reader, which TFDS brings, one it lists as `parquet` with pyarrow, the column
`data` TFDS writes), KIND being bytes_list (values as hex),
float_list (values as the f32 bit patterns) or int64_list; and KEY.npz holding, for every
bytes value that is an image TensorFlow decodes, its pixels as `RECORD/NAME`
(tf.io.decode_image with channels=3, what OneFlow's image decoder returns) and as
`raw/RECORD/NAME` (channels as stored, what `--images raw` writes).
"""

import json
import os
import struct
import sys

import numpy as np
import tensorflow as tf

MANIFEST = "ofconvert-manifest.json"
IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG", b"GIF8", b"BM", b"RIFF")


def f32_bits(value):
    return struct.unpack("<I", struct.pack("<f", value))[0]


def serialized_records(path, compression):
    """The records of one input, as TensorFlow's TFRecord reader, Google's ArrayRecord
    reader or pyarrow (a TFDS Parquet shard) gives them, by the compression its manifest
    lists."""
    if compression == "parquet":
        import pyarrow.parquet as pq

        yield from pq.read_table(path).column("data").to_pylist()
        return
    if compression == "array_record":
        from array_record.python.array_record_module import ArrayRecordReader

        reader = ArrayRecordReader(path)
        try:
            yield from reader.read_all()
        finally:
            reader.close()
        return
    compression_type = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}[compression]
    for serialized in tf.data.TFRecordDataset(path, compression_type=compression_type):
        yield serialized.numpy()


def main(roots_file, of_root, out_dir):
    roots = {}
    with open(roots_file) as f:
        for line in f:
            name, root = line.rstrip("\n").split("\t")
            roots[name] = root
    os.makedirs(out_dir, exist_ok=True)
    datasets = 0
    for directory, _, files in sorted(os.walk(of_root)):
        if MANIFEST not in files:
            continue
        relative = os.path.relpath(directory, of_root)
        input_root = roots[relative.split(os.sep)[0]]
        with open(os.path.join(directory, MANIFEST)) as f:
            manifest = json.load(f)
        records, images = [], {}
        for source in manifest["inputs"]:
            path = os.path.join(input_root, source["path"])
            for serialized in serialized_records(path, source["compression"]):
                example = tf.train.Example.FromString(serialized)
                if not example.features.feature and manifest["skipped"]["empty"]:
                    continue
                index = len(records)
                features = {}
                for name, feature in example.features.feature.items():
                    kind = feature.WhichOneof("kind")
                    values = list(getattr(feature, kind).value) if kind else []
                    if kind == "bytes_list":
                        for value in values[:1]:
                            if value.startswith(IMAGE_MAGIC):
                                pixels = tf.io.decode_image(value, channels=3,
                                                            expand_animations=False)
                                images["%d/%s" % (index, name)] = pixels.numpy()
                                native = tf.io.decode_image(value, expand_animations=False)
                                images["raw/%d/%s" % (index, name)] = native.numpy()
                        values = [bytes(v).hex() for v in values]
                    elif kind == "float_list":
                        values = [f32_bits(v) for v in values]
                    else:
                        values = [int(v) for v in values]
                    features[name] = [kind, values]
                records.append(features)
        if len(records) != manifest["records"]:
            print("MISMATCH: %s: TensorFlow read %d records, the manifest says %d"
                  % (relative, len(records), manifest["records"]), file=sys.stderr)
            return 1
        key = relative.replace(os.sep, "~")
        with open(os.path.join(out_dir, key + ".json"), "w") as f:
            json.dump({"records": records}, f)
        np.savez(os.path.join(out_dir, key + ".npz"), **images)
        datasets += 1
        print("tf  %s: %d records, %d images" % (relative, len(records), len(images)))
    if datasets == 0:
        print("MISMATCH: no dataset under %s" % of_root, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
