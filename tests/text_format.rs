//! Checks `ofconvert_bridge::text` against what Python's protobuf prints.
//!
//! The fixtures in testdata/text/ come from testdata/text/generate.py, which runs
//! `text_format.MessageToString` and `json_format.MessageToDict` on TensorFlow's and OneFlow's
//! message classes. Text must match byte for byte; JSON is compared as parsed values, since
//! MessageToDict's key order follows the runtime's map order.

use std::fs;
use std::path::PathBuf;

use ofconvert_bridge::proto::oneflow::OfRecord;
use ofconvert_bridge::proto::tensorflow::{Example, SequenceExample};
use ofconvert_bridge::text::{
    example_to_json, example_to_text, format_f32, format_f64, ofrecord_to_json, ofrecord_to_text,
    sequence_example_to_json, sequence_example_to_text, write_example_json, write_example_text,
    write_ofrecord_text,
};
use prost::Message;
use serde_json::Value;

fn testdata(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(relative)
}

/// The `cases` array of one of the fixture files.
fn fixture_cases(name: &str) -> Vec<Value> {
    let path = testdata(&format!("text/{name}"));
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let document: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match document.get("cases") {
        Some(Value::Array(cases)) => cases.clone(),
        _ => panic!("{}: no cases array", path.display()),
    }
}

fn str_field<'a>(case: &'a Value, field: &str) -> &'a str {
    case.get(field)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("case without string field {field}: {case}"))
}

fn hex_decode(hex: &str) -> Vec<u8> {
    assert!(hex.len().is_multiple_of(2), "odd-length hex {hex}");
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).expect("hex digit"))
        .collect()
}

/// Runs `spell` over every case of a float fixture and lists the disagreements.
fn check_float_fixture(name: &str, spell: impl Fn(&str) -> String, minimum_cases: usize) {
    let cases = fixture_cases(name);
    assert!(
        cases.len() >= minimum_cases,
        "{name}: only {} cases",
        cases.len()
    );
    let mismatches: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let bits = str_field(case, "bits");
            let expected = str_field(case, "text");
            let actual = spell(bits);
            (actual != expected).then(|| format!("bits {bits}: expected {expected}, got {actual}"))
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{name}: {} of {} differ, first ones:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_f32_is_spelled_as_text_format_spells_it() {
    check_float_fixture(
        "floats.json",
        |bits| {
            format_f32(f32::from_bits(
                u32::from_str_radix(bits, 16).expect("f32 bits"),
            ))
        },
        4000,
    );
}

#[test]
fn every_f64_is_spelled_as_python_repr_spells_it() {
    check_float_fixture(
        "doubles.json",
        |bits| {
            format_f64(f64::from_bits(
                u64::from_str_radix(bits, 16).expect("f64 bits"),
            ))
        },
        4000,
    );
}

/// Text and JSON renderings of one decoded message, by the fixture's type name.
fn render(kind: &str, bytes: &[u8]) -> Result<(String, String), prost::DecodeError> {
    Ok(match kind {
        "Example" => {
            let message = Example::decode(bytes)?;
            (example_to_text(&message), example_to_json(&message))
        }
        "SequenceExample" => {
            let message = SequenceExample::decode(bytes)?;
            (
                sequence_example_to_text(&message),
                sequence_example_to_json(&message),
            )
        }
        "OFRecord" => {
            let message = OfRecord::decode(bytes)?;
            (ofrecord_to_text(&message), ofrecord_to_json(&message))
        }
        other => panic!("unknown message type {other}"),
    })
}

#[test]
fn every_message_renders_as_python_renders_it() {
    let cases = fixture_cases("messages.json");
    assert!(cases.len() >= 50, "only {} message cases", cases.len());
    let mut checked = 0;
    for case in &cases {
        let name = str_field(case, "name");
        let bytes = hex_decode(str_field(case, "hex"));
        let rendered = render(str_field(case, "type"), &bytes);
        if case.get("refused").and_then(Value::as_bool) == Some(true) {
            assert!(
                rendered.is_err(),
                "{name}: Python refuses this input, prost accepted it"
            );
            continue;
        }
        let (text, json) = rendered.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(text, str_field(case, "text"), "{name}: text differs");
        assert!(!json.contains('\n'), "{name}: JSON spans lines: {json}");
        let parsed: Value =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{name}: {e} in {json}"));
        assert_eq!(
            Some(&parsed),
            case.get("json"),
            "{name}: JSON differs: {json}"
        );
        checked += 1;
    }
    assert!(checked >= 48, "only {checked} messages were rendered");
}

#[test]
fn writers_append_to_what_the_buffer_holds() {
    let cases = fixture_cases("messages.json");
    let case = cases
        .iter()
        .find(|case| str_field(case, "name") == "example_imagenet_like")
        .expect("example_imagenet_like case");
    let example = Example::decode(hex_decode(str_field(case, "hex")).as_slice()).expect("decode");

    let mut out = String::from("record 0\n");
    write_example_text(&mut out, &example);
    assert_eq!(out, format!("record 0\n{}", str_field(case, "text")));

    let mut out = String::from("[");
    write_example_json(&mut out, &example);
    assert_eq!(out, format!("[{}", example_to_json(&example)));

    let record = OfRecord::default();
    let mut out = String::from("kept");
    write_ofrecord_text(&mut out, &record);
    assert_eq!(out, "kept");
}

/// FNV-1a, 64-bit: how the golden files summarize texts too long to store.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Compares a rendering with a golden record's `text`, or with its length and hash when the
/// generator left the text out for size.
fn check_golden_text(place: &str, expected: &Value, actual: &str) {
    if let Some(text) = expected.get("text") {
        assert_eq!(Some(actual), text.as_str(), "{place}: text differs");
        return;
    }
    let length = expected.get("text_len").and_then(Value::as_u64);
    let hash = str_field(expected, "text_fnv1a64");
    assert_eq!(
        Some(actual.len() as u64),
        length,
        "{place}: text length differs"
    );
    assert_eq!(
        format!("{:016x}", fnv1a64(actual.as_bytes())),
        hash,
        "{place}: text hash differs"
    );
}

fn json_files_in(relative: &str) -> Vec<PathBuf> {
    let dir = testdata(relative);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.to_string_lossy().ends_with(".expected.json"))
        .collect();
    files.sort();
    files
}

