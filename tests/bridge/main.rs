//! The wire transcoder against the typed path, round trips, and each mapping error.

use ofconvert_bridge::proto::{oneflow as of_pb, tensorflow as tf_pb};
use ofconvert_bridge::{
    decode_example, decode_ofrecord, decode_sequence_example, encode_example, encode_ofrecord,
    example_to_ofrecord, of, ofrecord_to_example, sequence_example_to_ofrecord, tf, ErrorKind,
    ExampleExt, FeatureKind, MappingSpec, NumericType, OfRecordExt, SequencePolicy, Transcoder,
};
use ofconvert_bridge::{visit_example, visit_ofrecord};
use proptest::prelude::*;

mod kept;
mod specific;

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
