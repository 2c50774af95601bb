//! The wire transcoder against the typed path, round trips, and each mapping error.

use ofconvert_bridge::proto::{oneflow as of_pb, tensorflow as tf_pb};
use ofconvert_bridge::{
    decode_example, decode_ofrecord, decode_sequence_example, encode_example, encode_ofrecord,
    example_to_ofrecord, of, ofrecord_to_example, sequence_example_to_ofrecord, tf, ErrorKind,
    ExampleExt, FeatureKind, MappingSpec, NumericType, OfRecordExt, SequencePolicy, Transcoder,
};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// A hand-rolled protobuf writer, so tests can produce what prost never writes: unpacked
// numbers, duplicate keys, non-canonical int32, chosen entry order.

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field(out: &mut Vec<u8>, number: u32, payload: &[u8]) {
    varint(out, u64::from(number) << 3 | 2);
    varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// One list, as it goes on the wire.
#[derive(Clone, Debug)]
enum List {
    Bytes(Vec<Vec<u8>>),
    Float(Vec<u32>, bool),
    Double(Vec<u64>, bool),
    /// Varints as written (int32 may be written non-sign-extended on purpose).
    Varint(Vec<u64>, bool),
}

fn list_payload(list: &List) -> Vec<u8> {
    let mut out = Vec::new();
    match list {
        List::Bytes(values) => values.iter().for_each(|v| field(&mut out, 1, v)),
        List::Float(bits, packed) => {
            let raw: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
            if *packed {
                if !raw.is_empty() {
                    field(&mut out, 1, &raw);
                }
            } else {
                for b in bits {
                    out.push(0x0d);
                    out.extend_from_slice(&b.to_le_bytes());
                }
            }
        }
        List::Double(bits, packed) => {
            let raw: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
            if *packed {
                if !raw.is_empty() {
                    field(&mut out, 1, &raw);
                }
            } else {
                for b in bits {
                    out.push(0x09);
                    out.extend_from_slice(&b.to_le_bytes());
                }
            }
        }
        List::Varint(values, packed) => {
            if *packed {
                let mut raw = Vec::new();
                values.iter().for_each(|&v| varint(&mut raw, v));
                if !raw.is_empty() {
                    field(&mut out, 1, &raw);
                }
            } else {
                for &v in values {
                    out.push(0x08);
                    varint(&mut out, v);
                }
            }
        }
    }
    out
}

/// A map entry `key -> Feature { kind_field: list }` (kind_field 0: no kind set).
fn entry(key: &str, kind_field: u32, list: &List) -> Vec<u8> {
    let mut feature = Vec::new();
    if kind_field != 0 {
        field(&mut feature, kind_field, &list_payload(list));
    }
    let mut body = Vec::new();
    field(&mut body, 1, key.as_bytes());
    field(&mut body, 2, &feature);
    let mut out = Vec::new();
    field(&mut out, 1, &body);
    out
}

fn example_bytes(entries: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    field(&mut out, 1, entries);
    out
}

// ---------------------------------------------------------------------------------------------
// Strategies.

fn key() -> impl Strategy<Value = String> {
    // A small alphabet so that duplicate keys and rename targets collide often.
    prop::string::string_regex("[ab/é]{0,2}").unwrap()
}

fn tf_list() -> impl Strategy<Value = (u32, List)> {
    prop_oneof![
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..4)
            .prop_map(|v| (1, List::Bytes(v))),
        (prop::collection::vec(any::<u32>(), 0..5), any::<bool>())
            .prop_map(|(v, p)| (2, List::Float(v, p))),
        (prop::collection::vec(any::<i64>(), 0..5), any::<bool>()).prop_map(|(v, p)| (
            3,
            List::Varint(v.into_iter().map(|x| x as u64).collect(), p)
        )),
        Just((0, List::Bytes(Vec::new()))),
    ]
}

