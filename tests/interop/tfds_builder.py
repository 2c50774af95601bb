"""A dataset TFDS's own builder writes goes through tf2of and of2tf, and TFDS loads it back.

    tfds_builder.py OFCONVERT WORK
    tfds_builder.py --prepare FORMAT DIR

Builds `pets` (a `tfds.core.GeneratorBasedBuilder` defined here: 8x8 RGB images, a
`ClassLabel(names=['cat', 'dog', 'bird'])`, a float weight; train and test in two shards
each) into WORK/built with TFDS itself, offline. Then, with the ofconvert binary OFCONVERT:
`tf2of` into WORK/of, where every split's manifest must name the label's classes and list
TFDS's files beside the parts; `diff` of the two, which must find them the same; `of2tf`
into WORK/back, which must hold the very files TFDS wrote (names and bytes) and only
ofconvert's manifests besides. Last, `tfds.builder_from_directory` opens the folder that
came back: the label's names must be ['cat', 'dog', 'bird'] and every example of every split
equal to the original's, in order.

Then the same builder prepares the dataset as ArrayRecord (`file_format='array_record'`, TFDS's
other format, which its `as_dataset` does not read) into WORK/built-array_record: `tf2of` must write the
very parts it wrote from the TFRecord preparation, `diff` must find the two the same, and
`of2tf` gives back TFRecord shards that `tfds.builder_from_directory` loads with the original's
examples. Last, `of2tf --to array_record` writes the conversion back as ArrayRecord shards under
TFDS's names, which TFDS's own ArrayRecord data source (`as_data_source`, Google's
`array_record` reader) reads as the original's examples.

Last, the builder prepares it as Parquet (`file_format='parquet'`): `tf2of` must write the very
parts it wrote from the TFRecord preparation, and `of2tf` gives back TFRecord shards that
`tfds.builder_from_directory` loads with the original's examples.

With `--prepare`, TFDS only prepares the same dataset into DIR, in FORMAT (`tfrecord`,
`array_record` or `parquet`), for another check to convert (tests/interop/oneflow.sh has OneFlow read its
ArrayRecord preparation).

No network: TFDS_DATA_DIR must name an empty directory, still empty at the end, and any
attempt to connect a socket fails the check. Exits 1 on the first difference.
"""

import json
import os
import socket
import subprocess
import sys


def no_network(*_args, **_kwargs):
    raise AssertionError("TensorFlow Datasets tried to reach the network")


socket.socket.connect = no_network
socket.create_connection = no_network

import numpy as np  # noqa: E402
import tensorflow_datasets as tfds  # noqa: E402  (after the network is cut)

NAMES = ["cat", "dog", "bird"]
MANIFEST = "ofconvert-manifest.json"


class Pets(tfds.core.GeneratorBasedBuilder):
    """Small deterministic images of three classes."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict({
                "image": tfds.features.Image(shape=(8, 8, 3)),
                "label": tfds.features.ClassLabel(names=NAMES),
                "weight": tfds.features.Tensor(shape=(), dtype=np.float32),
            }),
            supervised_keys=("image", "label"),
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(24, 1), "test": self._generate_examples(9, 2)}

    def _generate_examples(self, count, seed):
        rng = np.random.default_rng(seed)
        for index in range(count):
            yield index, {
                "image": rng.integers(0, 256, (8, 8, 3), dtype=np.uint8),
                "label": int(rng.integers(0, len(NAMES))),
                "weight": np.float32(rng.random()),
            }


def fail(message):
    print(f"FAIL {message}", file=sys.stderr)
    sys.exit(1)


def run(*command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{' '.join(command)} exited with {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout


def files(root):
    """Every file under root: relative path -> bytes."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


def examples(builder, split):
    config = tfds.ReadConfig(interleave_cycle_length=1)
    dataset = builder.as_dataset(split=split, shuffle_files=False, read_config=config)
    return list(tfds.as_numpy(dataset))


