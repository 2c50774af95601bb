//! Properties over arbitrary record lists: round trips in every compression, and damage that
//! is always detected at the record it hits.

use ofconvert_tfrecord::{Compression, ErrorKind, Position, Reader, ReaderOptions, Writer};
use proptest::prelude::*;

fn compression() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Gzip),
        Just(Compression::Zlib)
    ]
}

fn records() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..600), 0..24)
}

fn write_all(records: &[Vec<u8>], compression: Compression) -> Vec<u8> {
    let mut writer = Writer::with_compression(Vec::new(), compression);
    for record in records {
        writer.write_record(record).unwrap();
    }
    assert_eq!(writer.records_written(), records.len() as u64);
    assert_eq!(
        writer.bytes_written(),
        records.iter().map(|r| r.len() as u64 + 16).sum::<u64>()
    );
    writer.finish().unwrap()
}

/// The offset at which each record starts, plus the end of the stream.
fn record_starts(records: &[Vec<u8>]) -> Vec<u64> {
    let mut starts = vec![0];
    for record in records {
        starts.push(starts.last().unwrap() + record.len() as u64 + 16);
    }
    starts
}

proptest! {
    #[test]
    fn write_then_read_gives_back_the_records(records in records(), compression in compression()) {
        let stream = write_all(&records, compression);
        let end = Position { offset: *record_starts(&records).last().unwrap(), index: records.len() as u64 };

        let (mut reader, sniffed) = Reader::sniffed(stream.as_slice(), ReaderOptions::default()).unwrap();
        // An empty stream carries no magic, so it sniffs as plain whatever wrote it.
        if !stream.is_empty() {
            prop_assert_eq!(sniffed, compression);
        }
        let mut buf = Vec::new();
        for record in &records {
            prop_assert!(reader.read_record(&mut buf).unwrap());
            prop_assert_eq!(&buf, record);
        }
        prop_assert!(!reader.read_record(&mut buf).unwrap());
        prop_assert_eq!(reader.position(), end);

        let options = ReaderOptions { compression, ..ReaderOptions::default() };
        let mut reader = Reader::with_options(stream.as_slice(), options);
        for record in &records {
            prop_assert_eq!(reader.skip_record().unwrap(), Some(record.len() as u64));
        }
        prop_assert_eq!(reader.skip_record().unwrap(), None);
        prop_assert_eq!(reader.position(), end);

        let collected: Vec<Vec<u8>> = Reader::with_options(stream.as_slice(), options)
            .records()
            .collect::<Result<_, _>>()
            .unwrap();
        prop_assert_eq!(collected, records);
    }

    #[test]
    fn any_changed_byte_is_caught_at_the_record_it_hits(
        records in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 1..12),
        at in any::<prop::sample::Index>(),
        flip in 1..=255u8,
    ) {
        let mut stream = write_all(&records, Compression::None);
        let at = at.index(stream.len());
        stream[at] ^= flip;
        let starts = record_starts(&records);
        let hit = starts.iter().rposition(|&start| start <= at as u64).unwrap();
        let start = starts[hit];

        let mut reader = Reader::new(stream.as_slice());
        let mut buf = Vec::new();
        for record in &records[..hit] {
            prop_assert!(reader.read_record(&mut buf).unwrap());
            prop_assert_eq!(&buf, record);
        }
        let err = reader.read_record(&mut buf).unwrap_err();
        prop_assert_eq!(err.index(), hit as u64);
        if at as u64 - start < 12 {
            prop_assert!(matches!(err.kind(), ErrorKind::LengthCrcMismatch { .. }), "{:?}", err);
            prop_assert_eq!(err.offset(), start);
            prop_assert!(!reader.recover());
        } else {
            prop_assert!(matches!(err.kind(), ErrorKind::DataCrcMismatch { .. }), "{:?}", err);
            prop_assert_eq!(err.offset(), start + 12);
            prop_assert!(reader.recover());
            for record in &records[hit + 1..] {
                prop_assert!(reader.read_record(&mut buf).unwrap());
                prop_assert_eq!(&buf, record);
            }
            prop_assert!(!reader.read_record(&mut buf).unwrap());
        }
    }

    #[test]
    fn a_stream_cut_anywhere_ends_cleanly_only_at_a_record_boundary(
        records in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 1..12),
        at in any::<prop::sample::Index>(),
    ) {
        let stream = write_all(&records, Compression::None);
        let cut = at.index(stream.len());
        let starts = record_starts(&records);
        let hit = starts.iter().rposition(|&start| start <= cut as u64).unwrap();
        let start = starts[hit];
        let tail = cut as u64 - start;

        let mut reader = Reader::new(&stream[..cut]);
        let mut buf = Vec::new();
        for record in &records[..hit] {
            prop_assert!(reader.read_record(&mut buf).unwrap());
            prop_assert_eq!(&buf, record);
        }
        let outcome = reader.read_record(&mut buf);
        match tail {
            0 => prop_assert!(!outcome.unwrap()),
            1..=11 => {
                let err = outcome.unwrap_err();
                prop_assert!(matches!(err.kind(), ErrorKind::TruncatedHeader { available } if *available as u64 == tail), "{:?}", err);
                prop_assert_eq!((err.offset(), err.index()), (start, hit as u64));
            }
            _ => {
                let err = outcome.unwrap_err();
                let length = records[hit].len() as u64;
                prop_assert!(matches!(err.kind(), ErrorKind::Truncated { length: l, available } if *l == length && *available == tail - 12), "{:?}", err);
                prop_assert_eq!((err.offset(), err.index()), (start, hit as u64));
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        verify in any::<bool>(),
    ) {
        let options = ReaderOptions { verify_length_crc: verify, verify_data_crc: verify, ..ReaderOptions::default() };
        let (mut reader, _) = Reader::sniffed(bytes.as_slice(), options).unwrap();
        let mut buf = Vec::new();
        let mut count = 0u64;
        while let Ok(true) = reader.read_record(&mut buf) {
            count += 1;
        }
        // Every record takes at least 16 bytes, so the loop cannot run away.
        prop_assert!(count * 16 <= reader.position().offset);
        for compression in [Compression::Gzip, Compression::Zlib] {
            let options = ReaderOptions { compression, ..options };
            let mut reader = Reader::with_options(bytes.as_slice(), options);
            while let Ok(Some(_)) = reader.skip_record() {}
        }
    }
}