fn of_list(with_narrow_kinds: bool) -> BoxedStrategy<(u32, List)> {
    let common = prop_oneof![
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..4)
            .prop_map(|v| (1, List::Bytes(v))),
        (prop::collection::vec(any::<u32>(), 0..5), any::<bool>())
            .prop_map(|(v, p)| (2, List::Float(v, p))),
        (prop::collection::vec(any::<i64>(), 0..5), any::<bool>()).prop_map(|(v, p)| (
            5,
            List::Varint(v.into_iter().map(|x| x as u64).collect(), p)
        )),
        Just((0, List::Bytes(Vec::new()))),
    ];
    if !with_narrow_kinds {
        return common.boxed();
    }
    prop_oneof![
        common,
        // Doubles: any bits (mostly beyond float's range), floats exactly, floats nudged so
        // that they round, and doubles around the point where narrowing would overflow.
        (
            prop::collection::vec(
                prop_oneof![
                    any::<u64>(),
                    any::<u32>().prop_map(|b| f64::from(f32::from_bits(b)).to_bits()),
                    (any::<u32>(), 1u64..1 << 28).prop_map(|(b, nudge)| f64::from(f32::from_bits(
                        b
                    ))
                    .to_bits()
                        ^ nudge),
                    (any::<bool>(), -4i64..4).prop_map(|(negative, step)| {
                        // Halfway between f32::MAX and the next power of two: at or above
                        // it, a double narrows to infinity.
                        let halfway = f64::from(f32::MAX) + 2f64.powi(103);
                        let bits = halfway.to_bits().wrapping_add_signed(step);
                        bits | u64::from(negative) << 63
                    }),
                ],
                0..4
            ),
            any::<bool>()
        )
            .prop_map(|(v, p)| (3, List::Double(v, p))),
        // int32, sign-extended as conforming writers do, or as a bare 32-bit varint.
        (
            prop::collection::vec((any::<i32>(), any::<bool>()), 0..4),
            any::<bool>()
        )
            .prop_map(|(v, p)| {
                let raw = v
                    .into_iter()
                    .map(|(x, canonical)| {
                        if canonical {
                            x as i64 as u64
                        } else {
                            u64::from(x as u32)
                        }
                    })
                    .collect();
                (4, List::Varint(raw, p))
            }),
    ]
    .boxed()
}

fn entries(list: BoxedStrategy<(u32, List)>) -> impl Strategy<Value = Vec<(String, u32, List)>> {
    entries_in(list, 0..6)
}

fn non_empty_entries(
    list: BoxedStrategy<(u32, List)>,
) -> impl Strategy<Value = Vec<(String, u32, List)>> {
    entries_in(list, 1..6)
}