def same(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return np.array_equal(np.asarray(a), np.asarray(b))


def prepare(file_format, data_dir):
    """Pets prepared by TFDS into data_dir, as file_format, in two shards a split."""
    builder = Pets(data_dir=data_dir, file_format=file_format)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(num_shards=2))
    return builder


def main(argv):
    data_dir = os.environ.get("TFDS_DATA_DIR")
    if not data_dir or os.listdir(data_dir):
        fail("TFDS_DATA_DIR must name an empty directory")
    if len(argv) == 4 and argv[1] == "--prepare":
        prepare(argv[2], argv[3])
        if os.listdir(data_dir):
            fail(f"TensorFlow Datasets wrote into TFDS_DATA_DIR: {os.listdir(data_dir)}")
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    ofconvert, work = argv[1:3]

    built = os.path.join(work, "built")
    builder = prepare("tfrecord", built)
    folder = os.path.join(built, "pets", "1.0.0")
    original = files(folder)
    if "label.labels.txt" not in original:
        fail(f"TFDS wrote no label.labels.txt: {sorted(original)}")

    of = os.path.join(work, "of")
    run(ofconvert, "--quiet", "tf2of", built, of)
    for split in ("train", "test"):
        with open(os.path.join(of, "pets", "1.0.0", f"pets-{split}", MANIFEST)) as f:
            manifest = json.load(f)
        label = [f for f in manifest["schema"]["features"] if f["name"] == "label"]
        if not label or label[0].get("class_names") != NAMES:
            fail(f"{split}: the manifest's label has no class names {NAMES}: {label}")
        carried = sorted(side["name"] for side in manifest.get("side_files", []))
        if carried != ["dataset_info.json", "features.json", "label.labels.txt"]:
            fail(f"{split}: side files {carried}")
    verdict = run(ofconvert, "--quiet", "diff", built, of)
    if not verdict.startswith("same: 33 records in 2 datasets"):
        fail(f"diff of the built dataset and its conversion: {verdict}")

    back = os.path.join(work, "back")
    run(ofconvert, "--quiet", "of2tf", of, back)
    written_folder = os.path.join(back, "pets", "1.0.0")
    written = files(written_folder)
    manifests = sorted(name for name in written if name.endswith(MANIFEST))
    if manifests != [f"pets-test.{MANIFEST}", f"pets-train.{MANIFEST}"]:
        fail(f"manifests given back: {manifests}")
    for name in manifests:
        del written[name]
    if sorted(written) != sorted(original):
        fail(f"files given back {sorted(written)}, TFDS wrote {sorted(original)}")
    for name, data in original.items():
        if written[name] != data:
            fail(f"{name} came back with other bytes")

    loaded = tfds.builder_from_directory(written_folder)
    if loaded.info.features["label"].names != NAMES:
        fail(f"labels named {loaded.info.features['label'].names}, not {NAMES}")
    for split in ("train", "test"):
        expected = examples(builder, split)
        got = examples(loaded, split)
        if len(got) != len(expected) or len(got) != loaded.info.splits[split].num_examples:
            fail(f"{split}: {len(got)} examples, the original {len(expected)}")
        for index, (a, b) in enumerate(zip(expected, got)):
            if not same(a, b):
                fail(f"{split} example #{index} differs from the original")
        print(f"ok  tfds builder pets {split}: {len(got)} examples, labels {NAMES}")

    array_record(ofconvert, work, builder, of)
    parquet(ofconvert, work, builder, of)
    if os.listdir(data_dir):
        fail(f"TensorFlow Datasets wrote into TFDS_DATA_DIR: {os.listdir(data_dir)}")
    return 0


def parts(root):
    """The OneFlow parts under root: relative path -> bytes."""
    return {name: data for name, data in files(root).items() if os.path.basename(name).startswith("part-")}


