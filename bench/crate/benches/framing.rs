//! The framing hot loops in bytes/s: masked CRC-32C, and reading, skipping and writing
//! TFRecord and OFRecord streams held in memory, so that the figures are the code's and not
//! the disk's. The streams hold records of the benchmark corpora.

use std::hint::black_box;
use std::io::Write;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use ofconvert_bench::{sample_records, Corpus};
use ofconvert_tfrecord::crc::masked_crc32c;
use ofconvert_tfrecord::ReaderOptions;

const SEED: u64 = 42;

/// CRC-32C: the project's one function (short inputs by SSE 4.2, longer ones by crc-fast)
/// beside the two crates it was chosen between, at a record length field's size up to a
/// mebibyte.
fn crc(c: &mut Criterion) {
    let mut group = c.benchmark_group("crc32c");
    for size in [8_usize, 64, 512, 4 << 10, 64 << 10, 1 << 20] {
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::new("masked", size), &data, |b, data| {
            b.iter(|| masked_crc32c(black_box(data)))
        });
        group.bench_with_input(BenchmarkId::new("crc32c crate", size), &data, |b, data| {
            b.iter(|| crc32c::crc32c(black_box(data)))
        });
        group.bench_with_input(
            BenchmarkId::new("crc-fast crate", size),
            &data,
            |b, data| {
                b.iter(|| crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, black_box(data)))
            },
        );
    }
    group.finish();
}

/// About 3.5 MB of each corpus: enough records that per-call overhead and per-byte cost both
/// show, small enough to stay in memory while criterion loops.
fn records(corpus: Corpus) -> Vec<Vec<u8>> {
    let count = match corpus {
        Corpus::Large => 32,
        Corpus::Small => 40_000,
        Corpus::Png => 1_000,
    };
    sample_records(corpus, SEED, count)
}

/// One framing, as the benches drive it.
trait Framing {
    /// The benchmark group's name.
    const NAME: &'static str;
    type Reader<'a>;
    fn reader(stream: &[u8]) -> Self::Reader<'_>;
    fn read(reader: &mut Self::Reader<'_>, buf: &mut Vec<u8>) -> bool;
    fn skip(reader: &mut Self::Reader<'_>) -> bool;
    fn write<W: Write>(records: &[Vec<u8>], sink: W) -> W;
}

struct TfRecord;

impl Framing for TfRecord {
    const NAME: &'static str = "tfrecord";
    type Reader<'a> = ofconvert_tfrecord::Reader<&'a [u8]>;

    fn reader(stream: &[u8]) -> Self::Reader<'_> {
        ofconvert_tfrecord::Reader::new(stream)
    }

    fn read(reader: &mut Self::Reader<'_>, buf: &mut Vec<u8>) -> bool {
        reader.read_record(buf).expect("the stream reads back")
    }

    fn skip(reader: &mut Self::Reader<'_>) -> bool {
        reader.skip_record().expect("the stream skips").is_some()
    }

    fn write<W: Write>(records: &[Vec<u8>], sink: W) -> W {
        let mut writer = ofconvert_tfrecord::Writer::new(sink);
        for record in records {
            writer.write_record(record).expect("writing to memory");
        }
        writer.finish().expect("writing to memory")
    }
}

struct OfRecord;

impl Framing for OfRecord {
    const NAME: &'static str = "ofrecord";
    type Reader<'a> = ofconvert_ofrecord::Reader<&'a [u8]>;

    fn reader(stream: &[u8]) -> Self::Reader<'_> {
        ofconvert_ofrecord::Reader::new(stream)
    }

    fn read(reader: &mut Self::Reader<'_>, buf: &mut Vec<u8>) -> bool {
        reader.read_record(buf).expect("the stream reads back")
    }

    fn skip(reader: &mut Self::Reader<'_>) -> bool {
        reader.skip_record().expect("the stream skips").is_some()
    }

    fn write<W: Write>(records: &[Vec<u8>], sink: W) -> W {
        let mut writer = ofconvert_ofrecord::Writer::new(sink);
        for record in records {
            writer.write_record(record).expect("writing to memory");
        }
        writer.finish().expect("writing to memory")
    }
}

/// Reading, skipping and writing `F`'s streams of each corpus; `extra` adds benches to the
/// group after `read`.
fn framing<F: Framing>(
    c: &mut Criterion,
    extra: impl Fn(&mut BenchmarkGroup<'_, WallTime>, &[u8], &mut Vec<u8>),
) {
    for corpus in Corpus::ALL {
        let records = records(corpus);
        let stream = F::write(&records, Vec::new());
        let mut group = c.benchmark_group(format!("{}/{corpus}", F::NAME));
        group.throughput(Throughput::Bytes(stream.len() as u64));
        let mut buf = Vec::new();
        group.bench_function("read", |b| {
            b.iter(|| {
                let mut reader = F::reader(black_box(stream.as_slice()));
                let mut count = 0_u64;
                while F::read(&mut reader, &mut buf) {
                    count += 1;
                }
                count
            })
        });
        extra(&mut group, &stream, &mut buf);
        group.bench_function("skip", |b| {
            b.iter(|| {
                let mut reader = F::reader(black_box(stream.as_slice()));
                let mut count = 0_u64;
                while F::skip(&mut reader) {
                    count += 1;
                }
                count
            })
        });
        let mut out = Vec::with_capacity(stream.len());
        group.bench_function("write", |b| {
            b.iter(|| {
                out.clear();
                F::write(black_box(&records), &mut out);
            })
        });
        group.finish();
    }
}

fn tfrecord(c: &mut Criterion) {
    let unchecked = ReaderOptions {
        verify_length_crc: false,
        verify_data_crc: false,
        ..ReaderOptions::default()
    };
    framing::<TfRecord>(c, |group, stream, buf| {
        group.bench_function("read_without_crc", |b| {
            b.iter(|| {
                let mut reader =
                    ofconvert_tfrecord::Reader::with_options(black_box(stream), unchecked);
                let mut count = 0_u64;
                while reader.read_record(buf).expect("the stream reads back") {
                    count += 1;
                }
                count
            })
        });
    });
}

fn ofrecord(c: &mut Criterion) {
    framing::<OfRecord>(c, |_, _, _| {});
}

criterion_group! {
    name = benches;
    // Short windows: the machine is shared, and the loops are steady after a second.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = crc, tfrecord, ofrecord
}
criterion_main!(benches);
