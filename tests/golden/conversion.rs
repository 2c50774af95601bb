//! The bridge on TensorFlow's own files: every Example becomes an OFRecord with TensorFlow's
//! values, and comes back byte for byte.

use super::*;

use ofconvert_bridge::{
    ErrorKind as BridgeError, MappingSpec, OfRecordExt, SequencePolicy, Transcoder,
};

fn expected_records(name: &str) -> Vec<Value> {
    let expected = load_json(&testdata(&format!("golden/{name}.expected.json")));
    expected["records"].as_array().cloned().unwrap_or_default()
}

/// The OFRecord the transcoder makes from `example`, in the expected files' shape.
fn ofrecord_json(ofrecord: &[u8]) -> Value {
    let mut value = decode_record(ofrecord, "ofrecord").expect("the transcoder's output parses");
    value["type"] = Value::from("example");
    value
}

#[test]
fn every_tensorflow_example_converts_to_its_values_and_back_to_its_bytes() {
    let mut transcoder = Transcoder::new(MappingSpec::new()).unwrap();
    let (mut ofrecord, mut back) = (Vec::new(), Vec::new());
    let mut converted = 0;
    for name in GOLDEN_FILES.iter().filter(|n| !n.starts_with("sequence")) {
        let records = check_golden(name);
        for (index, (record, want)) in records.iter().zip(expected_records(name)).enumerate() {
            let what = format!("{name} record {index}");
            let empty = want["features"].as_object().is_none_or(Map::is_empty);
            match transcoder.tf_to_of(record, &mut ofrecord) {
                Err(err) if empty => assert_eq!(err.kind(), &BridgeError::EmptyRecord, "{what}"),
                Err(err) => panic!("{what}: {err}"),
                Ok(()) => {
                    assert!(!empty, "{what}: a featureless Example must not convert");
                    assert_same_values(&ofrecord_json(&ofrecord), &want, &what);
                    transcoder.of_to_tf(&ofrecord, &mut back).unwrap();
                    assert!(back == *record, "{what}: tf -> of -> tf changed the bytes");
                    converted += 1;
                }
            }
        }
    }
    // tutorial x3, images, bert and the edge file's Examples that have features.
    assert!(converted > 1500, "only {converted} records converted");
}

#[test]
fn the_wire_visitor_counts_what_tensorflow_parsed() {
    for name in GOLDEN_FILES {
        let records = check_golden(name);
        for (index, (record, want)) in records.iter().zip(expected_records(name)).enumerate() {
            let mut seen = Map::new();
            ofconvert_bridge::visit_example(record, |feature, kind, count| {
                let name = String::from_utf8(feature.to_vec()).unwrap();
                seen.insert(name, json!([kind.map(|k| k.list_name()), count]));
            })
            .unwrap_or_else(|err| panic!("{name} record {index}: {err}"));
            let mut expected = Map::new();
            let sections = ["features", "context"].map(|s| want.get(s).and_then(Value::as_object));
            for (feature, value) in sections.into_iter().flatten().flatten() {
                let count = value["values"].as_array().map_or(0, Vec::len);
                expected.insert(feature.clone(), json!([value["kind"], count]));
            }
            for (feature, steps) in want
                .get("feature_lists")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let steps = steps.as_array().unwrap();
                let kind = steps.iter().find_map(|s| s["kind"].as_str());
                let count: usize = steps
                    .iter()
                    .map(|s| s["values"].as_array().map_or(0, Vec::len))
                    .sum();
                expected.insert(feature.clone(), json!([kind, count]));
            }
            assert_eq!(seen, expected, "{name} record {index}");
        }
    }
}