fn read_json(path: &std::path::Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn records_of(document: &Value) -> &[Value] {
    document
        .get("records")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .expect("records array")
}

#[test]
fn golden_tfrecords_render_as_tensorflow_parsed_them() {
    let mut checked = 0;
    for expected_path in json_files_in("golden") {
        let document = read_json(&expected_path);
        let name = str_field(&document, "file");
        let expected = records_of(&document);
        let file = fs::File::open(testdata(&format!("golden/{name}"))).expect("golden file");
        let (mut reader, _) =
            ofconvert_tfrecord::Reader::sniffed(file, Default::default()).expect("sniff");
        let mut buf = Vec::new();
        let mut index = 0;
        while reader
            .read_record(&mut buf)
            .expect("golden files read cleanly")
        {
            let place = format!("{name} record {index}");
            let record = expected
                .get(index)
                .unwrap_or_else(|| panic!("{place}: not in the expected file"));
            let text = match str_field(record, "type") {
                "example" => example_to_text(&Example::decode(buf.as_slice()).expect(&place)),
                "sequence_example" => sequence_example_to_text(
                    &SequenceExample::decode(buf.as_slice()).expect(&place),
                ),
                other => panic!("{place}: unexpected type {other}"),
            };
            check_golden_text(&place, record, &text);
            index += 1;
        }
        assert_eq!(index, expected.len(), "{name}: record count");
        checked += index;
    }
    assert!(checked >= 1500, "only {checked} golden records checked");
}

#[test]
fn golden_ofrecords_render_as_protobuf_parsed_them() {
    let mut checked = 0;
    for expected_path in json_files_in("ofrecord") {
        let document = read_json(&expected_path);
        let dataset = str_field(&document, "dataset");
        let mut expected = records_of(&document).iter();
        let parts = document
            .get("parts")
            .and_then(Value::as_array)
            .expect("parts");
        for part in parts {
            let part = part.as_str().expect("part name");
            let path = testdata(&format!("ofrecord/{dataset}/{part}"));
            let mut reader = ofconvert_ofrecord::Reader::new(fs::File::open(path).expect("part"));
            let mut buf = Vec::new();
            let mut index = 0;
            while reader
                .read_record(&mut buf)
                .expect("golden parts read cleanly")
            {
                let place = format!("{dataset}/{part} record {index}");
                let record = expected
                    .next()
                    .unwrap_or_else(|| panic!("{place}: not in the expected file"));
                assert_eq!(str_field(record, "part"), part, "{place}: part");
                let text = ofrecord_to_text(&OfRecord::decode(buf.as_slice()).expect(&place));
                check_golden_text(&place, record, &text);
                index += 1;
                checked += 1;
            }
        }
        assert!(
            expected.next().is_none(),
            "{dataset}: records missing from the parts"
        );
    }
    assert!(checked >= 12, "only {checked} OFRecords checked");
}
