//! Files written by Google's `array_record` 0.8.6 (`testdata/arrayrecord/generate.py`), read
//! record for record against what its own reader read from them.

use std::fs;
use std::path::PathBuf;

use ofconvert_arrayrecord::{ErrorKind, IndexedReader, Reader};

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/arrayrecord")
}

/// The cases the generator wrote: (name, record count).
fn cases() -> Vec<(String, u64)> {
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(testdata().join("manifest.json")).unwrap()).unwrap();
    manifest
        .as_array()
        .unwrap()
        .iter()
        .map(|case| {
            (
                case["name"].as_str().unwrap().to_owned(),
                case["records"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `NAME.expected`: each record as an 8-byte little-endian length and its bytes.
fn expected(name: &str) -> Vec<Vec<u8>> {
    let bytes = fs::read(testdata().join(format!("{name}.expected"))).unwrap();
    let mut rest = bytes.as_slice();
    let mut records = Vec::new();
    while !rest.is_empty() {
        let (len, tail) = rest.split_at(8);
        let len = u64::from_le_bytes(len.try_into().unwrap()) as usize;
        records.push(tail[..len].to_vec());
        rest = &tail[len..];
    }
    records
}

fn file(name: &str) -> Vec<u8> {
    fs::read(testdata().join(format!("{name}.array_record"))).unwrap()
}

#[test]
fn every_golden_file_reads_in_order_byte_for_byte() {
    let cases = cases();
    assert!(cases.len() >= 10);
    for (name, count) in cases {
        let want = expected(&name);
        assert_eq!(want.len() as u64, count, "{name}");
        let bytes = file(&name);
        let got: Result<Vec<_>, _> = Reader::new(bytes.as_slice()).records().collect();
        assert_eq!(got.unwrap(), want, "{name}");
    }
}

#[test]
fn every_golden_file_reads_by_record_number() {
    for (name, count) in cases() {
        let want = expected(&name);
        let bytes = file(&name);
        let mut reader = IndexedReader::open(bytes.as_slice()).unwrap();
        assert_eq!(reader.num_records(), count, "{name}");
        // Backwards, so that no chunk is read from the cache of the one before.
        for index in (0..count).rev() {
            assert_eq!(
                reader.get(index).unwrap(),
                want[index as usize],
                "{name} #{index}"
            );
        }
        let err = reader.get(count).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::RecordOutOfRange { .. }));
    }
}

#[test]
fn the_footer_carries_the_writer_options() {
    let mut reader = Reader::new(fs::File::open(testdata().join("brotli.array_record")).unwrap());
    let mut record = Vec::new();
    while reader.read_record(&mut record).unwrap() {}
    let metadata = reader.metadata().unwrap();
    assert_eq!(metadata.num_records, 60);
    assert_eq!(metadata.num_chunks, 4);
    assert!(metadata.writer_options.contains("brotli:6"), "{metadata:?}");

    let file = fs::File::open(testdata().join("large_zstd.array_record")).unwrap();
    let indexed = IndexedReader::open(file).unwrap();
    assert_eq!(indexed.num_chunks(), 3);
    assert!(indexed
        .metadata()
        .writer_options
        .starts_with("group_size:2,"));
}