#[test]
fn tensorflow_sequence_examples_are_refused_or_flattened() {
    let records = check_golden("sequence.tfrecord");
    let mut refuse = Transcoder::new(MappingSpec::new()).unwrap();
    let mut flatten =
        Transcoder::new(MappingSpec::new().sequence(SequencePolicy::Flatten)).unwrap();
    let mut out = Vec::new();
    for (index, (record, want)) in records
        .iter()
        .zip(expected_records("sequence.tfrecord"))
        .enumerate()
    {
        let what = format!("sequence record {index}");
        // Without feature lists a SequenceExample is, on the wire, an Example.
        let has_lists = ofconvert_bridge::classify_tf_record(record)
            == Ok(ofconvert_bridge::TfRecordType::SequenceExample);
        match refuse.tf_to_of(record, &mut out) {
            Err(err) => assert_eq!(err.kind(), &BridgeError::SequenceExample, "{what}"),
            Ok(()) => assert!(
                !has_lists,
                "{what}: feature lists converted without flattening"
            ),
        }

        flatten
            .tf_to_of(record, &mut out)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = decode_record(&out, "ofrecord").unwrap();
        let features = got["features"].as_object().unwrap();
        for (name, value) in want["context"].as_object().unwrap() {
            assert_eq!(&features[name], value, "{what}: context {name}");
        }
        for (name, steps) in want["feature_lists"].as_object().unwrap() {
            let steps = steps.as_array().unwrap();
            let lengths: Vec<Value> = steps
                .iter()
                .map(|s| Value::from(s["values"].as_array().map_or(0, Vec::len)))
                .collect();
            assert_eq!(
                features[&format!("{name}/lengths")],
                json!({"kind": "int64_list", "values": lengths}),
                "{what}: {name}/lengths"
            );
            match steps.iter().find_map(|s| s["kind"].as_str()) {
                None => assert!(!features.contains_key(name), "{what}: {name} has no kind"),
                Some(kind) => {
                    let values: Vec<Value> = steps
                        .iter()
                        .flat_map(|s| s["values"].as_array().cloned().unwrap_or_default())
                        .collect();
                    assert_eq!(
                        features[name],
                        json!({"kind": kind, "values": values}),
                        "{what}: {name}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_crc_correct_garbage_record_is_not_an_example_unless_wrapped() {
    let path = testdata("damaged/crc_ok_garbage_payload.tfrecord");
    let records = read_tfrecords(&path, Compression::None);
    let entry =
        &load_json(&testdata("damaged/expected.json"))["files"]["crc_ok_garbage_payload.tfrecord"];
    let bad = u64_field(entry, "index", "crc_ok_garbage_payload") as usize;
    let mut strict = Transcoder::new(MappingSpec::new()).unwrap();
    let mut wrap = Transcoder::new(MappingSpec::new().raw_feature("raw")).unwrap();
    let mut out = Vec::new();
    for (index, record) in records.iter().enumerate() {
        let result = strict.tf_to_of(record, &mut out);
        if index == bad {
            assert_eq!(result.unwrap_err().kind(), &BridgeError::NotAnExample);
            wrap.tf_to_of(record, &mut out).unwrap();
            let wrapped = ofconvert_bridge::decode_ofrecord(&out).unwrap();
            assert_eq!(wrapped.bytes_values("raw"), Some(&[record.clone()][..]));
        } else {
            result.unwrap_or_else(|e| panic!("record {index}: {e}"));
        }
    }
}

#[test]
fn oneflow_written_records_convert_to_tensorflow_and_back() {
    let mut transcoder = Transcoder::new(MappingSpec::new()).unwrap();
    let (mut example, mut back) = (Vec::new(), Vec::new());
    for record in check_ofrecord_dataset("no_double") {
        transcoder.of_to_tf(&record, &mut example).unwrap();
        transcoder.tf_to_of(&example, &mut back).unwrap();
        assert!(back == record, "of -> tf -> of changed the bytes");
    }

    // All five kinds: int32 widens, doubles narrow only when exact, or rounded under lossy,
    // but never to an infinity.
    let mut lossy = Transcoder::new(MappingSpec::new().lossy(true)).unwrap();
    let (mut inexact, mut overflowing) = (0, 0);
    for record in check_ofrecord_dataset("all_kinds") {
        let typed = ofconvert_bridge::decode_ofrecord(&record).unwrap();
        let beyond_float = typed
            .double_values("double")
            .unwrap_or_default()
            .iter()
            .any(|v| v.is_finite() && (*v as f32).is_infinite());
        if beyond_float {
            let err = lossy.of_to_tf(&record, &mut example).unwrap_err();
            assert!(
                matches!(err.kind(), BridgeError::FloatOverflow { value } if *value == 1e300),
                "{err}"
            );
            assert_eq!(err.feature(), Some("double"));
            overflowing += 1;
        } else {
            lossy.of_to_tf(&record, &mut example).unwrap();
            let converted = ofconvert_bridge::decode_example(&example).unwrap();
            for (name, feature) in &typed.feature {
                use ofconvert_bridge::ExampleExt;
                use oneflow::feature::Kind;
                match &feature.kind {
                    Some(Kind::Int32List(l)) => {
                        let widened: Vec<i64> = l.value.iter().map(|&v| i64::from(v)).collect();
                        assert_eq!(converted.int64_values(name), Some(&widened[..]), "{name}");
                    }
                    Some(Kind::DoubleList(l)) => {
                        let narrowed: Vec<u32> =
                            l.value.iter().map(|&v| (v as f32).to_bits()).collect();
                        let got: Vec<u32> = converted
                            .float_values(name)
                            .unwrap()
                            .iter()
                            .map(|v| v.to_bits())
                            .collect();
                        assert_eq!(got, narrowed, "{name}");
                    }
                    _ => {}
                }
            }
        }
        match transcoder.of_to_tf(&record, &mut example) {
            Ok(()) => {}
            Err(err) => {
                assert!(
                    matches!(
                        err.kind(),
                        BridgeError::InexactDouble { .. } | BridgeError::FloatOverflow { .. }
                    ),
                    "{err}"
                );
                let name = err.feature().expect("the error names the feature");
                assert!(
                    typed.double_values(name).is_some(),
                    "{name} is a double feature"
                );
                inexact += 1;
            }
        }
    }
    // Records 1, 3 and 5 hold 1e300 (after exact values, before any that only round).
    assert_eq!(
        (inexact, overflowing),
        (3, 3),
        "the all_kinds dataset holds doubles float cannot represent"
    );
}
