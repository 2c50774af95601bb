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
use ofconvert_tfrecord::{Compression, ErrorKind, Reader, ReaderOptions};
use prost::Message;
use serde_json::{json, Map, Value};

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

/// What a damaged file's expected error kind means for the TFRecord reader.
fn kind_matches(expected: &str, actual: &ErrorKind) -> bool {
    match (expected, actual) {
        ("LengthCrcMismatch", ErrorKind::LengthCrcMismatch { .. })
        | ("DataCrcMismatch", ErrorKind::DataCrcMismatch { .. })
        | ("Truncated", ErrorKind::Truncated { .. })
        | ("TruncatedHeader", ErrorKind::TruncatedHeader { .. }) => true,
        ("GzipTruncated", ErrorKind::Io(err)) => err.kind() == io::ErrorKind::UnexpectedEof,
        ("TrailingData", ErrorKind::Io(err)) => err.kind() == io::ErrorKind::InvalidData,
        _ => false,
    }
}

/// The entries of `damaged/expected.json`, which must cover every file of `damaged/`.
fn damaged() -> Vec<(String, Value)> {
    let expected = load_json(&testdata("damaged/expected.json"));
    let files = expected["files"].as_object().expect("a files object");
    let listed: Vec<&String> = files.keys().collect();
    let present: Vec<String> = files_under(&testdata("damaged"))
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .filter(|name| name != "expected.json")
        .collect();
    assert_eq!(listed, present.iter().collect::<Vec<_>>());
    files.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn u64_field(entry: &Value, field: &str, name: &str) -> u64 {
    entry[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{name}: no {field} in expected.json"))
}

#[test]
fn damaged_files_fail_with_their_kind_offset_and_index() {
    let tutorial = read_tfrecords(&testdata("golden/tutorial.tfrecord"), Compression::None);
    for (name, entry) in damaged() {
        let kind = entry["kind"].as_str().unwrap_or_default();
        let options = ReaderOptions {
            compression: compression_named(entry["compression"].as_str().unwrap_or_default()),
            ..ReaderOptions::default()
        };
        let (records, error) = read_until_error(&testdata(&format!("damaged/{name}")), options);
        match kind {
            "ok" | "NotAnExample" => {
                if let Some(err) = error {
                    panic!("{name}: unexpected framing error {err}");
                }
                assert_eq!(records.len() as u64, u64_field(&entry, "records", &name));
            }
            _ => {
                let err = error.unwrap_or_else(|| panic!("{name}: read without error"));
                assert!(
                    kind_matches(kind, err.kind()),
                    "{name}: want {kind}, got {err:?}"
                );
                assert_eq!(err.offset(), u64_field(&entry, "offset", &name), "{name}");
                assert_eq!(err.index(), u64_field(&entry, "index", &name), "{name}");
                let good = u64_field(&entry, "good_records", &name);
                assert_eq!(records.len() as u64, good, "{name}: good records");
            }
        }
        // Whatever reads fine is TensorFlow's tutorial records in order (the concatenated
        // gzip file holds them twice, the second time only the first 10), except the one
        // record that is not an Example.
        let not_an_example = (kind == "NotAnExample").then(|| u64_field(&entry, "index", &name));
        let mut tutorial_records = tutorial.iter().cycle();
        for (index, record) in records.iter().enumerate() {
            if Some(index as u64) == not_an_example {
                continue;
            }
            assert_eq!(
                Some(record),
                tutorial_records.next(),
                "{name} record {index}"
            );
        }
    }
}

#[test]
fn a_crc_correct_record_that_is_no_example_does_not_decode_as_one() {
    let (name, entry) = damaged()
        .into_iter()
        .find(|(_, entry)| entry["kind"] == "NotAnExample")
        .expect("a NotAnExample file");
    let path = testdata(&format!("damaged/{name}"));
    let index = u64_field(&entry, "index", &name);
    let mut reader = open_tfrecord(&path, Compression::None);
    let mut record = Vec::new();
    loop {
        let position = reader.position();
        if !reader
            .read_record(&mut record)
            .unwrap_or_else(|err| panic!("{name}: {err}"))
        {
            break;
        }
        let decoded = tensorflow::Example::decode(record.as_slice());
        let i = position.index;
        assert_eq!(
            decoded.is_err(),
            i == index,
            "{name} record {i}: {decoded:?}"
        );
        if i == index {
            assert_eq!(position.offset, u64_field(&entry, "offset", &name));
        }
    }
    assert_eq!(reader.position().index, u64_field(&entry, "records", &name));
}

#[test]
fn a_flipped_data_byte_can_be_skipped_and_the_rest_read() {
    let tutorial = read_tfrecords(&testdata("golden/tutorial.tfrecord"), Compression::None);
    let path = testdata("damaged/flipped_data.tfrecord");
    let mut reader = open_tfrecord(&path, Compression::None);
    let mut records = Vec::new();
    let mut skipped = Vec::new();
    let mut buf = Vec::new();
    loop {
        match reader.read_record(&mut buf) {
            Ok(true) => records.push(buf.clone()),
            Ok(false) => break,
            Err(err) => {
                assert!(matches!(err.kind(), ErrorKind::DataCrcMismatch { .. }));
                skipped.push(err.index());
                assert!(reader.recover(), "{err}");
            }
        }
    }
    assert_eq!(skipped, [3]);
    let mut want = tutorial.clone();
    want.remove(3);
    assert_eq!(records, want);
}

#[test]
fn a_flipped_length_without_its_crc_check_is_truncated_not_allocated() {
    // The top byte of the length is flipped: the record claims nearly 2^64 bytes.
    let options = ReaderOptions {
        verify_length_crc: false,
        ..ReaderOptions::default()
    };
    let (records, error) = read_until_error(&testdata("damaged/flipped_length.tfrecord"), options);
    let err = error.expect("an error");
    match err.kind() {
        ErrorKind::Truncated { length, .. } => assert!(*length > 1 << 63, "{length}"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!((err.offset(), err.index()), (499, 5));
    assert_eq!(records.len(), 5);
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

/// The feature names and kinds of a record, which OneFlow needs to be the same in every record.
fn schema(
    example: &tensorflow::Example,
) -> Vec<(String, Option<Discriminant<tensorflow::feature::Kind>>)> {
    example
        .features
        .iter()
        .flat_map(|f| &f.feature)
        .map(|(name, feature)| (name.clone(), feature.kind.as_ref().map(discriminant)))
        .collect()
}

#[test]
fn sample_datasets_read_cleanly_with_one_schema_per_file() {
    let root = testdata("datasets");
    let mut record_files = 0;
    for path in files_under(&root) {
        if path.extension().is_some_and(|e| e == "json") {
            continue;
        }
        record_files += 1;
        let records = read_tfrecords(&path, Compression::None);
        assert!(!records.is_empty(), "{}", path.display());
        let schemas: Vec<_> = records
            .iter()
            .map(|r| {
                let example = tensorflow::Example::decode(r.as_slice())
                    .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
                schema(&example)
            })
            .collect();
        assert!(!schemas[0].is_empty(), "{}", path.display());
        assert!(
            schemas.iter().all(|s| *s == schemas[0]),
            "{}: features vary between records",
            path.display()
        );
    }
    // MNIST 3, JPEG ImageNet 3, mixed ImageNet 1, CIFAR-10 3, tutorial 1, BERT 1.
    assert_eq!(record_files, 12);
}

#[test]
fn tfds_shard_lengths_match_the_shards() {
    for (dataset, version) in [("mnist", "3.0.1"), ("cifar10", "3.0.2")] {
        let dir = testdata(&format!("datasets/tfds/{dataset}/{version}"));
        let info = load_json(&dir.join("dataset_info.json"));
        let splits = info["splits"].as_array().expect("splits");
        assert_eq!(splits.len(), 2);
        for split in splits {
            let name = split["name"].as_str().expect("a split name");
            let lengths = split["shardLengths"].as_array().expect("shardLengths");
            for (i, length) in lengths.iter().enumerate() {
                let shard = dir.join(format!(
                    "{dataset}-{name}.tfrecord-{i:05}-of-{:05}",
                    lengths.len()
                ));
                let count = read_tfrecords(&shard, Compression::None).len();
                assert_eq!(
                    length.as_str(),
                    Some(count.to_string().as_str()),
                    "{dataset} {name} {i}"
                );
            }
        }
    }
}

#[test]
fn sample_oneflow_dataset_uses_oneflows_imagenet_keys() {
    let dir = testdata("ofdatasets/imagenet_of/train");
    let parts = files_under(&dir);
    let names: Vec<_> = parts
        .iter()
        .filter_map(|p| p.file_name()?.to_str())
        .collect();
    assert_eq!(names, ["part-00000", "part-00001"]);
    for part in &parts {
        let records = read_ofrecords(part);
        assert!(!records.is_empty());
        for record in records {
            let record = oneflow::OfRecord::decode(record.as_slice()).expect("an OFRecord");
            let names: Vec<_> = record.feature.keys().map(String::as_str).collect();
            assert_eq!(names, ["class/label", "encoded"]);
            assert!(matches!(
                record.feature["class/label"].kind,
                Some(oneflow::feature::Kind::Int32List(_))
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The bridge on TensorFlow's own files: every Example becomes an OFRecord with TensorFlow's
// values, and comes back byte for byte.

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
