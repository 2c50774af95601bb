//! What the writer writes reads back, with both readers; uncompressed, it is byte for byte
//! what `array_record` writes for the same records and options.

use std::fs;
use std::num::NonZeroU32;
use std::path::PathBuf;

use ofconvert_arrayrecord::{
    ChunkDecoder, Compression, ErrorKind, IndexedReader, Reader, Writer, WriterOptions, BLOCK_SIZE,
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
    let by_number: Vec<Vec<u8>> = (0..indexed.num_records())
        .map(|i| indexed.get(i).unwrap())
        .collect();
    assert_eq!(by_chunks(bytes, &indexed), by_number);
    (streamed, by_number)
}

/// Every record, each chunk decoded out of the bytes from its offset to the next chunk's (the
/// footer's, after the last): what a reader that fetches the chunks itself does.
fn by_chunks(bytes: &[u8], indexed: &IndexedReader<&[u8]>) -> Vec<Vec<u8>> {
    let mut decoder = ChunkDecoder::default();
    let mut records = Vec::new();
    for chunk in 0..indexed.num_chunks() {
        let numbers = indexed.chunk(chunk).0;
        let held = indexed.chunk_bytes(chunk);
        assert_eq!(held.start, indexed.chunk(chunk).1);
        let begin = held.start;
        decoder
            .decode(
                &bytes[begin as usize..held.end as usize],
                begin,
                numbers.clone(),
            )
            .unwrap();
        assert_eq!(decoder.len() as u64, numbers.end - numbers.start);
        records.extend((0..decoder.len()).map(|i| decoder.record(i).to_vec()));
    }
    records
}

#[test]
fn a_chunk_decoded_out_of_its_bytes_names_its_damage_and_its_footers_disagreement() {
    let records: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 40_000]).collect();
    let bytes = write(&records, options(Compression::None, 2));
    let indexed = IndexedReader::open(bytes.as_slice()).unwrap();
    let (numbers, begin) = indexed.chunk(1);
    let end = indexed.chunk(2).1;
    // The chunk runs across a block boundary: its block header is checked and left out.
    assert!(begin / BLOCK_SIZE < end / BLOCK_SIZE, "{begin}..{end}");
    let mut decoder = ChunkDecoder::default();
    decoder
        .decode(&bytes[begin as usize..end as usize], begin, numbers.clone())
        .unwrap();
    assert_eq!(
        (decoder.record(0), decoder.record(1)),
        (&records[2][..], &records[3][..])
    );

    let mut damaged = bytes[begin as usize..end as usize].to_vec();
    damaged[100] ^= 1;
    let err = decoder
        .decode(&damaged, begin, numbers.clone())
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ChunkDataHashMismatch { .. }),
        "{err}"
    );
    assert_eq!((err.offset(), err.index()), (begin, 2));
    assert!(decoder.is_empty());
    // Unchecked, the damage is in the records.
    decoder.check_data_hashes(false);
    decoder.decode(&damaged, begin, numbers.clone()).unwrap();
    assert_ne!(
        (decoder.record(0), decoder.record(1)),
        (&records[2][..], &records[3][..])
    );
    decoder.check_data_hashes(true);

    let at_boundary = (BLOCK_SIZE * (begin / BLOCK_SIZE + 1) - begin) as usize;
    let mut header = bytes[begin as usize..end as usize].to_vec();
    header[at_boundary] ^= 1;
    let err = decoder.decode(&header, begin, numbers.clone()).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::BlockHeaderHashMismatch { .. }),
        "{err}"
    );
    assert_eq!(err.offset(), begin + at_boundary as u64);

    let short = &bytes[begin as usize..end as usize - 1000];
    let err = decoder.decode(short, begin, numbers.clone()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");

    let err = decoder
        .decode(&bytes[begin as usize..end as usize], begin, 2..5)
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidFooter { .. }),
        "{err}"
    );
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
