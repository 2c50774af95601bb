//! Uncompressed framing: known answers, every error kind with its position, skipping,
//! recovery, opting out of verification, and inputs that would tempt a big allocation.

use std::io::{self, Read};

use ofconvert_tfrecord::{crc, frame, Error, ErrorKind, Position, Reader, ReaderOptions, Writer};

mod streams;

const EMPTY_RECORD: [u8; 16] = [
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x29, 0x03, 0x98, 0x07, 0xd8, 0xea, 0x82, 0xa2,
];
const FOO_RECORD: [u8; 19] = [
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb0, 0x99, 0x49, 0x0e, 0x66, 0x6f, 0x6f, 0x61,
    0x8a, 0xbe, 0xfe,
];

fn write_all(records: &[&[u8]]) -> Vec<u8> {
    let mut writer = Writer::new(Vec::new());
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap()
}

/// Three records: "alpha" at 0, "" at 21, "gamma!" at 37; the stream is 59 bytes long.
fn three_records() -> Vec<u8> {
    write_all(&[b"alpha", b"", b"gamma!"])
}

fn read_all(reader: &mut Reader<impl Read>) -> Result<Vec<Vec<u8>>, Error> {
    let mut records = Vec::new();
    let mut buf = Vec::new();
    while reader.read_record(&mut buf)? {
        records.push(buf.clone());
    }
    Ok(records)
}

/// A header announcing `length` bytes, with a valid length CRC.
fn header(length: u64) -> Vec<u8> {
    let mut header = [0; frame::HEADER_LEN];
    frame::encode_header(length, &mut header);
    header.to_vec()
}

#[test]
fn writer_produces_the_known_answers() {
    assert_eq!(write_all(&[b""]), EMPTY_RECORD);
    assert_eq!(write_all(&[b"foo"]), FOO_RECORD);
    assert_eq!(
        write_all(&[b"", b"foo"]),
        [&EMPTY_RECORD[..], &FOO_RECORD[..]].concat()
    );
}

#[test]
fn reader_decodes_the_known_answers() {
    let stream = [&FOO_RECORD[..], &EMPTY_RECORD[..]].concat();
    let mut reader = Reader::new(stream.as_slice());
    assert_eq!(
        read_all(&mut reader).unwrap(),
        [b"foo".to_vec(), Vec::new()]
    );
    assert_eq!(
        reader.position(),
        Position {
            offset: 35,
            index: 2
        }
    );
}

#[test]
fn masking_matches_the_known_answers() {
    assert_eq!(crc::masked_crc32c(&[0; 8]), 0x0798_0329);
    assert_eq!(crc::masked_crc32c(b""), 0xa282_ead8);
    assert_eq!(crc::mask(0), 0xa282_ead8);
    assert_eq!(crc::unmask(0xfebe_8a61), crc32c::crc32c(b"foo"));
    for value in [0, 1, 0x8000_0000, 0xffff_ffff, 0x1234_5678] {
        assert_eq!(crc::unmask(crc::mask(value)), value);
        assert_ne!(crc::mask(value), value);
    }
}

#[test]
fn empty_stream_holds_no_records() {
    let mut reader = Reader::new(io::empty());
    assert!(!reader.read_record(&mut Vec::new()).unwrap());
    assert_eq!(reader.skip_record().unwrap(), None);
    assert_eq!(reader.position(), Position::default());
}

#[test]
fn position_and_counters_follow_each_record() {
    let mut writer = Writer::new(Vec::new());
    writer.write_record(b"alpha").unwrap();
    writer.write_record(b"").unwrap();
    assert_eq!(writer.records_written(), 2);
    assert_eq!(writer.bytes_written(), 21 + 16);
    let stream = writer.finish().unwrap();
    assert_eq!(stream.len(), 37);

    let mut reader = Reader::new(stream.as_slice());
    let mut buf = vec![1, 2, 3];
    assert!(reader.read_record(&mut buf).unwrap());
    assert_eq!(buf, b"alpha");
    assert_eq!(
        reader.position(),
        Position {
            offset: 21,
            index: 1
        }
    );
    assert!(reader.read_record(&mut buf).unwrap());
    assert!(buf.is_empty());
    assert_eq!(
        reader.position(),
        Position {
            offset: 37,
            index: 2
        }
    );
    assert!(!reader.read_record(&mut buf).unwrap());
    assert_eq!(
        reader.position(),
        Position {
            offset: 37,
            index: 2
        }
    );
}

