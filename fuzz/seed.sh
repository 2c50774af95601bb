#!/bin/sh
# Seeds fuzz/corpus/<target>/ from testdata/: whole files (behind the reader targets' three
# config bytes) for the readers, single records (behind the transcoders' spec byte) for the
# transcoders and the text printers. Run from anywhere; needs python3 (standard library only).
# Existing corpus files are kept; seeds are named by their SHA-1, as libFuzzer names its own.
set -eu
cd "$(dirname "$0")"
exec python3 - "$@" <<'EOF'
import glob, gzip, hashlib, os, struct, zlib

TESTDATA = os.path.join("..", "testdata")
MAX_SEED = 16 * 1024          # bigger seeds only slow every mutation down
RECORDS_PER_FILE = 24         # enough variety; the tutorial file alone has 500
counts = {}

def seed(target, data):
    if len(data) > MAX_SEED:
        return
    folder = os.path.join("corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
    counts[target] = counts.get(target, 0) + 1

def tf_records(framed):
    """Records of a framed TFRecord stream, up to the first damage (CRCs not checked)."""
    out, pos = [], 0
    while pos + 12 <= len(framed):
        (n,) = struct.unpack_from("<Q", framed, pos)
        if pos + 16 + n > len(framed):
            break
        out.append(framed[pos + 12 : pos + 12 + n])
        pos += 16 + n
    return out

def of_records(stream):
    out, pos = [], 0
    while pos + 8 <= len(stream):
        (n,) = struct.unpack_from("<q", stream, pos)
        if n <= 0 or pos + 8 + n > len(stream):
            break
        out.append(stream[pos + 8 : pos + 8 + n])
        pos += 8 + n
    return out

def files(*patterns):
    found = set()
    for pattern in patterns:
        found.update(p for p in glob.glob(os.path.join(TESTDATA, pattern), recursive=True)
                     if os.path.isfile(p) and not p.endswith((".json", ".md", ".py")))
    return sorted(found)

def read(path):
    with open(path, "rb") as f:
        return f.read()

# tfrecord_reader: [mode][io][fail] + file. Mode bits: 0-1 compression (none, gzip, zlib,
# sniffed), 2 compress the rest first, 3-4 read/skip pattern, 5 recover, 6-7 CRC checks off.
tf_files = files("golden/*", "damaged/*", "datasets/**/*")
for path in tf_files:
    data = read(path)
    if path.endswith(".gz"):
        modes, framed = [0x01, 0x03, 0x21], gzip.decompress(data) if "cut" not in path else b""
    elif path.endswith(".zz"):
        modes, framed = [0x02, 0x03], b""
    else:
        modes, framed = [0x00, 0x03, 0x08, 0x10, 0x20, 0x60, 0xa0], data
    for i, mode in enumerate(modes):
        seed("tfrecord_reader", bytes([mode, (i * 5) & 0x3f, 0]) + data)
    if framed:
        seed("tfrecord_reader", bytes([0x05, 0x0f, 0]) + framed)
        seed("tfrecord_reader", bytes([0x06, 0x03, 0]) + framed)
    seed("tfrecord_reader", bytes([0x00, 0x0f, 0x80]) + data)

# Records of 16 KiB and more take the readers' direct path, and records past 256 KiB do not
# fit their buffer; no test file has such records in a small file, so write some. The plain
# seeds stay just above 16 KiB; compressed, a large record of zeros takes a few hundred bytes.
def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF

def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

def framed_record(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))

def seed_large(target, data):
    global MAX_SEED
    kept, MAX_SEED = MAX_SEED, len(data)
    seed(target, data)
    MAX_SEED = kept

small, direct = framed_record(b"first"), framed_record(bytes(range(256)) * 65)
huge = framed_record(bytes(300 * 1024))
seed_large("tfrecord_reader", bytes([0x00, 0x4c, 0]) + small + direct + small)
seed_large("tfrecord_reader", bytes([0x08, 0x8d, 0]) + small + direct + small)
seed_large("tfrecord_reader", bytes([0x01, 0x0f, 0]) + gzip.compress(small + huge + small))
seed_large("tfrecord_reader", bytes([0x02, 0xc0, 0]) + zlib.compress(small + huge + small))
seed_large("tfrecord_reader", bytes([0x21, 0x0f, 0]) + gzip.compress(huge[:-1] + b"\0" + small))
payload = bytes(range(256)) * 65
seed_large("ofrecord_reader", bytes([0x00, 0x4c, 0]) + struct.pack("<q", len(payload)) + payload)

# ofrecord_reader: [mode][io][fail] + part file. Mode bits: 0-1 read/skip pattern, 2 go on
# past zero-length records.
of_files = files("ofrecord/**/part-*", "ofdatasets/**/part-*")
for path in of_files:
    data = read(path)
    for i, mode in enumerate([0x00, 0x01, 0x02, 0x04]):
        seed("ofrecord_reader", bytes([mode, (i * 7) & 0x3f, 0]) + data)
    seed("ofrecord_reader", bytes([0x00, 0x0f, 0x80]) + data)

# Transcoders: [spec] + one record, the spec byte cycling through all 16 variants.
tf_payloads = []
for path in tf_files:
    if "damaged" in path:
        continue
    data = read(path)
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    elif path.endswith(".zz"):
        data = zlib.decompress(data)
    tf_payloads += tf_records(data)[:RECORDS_PER_FILE]