fn entries_in(
    list: BoxedStrategy<(u32, List)>,
    size: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<(String, u32, List)>> {
    prop::collection::vec((key(), list), size)
        .prop_map(|v| v.into_iter().map(|(k, (f, l))| (k, f, l)).collect())
}

/// Keeps the last entry of each key, in first-seen order: what TensorFlow's writers produce
/// (they serialize a map, so never a key twice).
fn unique(entries: Vec<(String, u32, List)>) -> Vec<(String, u32, List)> {
    let mut out: Vec<(String, u32, List)> = Vec::new();
    for entry in entries {
        match out.iter_mut().find(|(k, _, _)| *k == entry.0) {
            Some(slot) => *slot = entry,
            None => out.push(entry),
        }
    }
    out
}

/// Whether two errors of the paths agree. The paths visit features in different orders, so
/// they may name different ones; then a record with both an inexact double and one beyond
/// float's range may fail for either.
fn same_failure(a: &ofconvert_bridge::Error, b: &ofconvert_bridge::Error) -> bool {
    let narrowing = |e: &ErrorKind| {
        matches!(
            e,
            ErrorKind::InexactDouble { .. } | ErrorKind::FloatOverflow { .. }
        )
    };
    std::mem::discriminant(a.kind()) == std::mem::discriminant(b.kind())
        || (narrowing(a.kind()) && narrowing(b.kind()) && a.feature() != b.feature())
}

fn join(entries: &[(String, u32, List)]) -> Vec<u8> {
    entries
        .iter()
        .flat_map(|(k, f, l)| entry(k, *f, l))
        .collect()
}

/// Canonical bytes of an OFRecord (key order, packed), so NaNs compare by their bits.
fn canonical_of(record: &of_pb::OfRecord) -> Vec<u8> {
    let mut out = Vec::new();
    encode_ofrecord(record, &mut out);
    out
}

fn canonical_tf(example: &tf_pb::Example) -> Vec<u8> {
    let mut out = Vec::new();
    encode_example(example, &mut out);
    out
}

fn spec() -> impl Strategy<Value = MappingSpec> {
    let rule = (
        key(),
        prop::option::of(key()),
        prop::option::of(prop_oneof![
            Just(NumericType::Int32),
            Just(NumericType::Int64),
            Just(NumericType::Float),
            Just(NumericType::Double)
        ]),
        prop::option::of(-3i64..3),
        any::<bool>(),
    );
    (
        prop::collection::vec(rule, 0..3),
        prop::option::of(prop::collection::vec(key(), 0..3)),
        any::<bool>(),
    )
        .prop_map(|(rules, keep, lossy)| {
            let mut spec = MappingSpec::new().lossy(lossy);
            for (name, rename, cast, offset, drop) in rules {
                if drop {
                    spec = spec.drop_feature(name);
                    continue;
                }
                if let Some(to) = rename {
                    spec = spec.rename(name.clone(), to);
                }
                if let Some(to) = cast {
                    spec = spec.cast(name.clone(), to);
                }
                if let Some(delta) = offset {
                    spec = spec.offset(name, delta);
                }
            }
            if let Some(keep) = keep {
                spec = spec.keep(keep);
            }
            spec
        })
}

proptest! {
    /// tf->of on the wire equals decode + typed conversion, for packed and unpacked lists,
    /// duplicate keys (the last wins in both) and kind-less features.
    #[test]
    fn tf_to_of_wire_matches_typed(entries in entries(tf_list().boxed())) {
        let input = example_bytes(&join(&entries));
        let typed = example_to_ofrecord(&decode_example(&input).unwrap(), &MappingSpec::new());
        let mut out = Vec::new();
        let wire = Transcoder::new(MappingSpec::new()).unwrap().tf_to_of(&input, &mut out);
        match (wire, typed) {
            (Ok(()), Ok(typed)) => prop_assert_eq!(canonical_of(&decode_ofrecord(&out).unwrap()), canonical_of(&typed)),
            // The paths visit features in different orders, so they may name different ones.
            (Err(w), Err(t)) => prop_assert!(same_failure(&w, &t), "{:?} vs {:?}", w, t),
            (w, t) => prop_assert!(false, "wire {:?} vs typed {:?}", w, t),
        }
    }

    /// Whatever TensorFlow wrote (canonical entries, packed or not), tf->of->tf gives back
    /// the same bytes.
    #[test]
    fn tf_of_tf_is_byte_identical(entries in non_empty_entries(tf_list().boxed()).prop_map(unique)) {
        let input = example_bytes(&join(&entries));
        let mut transcoder = Transcoder::new(MappingSpec::new()).unwrap();
        let (mut ofrecord, mut back) = (Vec::new(), Vec::new());
        transcoder.tf_to_of(&input, &mut ofrecord).unwrap();
        transcoder.of_to_tf(&ofrecord, &mut back).unwrap();
        prop_assert_eq!(back, input);
    }

    /// OFRecords without int32/double survive of->tf->of byte for byte.
    #[test]
    fn of_tf_of_is_byte_identical(entries in non_empty_entries(of_list(false)).prop_map(unique)) {
        let input = join(&entries);
        let mut transcoder = Transcoder::new(MappingSpec::new()).unwrap();
        let (mut example, mut back) = (Vec::new(), Vec::new());
        transcoder.of_to_tf(&input, &mut example).unwrap();
        transcoder.tf_to_of(&example, &mut back).unwrap();
        prop_assert_eq!(back, input);
    }

    /// of->tf on the wire equals the typed path, int32 (even written non-sign-extended) and
    /// doubles included, lossy or not.
    #[test]
    fn of_to_tf_wire_matches_typed(entries in non_empty_entries(of_list(true)), lossy in any::<bool>()) {
        let input = join(&entries);
        let spec = MappingSpec::new().lossy(lossy);
        let record = decode_ofrecord(&input).unwrap();
        let typed = ofrecord_to_example(&record, &spec);
        let mut out = Vec::new();
        let mut transcoder = Transcoder::new(spec).unwrap();
        let wire = transcoder.of_to_tf(&input, &mut out);
        match (wire, typed) {
            (Ok(()), Ok(typed)) => {
                prop_assert_eq!(canonical_tf(&decode_example(&out).unwrap()), canonical_tf(&typed));
                let changed = record
                    .feature
                    .values()
                    .filter_map(|feature| match &feature.kind {
                        Some(of_pb::feature::Kind::DoubleList(list)) => Some(&list.value),
                        _ => None,
                    })
                    .flatten()
                    .filter(|&&v| f64::from(v as f32) != v && !v.is_nan())
                    .count();
                prop_assert_eq!(transcoder.rounded(), changed as u64);
            }
            // The paths visit features in different orders, so they may name different ones.
            (Err(w), Err(t)) => prop_assert!(same_failure(&w, &t), "{:?} vs {:?}", w, t),
            (w, t) => prop_assert!(false, "wire {:?} vs typed {:?}", w, t),
        }
    }

    /// The default mapping's single pass gives the bytes, the features and the errors the
    /// general path gives (a spec whose one rule names an absent feature takes the general
    /// path), on records as written and with one byte changed.
    #[test]
    fn default_mapping_single_pass_matches_the_general_path(
        tf in entries(tf_list().boxed()),
        of in entries(of_list(true)),
        damage in prop::option::of((any::<prop::sample::Index>(), 1..=255u8)),
    ) {
        let spec = MappingSpec::new();
        let general = spec.clone().rename("\u{1}absent", "\u{1}renamed");
        let mut inputs = [(example_bytes(&join(&tf)), true), (join(&of), false)];
        if let Some((at, flip)) = damage {
            for (input, _) in &mut inputs {
                if !input.is_empty() {
                    let at = at.index(input.len());
                    input[at] ^= flip;
                }
            }
        }
        for (input, forward) in inputs {
            let run = |spec: &MappingSpec| {
                let mut transcoder = Transcoder::new(spec.clone()).unwrap();
                let mut out = Vec::new();
                let result = match forward {
                    true => transcoder.tf_to_of(&input, &mut out),
                    false => transcoder.of_to_tf(&input, &mut out),
                };
                let mut features = Vec::new();
                transcoder.visit_output_lists(&out, |name, kind, count, list| {
                    features.push((name.to_vec(), kind, count, list.to_vec()));
                });
                (result.map_err(|e| e.to_string()), out, features)
            };
            let (fast, slow) = (run(&spec), run(&general));
            prop_assert_eq!(fast.0.clone(), slow.0, "{:?}", input);
            if fast.0.is_ok() {
                prop_assert_eq!(fast.1, slow.1);
                prop_assert_eq!(fast.2, slow.2);
            }
        }
    }

    /// Any mapping spec: the wire path and the typed path accept the same records and
    /// produce the same features.
    #[test]
    fn mapping_spec_wire_matches_typed(example in entries(tf_list().boxed()), spec in spec()) {
        let input = example_bytes(&join(&example));
        let typed = example_to_ofrecord(&decode_example(&input).unwrap(), &spec);
        let mut out = Vec::new();
        let wire = Transcoder::new(spec.clone()).and_then(|mut t| t.tf_to_of(&input, &mut out));
        match (wire, typed) {
            (Ok(()), Ok(typed)) => prop_assert_eq!(canonical_of(&decode_ofrecord(&out).unwrap()), canonical_of(&typed)),
            (Err(_), Err(_)) => {}
            (w, t) => prop_assert!(false, "spec {:?}: wire {:?} vs typed {:?}", spec, w, t),
        }
    }

    /// Flattened SequenceExamples agree between the paths.
    #[test]
    fn flattened_sequences_match_typed(
        context in entries(tf_list().boxed()),
        lists in prop::collection::vec((key(), prop::collection::vec(tf_list(), 0..3)), 0..3),
    ) {
        let mut feature_lists = Vec::new();
        for (name, steps) in &lists {
            let mut steps_bytes = Vec::new();
            for (kind_field, list) in steps {
                let mut feature = Vec::new();
                if *kind_field != 0 {
                    field(&mut feature, *kind_field, &list_payload(list));
                }
                field(&mut steps_bytes, 1, &feature);
            }
            let mut body = Vec::new();
            field(&mut body, 1, name.as_bytes());
            field(&mut body, 2, &steps_bytes);
            field(&mut feature_lists, 1, &body);
        }
        let mut input = example_bytes(&join(&context));
        field(&mut input, 2, &feature_lists);
        let spec = MappingSpec::new().sequence(SequencePolicy::Flatten);
        let typed = sequence_example_to_ofrecord(&decode_sequence_example(&input).unwrap(), &spec);
        let mut out = Vec::new();
        let wire = Transcoder::new(spec).unwrap().tf_to_of(&input, &mut out);
        match (wire, typed) {
            (Ok(()), Ok(typed)) => prop_assert_eq!(canonical_of(&decode_ofrecord(&out).unwrap()), canonical_of(&typed)),
            (Err(_), Err(_)) => {}
            (w, t) => prop_assert!(false, "wire {:?} vs typed {:?}", w, t),
        }
    }

    /// What the transcoder says it wrote is what a parse of its output finds.
    #[test]
    fn visit_output_matches_a_parse_of_the_output(
        tf_entries in entries(tf_list().boxed()),
        of_entries in non_empty_entries(of_list(true)),
        spec in spec(),
    ) {
        fn collect(out: &mut Vec<(Vec<u8>, Option<FeatureKind>, usize)>) -> impl FnMut(&[u8], Option<FeatureKind>, usize) + '_ {
            move |name, kind, count| out.push((name.to_vec(), kind, count))
        }
        // A spec that contradicts itself is refused up front; there is nothing to visit.
        let Ok(mut transcoder) = Transcoder::new(spec.lossy(true)) else {
            return Ok(());
        };
        let mut out = Vec::new();
        if transcoder.tf_to_of(&example_bytes(&join(&tf_entries)), &mut out).is_ok() {
            let (mut told, mut parsed) = (Vec::new(), Vec::new());
            transcoder.visit_output(&out, collect(&mut told));
            ofconvert_bridge::visit_ofrecord(&out, collect(&mut parsed)).unwrap();
            prop_assert_eq!(told, parsed);
        }
        if transcoder.of_to_tf(&join(&of_entries), &mut out).is_ok() {
            let (mut told, mut parsed) = (Vec::new(), Vec::new());
            transcoder.visit_output(&out, collect(&mut told));
            ofconvert_bridge::visit_example(&out, collect(&mut parsed)).unwrap();
            prop_assert_eq!(told, parsed);
        }
    }

    /// Arbitrary bytes never panic either path's conversion.
    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut transcoder = Transcoder::new(MappingSpec::new().sequence(SequencePolicy::Flatten)).unwrap();
        let mut out = Vec::new();
        let _ = transcoder.tf_to_of(&bytes, &mut out);
        let _ = transcoder.of_to_tf(&bytes, &mut out);
    }
}

