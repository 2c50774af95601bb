//! What the writer writes reads back, with both readers; uncompressed, it is byte for byte
//! what `array_record` writes for the same records and options.

use std::fs;
use std::num::NonZeroU32;
use std::path::PathBuf;

use ofconvert_arrayrecord::{
    Compression, IndexedReader, Reader, Writer, WriterOptions, BLOCK_SIZE,
};
use proptest::prelude::*;

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/arrayrecord")
}

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

fn write(records: &[Vec<u8>], options: WriterOptions) -> Vec<u8> {
    let mut writer = Writer::with_options(Vec::new(), options);
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap()
}

fn read_both(bytes: &[u8]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let streamed = Reader::new(bytes)
        .records()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let mut indexed = IndexedReader::open(bytes).unwrap();
    let by_number = (0..indexed.num_records())
        .map(|i| indexed.get(i).unwrap())
        .collect();
    (streamed, by_number)
}

fn options(compression: Compression, group_size: u32) -> WriterOptions {
    WriterOptions {
        compression,
        group_size: NonZeroU32::new(group_size).unwrap(),
    }
}

#[test]
fn uncompressed_files_are_what_array_record_writes() {
    for (name, group_size) in [("group7_uncompressed", 7), ("large_uncompressed", 2)] {
        let records = expected(name);
        let ours = write(&records, options(Compression::None, group_size));
        let theirs = fs::read(testdata().join(format!("{name}.array_record"))).unwrap();
        assert!(
            ours == theirs,
            "{name}: our file differs from array_record's"
        );
    }
}

#[test]
fn an_empty_file_is_a_signature_a_footer_and_a_postscript() {
    let bytes = Writer::new(Vec::new()).finish().unwrap();
    assert_eq!(bytes.len() as u64, 2 * BLOCK_SIZE);
    let (streamed, by_number) = read_both(&bytes);
    assert!(streamed.is_empty() && by_number.is_empty());
}

#[test]
fn records_across_many_blocks_read_back_under_every_compression() {
    let records: Vec<Vec<u8>> = (0..16u32)
        .map(|i| {
            (0..(i * 19_001) % 150_000)
                .map(|j| (j * 31 + i) as u8)
                .collect()
        })
        .collect();
    for compression in [
        Compression::None,
        Compression::Zstd(3),
        Compression::Brotli(1),
        Compression::Snappy,
    ] {
        for group_size in [1, 5] {
            let bytes = write(&records, options(compression, group_size));
            assert_eq!(bytes.len() as u64 % BLOCK_SIZE, 0);
            let (streamed, by_number) = read_both(&bytes);
            assert_eq!(streamed, records, "{compression} group {group_size}");
            assert_eq!(by_number, records, "{compression} group {group_size}");
        }
    }
}

fn compression() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        (-5i32..=5).prop_map(Compression::Zstd),
        (0u32..=4).prop_map(Compression::Brotli),
        Just(Compression::Snappy),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn written_records_read_back(
        records in proptest::collection::vec(
            prop_oneof![
                8 => proptest::collection::vec(any::<u8>(), 0..200),
                1 => proptest::collection::vec(any::<u8>(), 0..70_000),
            ],
            0..40,
        ),
        compression in compression(),
        group_size in 1u32..12,
    ) {
        let bytes = write(&records, options(compression, group_size));
        let (streamed, by_number) = read_both(&bytes);
        prop_assert_eq!(&streamed, &records);
        prop_assert_eq!(&by_number, &records);
    }
}
