"""The synthetic records of the golden files, each set drawn from a fixed seed: the
TensorFlow tutorial's, ImageNet-style images, edge cases, SequenceExamples, BERT pretraining
records, seven-segment MNIST digits, and the parts of the OFRecord datasets of ofrecord/."""

import numpy as np
import tensorflow as tf

from .expected import f32
from .ofrecord import of_feature, ofrecord
from .tfio import bytes_feature, example, float_feature, int64_feature, ser


def tutorial_payloads(n=500):
    """The "TFRecord and tf.train.Example" tutorial's four features, with a fixed seed."""
    rng = np.random.RandomState(2024)
    feature0 = rng.choice([False, True], n)
    feature1 = rng.randint(0, 5, n)
    strings = np.array([b"cat", b"dog", b"chicken", b"horse", b"goat"])
    feature2 = strings[feature1]
    feature3 = rng.randn(n)
    return [
        ser(
            example(
                {
                    "feature0": int64_feature([feature0[i]]),
                    "feature1": int64_feature([feature1[i]]),
                    "feature2": bytes_feature([feature2[i]]),
                    "feature3": float_feature([feature3[i]]),
                }
            )
        )
        for i in range(n)
    ]


SYNSETS = [
    ("n01440764", b"tench, Tinca tinca"),
    ("n01443537", b"goldfish, Carassius auratus"),
    ("n01484850", b"great white shark, white shark, man-eater, man-eating shark"),
    ("n01491361", b"tiger shark, Galeocerdo cuvieri"),
    ("n01494475", b"hammerhead, hammerhead shark"),
    ("n01496331", b"electric ray, crampfish, numbfish, torpedo"),
]


def synthetic_image(rng, height, width, channels=3):
    """A smooth gradient plus noise: compresses like a photo, not like flat colour."""
    y = np.linspace(0, 255, height)[:, None, None]
    x = np.linspace(0, 255, width)[None, :, None]
    base = (y * rng.uniform(0.2, 1.0, channels) + x * rng.uniform(0.2, 1.0, channels)) / 2
    noise = rng.normal(0, 12, (height, width, channels))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def imagenet_example(rng, index, image_format="JPEG", height=24, width=32, n_boxes=1):
    """An Example with the keys of inception's build_imagenet_data.py (labels 1-based)."""
    label = index % len(SYNSETS)
    synset, human = SYNSETS[label]
    pixels = synthetic_image(rng, height, width)
    if image_format == "JPEG":
        encoded = tf.io.encode_jpeg(pixels, quality=90).numpy()
    else:
        encoded = tf.io.encode_png(pixels).numpy()
    boxes = []
    for _ in range(n_boxes):
        x0, x1 = sorted(rng.uniform(0, 1, 2).tolist())
        y0, y1 = sorted(rng.uniform(0, 1, 2).tolist())
        boxes.append((x0, y0, x1, y1))
    filename = "%s_%d.%s" % (synset, 1000 + index, "JPEG" if image_format == "JPEG" else "png")
    return ser(
        example(
            {
                "image/height": int64_feature([height]),
                "image/width": int64_feature([width]),
                "image/colorspace": bytes_feature([b"RGB"]),
                "image/channels": int64_feature([3]),
                "image/class/label": int64_feature([label + 1]),
                "image/class/synset": bytes_feature([synset.encode()]),
                "image/class/text": bytes_feature([human]),
                "image/object/bbox/xmin": float_feature([b[0] for b in boxes]),
                "image/object/bbox/ymin": float_feature([b[1] for b in boxes]),
                "image/object/bbox/xmax": float_feature([b[2] for b in boxes]),
                "image/object/bbox/ymax": float_feature([b[3] for b in boxes]),
                "image/object/bbox/label": int64_feature([label + 1] * len(boxes)),
                "image/format": bytes_feature([image_format.encode()]),
                "image/filename": bytes_feature([filename.encode()]),
                "image/encoded": bytes_feature([encoded]),
            }
        )
    )


def images_payloads():
    rng = np.random.RandomState(7)
    shapes = [("JPEG", 24, 32, 1), ("PNG", 24, 32, 2), ("JPEG", 32, 24, 0),
              ("PNG", 16, 16, 1), ("JPEG", 24, 32, 3), ("PNG", 24, 32, 1)]
    return [imagenet_example(rng, i, fmt, h, w, boxes) for i, (fmt, h, w, boxes) in enumerate(shapes)]