// ---------------------------------------------------------------------------------------------
// Specific behaviour.

fn tf_to_of(spec: MappingSpec, input: &[u8]) -> Result<of_pb::OfRecord, ofconvert_bridge::Error> {
    let mut out = Vec::new();
    Transcoder::new(spec)?.tf_to_of(input, &mut out)?;
    Ok(decode_ofrecord(&out).unwrap())
}

fn serialize(example: &tf_pb::Example) -> Vec<u8> {
    canonical_tf(example)
}

#[test]
fn map_entries_keep_empty_keys_and_kindless_values() {
    let example = tf::example([("", tf_pb::Feature { kind: None })]);
    // Example{features{feature{key:"" value{}}}}: entry carries both fields although empty.
    assert_eq!(
        serialize(&example),
        [0x0a, 0x06, 0x0a, 0x04, 0x0a, 0x00, 0x12, 0x00]
    );
    let mut ofrecord = Vec::new();
    Transcoder::new(MappingSpec::new())
        .unwrap()
        .tf_to_of(&serialize(&example), &mut ofrecord)
        .unwrap();
    assert_eq!(ofrecord, [0x0a, 0x04, 0x0a, 0x00, 0x12, 0x00]);
    let record = of::record([("", of_pb::Feature { kind: None })]);
    assert_eq!(canonical_of(&record), ofrecord);
}

