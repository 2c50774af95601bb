"""Reading and writing ArrayRecord: ofconvert against Google's `array_record` package and
against ofconvert's own TFRecord path, on the same records.

    python bench/python/bench_arrayrecord.py --dir /tmp/ar-bench --cpu 0 \
        --array-record-python /path/to/venv-with-array-record/bin/python

Writes two corpora into --dir once (kept for later runs): `large` (2,000 records of 100 KB of
random bytes, which zstd cannot shrink: the ImageNet shape) and `small` (400,000 Examples of
about 100 bytes), each as one TFRecord file and one ArrayRecord file of the same serialized
Examples (ofconvert's writers; ArrayRecord with array_record's defaults, a record a chunk,
zstd); `grouped`, the small corpus's records as `ofconvert.ArrayRecordWriter` writes them with
`options="group_size:1000"`; and `transposed`, the same as `array_record` writes them with
`group_size:1000,transpose:true` (these two: read rows only, against the small TFRecord
file). Then, each in a process of its own pinned to one core with --cpu, after one untimed run
(the page cache warm), --runs times:

- `ofconvert.read(file, raw=True)` over the ArrayRecord file, and over the TFRecord file;
- `array_record`'s `ArrayRecordReader(file).read_all()` and its `read()` record by record
  (in the Python given with --array-record-python; its rows say so when it is missing);
- at random: a shuffled epoch in batches of 256, `RecordDataset(file).batch(indices)` over the
  ArrayRecord file (through its footer) and over the TFRecord file (through its index,
  built beside it by the untimed run), both again with `verify=False` (no data hashes, no
  checksums), and `array_record`'s `ArrayRecordDataSource` (what Grain reads)
  `__getitems__(indices)`, which gives the records' bytes undecoded; each run opens its
  dataset (the modules are imported before the clock starts, everywhere);
- writing: `ofconvert.ArrayRecordWriter` and `TFRecordWriter` of the records, `array_record`'s
  own `ArrayRecordWriter` (`group_size:1`, its default zstd), and a copy of the ArrayRecord
  file (the bytes written, as `cp` writes them); then both ArrayRecord writers with
  `group_size:64` and with `group_size:64,uncompressed`, each beside a copy of the file it
  wrote.

`--only read|random|write` runs one group of rows.

Prints a Markdown table: the median run's records/s and MB/s (of the ArrayRecord file's
bytes), and the ratios the issue asks for.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

LARGE = (2_000, 100_000)
SMALL = (400_000, 100)

MAKE = r"""
import os, sys, random, ofconvert
kind, out = sys.argv[1], sys.argv[2]
count, size = {"large": (%d, %d), "small": (%d, %d)}[kind]
rng = random.Random(1)
with ofconvert.TFRecordWriter(out + ".tfrecord") as tf, ofconvert.ArrayRecordWriter(out + ".array_record") as ar:
    for i in range(count):
        record = {"id": i, "data": rng.randbytes(size)}
        tf.write(record)
        ar.write(record)
""" % (LARGE + SMALL)

# The small corpus's records, written by array_record itself in transposed chunks of 1,000.
MAKE_TRANSPOSED = r"""
import sys
from array_record.python.array_record_module import ArrayRecordReader, ArrayRecordWriter
source, out = sys.argv[1], sys.argv[2]
writer = ArrayRecordWriter(out, "group_size:1000,transpose:true")
for record in ArrayRecordReader(source).read_all():
    writer.write(record)
writer.close()
"""

# The small corpus's records in chunks of 1,000 (zstd:3), as ofconvert writes them when asked.
MAKE_GROUPED = r"""
import sys, ofconvert
source, out = sys.argv[1], sys.argv[2]
with ofconvert.ArrayRecordWriter(out, options="group_size:1000") as writer:
    for record in ofconvert.read(source, raw=True):
        writer.write(record)
