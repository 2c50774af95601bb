//! Golden tests: files that real TensorFlow wrote (`testdata/`, made by `testdata/generate.py`),
//! read by the framing crates and decoded with prost, must give exactly what TensorFlow read
//! and protobuf parsed, float bits included. Damaged files must fail with the error kind,
//! offset and record index that `testdata/damaged/expected.json` gives.
//!
//! Values are compared in the JSON shape of the expected files (see `testdata/README.md`):
//! each decoded record is rendered the way the generator rendered protobuf's parse, and the
//! two renderings must be equal feature by feature.

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::mem::{discriminant, Discriminant};
use std::path::{Path, PathBuf};

use ofconvert_bridge::proto::{oneflow, tensorflow};
use ofconvert_tfrecord::{Compression, ErrorKind, Reader, ReaderOptions, Writer};
use prost::Message;
use serde_json::{json, Map, Value};

mod conversion;
mod damaged;
mod samples;

/// Bytes values longer than this are stored as length + digest in the expected files.
const BYTES_INLINE_MAX: usize = 4096;

fn testdata(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(relative)
}

fn load_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn compression_named(name: &str) -> Compression {
    match name {
        "NONE" => Compression::None,
        "GZIP" => Compression::Gzip,
        "ZLIB" => Compression::Zlib,
        other => panic!("unknown compression {other:?}"),
    }
}

