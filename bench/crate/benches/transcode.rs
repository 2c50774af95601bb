//! The bridge per record, both directions, on both corpora: `copy` (the bytes copied into the
//! output buffer, the floor), `wire` (the [`Transcoder`]) and `typed` (decode into prost
//! messages, map, encode). Large records report bytes/s, small ones records/s.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ofconvert_bench::{sample_records, Corpus};
use ofconvert_bridge::{
    decode_example, decode_ofrecord, encode_example, encode_ofrecord, example_to_ofrecord,
    ofrecord_to_example, MappingSpec, Transcoder,
};

const SEED: u64 = 42;

/// The records one iteration converts, in TFRecord's and in OneFlow's encoding.
struct Batch {
    examples: Vec<Vec<u8>>,
    ofrecords: Vec<Vec<u8>>,
}

fn batch(corpus: Corpus) -> Batch {
    let count = match corpus {
        Corpus::Large => 16,
        Corpus::Small => 1024,
        Corpus::Png => 256,
    };
    let examples = sample_records(corpus, SEED, count);
    let mut transcoder = Transcoder::new(MappingSpec::new()).expect("the identity spec compiles");
    let ofrecords = examples
        .iter()
        .map(|example| {
            let mut out = Vec::new();
            transcoder
                .tf_to_of(example, &mut out)
                .expect("generated records convert");
            out
        })
        .collect();
    Batch {
        examples,
        ofrecords,
    }
}

fn throughput(corpus: Corpus, records: &[Vec<u8>]) -> Throughput {
    match corpus {
        Corpus::Large => Throughput::Bytes(records.iter().map(|r| r.len() as u64).sum()),
        Corpus::Small | Corpus::Png => Throughput::Elements(records.len() as u64),
    }
}

/// One direction of the bridge, as the benches drive it.
trait Direction {
    /// The benchmark group's name.
    const NAME: &'static str;
    /// The records this direction reads.
    fn inputs(batch: Batch) -> Vec<Vec<u8>>;
    /// Converts with the wire-level transcoder.
    fn wire(transcoder: &mut Transcoder, input: &[u8], out: &mut Vec<u8>);
    /// Converts through the prost messages: decode, map, encode.
    fn typed(input: &[u8], spec: &MappingSpec, out: &mut Vec<u8>);
}

struct TfToOf;

impl Direction for TfToOf {
    const NAME: &'static str = "tf_to_of";

    fn inputs(batch: Batch) -> Vec<Vec<u8>> {
        batch.examples
    }

    fn wire(transcoder: &mut Transcoder, input: &[u8], out: &mut Vec<u8>) {
        transcoder.tf_to_of(input, out).expect("converts");
    }

    fn typed(input: &[u8], spec: &MappingSpec, out: &mut Vec<u8>) {
        let example = decode_example(input).expect("decodes");
        let record = example_to_ofrecord(&example, spec).expect("converts");
        out.clear();
        encode_ofrecord(&record, out);
    }
}

struct OfToTf;

impl Direction for OfToTf {
    const NAME: &'static str = "of_to_tf";

    fn inputs(batch: Batch) -> Vec<Vec<u8>> {
        batch.ofrecords
    }

    fn wire(transcoder: &mut Transcoder, input: &[u8], out: &mut Vec<u8>) {
        transcoder.of_to_tf(input, out).expect("converts");
    }

    fn typed(input: &[u8], spec: &MappingSpec, out: &mut Vec<u8>) {
        let record = decode_ofrecord(input).expect("decodes");
        let example = ofrecord_to_example(&record, spec).expect("converts");
        out.clear();
        encode_example(&example, out);
    }
}

fn direction<D: Direction>(c: &mut Criterion) {
    for corpus in Corpus::ALL {
        let inputs = D::inputs(batch(corpus));
        let mut group = c.benchmark_group(format!("{}/{corpus}", D::NAME));
        group.throughput(throughput(corpus, &inputs));
        let mut out = Vec::new();
        group.bench_function("copy", |b| {
            b.iter(|| {
                for input in black_box(&inputs) {
                    out.clear();
                    out.extend_from_slice(input);
                    black_box(&out);
                }
            })
        });
        let mut transcoder = Transcoder::new(MappingSpec::new()).expect("the identity spec");
        group.bench_function("wire", |b| {
            b.iter(|| {
                for input in black_box(&inputs) {
                    D::wire(&mut transcoder, input, &mut out);
                    black_box(&out);
                }
            })
        });
        let spec = MappingSpec::new();
        group.bench_function("typed", |b| {
            b.iter(|| {
                for input in black_box(&inputs) {
                    D::typed(input, &spec, &mut out);
                    black_box(&out);
                }
            })
        });
        group.finish();
    }
}

fn tf_to_of(c: &mut Criterion) {
    direction::<TfToOf>(c);
}

fn of_to_tf(c: &mut Criterion) {
    direction::<OfToTf>(c);
}

criterion_group! {
    name = benches;
    // Short windows: the machine is shared, and the loops are steady after a second.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = tf_to_of, of_to_tf
}
criterion_main!(benches);
