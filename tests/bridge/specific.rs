//! Specific behaviour of the bridge, one case at a time.

use super::*;

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