#[test]
fn flipped_length_byte_is_a_length_crc_mismatch_at_the_record_start() {
    let mut stream = three_records();
    stream[21] ^= 0x01;
    let mut reader = Reader::new(stream.as_slice());
    let mut buf = Vec::new();
    assert!(reader.read_record(&mut buf).unwrap());
    let err = reader.read_record(&mut buf).unwrap_err();
    let stored = u32::from_le_bytes(stream[29..33].try_into().unwrap());
    let computed = crc::masked_crc32c(&stream[21..29]);
    match err.kind() {
        ErrorKind::LengthCrcMismatch { expected, actual } => {
            assert_eq!((*expected, *actual), (stored, computed));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!((err.offset(), err.index()), (21, 1));
    assert_eq!(
        reader.position(),
        Position {
            offset: 21,
            index: 1
        }
    );
    assert!(!reader.recover());
    assert!(!reader.read_record(&mut buf).unwrap());
    assert_eq!(reader.skip_record().unwrap(), None);
}

#[test]
fn flipped_length_crc_byte_is_a_length_crc_mismatch() {
    let mut stream = three_records();
    stream[40] ^= 0x80;
    let mut reader = Reader::new(stream.as_slice());
    assert_eq!(reader.skip_record().unwrap(), Some(5));
    assert_eq!(reader.skip_record().unwrap(), Some(0));
    let err = reader.skip_record().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::LengthCrcMismatch { .. }));
    assert_eq!((err.offset(), err.index()), (37, 2));
}

#[test]
fn length_crc_mismatch_at_offset_zero_asks_whether_this_is_a_tfrecord_file() {
    let stream = b"this is plain text, not a TFRecord file";
    let err = Reader::new(&stream[..])
        .read_record(&mut Vec::new())
        .unwrap_err();
    let stored = u32::from_le_bytes(*b"plai");
    let computed = crc::masked_crc32c(b"this is ");
    assert_eq!(
        err.to_string(),
        format!(
            "corrupted record (length checksum mismatch: stored {stored:#010x}, computed \
             {computed:#010x}) at offset 0 (record #0) (Is this even a TFRecord file?)"
        )
    );
}

#[test]
fn flipped_data_byte_is_a_data_crc_mismatch_twelve_bytes_in_and_recoverable() {
    let mut stream = three_records();
    stream[14] ^= 0x10; // inside "alpha"
    let mut reader = Reader::new(stream.as_slice());
    let mut buf = Vec::new();
    let err = reader.read_record(&mut buf).unwrap_err();
    let stored = u32::from_le_bytes(stream[17..21].try_into().unwrap());
    match err.kind() {
        ErrorKind::DataCrcMismatch { expected, actual } => {
            assert_eq!(*expected, stored);
            assert_eq!(*actual, crc::masked_crc32c(&stream[12..17]));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!((err.offset(), err.index()), (12, 0));
    // Not at offset 0: the framing was fine, so no hint that the format is wrong.
    assert!(!err.to_string().contains("Is this even"));
    assert_eq!(
        reader.position(),
        Position {
            offset: 21,
            index: 1
        }
    );
    assert!(
        !reader.read_record(&mut buf).unwrap(),
        "fused until recovered"
    );
    assert!(reader.recover());
    assert_eq!(
        read_all(&mut reader).unwrap(),
        [b"".to_vec(), b"gamma!".to_vec()]
    );
    assert_eq!(
        reader.position(),
        Position {
            offset: 59,
            index: 3
        }
    );
}

#[test]
fn flipped_data_crc_byte_is_a_data_crc_mismatch() {
    let mut stream = three_records();
    stream[36] ^= 0xff; // last byte of the empty record's data CRC
    let mut reader = Reader::new(stream.as_slice());
    let mut buf = Vec::new();
    assert!(reader.read_record(&mut buf).unwrap());
    let err = reader.read_record(&mut buf).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::DataCrcMismatch { .. }));
    assert_eq!((err.offset(), err.index()), (33, 1));
    assert!(reader.recover());
    assert!(reader.read_record(&mut buf).unwrap());
    assert_eq!(buf, b"gamma!");
}

