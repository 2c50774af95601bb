//! The wire transcoder against the typed path.
//!
//! The wire path is stricter than prost about structure (it refuses unknown fields inside
//! `Features`, a map entry that repeats its key or value, a `Feature` with two kinds), so on
//! those it may fail where prost parses. Everything else must agree:
//!
//! * when the wire path accepts, its output parses, and equals the typed path's output
//!   (compared as canonical re-encodings, so entry order and packing do not matter);
//! * a structural failure of the wire path is one `visit_example` / `visit_ofrecord` sees
//!   too, and a record they find structurally broken is never accepted;
//! * any other failure is explained by the typed path: the same kind for the record, or for
//!   the one feature the error names (the paths visit features in different orders, so with
//!   two bad features they may each report a different one).

use ofconvert_bridge::proto::{oneflow as of_pb, tensorflow as tf_pb};
use ofconvert_bridge::{
    decode_example, decode_ofrecord, decode_sequence_example, encode_example, encode_ofrecord,
    example_to_ofrecord, ofrecord_to_example, sequence_example_to_ofrecord, visit_example,
    visit_ofrecord, Error, ErrorKind, FeatureKind, OfRecordExt, TfRecordType, Transcoder,
};

use crate::specs::{Variant, RAW_FEATURE};

/// Failures of the record's structure, as opposed to what the mapping makes of its values.
pub fn structural(kind: &ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Malformed { .. }
            | ErrorKind::NotAnExample
            | ErrorKind::UnknownFeatureKind { .. }
            | ErrorKind::AmbiguousFeature
    )
}

/// An OFRecord's bytes in key order, packed, every entry whole: equal records, equal bytes.
pub fn canonical_of(record: &of_pb::OfRecord) -> Vec<u8> {
    let mut out = Vec::new();
    encode_ofrecord(record, &mut out);
    out
}

/// An Example's canonical bytes.
pub fn canonical_tf(example: &tf_pb::Example) -> Vec<u8> {
    let mut out = Vec::new();
    encode_example(example, &mut out);
    out
}

/// The typed twin of `tf_to_of`: a message with feature lists is a SequenceExample, any
/// other is an Example.
pub fn typed_tf_to_of(
    seq: &tf_pb::SequenceExample,
    variant: &Variant,
) -> Result<of_pb::OfRecord, Error> {
    if seq.feature_lists.is_some() {
        sequence_example_to_ofrecord(seq, &variant.spec)
    } else {
        let example = tf_pb::Example {
            features: seq.context.clone(),
        };
        example_to_ofrecord(&example, &variant.spec)
    }
}

/// The SequenceExample restricted to the features called `name`.
fn only_tf(seq: &tf_pb::SequenceExample, name: &str) -> tf_pb::SequenceExample {
    tf_pb::SequenceExample {
        context: seq.context.as_ref().map(|context| tf_pb::Features {
            feature: context
                .feature
                .iter()
                .filter(|(key, _)| *key == name)
                .map(|(key, feature)| (key.clone(), feature.clone()))
                .collect(),
        }),
        feature_lists: seq.feature_lists.as_ref().map(|lists| tf_pb::FeatureLists {
            feature_list: lists
                .feature_list
                .iter()
                .filter(|(key, _)| *key == name)
                .map(|(key, list)| (key.clone(), list.clone()))
                .collect(),
        }),
    }
}

fn only_of(record: &of_pb::OfRecord, name: &str) -> of_pb::OfRecord {
    of_pb::OfRecord {
        feature: record
            .feature
            .iter()
            .filter(|(key, _)| *key == name)
            .map(|(key, feature)| (key.clone(), feature.clone()))
            .collect(),
    }
}

/// Whether `record` is `input` wrapped whole under the raw feature name. No Example converts
/// to that: it would have to contain itself.
fn is_wrapped(record: &of_pb::OfRecord, input: &[u8], variant: &Variant) -> bool {
    variant.without_raw.is_some()
        && record.feature.len() == 1
        && record.bytes_values(RAW_FEATURE) == Some(&[input.to_vec()][..])
}

/// Name, kind and value count of each feature, as the visitors report them.
type Features = Vec<(Vec<u8>, Option<FeatureKind>, usize)>;

/// What `visit_output` reports on `output`; also, that it does not panic on bytes other than
/// the last output, whatever the last conversion did.
fn reported(transcoder: &Transcoder, output: &[u8]) -> Features {
    transcoder.visit_output(&output[..output.len() / 2], |_, _, _| {});
    transcoder.visit_output(b"", |_, _, _| {});
    let mut features = Features::new();
    transcoder.visit_output(output, |name, kind, count| {
        features.push((name.to_vec(), kind, count))
    });
    features
}