#[test]
fn examples_without_features_are_empty_records() {
    for input in [&b""[..], &[0x0a, 0x00][..]] {
        let err = tf_to_of(MappingSpec::new(), input).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::EmptyRecord);
        let typed = example_to_ofrecord(&decode_example(input).unwrap(), &MappingSpec::new());
        assert_eq!(typed.unwrap_err().kind(), &ErrorKind::EmptyRecord);
    }
    let all_dropped = MappingSpec::new().drop_feature("a");
    let input = serialize(&tf::example([("a", tf::int64_feature([1]))]));
    assert_eq!(
        tf_to_of(all_dropped, &input).unwrap_err().kind(),
        &ErrorKind::EmptyRecord
    );
}

fn sequence_example() -> Vec<u8> {
    let steps = |values: &[&[i64]]| tf_pb::FeatureList {
        feature: values
            .iter()
            .map(|v| tf::int64_feature(v.iter().copied()))
            .collect(),
    };
    let seq = tf_pb::SequenceExample {
        context: Some(tf_pb::Features {
            feature: [("id".to_string(), tf::bytes_feature([b"u1".to_vec()]))].into(),
        }),
        feature_lists: Some(tf_pb::FeatureLists {
            feature_list: [
                ("ratings".to_string(), steps(&[&[5], &[], &[3, 4]])),
                ("never".to_string(), tf_pb::FeatureList { feature: vec![] }),
            ]
            .into(),
        }),
    };
    let mut out = Vec::new();
    ofconvert_bridge::encode_sequence_example(&seq, &mut out);
    out
}

