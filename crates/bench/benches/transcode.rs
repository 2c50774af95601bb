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
        Corpus::Small => Throughput::Elements(records.len() as u64),
    }
}

fn tf_to_of(c: &mut Criterion) {
    for corpus in Corpus::ALL {
        let Batch { examples, .. } = batch(corpus);
        let mut group = c.benchmark_group(format!("tf_to_of/{corpus}"));
        group.throughput(throughput(corpus, &examples));
        let mut out = Vec::new();
        group.bench_function("copy", |b| {
            b.iter(|| {
                for example in black_box(&examples) {
                    out.clear();
                    out.extend_from_slice(example);
                    black_box(&out);
                }
            })
        });
        let mut transcoder = Transcoder::new(MappingSpec::new()).expect("the identity spec");
        group.bench_function("wire", |b| {
            b.iter(|| {
                for example in black_box(&examples) {
                    transcoder.tf_to_of(example, &mut out).expect("converts");
                    black_box(&out);
                }
            })
        });
        let spec = MappingSpec::new();
        group.bench_function("typed", |b| {
            b.iter(|| {
                for example in black_box(&examples) {
                    let example = decode_example(example).expect("decodes");
                    let record = example_to_ofrecord(&example, &spec).expect("converts");
                    out.clear();
                    encode_ofrecord(&record, &mut out);
                    black_box(&out);
                }
            })
        });
        group.finish();
    }
}

fn of_to_tf(c: &mut Criterion) {
    for corpus in Corpus::ALL {
        let Batch { ofrecords, .. } = batch(corpus);
        let mut group = c.benchmark_group(format!("of_to_tf/{corpus}"));
        group.throughput(throughput(corpus, &ofrecords));
        let mut out = Vec::new();
        group.bench_function("copy", |b| {
            b.iter(|| {
                for record in black_box(&ofrecords) {
                    out.clear();
                    out.extend_from_slice(record);
                    black_box(&out);
                }
            })
        });
        let mut transcoder = Transcoder::new(MappingSpec::new()).expect("the identity spec");
        group.bench_function("wire", |b| {
            b.iter(|| {
                for record in black_box(&ofrecords) {
                    transcoder.of_to_tf(record, &mut out).expect("converts");
                    black_box(&out);
                }
            })
        });
        let spec = MappingSpec::new();
        group.bench_function("typed", |b| {
            b.iter(|| {
                for record in black_box(&ofrecords) {
                    let record = decode_ofrecord(record).expect("decodes");
                    let example = ofrecord_to_example(&record, &spec).expect("converts");
                    out.clear();
                    encode_example(&example, &mut out);
                    black_box(&out);
                }
            })
        });
        group.finish();
    }
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
