"""datasets/ and ofdatasets/: the sample trees the command line's tests convert, in TFDS's
layout (MNIST, CIFAR-10), inception's ImageNet shards (one of images of every kind), the
tutorial's and BERT's records, and an OFRecord ImageNet."""

import json

import numpy as np
import tensorflow as tf

from . import TESTDATA
from .ofrecord import of_feature, of_write, ofrecord
from .payloads import SYNSETS, bert_payloads, imagenet_example, mnist_payloads, synthetic_image
from .tfio import bytes_feature, example, float_feature, int64_feature, ser, tf_write


def write_tfds_mnist(base):
    directory = base / "tfds" / "mnist" / "3.0.1"
    splits = {"train": [mnist_payloads(40, 11), mnist_payloads(40, 12)],
              "test": [mnist_payloads(40, 13)]}
    split_info = []
    for split in sorted(splits):
        shards = splits[split]
        num_bytes = 0
        for i, payloads in enumerate(shards):
            path = directory / ("mnist-%s.tfrecord-%05d-of-%05d" % (split, i, len(shards)))
            tf_write(path, payloads)
            # TFDS's numBytes: the serialized examples, their framing left out.
            num_bytes += sum(len(p) for p in payloads)
        split_info.append({
            "filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}",
            "name": split,
            "numBytes": str(num_bytes),
            "shardLengths": [str(len(p)) for p in shards],
        })
    info = {
        "description": "Synthetic stand-in for MNIST in the TFDS layout: seven-segment digits, "
                       "28x28 grayscale PNG, written by testdata/generate.py.",
        "fileFormat": "tfrecord",
        "moduleName": "tensorflow_datasets.image_classification.mnist",
        "name": "mnist",
        "splits": split_info,
        "supervisedKeys": {"tuple": {"items": [{"featureKey": "image"}, {"featureKey": "label"}]}},
        "version": "3.0.1",
    }
    features = {
        "featuresDict": {"features": {
            "image": {
                "description": "",
                "image": {"dtype": "uint8", "encodingFormat": "png",
                          "shape": {"dimensions": ["28", "28", "1"]}},
                "pythonClassName": "tensorflow_datasets.core.features.image_feature.Image",
            },
            "label": {
                "classLabel": {"numClasses": "10"},
                "description": "",
                "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
            },
        }},
        "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
    }
    for name, obj in (("dataset_info.json", info), ("features.json", features)):
        (directory / name).write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def write_tfds(directory, name, version, splits, description, image_shape, extra_features,
               num_classes):
    """A TFDS folder: NAME-SPLIT.tfrecord-NNNNN-of-NNNNN shards, dataset_info.json (with the
    shard lengths) and features.json."""
    split_info = []
    for split in sorted(splits):
        shards = splits[split]
        num_bytes = 0
        for i, payloads in enumerate(shards):
            path = directory / ("%s-%s.tfrecord-%05d-of-%05d" % (name, split, i, len(shards)))
            tf_write(path, payloads)
            # TFDS's numBytes: the serialized examples, their framing left out.
            num_bytes += sum(len(p) for p in payloads)
        split_info.append({
            "filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}",
            "name": split,
            "numBytes": str(num_bytes),
            "shardLengths": [str(len(p)) for p in shards],
        })
    info = {
        "description": description,
        "fileFormat": "tfrecord",
        "moduleName": "tensorflow_datasets.image_classification.%s" % name,
        "name": name,
        "splits": split_info,
        "supervisedKeys": {"tuple": {"items": [{"featureKey": "image"}, {"featureKey": "label"}]}},
        "version": version,
    }
    features = dict(extra_features)
    features["image"] = {
        "description": "",
        "image": {"dtype": "uint8", "encodingFormat": "png",
                  "shape": {"dimensions": [str(d) for d in image_shape]}},
        "pythonClassName": "tensorflow_datasets.core.features.image_feature.Image",
    }
    features["label"] = {
        "classLabel": {"numClasses": str(num_classes)},
        "description": "",
        "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
    }
    features = {
        "featuresDict": {"features": features},
        "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
    }
    for file_name, obj in (("dataset_info.json", info), ("features.json", features)):
        (directory / file_name).write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def cifar_payloads(n, seed, split):
    """CIFAR-10 in TFDS's form: `id` (text), `image` (32x32 RGB PNG), `label` int64 0..9."""
    rng = np.random.RandomState(seed)
    payloads = []
    for i in range(n):
        label = rng.randint(0, 10)
        pixels = synthetic_image(rng, 32, 32)
        png = tf.io.encode_png(pixels).numpy()
        payloads.append(ser(example({
            "id": bytes_feature([b"%s_%05d" % (split.encode(), seed * 1000 + i)]),
            "image": bytes_feature([png]),
            "label": int64_feature([label]),
        })))
    return payloads