#[test]
fn records_iterator_stops_after_the_first_error() {
    let mut stream = three_records();
    stream[50] ^= 0x01; // inside "gamma!"
    let mut records = Reader::new(stream.as_slice()).records();
    assert_eq!(records.next().unwrap().unwrap(), b"alpha");
    assert_eq!(records.next().unwrap().unwrap(), b"");
    let err = records.next().unwrap().unwrap_err();
    assert_eq!((err.offset(), err.index()), (49, 2));
    assert!(records.next().is_none());
    assert!(records.next().is_none());
    assert_eq!(
        records.reader().position(),
        Position {
            offset: 59,
            index: 3
        }
    );
}

#[test]
fn trailing_bytes_too_short_for_a_header_are_a_truncated_header() {
    for extra in 1..12 {
        let mut stream = three_records();
        stream.extend_from_slice(&[0xaa; 11][..extra]);
        let mut reader = Reader::new(stream.as_slice());
        let err = read_all(&mut reader).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::TruncatedHeader { available } if *available == extra),
            "{err:?}"
        );
        assert_eq!((err.offset(), err.index()), (59, 3));
        assert!(!reader.recover());

        let mut reader = Reader::new(stream.as_slice());
        for _ in 0..3 {
            reader.skip_record().unwrap();
        }
        let err = reader.skip_record().unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::TruncatedHeader { .. }));
        assert_eq!(err.offset(), 59);
    }
}

#[test]
fn a_record_cut_anywhere_after_its_header_is_truncated() {
    let full = three_records();
    // Record #2 ("gamma!") starts at 37: header 37..49, data 49..55, CRC 55..59.
    for cut in 49..59 {
        let stream = &full[..cut];
        let expected_available = (cut - 49) as u64;

        let mut reader = Reader::new(stream);
        let err = read_all(&mut reader).unwrap_err();
        match err.kind() {
            ErrorKind::Truncated { length, available } => {
                assert_eq!(
                    (*length, *available),
                    (6, expected_available),
                    "cut at {cut}"
                );
            }
            other => panic!("cut at {cut}: unexpected {other:?}"),
        }
        assert_eq!((err.offset(), err.index()), (37, 2));
        assert!(!reader.recover());

        let mut reader = Reader::new(stream);
        assert_eq!(reader.skip_record().unwrap(), Some(5));
        assert_eq!(reader.skip_record().unwrap(), Some(0));
        let err = reader.skip_record().unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Truncated { length: 6, available } if *available == expected_available)
        );
        assert_eq!((err.offset(), err.index()), (37, 2));
    }
}

#[test]
fn a_large_record_cut_short_is_truncated() {
    let data = vec![7u8; 1 << 20];
    let mut stream = write_all(&[b"x", &data]);
    stream.truncate(17 + 12 + 300_000);
    let mut reader = Reader::new(stream.as_slice());
    let err = read_all(&mut reader).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::Truncated { length, available: 300_000 } if *length == 1 << 20
    ));
    assert_eq!((err.offset(), err.index()), (17, 1));

    // Cut inside the CRC that follows a large payload.
    let mut stream = write_all(&[&data]);
    stream.truncate(stream.len() - 1);
    let err = Reader::new(stream.as_slice()).skip_record().unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::Truncated { length, available } if *length == 1 << 20 && *available == (1 << 20) + 3
    ));
    let err = Reader::new(stream.as_slice())
        .read_record(&mut Vec::new())
        .unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::Truncated { available, .. } if *available == (1 << 20) + 3
    ));
}