"""

OURS = r"""
import sys, time
from ofconvert import read  # imported before the clock starts, as the others' modules
start = time.perf_counter()
n = sum(1 for _ in read(sys.argv[1], raw=True))
print(n, time.perf_counter() - start)
"""

GOOGLE_ALL = r"""
import sys, time
from array_record.python.array_record_module import ArrayRecordReader
start = time.perf_counter()
reader = ArrayRecordReader(sys.argv[1])
n = len(reader.read_all())
print(n, time.perf_counter() - start)
"""

GOOGLE_EACH = r"""
import sys, time
from array_record.python.array_record_module import ArrayRecordReader
start = time.perf_counter()
reader = ArrayRecordReader(sys.argv[1])
n = 0
for _ in range(reader.num_records()):
    reader.read()
    n += 1
print(n, time.perf_counter() - start)
"""

RANDOM = r"""
import random, sys, time
if sys.argv[2] == "ofconvert":
    from ofconvert.data import RecordDataset as Dataset
else:
    from array_record.python.array_record_data_source import ArrayRecordDataSource
    Dataset = lambda path, verify: ArrayRecordDataSource([path])
start = time.perf_counter()
ds = Dataset(sys.argv[1], verify=sys.argv[3:] != ["unchecked"])
read = ds.batch if sys.argv[2] == "ofconvert" else ds.__getitems__
order = list(range(len(ds)))
random.Random(0).shuffle(order)
for at in range(0, len(order), 256):
    read(order[at:at + 256])
print(len(order), time.perf_counter() - start)
"""

WRITE = r"""
import sys, time, ofconvert
source, out, kind = sys.argv[1], sys.argv[2], sys.argv[3]
records = list(ofconvert.read(source, raw=True))
if kind == "array_record":
    options = sys.argv[4] if len(sys.argv) > 4 else None
    make = lambda: ofconvert.ArrayRecordWriter(out, options=options)
else:
    make = lambda: ofconvert.TFRecordWriter(out)
start = time.perf_counter()
with make() as writer:
    for record in records:
        writer.write(record)
print(len(records), time.perf_counter() - start)
"""

GOOGLE_WRITE = r"""
import sys, time
from array_record.python.array_record_module import ArrayRecordReader, ArrayRecordWriter
source, out = sys.argv[1], sys.argv[2]
records = ArrayRecordReader(source).read_all()
options = sys.argv[3] if len(sys.argv) > 3 else "group_size:1"
start = time.perf_counter()
writer = ArrayRecordWriter(out, options)
for record in records:
    writer.write(record)