#[test]
fn sequence_examples_are_refused_unless_flattened() {
    let input = sequence_example();
    let err = tf_to_of(MappingSpec::new(), &input).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::SequenceExample);

    let record = tf_to_of(MappingSpec::new().sequence(SequencePolicy::Flatten), &input).unwrap();
    assert_eq!(record.bytes_values("id"), Some(&[b"u1".to_vec()][..]));
    assert_eq!(record.int64_values("ratings"), Some(&[5, 3, 4][..]));
    assert_eq!(record.int64_values("ratings/lengths"), Some(&[1, 0, 2][..]));
    // A list with no steps has no kind to give its values: only its lengths remain.
    assert!(record.feature("never").is_none());
    assert_eq!(record.int64_values("never/lengths"), Some(&[][..]));
}

#[test]
fn flattening_refuses_a_name_clash_with_the_context() {
    let seq = tf_pb::SequenceExample {
        context: Some(tf_pb::Features {
            feature: [("x/lengths".to_string(), tf::int64_feature([1]))].into(),
        }),
        feature_lists: Some(tf_pb::FeatureLists {
            feature_list: [(
                "x".to_string(),
                tf_pb::FeatureList {
                    feature: vec![tf::int64_feature([1])],
                },
            )]
            .into(),
        }),
    };
    let mut input = Vec::new();
    ofconvert_bridge::encode_sequence_example(&seq, &mut input);
    let spec = MappingSpec::new().sequence(SequencePolicy::Flatten);
    let err = tf_to_of(spec.clone(), &input).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::NameClash {
            name: "x/lengths".into()
        }
    );
    assert!(matches!(
        sequence_example_to_ofrecord(&seq, &spec)
            .unwrap_err()
            .kind(),
        ErrorKind::NameClash { .. }
    ));
}

#[test]
fn non_examples_fail_or_are_wrapped_whole() {
    // A serialized TensorProto: dtype (field 1, varint) then tensor_shape.
    let tensor = [0x08, 0x01, 0x12, 0x00, 0x22, 0x02, 0x01, 0x02];
    assert_eq!(
        tf_to_of(MappingSpec::new(), &tensor).unwrap_err().kind(),
        &ErrorKind::NotAnExample
    );
    let record = tf_to_of(MappingSpec::new().raw_feature("raw"), &tensor).unwrap();
    assert_eq!(record.bytes_values("raw"), Some(&[tensor.to_vec()][..]));
    assert_eq!(record.feature.len(), 1);
}

#[test]
fn unknown_top_level_fields_are_skipped_as_tensorflow_does() {
    let plain = serialize(&tf::example([("a", tf::int64_feature([1]))]));
    // The same Example with a varint field 7 before it and a length-delimited field 9 after.
    let mut extended = vec![0x38, 0x2a];
    extended.extend_from_slice(&plain);
    extended.extend_from_slice(&[0x4a, 0x02, 0xff, 0x00]);
    assert_eq!(
        tf_to_of(MappingSpec::new(), &extended).unwrap(),
        tf_to_of(MappingSpec::new(), &plain).unwrap()
    );
    assert_eq!(
        ofconvert_bridge::classify_tf_record(&extended),
        Ok(ofconvert_bridge::TfRecordType::Example)
    );
    // Field 1 of the wrong wire type is still no Example (a serialized tensor's dtype).
    assert_eq!(
        tf_to_of(MappingSpec::new(), &[0x08, 0x01])
            .unwrap_err()
            .kind(),
        &ErrorKind::NotAnExample
    );
}