/// Failures that the wire path reports only after checking every feature.
fn about_whole_record(kind: &ErrorKind) -> bool {
    matches!(kind, ErrorKind::EmptyRecord | ErrorKind::NameClash { .. })
}

fn same_variant(a: &ErrorKind, b: &ErrorKind) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// Checks one `tf_to_of` conversion against the typed path and the visitor. `out` holds the
/// wire output afterwards; returns whether the conversion succeeded.
pub fn check_tf_to_of(
    variant: &Variant,
    transcoder: &mut Transcoder,
    input: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    let outcome = compare_tf_to_of(variant, transcoder, input, out);
    // What prost makes of the record, written back canonically, has nothing the wire path
    // may refuse for its structure (no unknown fields, one kind per Feature, whole entries):
    // this keeps the wire path from refusing valid records that only look unusual.
    if let Ok(seq) = decode_sequence_example(input) {
        let mut canonical = Vec::new();
        if seq.feature_lists.is_some() {
            ofconvert_bridge::encode_sequence_example(&seq, &mut canonical);
        } else {
            let example = tf_pb::Example {
                features: seq.context,
            };
            encode_example(&example, &mut canonical);
        }
        if canonical != input {
            match compare_tf_to_of(variant, transcoder, &canonical, &mut Vec::new()) {
                Outcome::Converted => {}
                Outcome::Wrapped => panic!("wrapped whole the canonical form of a record"),
                Outcome::Failed(kind) => assert!(
                    !structural(&kind),
                    "{kind:?} on the canonical form of a record prost parses"
                ),
            }
        }
    }
    outcome == Outcome::Converted
}

/// How a conversion ended.
#[derive(Debug, PartialEq)]
enum Outcome {
    Converted,
    /// Converted by wrapping the record whole under the raw feature name.
    Wrapped,
    Failed(ErrorKind),
}

fn compare_tf_to_of(
    variant: &Variant,
    transcoder: &mut Transcoder,
    input: &[u8],
    out: &mut Vec<u8>,
) -> Outcome {
    let wire = transcoder.tf_to_of(input, out);
    // Whatever the conversion did, visiting bytes that are not its output must not panic.
    transcoder.visit_output(input, |_, _, _| {});
    let visited = visit_example(input, |_, _, _| {});
    let seq = decode_sequence_example(input);
    if let Ok(seq) = &seq {
        let example = decode_example(input)
            .unwrap_or_else(|e| panic!("parses as a SequenceExample, not as an Example: {e}"));
        let as_example = tf_pb::Example {
            features: seq.context.clone(),
        };
        assert_eq!(
            canonical_tf(&example),
            canonical_tf(&as_example),
            "the two decoders disagree"
        );
    }
    let mut wrapped = false;
    match &wire {
        Ok(()) => {
            let record = decode_ofrecord(out)
                .unwrap_or_else(|e| panic!("the wire output does not parse: {e}"));
            let mut visited_output = Features::new();
            visit_ofrecord(out, |name, kind, count| {
                visited_output.push((name.to_vec(), kind, count))
            })
            .unwrap_or_else(|e| panic!("the wire output does not visit: {e}"));
            assert_eq!(
                reported(transcoder, out),
                visited_output,
                "visit_output and visit_ofrecord disagree"
            );
            wrapped = is_wrapped(&record, input, variant);
            if wrapped {
                let plain = variant.without_raw.clone().expect("only raw specs wrap");
                let refused = Transcoder::new(plain)
                    .expect("the fuzzed specs are valid")
                    .tf_to_of(input, &mut Vec::new())
                    .expect_err("wrapped whole a record the spec converts");
                assert!(
                    structural(refused.kind()),
                    "wrapped whole a record refused for {refused}"
                );
            } else {
                let record_type = visited.as_ref().unwrap_or_else(|e| {
                    panic!("the wire path accepts a record visit_example refuses: {e}")
                });
                let seq = seq.as_ref().unwrap_or_else(|e| {
                    panic!("the wire path accepts a record prost refuses: {e}")
                });
                assert_eq!(
                    *record_type == TfRecordType::SequenceExample,
                    seq.feature_lists.is_some(),
                    "visit_example and prost disagree on the message type"
                );
                let typed = typed_tf_to_of(seq, variant)
                    .unwrap_or_else(|e| panic!("the wire path converts, the typed path: {e}"));
                assert_eq!(
                    canonical_of(&record),
                    canonical_of(&typed),
                    "wire and typed outputs differ"
                );
            }
        }
        Err(w) if structural(w.kind()) => {
            assert!(
                visited.is_err(),
                "the wire path fails with {w:?}, visit_example accepts the record"
            );
        }
        Err(w) => explain_tf(w, seq.as_ref().ok(), variant),
    }
    if let Err(v) = &visited {
        assert!(
            !structural(v.kind()) || wire.is_err() || wrapped,
            "visit_example fails with {v:?}, the wire path converts the record"
        );
    }
    match wire {
        Ok(()) if wrapped => Outcome::Wrapped,
        Ok(()) => Outcome::Converted,
        Err(w) => Outcome::Failed(w.kind().clone()),
    }
}