def edge_payloads():
    rng = np.random.RandomState(99)
    payloads = []
    payloads.append(ser(example({
        "empty_bytes": bytes_feature([]),
        "empty_float": float_feature([]),
        "empty_int64": int64_feature([]),
    })))
    payloads.append(ser(example({
        "int64": int64_feature([-2**63, 2**63 - 1, 0, -1, 1, 2**31 - 1, -2**31, 2**31, 2**32,
                                -2**32, 127, 128, 300]),
    })))
    float_bits = [
        0x7FC00000,  # NaN
        0xFFC00000,  # -NaN
        0x7FC00001,  # NaN with a payload
        0x7F800000,  # +inf
        0xFF800000,  # -inf
        0x00000000,  # 0.0
        0x80000000,  # -0.0
        0x00000001,  # 1.4e-45, the smallest subnormal
        0x80000001,  # -1.4e-45
        0x007FFFFF,  # the largest subnormal
        0x00800000,  # the smallest normal
        0x7F7FFFFF,  # f32::MAX
        0xFF7FFFFF,  # f32::MIN
        0x3DCCCCCD,  # 0.1
        0x3EAAAAAB,  # 1/3
        0xBF4A8001,  # a 7-digit value
        0x3F800000,  # 1.0
        0x4B800001,  # 16777218.0
        0x5F000000,  # 2^63
    ]
    payloads.append(ser(example({"float": float_feature([f32(b) for b in float_bits])})))
    payloads.append(ser(example({
        "étiquette": int64_feature([1]),
        "标签": bytes_feature(["猫".encode()]),
        "🏷️": float_feature([0.5]),
        "has space": int64_feature([2]),
        "image/class/label": int64_feature([3]),
        "UPPER_lower-123": bytes_feature([b"x"]),
    })))
    payloads.append(ser(example({
        "all_bytes": bytes_feature([bytes(range(256))]),
        "several": bytes_feature([b"", b"a", b"\x00", b"\n\r\t\"'\\", "é".encode(), b"\x7f\x80\xff",
                                  b"two words", "ünïcödé ✓".encode()]),
    })))
    payloads.append(ser(example({
        "big": bytes_feature([rng.bytes(1 << 20)]),
        "after_big": int64_feature([42]),
    })))
    kinds = []
    for i in range(1000):
        if i % 3 == 0:
            kinds.append(("f%04d" % i, int64_feature([i, -i])))
        elif i % 3 == 1:
            kinds.append(("f%04d" % i, float_feature([i / 7.0])))
        else:
            kinds.append(("f%04d" % i, bytes_feature([b"v%d" % i])))
    payloads.append(ser(example(dict(kinds))))
    payloads.append(ser(tf.train.Example()))
    payloads.append(ser(example({})))
    payloads.append(ser(example({"no_kind": tf.train.Feature(), "label": int64_feature([5])})))
    payloads.append(ser(example({
        "long_int64": int64_feature(rng.randint(-2**62, 2**62, 300, dtype=np.int64).tolist()),
        "long_float": float_feature(rng.randn(300).tolist()),
    })))
    assert payloads[7] == b"" and payloads[8] == b"\x0a\x00"
    return payloads


def sequence_payloads():
    payloads = []
    sx = tf.train.SequenceExample()
    sx.context.feature["id"].CopyFrom(bytes_feature([b"seq-0"]))
    sx.context.feature["length"].CopyFrom(int64_feature([3]))
    lists = sx.feature_lists.feature_list
    for step in ([1, 2], [3], [4, 5, 6]):
        lists["tokens"].feature.add().CopyFrom(int64_feature(step))
    for step in ([0.5], [0.25], [-1.0]):
        lists["scores"].feature.add().CopyFrom(float_feature(step))
    for step in ([b"a", b"b"], [b"c"], [b"d", b"e", b"f"]):
        lists["words"].feature.add().CopyFrom(bytes_feature(step))
    payloads.append(ser(sx))

    sx = tf.train.SequenceExample()
    sx.context.feature["id"].CopyFrom(bytes_feature([b"seq-1"]))
    sx.feature_lists.feature_list["empty"].SetInParent()
    sx.feature_lists.feature_list["one_step"].feature.add().CopyFrom(int64_feature([7]))
    sx.feature_lists.feature_list["empty_step"].feature.add().CopyFrom(float_feature([]))
    payloads.append(ser(sx))

    sx = tf.train.SequenceExample()
    for step in ([1.0, 2.0, 3.0], [], [4.0]):
        sx.feature_lists.feature_list["frames"].feature.add().CopyFrom(float_feature(step))
    payloads.append(ser(sx))

    sx = tf.train.SequenceExample()
    sx.context.feature["only_context"].CopyFrom(int64_feature([-1, 1]))
    payloads.append(ser(sx))
    return payloads