#[test]
fn absurd_lengths_are_truncated_without_a_big_allocation() {
    for length in [1u64 << 60, u64::MAX, u64::MAX - 15, 1 << 33] {
        let mut stream = write_all(&[b"ok"]);
        stream.extend_from_slice(&header(length));
        stream.extend_from_slice(b"only a few bytes");

        let mut reader = Reader::new(stream.as_slice());
        let mut buf = Vec::new();
        assert!(reader.read_record(&mut buf).unwrap());
        let err = reader.read_record(&mut buf).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Truncated { length: l, available: 16 } if *l == length),
            "{err:?}"
        );
        assert_eq!((err.offset(), err.index()), (18, 1));
        assert!(buf.capacity() < 2 << 20, "capacity {}", buf.capacity());

        let mut reader = Reader::new(stream.as_slice());
        reader.skip_record().unwrap();
        let err = reader.skip_record().unwrap_err();
        assert!(matches!(
            err.kind(),
            ErrorKind::Truncated { available: 16, .. }
        ));
    }
}

#[test]
fn verification_can_be_turned_off() {
    let mut stream = three_records();
    stream[13] ^= 0x01; // data of "alpha"
    stream[29] ^= 0x01; // length CRC of the empty record
    let options = ReaderOptions {
        verify_data_crc: false,
        verify_length_crc: false,
        ..ReaderOptions::default()
    };
    let records = read_all(&mut Reader::with_options(stream.as_slice(), options)).unwrap();
    assert_eq!(records, [b"ampha".to_vec(), Vec::new(), b"gamma!".to_vec()]);

    let only_data = ReaderOptions {
        verify_data_crc: false,
        ..ReaderOptions::default()
    };
    let mut reader = Reader::with_options(stream.as_slice(), only_data);
    let mut buf = Vec::new();
    assert!(reader.read_record(&mut buf).unwrap());
    let err = reader.read_record(&mut buf).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::LengthCrcMismatch { .. }));

    let only_length = ReaderOptions {
        verify_length_crc: false,
        ..ReaderOptions::default()
    };
    let err = Reader::with_options(stream.as_slice(), only_length)
        .read_record(&mut buf)
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::DataCrcMismatch { .. }));
}

#[test]
fn default_options_verify_both_checksums() {
    let options = ReaderOptions::default();
    assert!(options.verify_length_crc && options.verify_data_crc);
    assert_eq!(options.compression, ofconvert_tfrecord::Compression::None);
}

#[test]
fn skip_record_reports_lengths_without_checking_data() {
    let mut stream = three_records();
    stream[50] ^= 0x01; // inside "gamma!": skipping does not look at it
    let mut reader = Reader::new(stream.as_slice());
    assert_eq!(reader.skip_record().unwrap(), Some(5));
    assert_eq!(
        reader.position(),
        Position {
            offset: 21,
            index: 1
        }
    );
    assert_eq!(reader.skip_record().unwrap(), Some(0));
    assert_eq!(reader.skip_record().unwrap(), Some(6));
    assert_eq!(reader.skip_record().unwrap(), None);
    assert_eq!(
        reader.position(),
        Position {
            offset: 59,
            index: 3
        }
    );
}

#[test]
fn skipping_and_reading_mix() {
    let stream = three_records();
    let mut reader = Reader::new(stream.as_slice());
    let mut buf = Vec::new();
    assert_eq!(reader.skip_record().unwrap(), Some(5));
    assert!(reader.read_record(&mut buf).unwrap());
    assert!(buf.is_empty());
    assert_eq!(reader.skip_record().unwrap(), Some(6));
    assert!(!reader.read_record(&mut buf).unwrap());
}