def converts_as_tfrecord(ofconvert, work, of, file_format):
    """The dataset prepared as file_format converts to the parts its TFRecord preparation gave
    (under `of`), and diff finds it the same: its conversion, and the names of its shards."""
    built = os.path.join(work, f"built-{file_format}")
    prepare(file_format, built)
    shards = sorted(name for name in files(built) if f".{file_format}-" in name)
    if len(shards) != 4:
        fail(f"TFDS wrote no {file_format} shards: {sorted(files(built))}")
    converted = os.path.join(work, f"of-{file_format}")
    run(ofconvert, "--quiet", "tf2of", built, converted)
    from_tfrecord, from_format = parts(of), parts(converted)
    if sorted(from_format) != sorted(from_tfrecord) or not from_tfrecord:
        fail(f"parts from {file_format} {sorted(from_format)}, from TFRecord {sorted(from_tfrecord)}")
    for name, data in from_tfrecord.items():
        if from_format[name] != data:
            fail(f"{name}: the {file_format} preparation converted to other bytes")
    verdict = run(ofconvert, "--quiet", "diff", built, converted)
    if not verdict.startswith("same: 33 records in 2 datasets"):
        fail(f"diff of the {file_format} preparation and its conversion: {verdict}")
    return converted, shards


def comes_back_as_tfrecord(ofconvert, work, builder, converted, shards, file_format):
    """of2tf gives the conversion of the file_format preparation (its shards named `shards`)
    back as TFRecord shards of TFDS's names, which TFDS loads as the original's examples."""
    back = os.path.join(work, f"back-{file_format}")
    run(ofconvert, "--quiet", "of2tf", converted, back)
    folder = os.path.join(back, "pets", "1.0.0")
    given = sorted(os.path.basename(name) for name in files(folder) if "-of-" in name)
    expected_names = sorted(os.path.basename(name).replace(f".{file_format}-", ".tfrecord-") for name in shards)
    if given != expected_names:
        fail(f"shards given back {given}, expected {expected_names}")
    loaded = tfds.builder_from_directory(folder)
    for split in ("train", "test"):
        expected = examples(builder, split)
        got = examples(loaded, split)
        if len(got) != len(expected) or any(not same(a, b) for a, b in zip(expected, got)):
            fail(f"{split}: the {file_format} preparation came back with other examples")
        print(f"ok  tfds builder pets, prepared as {file_format}, {split}: {len(got)} examples")


def array_record(ofconvert, work, builder, of):
    """The dataset prepared as ArrayRecord converts to the parts its TFRecord preparation gave
    and comes back as TFRecord shards TFDS loads."""
    converted, shards = converts_as_tfrecord(ofconvert, work, of, "array_record")
    comes_back_as_tfrecord(ofconvert, work, builder, converted, shards, "array_record")

    written = os.path.join(work, "back-to-ar")
    run(ofconvert, "--quiet", "of2tf", "--to", "array_record", of, written)
    folder = os.path.join(written, "pets", "1.0.0")
    given = sorted(name for name in files(folder) if "-of-" in name)
    if [os.path.basename(name) for name in given] != [os.path.basename(name) for name in shards]:
        fail(f"ArrayRecord shards written {given}, TFDS names them {shards}")
    loaded = tfds.builder_from_directory(folder)
    for split in ("train", "test"):
        expected = examples(builder, split)
        source = loaded.as_data_source(split=split)
        got = [source[i] for i in range(len(source))]
        if len(got) != len(expected) or any(not same(a, b) for a, b in zip(expected, got)):
            fail(f"{split}: TFDS's ArrayRecord data source read other examples from of2tf --to array_record")
        print(f"ok  of2tf --to array_record, read by TFDS's ArrayRecord data source, {split}: {len(got)} examples")


def parquet(ofconvert, work, builder, of):
    """The dataset prepared as Parquet (one binary column `data` of serialized Examples)
    converts to the parts its TFRecord preparation gave and comes back as the TFRecord shards
    that preparation wrote, which TFDS loads."""
    converted, shards = converts_as_tfrecord(ofconvert, work, of, "parquet")
    comes_back_as_tfrecord(ofconvert, work, builder, converted, shards, "parquet")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
