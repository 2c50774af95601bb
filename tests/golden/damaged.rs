//! Damaged files written from TensorFlow's: each fails with its kind, offset and record index, and what can be recovered is.

use super::*;

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