writer.close()
print(len(records), time.perf_counter() - start)
"""

COPY = r"""
import shutil, sys, time
start = time.perf_counter()
shutil.copyfile(sys.argv[1], sys.argv[2])
print(0, time.perf_counter() - start)
"""


def pinned(cpu):
    if cpu is None:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def timed(python, script, args, runs, cpu):
    """The median of `runs` timed runs (after an untimed one): (records, seconds)."""
    results = []
    for attempt in range(runs + 1):
        done = subprocess.run(
            [python, "-c", script, *args], capture_output=True, text=True,
            preexec_fn=pinned(cpu), check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
        records, seconds = done.stdout.split()
        if attempt:
            results.append((int(records), float(seconds)))
    seconds = statistics.median(s for _, s in results)
    return results[0][0], seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, help="where the corpora are made and kept")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--array-record-python", default=None,
                        help="a Python with array_record (default: this one)")
    parser.add_argument("--only", choices=("read", "random", "write"), default=None)
    args = parser.parse_args()
    wanted = lambda group: args.only in (None, group)  # noqa: E731
    google = args.array_record_python or sys.executable
    os.makedirs(args.dir, exist_ok=True)
    print("| corpus | reader | records/s | MB/s | ratio |")
    print("|---|---|---:|---:|---|")
    for corpus in ("large", "small", "grouped", "transposed"):
        read_only = corpus in ("grouped", "transposed")
        if read_only and not wanted("read"):
            continue
        base = os.path.join(args.dir, corpus)
        if read_only:
            small = os.path.join(args.dir, "small")
            if not os.path.exists(base + ".array_record"):
                python, make = (sys.executable, MAKE_GROUPED) if corpus == "grouped" else (google, MAKE_TRANSPOSED)
                subprocess.run([python, "-c", make, small + ".array_record", base + ".array_record"],
                               check=True)
            array, tf = base + ".array_record", small + ".tfrecord"
        else:
            if not os.path.exists(base + ".array_record"):
                subprocess.run([sys.executable, "-c", MAKE, corpus, base], check=True)
            array, tf = base + ".array_record", base + ".tfrecord"
        size = os.path.getsize(array) / 1e6
        rows = {}

        def row(name, python, script, extra, note=""):
            try:
                records, seconds = timed(python, script, extra, args.runs, args.cpu)
            except (RuntimeError, OSError) as err:
                print(f"| {corpus} | {name} | - | - | {err} |")
                return None
            rate = records / seconds if records else 0
            rows[name] = seconds
            print(f"| {corpus} | {name} | {rate:,.0f} | {size / seconds:,.0f} | {note} |", flush=True)
            return seconds

        if wanted("read"):
            ours = row("ofconvert.read, ArrayRecord", sys.executable, OURS, [array])
            theirs_tf = row("ofconvert.read, TFRecord", sys.executable, OURS, [tf])
            if ours and theirs_tf:
                print(f"| {corpus} | ArrayRecord / TFRecord cost | | | {ours / theirs_tf:.2f}x |")
            for name, script in (("array_record read_all()", GOOGLE_ALL),
                                 ("array_record read() each", GOOGLE_EACH)):
                theirs = row(name, google, script, [array])
                if ours and theirs:
                    print(f"| {corpus} | ofconvert vs {name} | | | {theirs / ours:.2f}x faster |")
        if read_only:
            continue
        if wanted("random"):
            ours = row("RecordDataset.batch at random, ArrayRecord", sys.executable, RANDOM, [array, "ofconvert"])
            theirs_tf = row("RecordDataset.batch at random, TFRecord", sys.executable, RANDOM, [tf, "ofconvert"])
            if ours and theirs_tf:
                print(f"| {corpus} | at random: ArrayRecord / TFRecord cost | | | {ours / theirs_tf:.2f}x |")
            unchecked = row("the same, verify=False, ArrayRecord", sys.executable, RANDOM, [array, "ofconvert", "unchecked"])
            unchecked_tf = row("the same, verify=False, TFRecord", sys.executable, RANDOM, [tf, "ofconvert", "unchecked"])
            if unchecked and unchecked_tf:
                print(f"| {corpus} | verify=False: ArrayRecord / TFRecord cost | | | {unchecked / unchecked_tf:.2f}x |")
            theirs = row("ArrayRecordDataSource.__getitems__", google, RANDOM, [array, "array_record"])
            if ours and theirs:
                print(f"| {corpus} | at random: ofconvert vs ArrayRecordDataSource | | | {theirs / ours:.2f}x faster |")
        if not wanted("write"):
            continue
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            out = os.path.join(tmp, "out")
            write_ar = row("ArrayRecordWriter", sys.executable, WRITE, [array, out, "array_record"])
            row("TFRecordWriter", sys.executable, WRITE, [array, out, "tfrecord"])
            google_write = row("array_record ArrayRecordWriter", google, GOOGLE_WRITE, [array, out])
            if write_ar and google_write:
                print(f"| {corpus} | ArrayRecordWriter vs array_record's | | | {google_write / write_ar:.2f}x faster |")
            copy = row("copy of the ArrayRecord file", sys.executable, COPY, [array, out])
            if write_ar and copy:
                print(f"| {corpus} | ArrayRecordWriter / copy | | | {write_ar / copy:.2f}x |")
            # Chunks of 64 records (the "within 1.5x a copy" of the bytes written: the
            # copy is of the file this writer wrote), zstd and uncompressed.
            for options in ("group_size:64", "group_size:64,uncompressed"):
                # Left by the writer's runs, for the copy below.
                written = os.path.join(tmp, "grouped")
                ours = row(f"ArrayRecordWriter {options}", sys.executable, WRITE,
                           [array, written, "array_record", options])
                theirs = row(f"array_record ArrayRecordWriter {options}", google, GOOGLE_WRITE,
                             [array, out, options])
                if ours and theirs:
                    print(f"| {corpus} | {options}: ours vs array_record's | | | {theirs / ours:.2f}x faster |")
                copied = row(f"copy of the {options} file", sys.executable, COPY, [written, out])
                if ours and copied:
                    print(f"| {corpus} | {options}: writer / copy of its file | | | {ours / copied:.2f}x |")


if __name__ == "__main__":
    main()