/// A non-structural failure of `tf_to_of` must be one the typed path makes too.
///
/// The wire path stops at the first bad feature, so the features after it may hide damage
/// that prost sees: a failure about one feature says nothing about the rest of the record.
/// A failure about the whole record (no features left, two features under one name) comes
/// after every feature has been checked, so then prost must parse the record too.
fn explain_tf(w: &Error, seq: Option<&tf_pb::SequenceExample>, variant: &Variant) {
    if let ErrorKind::SequenceExample = w.kind() {
        assert!(
            !variant.flatten,
            "refused a SequenceExample while flattening"
        );
        if let Some(seq) = seq {
            assert!(seq.feature_lists.is_some(), "{w} for an Example");
        }
        return;
    }
    let Some(seq) = seq else {
        assert!(
            !about_whole_record(w.kind()),
            "wire: {w:?}, yet prost cannot parse the record"
        );
        return;
    };
    match w.kind() {
        ErrorKind::EmptyRecord | ErrorKind::NameClash { .. } => {
            let typed = typed_tf_to_of(seq, variant)
                .expect_err("the wire path fails, the typed path converts");
            assert!(
                same_variant(typed.kind(), w.kind()),
                "wire {w:?}, typed {typed:?}"
            );
        }
        _ => {
            let name = w
                .feature()
                .unwrap_or_else(|| panic!("{w:?} does not name its feature"));
            let typed = typed_tf_to_of(&only_tf(seq, name), variant)
                .expect_err("the wire path fails on a feature the typed path converts");
            assert_eq!(typed.kind(), w.kind(), "wire {w:?}, typed {typed:?}");
        }
    }
}

/// Checks one `of_to_tf` conversion against the typed path and the visitor. `out` holds the
/// wire output afterwards; returns whether the conversion succeeded.
pub fn check_of_to_tf(
    variant: &Variant,
    transcoder: &mut Transcoder,
    input: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    let converted = compare_of_to_tf(variant, transcoder, input, out).is_ok();
    // As for tf_to_of: prost's view of the record, written back canonically, converts or
    // fails for its values only.
    if let Ok(record) = decode_ofrecord(input) {
        let canonical = canonical_of(&record);
        if canonical != input {
            let again = compare_of_to_tf(variant, transcoder, &canonical, &mut Vec::new());
            if let Err(e) = again {
                assert!(
                    !structural(e.kind()),
                    "{e:?} on the canonical form of a record prost parses"
                );
            }
        }
    }
    converted
}

fn compare_of_to_tf(
    variant: &Variant,
    transcoder: &mut Transcoder,
    input: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let wire = transcoder.of_to_tf(input, out);
    // Whatever the conversion did, visiting bytes that are not its output must not panic.
    transcoder.visit_output(input, |_, _, _| {});
    let visited = visit_ofrecord(input, |_, _, _| {});
    let record = decode_ofrecord(input);
    match &wire {
        Ok(()) => {
            let example = decode_example(out)
                .unwrap_or_else(|e| panic!("the wire output does not parse: {e}"));
            let mut visited_output = Features::new();
            let output_type = visit_example(out, |name, kind, count| {
                visited_output.push((name.to_vec(), kind, count))
            })
            .unwrap_or_else(|e| panic!("the wire output does not visit: {e}"));
            assert_eq!(
                reported(transcoder, out),
                visited_output,
                "visit_output and visit_example disagree"
            );
            assert_eq!(output_type, TfRecordType::Example);
            if let Err(e) = &visited {
                panic!("the wire path accepts a record visit_ofrecord refuses: {e}");
            }
            let record = record
                .as_ref()
                .unwrap_or_else(|e| panic!("the wire path accepts a record prost refuses: {e}"));
            let typed = ofrecord_to_example(record, &variant.spec)
                .unwrap_or_else(|e| panic!("the wire path converts, the typed path: {e}"));
            assert_eq!(
                canonical_tf(&example),
                canonical_tf(&typed),
                "wire and typed outputs differ"
            );
        }
        Err(w) if structural(w.kind()) => {
            assert!(
                visited.is_err(),
                "the wire path fails with {w:?}, visit_ofrecord accepts the record"
            );
        }
        Err(w) => {
            explain_of(w, input, record.as_ref().ok(), variant);
        }
    }
    if let Err(v) = &visited {
        assert!(
            !structural(v.kind()) || wire.is_err(),
            "visit_ofrecord fails with {v:?}, the wire path converts the record"
        );
    }
    wire
}