def write_tfds_cifar10(base):
    write_tfds(
        base / "tfds" / "cifar10" / "3.0.2", "cifar10", "3.0.2",
        {"train": [cifar_payloads(16, 41, "train"), cifar_payloads(16, 42, "train")],
         "test": [cifar_payloads(16, 43, "test")]},
        "Synthetic stand-in for CIFAR-10 in the TFDS layout: 32x32 RGB PNG, written by "
        "testdata/generate.py.",
        (32, 32, 3),
        {"id": {"description": "", "pythonClassName":
                "tensorflow_datasets.core.features.text_feature.Text", "text": {}}},
        10,
    )


def cmyk_jpeg(pixels):
    """A CMYK JPEG as Photoshop-era ImageNet files are: TensorFlow cannot write one, Pillow
    can (with the Adobe marker)."""
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(pixels).convert("CMYK").save(out, "JPEG", quality=90)
    return out.getvalue()


def mixed_imagenet_payloads():
    """An inception-style shard whose images the script left as they were: RGB JPEG,
    grayscale JPEG, CMYK JPEG, RGB PNG and grayscale PNG, in a fixed cycle."""
    rng = np.random.RandomState(23)
    kinds = ["jpeg", "gray-jpeg", "cmyk-jpeg", "png", "gray-png"]
    payloads = []
    for index in range(15):
        kind = kinds[index % len(kinds)]
        height, width = 24 + index % 3 * 8, 32
        pixels = synthetic_image(rng, height, width)
        gray = pixels[:, :, :1]
        if kind == "jpeg":
            encoded, fmt, colorspace, channels = tf.io.encode_jpeg(pixels, quality=90), "JPEG", "RGB", 3
        elif kind == "gray-jpeg":
            encoded, fmt, colorspace, channels = tf.io.encode_jpeg(gray, quality=90), "JPEG", "Grayscale", 1
        elif kind == "cmyk-jpeg":
            encoded, fmt, colorspace, channels = cmyk_jpeg(pixels), "JPEG", "CMYK", 4
        elif kind == "png":
            encoded, fmt, colorspace, channels = tf.io.encode_png(pixels), "PNG", "RGB", 3
        else:
            encoded, fmt, colorspace, channels = tf.io.encode_png(gray), "PNG", "Grayscale", 1
        if not isinstance(encoded, bytes):
            encoded = encoded.numpy()
        label = index % len(SYNSETS)
        synset, human = SYNSETS[label]
        x0, x1 = sorted(rng.uniform(0, 1, 2).tolist())
        y0, y1 = sorted(rng.uniform(0, 1, 2).tolist())
        filename = "%s_%d.%s" % (synset, 2000 + index, fmt)
        payloads.append(ser(example({
            "image/height": int64_feature([height]),
            "image/width": int64_feature([width]),
            "image/colorspace": bytes_feature([colorspace.encode()]),
            "image/channels": int64_feature([channels]),
            "image/class/label": int64_feature([label + 1]),
            "image/class/synset": bytes_feature([synset.encode()]),
            "image/class/text": bytes_feature([human]),
            "image/object/bbox/xmin": float_feature([x0]),
            "image/object/bbox/ymin": float_feature([y0]),
            "image/object/bbox/xmax": float_feature([x1]),
            "image/object/bbox/ymax": float_feature([y1]),
            "image/object/bbox/label": int64_feature([label + 1]),
            "image/format": bytes_feature([fmt.encode()]),
            "image/filename": bytes_feature([filename.encode()]),
            "image/encoded": bytes_feature([encoded]),
        })))
    return payloads


def write_datasets(tutorial):
    base = TESTDATA / "datasets"
    write_tfds_mnist(base)
    write_tfds_cifar10(base)
    tf_write(base / "imagenet" / "mixed" / "train-00000-of-00001", mixed_imagenet_payloads())
    rng = np.random.RandomState(21)
    index = 0
    for split, shards in (("train", 2), ("validation", 1)):
        for shard in range(shards):
            payloads = []
            for _ in range(10):
                payloads.append(imagenet_example(rng, index, "JPEG", 24 + index % 3 * 8, 32,
                                                 1 + index % 2))
                index += 1
            tf_write(base / "imagenet" / split / ("%s-%05d-of-%05d" % (split, shard, shards)),
                     payloads)
    tf_write(base / "tutorial" / "tutorial.tfrecord", tutorial[:100])
    tf_write(base / "bert" / "pretrain.tfrecord", bert_payloads(16, 31))

    rng = np.random.RandomState(22)
    parts = []
    for part in range(2):
        records = []
        for i in range(8):
            jpeg = tf.io.encode_jpeg(synthetic_image(rng, 24, 32), quality=90).numpy()
            label = (part * 8 + i) % len(SYNSETS)
            records.append(ofrecord({
                "encoded": of_feature("bytes_list", [jpeg]),
                "class/label": of_feature("int32_list", [label]),
            }))
        parts.append(records)
    for i, records in enumerate(parts):
        of_write(TESTDATA / "ofdatasets" / "imagenet_of" / "train" / ("part-%05d" % i), records)
