"""Runs the code `ofconvert schema --oneflow` printed for each dataset in OneFlow, over every
record, and compares every decoded value with TensorFlow's parse of the input.

    oneflow_read.py OF_ROOT CODE_DIR TF_DIR

CODE_DIR/KEY.py is what `ofconvert schema --oneflow OF_ROOT/PATH` printed, KEY being PATH with
`/` as `~`; TF_DIR/KEY.json and KEY.npz are what tf_values.py wrote for it.

The contract between the printed code and this harness:
- The code is run unedited with exec() in a fresh namespace. It binds `reader` to an
  `flow.nn.OFRecordReader(...)`, then `record = reader()`, then one line per decoded feature,
  `VARIABLE = flow.nn.OFRecord...Decoder("NAME", ...)(record)` ("NAME" a JSON string
  literal); a feature it cannot decode gets a comment line `# "NAME": why` instead.
- For every further batch, the lines after `reader = ...` are run again in the same
  namespace: the same reader goes on where it stopped.
- The reader keeps OneFlow's default random_shuffle=False, so batches come in the order of
  the parts and of the records in them, starting over at the end. The harness reads
  ceil(N / batch_size) batches and compares record k of the stream with record k mod N.

A feature with neither a decoder nor a comment, a value that differs, a decoder that
aborts, or a process that crashes fails the run. Images decoded by OFRecordImageDecoder
must have TensorFlow's shape and pixels within IMAGE_TOLERANCE (two JPEG decoders differ by
rounding in their IDCT and upsampling), images `--images jpeg` re-encoded too (one more
lossy step, at quality 100, stays within it). Under `--images raw`, pixels of a
PNG equal TensorFlow's decode exactly, of a JPEG within IMAGE_TOLERANCE, and `NAME/shape`
is TensorFlow's shape; under `--images jpeg`, where every image ends up a 3-channel RGB JPEG,
`format` / `image/format` say JPEG, `colorspace` / `image/colorspace` RGB and `channels` /
`image/channels` 3.
"""

import glob
import json
import math
import os
import re
import sys

import numpy as np
import oneflow as flow

MANIFEST = "ofconvert-manifest.json"
IMAGE_TOLERANCE = 8
LITERAL = r'"(?:[^"\\]|\\.)*"'
DECODER_LINE = re.compile(r"^(\w+) = flow\.nn\.(OFRecord\w+Decoder)\((" + LITERAL + r")(.*)\)\(record\)")
COMMENT_LINE = re.compile(r"^# (" + LITERAL + r"):")

# What `--preset imagenet` does to the inception keys: renames, and 1-based labels to 0-based.
IMAGENET_RENAMES = {
    "image/" + key: key
    for key in ["encoded", "format", "filename", "colorspace", "class/synset", "class/text",
                "object/bbox/xmin", "object/bbox/xmax", "object/bbox/ymin", "object/bbox/ymax",
                "height", "width", "channels", "class/label", "object/bbox/label"]
}
IMAGENET_OFFSETS = {"class/label": -1, "object/bbox/label": -1}

NUMPY_DTYPES = {
    "flow.float32": np.float32,
    "flow.float64": np.float64,
    "flow.int32": np.int32,
    "flow.int64": np.int64,
}


def fail(message):
    print("MISMATCH: " + message, file=sys.stderr)
    sys.exit(1)


def expected_records(tf_json, mapping):
    """TensorFlow's values with the mapping the dataset was converted with applied, and the
    input name of each feature."""
    records = tf_json["records"]
    if "--preset=imagenet" not in mapping:
        return records, {}
    mapped = []
    for record in records:
        out = {}
        for name, (kind, values) in record.items():
            new = IMAGENET_RENAMES.get(name, name)
            values = [v + IMAGENET_OFFSETS.get(new, 0) for v in values] if kind == "int64_list" else values
            out[new] = [kind, values]
        mapped.append(out)
    return mapped, {new: old for old, new in IMAGENET_RENAMES.items()}


def numeric(kind, values):
    if kind == "float_list":
        return np.array(values, dtype=np.uint32).view(np.float32)
    return np.array(values, dtype=np.int64)


def parse_code(code):
    """The decoders of the printed code, the features it comments on, and the lines to run
    again for each batch."""
    lines = code.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("reader = ")]
    if len(starts) != 1:
        fail("the code has %d `reader = ` lines" % len(starts))
    if "random_shuffle=True" in lines[starts[0]]:
        fail("the reader shuffles")
    decoders, commented = {}, set()
    for line in lines:
        match = DECODER_LINE.match(line)
        if match:
            variable, decoder, literal, rest = match.groups()
            decoders[json.loads(literal)] = (variable, decoder, rest)
            continue
        match = COMMENT_LINE.match(line)
        if match:
            commented.add(json.loads(match.group(1)))
    again = "\n".join(lines[starts[0] + 1:]) + "\n"
    return decoders, commented, again


def raw_shape(rest):
    match = re.search(r"shape=\(([\d, ]*)\)", rest)
    return tuple(int(d) for d in match.group(1).split(",") if d.strip())