#[test]
fn unknown_feature_kinds_name_the_feature() {
    let input = example_bytes(&entry("label", 4, &List::Varint(vec![1], true)));
    let err = tf_to_of(MappingSpec::new(), &input).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::UnknownFeatureKind { field: 4 });
    assert_eq!(err.feature(), Some("label"));
    assert_eq!(
        err.at_record(12).to_string(),
        "record #12: feature \"label\": unknown Feature kind (field 4)"
    );
}

#[test]
fn malformed_varints_are_errors_with_the_feature_and_offset() {
    // int64 packed list whose last varint never ends.
    let mut list = Vec::new();
    field(&mut list, 1, &[0x01, 0x80]);
    let mut feature = Vec::new();
    field(&mut feature, 3, &list);
    let mut body = Vec::new();
    field(&mut body, 1, b"ids");
    field(&mut body, 2, &feature);
    let mut entries = Vec::new();
    field(&mut entries, 1, &body);
    let input = example_bytes(&entries);
    let err = tf_to_of(MappingSpec::new(), &input).unwrap_err();
    assert_eq!(err.feature(), Some("ids"));
    let ErrorKind::Malformed { reason, offset } = err.kind() else {
        panic!("{err}");
    };
    assert_eq!(*reason, "varint runs past the end");
    assert_eq!(input[*offset], 0x80);
}

#[test]
fn a_feature_with_two_kinds_is_ambiguous() {
    let mut feature = Vec::new();
    field(&mut feature, 1, &[]);
    field(&mut feature, 2, &[]);
    let mut body = Vec::new();
    field(&mut body, 1, b"x");
    field(&mut body, 2, &feature);
    let mut entries = Vec::new();
    field(&mut entries, 1, &body);
    let err = tf_to_of(MappingSpec::new(), &example_bytes(&entries)).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::AmbiguousFeature);
}

#[test]
fn inexact_doubles_fail_unless_lossy() {
    let record = canonical_of(&of::record([("p", of::double_feature([0.1]))]));
    let mut out = Vec::new();
    let err = Transcoder::new(MappingSpec::new())
        .unwrap()
        .of_to_tf(&record, &mut out)
        .unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::InexactDouble { value: 0.1 });
    assert_eq!(err.feature(), Some("p"));
    Transcoder::new(MappingSpec::new().lossy(true))
        .unwrap()
        .of_to_tf(&record, &mut out)
        .unwrap();
    assert_eq!(
        decode_example(&out).unwrap().float_values("p"),
        Some(&[0.1f32][..])
    );
}

#[test]
fn doubles_beyond_float_range_fail_on_both_paths_even_when_lossy() {
    let typed = of::record([("p", of::double_feature([0.5, -1e300]))]);
    let record = canonical_of(&typed);
    for lossy in [false, true] {
        let spec = MappingSpec::new().lossy(lossy);
        let mut out = Vec::new();
        let err = Transcoder::new(spec.clone())
            .unwrap()
            .of_to_tf(&record, &mut out)
            .unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::FloatOverflow { value: -1e300 });
        assert_eq!(err.feature(), Some("p"));
        let err = ofrecord_to_example(&typed, &spec).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::FloatOverflow { value: -1e300 });
        assert_eq!(err.feature(), Some("p"));
    }
}

#[test]
fn int32_widens_to_int64_with_negative_values_intact() {
    let record = canonical_of(&of::record([(
        "label",
        of::int32_feature([-1, i32::MIN, i32::MAX]),
    )]));
    let mut out = Vec::new();
    Transcoder::new(MappingSpec::new())
        .unwrap()
        .of_to_tf(&record, &mut out)
        .unwrap();
    let example = decode_example(&out).unwrap();
    assert_eq!(
        example.int64_values("label"),
        Some(&[-1, i64::from(i32::MIN), i64::from(i32::MAX)][..])
    );
}