of_payloads = []
for path in of_files:
    of_payloads += of_records(read(path))[:RECORDS_PER_FILE]

for i, record in enumerate(tf_payloads):
    seed("tf_to_of", bytes([i % 16]) + record)
    seed("text_format", record)
for i, record in enumerate(of_payloads):
    seed("of_to_tf", bytes([i % 16]) + record)
    seed("text_format", record)

# arrayrecord_reader: [mode] + chunks, rebuilt from the golden files' chunks of records
# (mode bit 0: build the file from chunk specs, bit 2: append the footer and postscript, bits
# 3-5: the group size to write back with), plus the start of a file as it is (mode 0).
def riegeli_chunks(data):
    """(type, records, decoded size, data) of each chunk of a Riegeli file."""
    def logical(pos, n):
        out = bytearray()
        while n > 0 and pos < len(data):
            if pos % 65536 == 0:
                pos += 24
                continue
            take = min(n, 65536 - pos % 65536)
            out += data[pos : pos + take]
            pos += take
            n -= take
        return bytes(out), pos
    chunks, pos = [], 0
    while pos < len(data):
        begin = pos
        header, pos = logical(pos, 40)
        if len(header) < 40:
            break
        _, size, _, type_and_count, decoded = struct.unpack("<QQQQQ", header)
        body, pos = logical(pos, size)
        records = type_and_count >> 8
        chunks.append((type_and_count & 0xFF, records, decoded, body))
        with_records = begin + records
        remaining = -with_records % 65536
        pos = max(pos, with_records + max(0, remaining - (65536 - 24 - 1)))
    return chunks

KINDS = {ord("r"): 3, ord("t"): 41, ord("m"): 1}
for i, path in enumerate(files("arrayrecord/*.array_record")):
    data = read(path)
    chunks = [c for c in riegeli_chunks(data) if c[0] in KINDS][:-2]
    spec = b"".join(bytes([KINDS[t]]) + struct.pack("<III", n, d, len(body)) + body
                    for t, n, d, body in chunks)
    seed("arrayrecord_reader", bytes([0x05 | (i % 8) << 3]) + spec)
    seed("arrayrecord_reader", bytes([0x01]) + spec)
    seed("arrayrecord_reader", bytes([0x00]) + data[: MAX_SEED - 1])

# A transposed chunk whose transitions, 20 KiB of zstd, announce and hold 640 MiB of zeros:
# within the 64 bytes a record byte its declared 64 MiB allow, past the reader's limit. A
# reader that decompressed them before checking them against its limit took them whole.
def zstd_zeros(length):
    """A zstd frame of `length` zeros (a multiple of 128 KiB), one repeated byte a block."""
    frame, blocks = bytearray(b"\x28\xb5\x2f\xfd\x00\x38"), length // (128 << 10)
    for block in range(blocks):
        frame += ((block + 1 == blocks) | 1 << 1 | (128 << 10) << 3).to_bytes(3, "little") + b"\0"
    return bytes(frame)

def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))

node_header = bytes([0, 0, 1, 0, 0, 0])  # no bucket, no buffer, one node that does nothing
header_block = varint(len(node_header)) + b"\x28\xb5\x2f\xfd\x20" + bytes([len(node_header)]) \
    + (1 | len(node_header) << 3).to_bytes(3, "little") + node_header
transitions = 640 << 20
transposed = b"z" + varint(len(header_block)) + header_block + varint(transitions) \
    + zstd_zeros(transitions)
simple = bytes([0, 1, 3]) + b"abc"
spec = bytes([41]) + struct.pack("<III", 1, 64 << 20, len(transposed)) + transposed
spec += 2 * (bytes([3]) + struct.pack("<III", 1, 3, len(simple)) + simple)
seed_large("arrayrecord_reader", bytes([0x05]) + spec)

# A transposed chunk of 4,096 nodes that do nothing and move on implicitly, each to the next,
# back to one that reads a transition: each of its 1 Mi transitions (zeros) walks the chain,
# 2^32 moves, which a reader made before it held them to what it wrote (minutes, unoptimised;
# crates/arrayrecord/tests/hostile.rs builds the same chunk). The header in a raw zstd block.
chain = 4096
chain_header = bytes([0, 0]) + varint(chain + 1) + bytes(chain + 1) \
    + b"".join(varint(chain + 1 + node + 1) for node in range(chain)) + varint(0) + varint(chain)
header_block = varint(len(chain_header)) + b"\x28\xb5\x2f\xfd\x60" \
    + (len(chain_header) - 256).to_bytes(2, "little") \
    + (1 | len(chain_header) << 3).to_bytes(3, "little") + chain_header
transitions = 1 << 20
transposed = b"z" + varint(len(header_block)) + header_block + varint(transitions) \
    + zstd_zeros(transitions)
spec = bytes([41]) + struct.pack("<III", 1, 16 << 10, len(transposed)) + transposed
spec += 2 * (bytes([3]) + struct.pack("<III", 1, 3, len(simple)) + simple)
seed("arrayrecord_reader", bytes([0x05]) + spec)

for target in sorted(counts):
    total = len(os.listdir(os.path.join("corpus", target)))
    print(f"{target}: {counts[target]} seeds written, {total} files in corpus/{target}")
EOF