def check_dataset(directory, key, code, tf_dir):
    with open(os.path.join(directory, MANIFEST)) as f:
        manifest = json.load(f)
    with open(os.path.join(tf_dir, key + ".json")) as f:
        tf_json = json.load(f)
    images = np.load(os.path.join(tf_dir, key + ".npz"))
    records, input_names = expected_records(tf_json, manifest["settings"]["mapping"])
    total = len(records)
    decoders, commented, again = parse_code(code)
    names = set().union(*(record.keys() for record in records)) if records else set()
    for name in sorted(names):
        if name not in decoders and name not in commented:
            fail("%s: feature %r has neither a decoder nor a comment" % (key, name))

    namespace = {}
    exec(compile(code, key + ".py", "exec"), namespace)
    if not decoders:
        fail("%s: the code decodes nothing" % key)
    # The reader's batch_size, as every decoder's output has it.
    batch_size = namespace[next(iter(decoders.values()))[0]].shape[0]
    batches = math.ceil(total / batch_size)
    worst_pixel, compared = 0, 0
    policy = manifest["settings"].get("images")
    jpeg_mode = isinstance(policy, dict) and "jpeg" in policy
    raw_mode = policy == "raw"
    for batch in range(batches):
        if batch > 0:
            exec(compile(again, key + ".py", "exec"), namespace)
        for name, (variable, decoder, rest) in decoders.items():
            output = namespace[variable]
            values = output.numpy()
            for k in range(batch_size):
                index = (batch * batch_size + k) % total
                where = "%s: record #%d feature %r (%s)" % (key, index, name, decoder)
                got = values[k]
                source = input_names.get(name, name)
                image_key = "%d/%s" % (index, source)
                raw_key = "raw/" + image_key
                if raw_mode and name.endswith("/shape") and name not in records[index]:
                    base = input_names.get(name[: -len("/shape")], name[: -len("/shape")])
                    kind, stored = "int64_list", list(images["raw/%d/%s" % (index, base)].shape)
                else:
                    kind, stored = records[index][name]
                if decoder == "OFRecordRawDecoder" and raw_mode and raw_key in images:
                    want = images[raw_key]
                    was_png = bytes.fromhex(stored[0]).startswith(b"\x89PNG")
                    if got.shape != want.shape:
                        fail("%s: pixels of shape %s, TensorFlow's %s" % (where, got.shape, want.shape))
                    diff = int(np.abs(got.astype(np.int16) - want.astype(np.int16)).max())
                    worst_pixel = max(worst_pixel, diff)
                    compared += 1
                    if diff > (0 if was_png else IMAGE_TOLERANCE):
                        fail("%s: pixels differ by up to %d" % (where, diff))
                elif decoder == "OFRecordRawDecoder":
                    shape = raw_shape(rest)
                    dtype = NUMPY_DTYPES[re.search(r"dtype=(flow\.\w+)", rest).group(1)]
                    want = numeric(kind, stored)
                    if jpeg_mode and name in ("channels", "image/channels"):
                        want = np.full_like(want, 3)
                    if "truncate=True" in rest:
                        padded = np.zeros(int(np.prod(shape)), dtype=want.dtype)
                        padded[: min(len(want), padded.size)] = want[: padded.size]
                        want = padded
                    want = want.astype(dtype).reshape(shape)
                    if got.dtype != want.dtype or got.shape != want.shape:
                        fail("%s: got %s %s, want %s %s" % (where, got.dtype, got.shape, want.dtype, want.shape))
                    same = got.view(np.uint8).tobytes() == want.view(np.uint8).tobytes()
                    if not same:
                        fail("%s: got %s, want %s" % (where, got.tolist(), want.tolist()))
                elif decoder == "OFRecordBytesDecoder":
                    want = bytes.fromhex(stored[0])
                    if jpeg_mode and name in ("format", "image/format"):
                        want = b"JPEG"
                    if jpeg_mode and name in ("colorspace", "image/colorspace"):
                        want = b"RGB"
                    if bytes(got.tobytes()) != want:
                        fail("%s: bytes differ" % where)
                elif decoder == "OFRecordImageDecoder":
                    want = images[image_key]
                    if got.shape != want.shape:
                        fail("%s: image shape %s, TensorFlow's %s" % (where, got.shape, want.shape))
                    diff = int(np.abs(got.astype(np.int16) - want.astype(np.int16)).max())
                    worst_pixel = max(worst_pixel, diff)
                    compared += 1
                    if diff > IMAGE_TOLERANCE:
                        fail("%s: pixels differ by up to %d" % (where, diff))
                else:
                    fail("%s: no check for this decoder" % where)
    kinds = sorted(set(decoder for _, decoder, _ in decoders.values()))
    print("ok  %s: %d records in %d batches of %d, %d features decoded (%s), %d commented%s"
          % (key.replace("~", "/"), total, batches, batch_size, len(decoders), ", ".join(kinds),
             len(commented),
             "; %d images within %d of TensorFlow's pixels" % (compared, worst_pixel)
             if compared else ""))


def main(of_root, code_dir, tf_dir):
    checked = 0
    for path in sorted(glob.glob(os.path.join(code_dir, "*.py"))):
        key = os.path.basename(path)[: -len(".py")]
        with open(path) as f:
            code = f.read()
        check_dataset(os.path.join(of_root, key.replace("~", os.sep)), key, code, tf_dir)
        checked += 1
    if checked == 0:
        fail("no code in %s" % code_dir)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