def bert_payloads(n, seed, max_seq_length=128, max_predictions=20):
    """Records shaped like google-research/bert create_pretraining_data.py's output."""
    rng = np.random.RandomState(seed)
    cls, sep, mask = 101, 102, 103
    payloads = []
    for _ in range(n):
        len_a = rng.randint(10, 50)
        len_b = rng.randint(10, 50)
        tokens = [cls] + rng.randint(1000, 30000, len_a).tolist() + [sep]
        segment_ids = [0] * len(tokens)
        tokens += rng.randint(1000, 30000, len_b).tolist() + [sep]
        segment_ids += [1] * (len_b + 1)
        candidates = [i for i, t in enumerate(tokens) if t not in (cls, sep)]
        n_pred = min(max_predictions, max(1, int(round(len(tokens) * 0.15))))
        positions = sorted(rng.choice(candidates, n_pred, replace=False).tolist())
        masked_ids = [tokens[p] for p in positions]
        for p in positions:
            tokens[p] = mask
        input_mask = [1] * len(tokens)
        pad = max_seq_length - len(tokens)
        tokens += [0] * pad
        input_mask += [0] * pad
        segment_ids += [0] * pad
        weights = [1.0] * n_pred + [0.0] * (max_predictions - n_pred)
        positions += [0] * (max_predictions - n_pred)
        masked_ids += [0] * (max_predictions - n_pred)
        payloads.append(ser(example({
            "input_ids": int64_feature(tokens),
            "input_mask": int64_feature(input_mask),
            "segment_ids": int64_feature(segment_ids),
            "masked_lm_positions": int64_feature(positions),
            "masked_lm_ids": int64_feature(masked_ids),
            "masked_lm_weights": float_feature(weights),
            "next_sentence_labels": int64_feature([rng.randint(0, 2)]),
        })))
    return payloads


# Seven-segment digits: segments a..g as (row0, row1, col0, col1) on a 28x28 canvas.
SEGMENTS = {
    "a": (4, 7, 8, 20), "b": (6, 14, 18, 21), "c": (14, 22, 18, 21), "d": (21, 24, 8, 20),
    "e": (14, 22, 7, 10), "f": (6, 14, 7, 10), "g": (12, 15, 8, 20),
}


DIGITS = ["abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg"]


def mnist_payloads(n, seed):
    rng = np.random.RandomState(seed)
    payloads = []
    for _ in range(n):
        label = rng.randint(0, 10)
        canvas = np.zeros((28, 28), dtype=np.float64)
        for segment in DIGITS[label]:
            r0, r1, c0, c1 = SEGMENTS[segment]
            canvas[r0:r1, c0:c1] = 255
        dy, dx = rng.randint(-2, 3, 2)
        canvas = np.roll(canvas, (dy, dx), axis=(0, 1)) * rng.uniform(0.6, 1.0)
        pixels = np.clip(canvas + rng.normal(0, 8, canvas.shape), 0, 255).astype(np.uint8)
        png = tf.io.encode_png(pixels[:, :, None]).numpy()
        payloads.append(ser(example({"image": bytes_feature([png]), "label": int64_feature([label])})))
    return payloads


def of_all_kinds_parts():
    rng = np.random.RandomState(5)
    records = []
    for i in range(7):
        doubles = [0.5, -2.0, 1e300, 0.1, 5e-324, -0.0, float("nan"), float("inf")][: 2 + i]
        if i % 2 == 0:
            # Every value exactly representable as f32: of->tf narrows these losslessly.
            doubles = [0.5, -2.0, 1.25, -0.0, float("inf")][: 1 + i % 5]
        records.append(ofrecord({
            "encoded": of_feature("bytes_list", [rng.bytes(int(rng.randint(0, 40)))]),
            "names": of_feature("bytes_list", [b"alpha", b"", "βeta".encode()][: i % 4]),
            "float": of_feature("float_list", [f32(0x3DCCCCCD), f32(0x80000000), f32(0x7F7FFFFF),
                                               f32(0x00000001), float(i)]),
            "double": of_feature("double_list", doubles),
            "class/label": of_feature("int32_list", [i - 3]),
            "int32": of_feature("int32_list", [-1, -2**31, 2**31 - 1, 0, 7 * i][: 1 + i % 5]),
            "int64": of_feature("int64_list", [-2**63, 2**63 - 1, -1, 0, i]),
            "empty_double": of_feature("double_list", []),
            "empty_int32": of_feature("int32_list", []),
        }))
    return [records[:4], records[4:]]


def of_no_double_parts():
    rng = np.random.RandomState(6)
    records = []
    for i in range(5):
        records.append(ofrecord({
            "encoded": of_feature("bytes_list", [tf.io.encode_jpeg(synthetic_image(rng, 8, 8)).numpy()]),
            "label": of_feature("int64_list", [i, -i, 2**40]),
            "scores": of_feature("float_list", rng.randn(1 + i).tolist()),
            "tags": of_feature("bytes_list", [b"t%d" % j for j in range(i)]),
        }))
    return [records]