/// A non-structural failure of `of_to_tf` must be one the typed path makes too (see
/// [`explain_tf`] for when prost must parse the record).
fn explain_of(w: &Error, input: &[u8], record: Option<&of_pb::OfRecord>, variant: &Variant) {
    let Some(record) = record else {
        assert!(
            !about_whole_record(w.kind()),
            "wire: {w:?}, yet prost cannot parse the record"
        );
        return;
    };
    match w.kind() {
        // An empty input is an OFRecord without features: OneFlow cannot read it, so the wire
        // path refuses it, while the typed path makes an empty Example of it.
        ErrorKind::EmptyRecord => assert!(input.is_empty(), "{w} for {} bytes", input.len()),
        ErrorKind::NameClash { .. } => {
            let typed = ofrecord_to_example(record, &variant.spec)
                .expect_err("the wire path fails, the typed path converts");
            assert!(
                same_variant(typed.kind(), w.kind()),
                "wire {w:?}, typed {typed:?}"
            );
        }
        _ => {
            let name = w
                .feature()
                .unwrap_or_else(|| panic!("{w:?} does not name its feature"));
            let typed = ofrecord_to_example(&only_of(record, name), &variant.spec)
                .expect_err("the wire path fails on a feature the typed path converts");
            assert_eq!(typed.kind(), w.kind(), "wire {w:?}, typed {typed:?}");
        }
    }
}

fn tf_probes() -> &'static [Vec<u8>] {
    static PROBES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    PROBES.get_or_init(|| {
        use ofconvert_bridge::tf;
        let example = tf::example([
            ("a", tf::int64_feature([1, -2, 3])),
            ("b", tf::int64_feature([7])),
            ("c", tf::int64_feature([10])),
            ("d", tf::float_feature([0.5, -1.0])),
            ("e", tf::int64_feature([5])),
            ("f", tf::bytes_feature([b"x".to_vec()])),
            ("g", tf::float_feature([1.5])),
            ("image/encoded", tf::bytes_feature([b"\xff\xd8".to_vec()])),
            ("image/class/label", tf::int64_feature([3])),
            ("image/height", tf::int64_feature([100])),
        ]);
        let seq = tf_pb::SequenceExample {
            context: example.features.clone(),
            feature_lists: Some(tf_pb::FeatureLists {
                feature_list: [
                    (
                        "a".to_string(),
                        tf_pb::FeatureList {
                            feature: vec![tf::int64_feature([1]), tf::int64_feature([2, 3])],
                        },
                    ),
                    (
                        "h".to_string(),
                        tf_pb::FeatureList {
                            feature: vec![tf::bytes_feature([b"y".to_vec()])],
                        },
                    ),
                ]
                .into(),
            }),
        };
        let mut example_bytes = Vec::new();
        encode_example(&example, &mut example_bytes);
        let mut seq_bytes = Vec::new();
        ofconvert_bridge::encode_sequence_example(&seq, &mut seq_bytes);
        vec![example_bytes, seq_bytes]
    })
}

fn of_probes() -> &'static [Vec<u8>] {
    static PROBES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    PROBES.get_or_init(|| {
        use ofconvert_bridge::of;
        let record = of::record([
            ("a", of::int32_feature([-1, 5])),
            ("b", of::double_feature([0.5, 0.1])),
            ("c", of::int64_feature([1])),
            ("d", of::float_feature([2.5])),
            ("e", of::bytes_feature([b"x".to_vec()])),
            ("g", of::int64_feature([1])),
        ]);
        let exact = of::record([("b", of::double_feature([0.5]))]);
        vec![canonical_of(&record), canonical_of(&exact)]
    })
}

/// A transcoder that has just converted anything (or failed halfway) converts known records
/// exactly as a fresh one does: no state leaks from one record into the next.
pub fn check_reuse(variant: &Variant, transcoder: &mut Transcoder) {
    let mut fresh = Transcoder::new(variant.spec.clone()).expect("the fuzzed specs are valid");
    let (mut reused_out, mut fresh_out) = (Vec::new(), Vec::new());
    for probe in tf_probes() {
        let reused = transcoder.tf_to_of(probe, &mut reused_out);
        assert_eq!(reused, fresh.tf_to_of(probe, &mut fresh_out));
        assert_eq!(reused_out, fresh_out);
    }
    for probe in of_probes() {
        let reused = transcoder.of_to_tf(probe, &mut reused_out);
        assert_eq!(reused, fresh.of_to_tf(probe, &mut fresh_out));
        assert_eq!(reused_out, fresh_out);
    }
}