#[test]
fn imagenet_preset_maps_inception_keys_to_oneflow_benchmark_keys() {
    let input = serialize(&tf::example([
        (
            "image/encoded",
            tf::bytes_feature([vec![0xff, 0xd8, 0x00, 0x80]]),
        ),
        ("image/class/label", tf::int64_feature([1000])),
        ("image/height", tf::int64_feature([375])),
        ("image/object/bbox/xmin", tf::float_feature([0.25])),
        ("image/object/bbox/label", tf::int64_feature([1000])),
        ("extra", tf::int64_feature([9])),
    ]));
    let record = tf_to_of(MappingSpec::imagenet(), &input).unwrap();
    assert_eq!(
        record.bytes_values("encoded"),
        Some(&[vec![0xff, 0xd8, 0x00, 0x80]][..])
    );
    assert_eq!(record.int32_values("class/label"), Some(&[999][..]));
    assert_eq!(record.int32_values("object/bbox/label"), Some(&[999][..]));
    assert_eq!(record.int32_values("height"), Some(&[375][..]));
    assert_eq!(record.float_values("object/bbox/xmin"), Some(&[0.25][..]));
    assert_eq!(record.int64_values("extra"), Some(&[9][..]));
    assert_eq!(record.feature.len(), 6);
}

#[test]
fn casts_and_offsets_are_checked() {
    let input = serialize(&tf::example([
        ("n", tf::int64_feature([1 << 40])),
        ("s", tf::bytes_feature([b"x".to_vec()])),
    ]));
    let overflow = tf_to_of(MappingSpec::new().cast("n", NumericType::Int32), &input).unwrap_err();
    assert_eq!(
        overflow.kind(),
        &ErrorKind::OutOfRange {
            value: (1i64 << 40).to_string(),
            to: NumericType::Int32
        }
    );
    assert_eq!(overflow.feature(), Some("n"));
    let bytes_cast =
        tf_to_of(MappingSpec::new().cast("s", NumericType::Int64), &input).unwrap_err();
    assert_eq!(
        bytes_cast.kind(),
        &ErrorKind::InvalidCast {
            from: FeatureKind::Bytes,
            to: NumericType::Int64
        }
    );
    let float = tf_to_of(MappingSpec::new().cast("n", NumericType::Double), &input).unwrap();
    assert_eq!(float.double_values("n"), Some(&[(1u64 << 40) as f64][..]));
}

#[test]
fn renames_that_collide_are_refused() {
    let input = serialize(&tf::example([
        ("a", tf::int64_feature([1])),
        ("b", tf::int64_feature([2])),
    ]));
    let err = tf_to_of(MappingSpec::new().rename("a", "b"), &input).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::NameClash { name: "b".into() });
    let swapped = tf_to_of(MappingSpec::new().rename("a", "b").rename("b", "a"), &input).unwrap();
    assert_eq!(swapped.int64_values("b"), Some(&[1][..]));
    assert_eq!(swapped.int64_values("a"), Some(&[2][..]));
}

#[test]
fn keep_and_drop_select_features() {
    let input = serialize(&tf::example([
        ("a", tf::int64_feature([1])),
        ("b", tf::int64_feature([2])),
        ("c", tf::int64_feature([3])),
    ]));
    let kept = tf_to_of(MappingSpec::new().keep(["a", "c"]), &input).unwrap();
    assert_eq!(kept.feature.keys().collect::<Vec<_>>(), ["a", "c"]);
    let dropped = tf_to_of(MappingSpec::new().drop_feature("b"), &input).unwrap();
    assert_eq!(dropped.feature.keys().collect::<Vec<_>>(), ["a", "c"]);
}

#[test]
fn visitors_report_names_kinds_and_counts() {
    let input = serialize(&tf::example([
        ("img", tf::bytes_feature([b"x".to_vec(), b"y".to_vec()])),
        ("score", tf::float_feature([1.0, 2.0, 3.0])),
    ]));
    let mut seen = Vec::new();
    let kind = ofconvert_bridge::visit_example(&input, |name, kind, count| {
        seen.push((String::from_utf8(name.to_vec()).unwrap(), kind, count))
    })
    .unwrap();
    assert_eq!(kind, ofconvert_bridge::TfRecordType::Example);
    assert_eq!(
        seen,
        [
            ("img".to_string(), Some(FeatureKind::Bytes), 2),
            ("score".to_string(), Some(FeatureKind::Float), 3)
        ]
    );
    assert_eq!(
        ofconvert_bridge::classify_tf_record(&sequence_example()),
        Ok(ofconvert_bridge::TfRecordType::SequenceExample)
    );
}