fn open_tfrecord(path: &Path, compression: Compression) -> Reader<File> {
    let file = File::open(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let options = ReaderOptions {
        compression,
        ..ReaderOptions::default()
    };
    Reader::with_options(file, options)
}

/// Every record of a file that must read without error.
fn read_tfrecords(path: &Path, compression: Compression) -> Vec<Vec<u8>> {
    let mut reader = open_tfrecord(path, compression);
    let mut records = Vec::new();
    let mut buf = Vec::new();
    while reader
        .read_record(&mut buf)
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
    {
        records.push(buf.clone());
    }
    records
}

/// The records read before the first error, and that error (`None` at a clean end).
fn read_until_error(
    path: &Path,
    options: ReaderOptions,
) -> (Vec<Vec<u8>>, Option<ofconvert_tfrecord::Error>) {
    let file = File::open(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let mut reader = Reader::with_options(file, options);
    let mut records = Vec::new();
    let mut buf = Vec::new();
    loop {
        match reader.read_record(&mut buf) {
            Ok(true) => records.push(buf.clone()),
            Ok(false) => return (records, None),
            Err(err) => return (records, Some(err)),
        }
    }
}

fn read_ofrecords(path: &Path) -> Vec<Vec<u8>> {
    let file = File::open(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    ofconvert_ofrecord::Reader::new(file)
        .records()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// FNV-1a, 64-bit: the digest the expected files use for values too long to store inline.
fn fnv1a64(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

fn bytes_json(value: &[u8]) -> Value {
    if value.len() <= BYTES_INLINE_MAX {
        Value::from(hex(value))
    } else {
        json!({"len": value.len(), "fnv1a64": fnv1a64(value)})
    }
}

fn feature_json(kind: Option<&str>, values: Vec<Value>) -> Value {
    json!({"kind": kind, "values": values})
}

fn tf_feature_json(feature: &tensorflow::Feature) -> Value {
    use tensorflow::feature::Kind;
    match &feature.kind {
        None => feature_json(None, Vec::new()),
        Some(Kind::BytesList(list)) => feature_json(
            Some("bytes_list"),
            list.value.iter().map(|v| bytes_json(v)).collect(),
        ),
        Some(Kind::FloatList(list)) => feature_json(
            Some("float_list"),
            list.value
                .iter()
                .map(|v| Value::from(v.to_bits()))
                .collect(),
        ),
        Some(Kind::Int64List(list)) => feature_json(
            Some("int64_list"),
            list.value.iter().map(|&v| Value::from(v)).collect(),
        ),
    }
}

fn of_feature_json(feature: &oneflow::Feature) -> Value {
    use oneflow::feature::Kind;
    match &feature.kind {
        None => feature_json(None, Vec::new()),
        Some(Kind::BytesList(list)) => feature_json(
            Some("bytes_list"),
            list.value.iter().map(|v| bytes_json(v)).collect(),
        ),
        Some(Kind::FloatList(list)) => feature_json(
            Some("float_list"),
            list.value
                .iter()
                .map(|v| Value::from(v.to_bits()))
                .collect(),
        ),
        Some(Kind::DoubleList(list)) => feature_json(
            Some("double_list"),
            list.value
                .iter()
                .map(|v| Value::from(v.to_bits()))
                .collect(),
        ),
        Some(Kind::Int32List(list)) => feature_json(
            Some("int32_list"),
            list.value.iter().map(|&v| Value::from(v)).collect(),
        ),
        Some(Kind::Int64List(list)) => feature_json(
            Some("int64_list"),
            list.value.iter().map(|&v| Value::from(v)).collect(),
        ),
    }
}

fn tf_features_json(features: Option<&tensorflow::Features>) -> Map<String, Value> {
    features
        .map(|f| {
            f.feature
                .iter()
                .map(|(name, feature)| (name.clone(), tf_feature_json(feature)))
                .collect()
        })
        .unwrap_or_default()
}

/// Decodes one record as the expected entry's `type` says, in the expected files' shape.
fn decode_record(serialized: &[u8], message_type: &str) -> Result<Value, prost::DecodeError> {
    Ok(match message_type {
        "example" => {
            let example = tensorflow::Example::decode(serialized)?;
            json!({"type": "example", "features": tf_features_json(example.features.as_ref())})
        }
        "sequence_example" => {
            let sequence = tensorflow::SequenceExample::decode(serialized)?;
            let lists: Map<String, Value> = sequence
                .feature_lists
                .iter()
                .flat_map(|lists| &lists.feature_list)
                .map(|(name, list)| {
                    let steps = list.feature.iter().map(tf_feature_json).collect();
                    (name.clone(), Value::Array(steps))
                })
                .collect();
            json!({
                "type": "sequence_example",
                "context": tf_features_json(sequence.context.as_ref()),
                "feature_lists": lists,
            })
        }
        "ofrecord" => {
            let record = oneflow::OfRecord::decode(serialized)?;
            let features: Map<String, Value> = record
                .feature
                .iter()
                .map(|(name, feature)| (name.clone(), of_feature_json(feature)))
                .collect();
            json!({"type": "ofrecord", "features": features})
        }
        other => panic!("unknown record type {other:?}"),
    })
}

/// Asserts that `actual` (a decoded record) equals the values part of `expected`, naming the
/// first feature that differs.
fn assert_same_values(actual: &Value, expected: &Value, what: &str) {
    assert_eq!(actual["type"], expected["type"], "{what}: type");
    for section in ["features", "context", "feature_lists"] {
        let (Some(actual), Some(expected)) = (
            actual.get(section).and_then(Value::as_object),
            expected.get(section).and_then(Value::as_object),
        ) else {
            assert_eq!(
                actual.get(section).is_some(),
                expected.get(section).is_some(),
                "{what}: {section} present in one only"
            );
            continue;
        };
        let actual_names: Vec<_> = actual.keys().collect();
        let expected_names: Vec<_> = expected.keys().collect();
        assert_eq!(actual_names, expected_names, "{what}: {section} names");
        for (name, value) in expected {
            assert_eq!(&actual[name], value, "{what}: {section} {name:?}");
        }
    }
}

/// Checks one record against its expected entry: bytes as TensorFlow read them, and values as
/// protobuf parsed them.
fn check_record(serialized: &[u8], expected: &Value, what: &str) {
    let length = expected["serialized_len"].as_u64();
    assert_eq!(Some(serialized.len() as u64), length, "{what}: length");
    if let Some(want) = expected.get("serialized_hex") {
        assert_eq!(Value::from(hex(serialized)), *want, "{what}: bytes");
    }
    let message_type = expected["type"].as_str().unwrap_or_default();
    let actual =
        decode_record(serialized, message_type).unwrap_or_else(|err| panic!("{what}: {err}"));
    assert_same_values(&actual, expected, what);
}

/// Reads a golden TFRecord file with the compression its expected file names, and checks every
/// record against the expected file.
fn check_golden(name: &str) -> Vec<Vec<u8>> {
    let path = testdata(&format!("golden/{name}"));
    let expected = load_json(&testdata(&format!("golden/{name}.expected.json")));
    let compression = compression_named(expected["compression"].as_str().unwrap_or_default());
    let records = read_tfrecords(&path, compression);
    let expected_records = expected["records"].as_array().expect("a records array");
    assert_eq!(
        records.len(),
        expected_records.len(),
        "{name}: record count"
    );
    assert_eq!(
        Some(records.len() as u64),
        expected["record_count"].as_u64()
    );
    for (index, (record, want)) in records.iter().zip(expected_records).enumerate() {
        check_record(record, want, &format!("{name} record {index}"));
    }
    records
}

fn u64_field(entry: &Value, field: &str, name: &str) -> u64 {
    entry[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{name}: no {field} in expected.json"))
}

/// Every file under `dir`, sorted, as paths relative to `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut pending = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).expect("a readable directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The golden files, each checked by a test below.
const GOLDEN_FILES: [&str; 8] = [
    "bert.tfrecord",
    "edge.tfrecord",
    "empty.tfrecord",
    "images.tfrecord",
    "sequence.tfrecord",
    "tutorial.tfrecord",
    "tutorial.tfrecord.gz",
    "tutorial.tfrecord.zz",
];

#[test]
fn every_golden_file_has_expected_values_and_a_test() {
    let mut present = Vec::new();
    for path in files_under(&testdata("golden")) {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 name");
        match name.strip_suffix(".expected.json") {
            Some(data) => assert!(testdata(&format!("golden/{data}")).is_file(), "{name}"),
            None => present.push(name.to_owned()),
        }
    }
    assert_eq!(present, GOLDEN_FILES);
    for name in GOLDEN_FILES {
        assert!(
            testdata(&format!("golden/{name}.expected.json")).is_file(),
            "{name}"
        );
    }
}

#[test]
fn tutorial_parses_to_tensorflows_values() {
    let records = check_golden("tutorial.tfrecord");
    assert_eq!(records.len(), 500);
}

#[test]
fn tutorial_gzip_written_by_tensorflow_reads_the_same_records() {
    let plain = check_golden("tutorial.tfrecord");
    assert_eq!(check_golden("tutorial.tfrecord.gz"), plain);
}

#[test]
fn tutorial_zlib_written_by_tensorflow_reads_the_same_records() {
    let plain = check_golden("tutorial.tfrecord");
    assert_eq!(check_golden("tutorial.tfrecord.zz"), plain);
}

#[test]
fn tensorflows_gzip_and_zlib_files_are_written_again_byte_for_byte() {
    let records = read_tfrecords(&testdata("golden/tutorial.tfrecord"), Compression::None);
    for (name, compression) in [
        ("tutorial.tfrecord.gz", Compression::Gzip),
        ("tutorial.tfrecord.zz", Compression::Zlib),
    ] {
        let tensorflows = std::fs::read(testdata(&format!("golden/{name}"))).expect(name);
        for on_thread in [false, true] {
            let mut writer = Writer::with_compression(Vec::new(), compression);
            if on_thread {
                writer = writer.writing_on_thread();
            }
            for record in &records {
                writer.write_record(record).expect("written");
            }
            let ours = writer.finish().expect("finished");
            assert!(ours == tensorflows, "{name} (on a thread: {on_thread})");
        }
    }
}

#[test]
fn compression_of_tensorflows_files_is_sniffed() {
    let plain = read_tfrecords(&testdata("golden/tutorial.tfrecord"), Compression::None);
    for (name, want) in [
        ("tutorial.tfrecord", Compression::None),
        ("tutorial.tfrecord.gz", Compression::Gzip),
        ("tutorial.tfrecord.zz", Compression::Zlib),
    ] {
        let file = File::open(testdata(&format!("golden/{name}"))).expect("golden file");
        let (reader, compression) =
            Reader::sniffed(file, ReaderOptions::default()).expect("sniffing");
        assert_eq!(compression, want, "{name}");
        let records: Vec<_> = reader
            .records()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(records, plain, "{name}");
    }
}

#[test]
fn image_records_parse_to_tensorflows_values() {
    let records = check_golden("images.tfrecord");
    for record in &records {
        let example = tensorflow::Example::decode(record.as_slice()).expect("an Example");
        let features = example.features.expect("features").feature;
        let Some(tensorflow::feature::Kind::BytesList(format)) =
            features.get("image/format").and_then(|f| f.kind.as_ref())
        else {
            panic!("image/format is not bytes");
        };
        let Some(tensorflow::feature::Kind::BytesList(encoded)) =
            features.get("image/encoded").and_then(|f| f.kind.as_ref())
        else {
            panic!("image/encoded is not bytes");
        };
        // The encoded bytes are the image file itself, signature included.
        let signature: &[u8] = match format.value[0].as_slice() {
            b"JPEG" => b"\xff\xd8\xff",
            b"PNG" => b"\x89PNG\r\n\x1a\n",
            other => panic!("unexpected format {other:?}"),
        };
        assert!(encoded.value[0].starts_with(signature));
    }
}

#[test]
fn edge_values_parse_to_tensorflows_values() {
    let records = check_golden("edge.tfrecord");
    // Example() serializes to nothing and Example(features=Features()) to an empty field 1.
    assert_eq!(records[7], b"");
    assert_eq!(records[8], b"\x0a\x00");
    assert_eq!(
        tensorflow::Example::decode(records[7].as_slice()).expect("empty Example"),
        tensorflow::Example { features: None }
    );
}

#[test]
fn edge_values_keep_every_float_bit() {
    let records = check_golden("edge.tfrecord");
    let example = tensorflow::Example::decode(records[2].as_slice()).expect("an Example");
    let features = example.features.expect("features").feature;
    let Some(tensorflow::feature::Kind::FloatList(floats)) =
        features.get("float").and_then(|f| f.kind.as_ref())
    else {
        panic!("no float feature");
    };
    let bits: Vec<u32> = floats.value.iter().map(|v| v.to_bits()).collect();
    for want in [
        0x7fc0_0000,
        0xffc0_0000,
        0x7fc0_0001,
        0x8000_0000,
        0x0000_0001,
    ] {
        assert!(bits.contains(&want), "{want:#010x} missing from {bits:x?}");
    }
}

#[test]
fn sequence_examples_parse_to_tensorflows_values() {
    check_golden("sequence.tfrecord");
}

#[test]
fn empty_file_holds_no_records() {
    assert!(check_golden("empty.tfrecord").is_empty());
}

#[test]
fn bert_records_parse_to_tensorflows_values() {
    for record in check_golden("bert.tfrecord") {
        let example = tensorflow::Example::decode(record.as_slice()).expect("an Example");
        let features = example.features.expect("features").feature;
        for (name, length) in [("input_ids", 128), ("masked_lm_positions", 20)] {
            let Some(tensorflow::feature::Kind::Int64List(list)) =
                features.get(name).and_then(|f| f.kind.as_ref())
            else {
                panic!("{name} is not int64");
            };
            assert_eq!(list.value.len(), length, "{name}");
        }
    }
}

/// Reads an OFRecord dataset's parts in order and checks every record against the expected file.
fn check_ofrecord_dataset(name: &str) -> Vec<Vec<u8>> {
    let expected = load_json(&testdata(&format!("ofrecord/{name}.expected.json")));
    let parts = expected["parts"].as_array().expect("a parts array");
    let mut records = Vec::new();
    for part in parts {
        let part = part.as_str().expect("a part name");
        let path = testdata(&format!("ofrecord/{name}/{part}"));
        records.extend(read_ofrecords(&path).into_iter().map(|r| (part, r)));
    }
    let expected_records = expected["records"].as_array().expect("a records array");
    assert_eq!(
        records.len(),
        expected_records.len(),
        "{name}: record count"
    );
    for (index, ((part, record), want)) in records.iter().zip(expected_records).enumerate() {
        assert_eq!(want["part"], *part, "{name} record {index}: part");
        check_record(record, want, &format!("{name} record {index}"));
    }
    records.into_iter().map(|(_, record)| record).collect()
}

#[test]
fn ofrecords_written_the_oneflow_way_parse_to_protobufs_values() {
    let records = check_ofrecord_dataset("all_kinds");
    let kinds: BTreeSet<String> = records
        .iter()
        .flat_map(|r| {
            let record = oneflow::OfRecord::decode(r.as_slice()).expect("an OFRecord");
            record.feature.into_values()
        })
        .filter_map(|feature| {
            of_feature_json(&feature)["kind"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    let all = [
        "bytes_list",
        "double_list",
        "float_list",
        "int32_list",
        "int64_list",
    ];
    assert_eq!(kinds, all.map(str::to_owned).into());
}

#[test]
fn ofrecords_without_double_or_int32_parse_to_protobufs_values() {
    for record in check_ofrecord_dataset("no_double") {
        let record = oneflow::OfRecord::decode(record.as_slice()).expect("an OFRecord");
        for (name, feature) in record.feature {
            assert!(
                !matches!(
                    feature.kind,
                    Some(
                        oneflow::feature::Kind::DoubleList(_)
                            | oneflow::feature::Kind::Int32List(_)
                    )
                ),
                "{name}"
            );
        }
    }
}
