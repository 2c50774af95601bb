use std::error::Error as _;
use std::io::{self, Read, Seek, SeekFrom, Write};

use ofconvert_ofrecord::{frame, Error, ErrorKind, Position, Reader, Writer, HEADER_LEN};
use proptest::prelude::*;

mod streams;

/// One frame with an arbitrary (possibly lying) length field.
fn frame(length: i64, payload: &[u8]) -> Vec<u8> {
    let mut header = [0; HEADER_LEN];
    // A negative length has the bytes of its two's complement.
    frame::encode_header(length as u64, &mut header);
    let mut bytes = header.to_vec();
    bytes.extend_from_slice(payload);
    bytes
}

/// A well-formed stream of `payloads`, framed by hand rather than by `Writer`.
fn stream(payloads: &[&[u8]]) -> Vec<u8> {
    payloads
        .iter()
        .flat_map(|p| frame(p.len() as i64, p))
        .collect()
}

fn read_err<R: Read>(reader: &mut Reader<R>) -> Error {
    let mut buf = Vec::new();
    match reader.read_record(&mut buf) {
        Ok(more) => panic!("expected an error, got Ok({more}) with {} bytes", buf.len()),
        Err(e) => e,
    }
}

fn skip_err<R: Read>(reader: &mut Reader<R>) -> Error {
    match reader.skip_record() {
        Ok(length) => panic!("expected an error, got Ok({length:?})"),
        Err(e) => e,
    }
}

/// Reads `bytes` with `read_record` until the first error, which it returns with the
/// payloads read before it.
fn read_until_error(bytes: &[u8]) -> (Vec<Vec<u8>>, Error) {
    let mut reader = Reader::new(bytes);
    let mut payloads = Vec::new();
    let mut buf = Vec::new();
    loop {
        match reader.read_record(&mut buf) {
            Ok(true) => payloads.push(buf.clone()),
            Ok(false) => panic!(
                "clean end after {} records, expected an error",
                payloads.len()
            ),
            Err(e) => return (payloads, e),
        }
    }
}

#[test]
fn writes_the_documented_layout() {
    let mut writer = Writer::new(Vec::new());
    writer.write_record(b"foo").unwrap();
    writer.write_record(&[0xff; 2]).unwrap();
    assert_eq!(writer.records_written(), 2);
    assert_eq!(writer.bytes_written(), 8 + 3 + 8 + 2);
    let bytes = writer.finish().unwrap();
    assert_eq!(
        bytes,
        [3, 0, 0, 0, 0, 0, 0, 0, b'f', b'o', b'o', 2, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
    );
}

#[test]
fn reads_hand_framed_records_and_tracks_position() {
    let bytes = stream(&[b"a", b"bcd", &[0u8; 300]]);
    let mut reader = Reader::new(bytes.as_slice());
    let mut buf = Vec::new();
    assert_eq!(reader.position(), Position::default());

    assert!(reader.read_record(&mut buf).unwrap());
    assert_eq!(buf, b"a");
    assert_eq!(
        reader.position(),
        Position {
            offset: 9,
            index: 1
        }
    );

    assert!(reader.read_record(&mut buf).unwrap());
    assert_eq!(buf, b"bcd");
    assert_eq!(
        reader.position(),
        Position {
            offset: 20,
            index: 2
        }
    );

    assert!(reader.read_record(&mut buf).unwrap());
    assert_eq!(buf, [0u8; 300]);
    assert!(!reader.read_record(&mut buf).unwrap());
    assert!(buf.is_empty(), "buf is cleared even at the end");
    assert_eq!(
        reader.position(),
        Position {
            offset: bytes.len() as u64,
            index: 3
        }
    );
    // A clean end stays a clean end.
    assert!(!reader.read_record(&mut buf).unwrap());
    assert_eq!(reader.skip_record().unwrap(), None);
}

#[test]
fn empty_stream_has_no_records() {
    let mut reader = Reader::new(io::empty());
    let mut buf = vec![1, 2, 3];
    assert!(!reader.read_record(&mut buf).unwrap());
    assert!(buf.is_empty());
    assert_eq!(reader.skip_record().unwrap(), None);
    assert_eq!(reader.position(), Position::default());
    assert_eq!(Reader::new(io::empty()).records().count(), 0);
}

#[test]
fn truncated_length_reports_how_many_bytes_are_there() {
    for available in 1..HEADER_LEN {
        let mut bytes = stream(&[b"abc"]);
        bytes.extend_from_slice(&frame(5, b"hello")[..available]);

        let (read, err) = read_until_error(&bytes);
        assert_eq!(read, [b"abc".to_vec()]);
        assert!(
            matches!(err.kind(), ErrorKind::TruncatedLength { available: a } if *a == available),
            "{err:?}"
        );
        assert_eq!((err.offset(), err.index()), (11, 1));

        let mut reader = Reader::new(bytes.as_slice());
        assert_eq!(reader.skip_record().unwrap(), Some(3));
        let err = skip_err(&mut reader);
        assert!(
            matches!(err.kind(), ErrorKind::TruncatedLength { available: a } if *a == available)
        );
        assert_eq!((err.offset(), err.index()), (11, 1));
    }
}

#[test]
fn truncated_payload_reports_length_and_available() {
    let mut bytes = stream(&[b"abc", b"de"]);
    bytes.extend_from_slice(&frame(10, b"0123"));

    let (read, err) = read_until_error(&bytes);
    assert_eq!(read, [b"abc".to_vec(), b"de".to_vec()]);
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Truncated {
                length: 10,
                available: 4
            }
        ),
        "{err:?}"
    );
    assert_eq!((err.offset(), err.index()), (21, 2));

    let mut reader = Reader::new(bytes.as_slice());
    reader.skip_record().unwrap();
    reader.skip_record().unwrap();
    let err = skip_err(&mut reader);
    assert!(matches!(
        err.kind(),
        ErrorKind::Truncated {
            length: 10,
            available: 4
        }
    ));
    assert_eq!((err.offset(), err.index()), (21, 2));
}

#[test]
fn header_without_any_payload_is_truncated() {
    let err = read_err(&mut Reader::new(frame(1, b"").as_slice()));
    assert!(matches!(
        err.kind(),
        ErrorKind::Truncated {
            length: 1,
            available: 0
        }
    ));
    assert_eq!((err.offset(), err.index()), (0, 0));
}

#[test]
fn absurd_lengths_are_truncated_without_a_matching_allocation() {
    for length in [1i64 << 60, i64::MAX] {
        let mut bytes = stream(&[b"x"]);
        bytes.extend_from_slice(&frame(length, b"tiny"));

        let mut reader = Reader::new(bytes.as_slice());
        let mut buf = Vec::new();
        assert!(reader.read_record(&mut buf).unwrap());
        let err = read_err(&mut reader);
        match err.kind() {
            ErrorKind::Truncated {
                length: l,
                available: 4,
            } => assert_eq!(*l, length as u64),
            other => panic!("{other:?}"),
        }
        assert_eq!((err.offset(), err.index()), (9, 1));

        // The payload buffer reserves at most one chunk, not the declared length.
        let mut reader = Reader::new(bytes.as_slice());
        reader.skip_record().unwrap();
        let mut buf = Vec::new();
        let err = reader.read_record(&mut buf).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Truncated { .. }));
        assert_eq!(buf, b"tiny", "the partial payload is left in buf");
        assert!(buf.capacity() <= 1 << 20, "capacity {}", buf.capacity());

        let mut reader = Reader::new(bytes.as_slice());
        reader.skip_record().unwrap();
        let err = skip_err(&mut reader);
        assert!(matches!(
            err.kind(),
            ErrorKind::Truncated { available: 4, .. }
        ));
        assert_eq!((err.offset(), err.index()), (9, 1));
    }
}

#[test]
fn negative_lengths_are_reported_as_read() {
    for length in [-1i64, i64::MIN, -(1 << 40)] {
        let mut bytes = stream(&[b"ok"]);
        bytes.extend_from_slice(&frame(length, b"payload"));

        let (read, err) = read_until_error(&bytes);
        assert_eq!(read, [b"ok".to_vec()]);
        assert!(
            matches!(err.kind(), ErrorKind::NegativeLength { length: l } if *l == length),
            "{err:?}"
        );
        assert_eq!((err.offset(), err.index()), (10, 1));

        let mut reader = Reader::new(bytes.as_slice());
        reader.skip_record().unwrap();
        let err = skip_err(&mut reader);
        assert!(matches!(err.kind(), ErrorKind::NegativeLength { length: l } if *l == length));
    }
}

#[test]
fn zero_length_record_is_reported_and_can_be_stepped_past() {
    let mut bytes = stream(&[b"first"]);
    bytes.extend_from_slice(&frame(0, b""));
    bytes.extend_from_slice(&stream(&[b"third"]));

    let mut reader = Reader::new(bytes.as_slice());
    let mut buf = Vec::new();
    assert!(reader.read_record(&mut buf).unwrap());
    let err = read_err(&mut reader);
    assert!(matches!(err.kind(), ErrorKind::ZeroLength), "{err:?}");
    assert_eq!((err.offset(), err.index()), (13, 1));
    assert!(err.is_recoverable());
    assert_eq!(
        reader.position(),
        Position {
            offset: 21,
            index: 2
        }
    );
    assert!(
        !reader.read_record(&mut buf).unwrap(),
        "fused until recovered"
    );
    assert!(reader.recover());
    assert!(reader.read_record(&mut buf).unwrap());
    assert_eq!(buf, b"third");
    assert_eq!(reader.position().index, 3);
    assert!(!reader.read_record(&mut buf).unwrap());

    let mut reader = Reader::new(bytes.as_slice());
    assert_eq!(reader.skip_record().unwrap(), Some(5));
    let err = skip_err(&mut reader);
    assert!(matches!(err.kind(), ErrorKind::ZeroLength));
    assert_eq!((err.offset(), err.index()), (13, 1));
    assert!(reader.recover());
    assert_eq!(reader.skip_record().unwrap(), Some(5));
    assert_eq!(reader.skip_record().unwrap(), None);
}

#[test]
fn zero_length_write_is_refused_and_writes_nothing() {
    let mut writer = Writer::new(Vec::new());
    writer.write_record(b"abc").unwrap();
    let err = writer.write_record(b"").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::ZeroLength), "{err:?}");
    assert_eq!((err.offset(), err.index()), (11, 1));
    assert_eq!(writer.records_written(), 1);
    assert_eq!(writer.bytes_written(), 11);
    // The writer is still usable.
    writer.write_record(b"de").unwrap();
    assert_eq!(writer.finish().unwrap(), stream(&[b"abc", b"de"]));
}

#[test]
fn skip_record_returns_lengths_and_mixes_with_reads() {
    let big = vec![7u8; 700 * 1024];
    let bytes = stream(&[b"one", &big, b"three", b"4"]);
    let mut reader = Reader::new(bytes.as_slice());
    let mut buf = Vec::new();
    assert_eq!(reader.skip_record().unwrap(), Some(3));
    assert_eq!(reader.skip_record().unwrap(), Some(big.len() as u64));
    assert_eq!(
        reader.position(),
        Position {
            offset: (8 + 3 + 8 + big.len()) as u64,
            index: 2
        }
    );
    assert!(reader.read_record(&mut buf).unwrap());
    assert_eq!(buf, b"three");
    assert_eq!(reader.skip_record().unwrap(), Some(1));
    assert_eq!(reader.skip_record().unwrap(), None);
    assert_eq!(
        reader.position(),
        Position {
            offset: bytes.len() as u64,
            index: 4
        }
    );
}

#[test]
fn records_iterator_is_fused_after_an_error() {
    let mut bytes = stream(&[b"a", b"b"]);
    bytes.extend_from_slice(&frame(-5, b""));
    bytes.extend_from_slice(&stream(&[b"never"]));

    let mut records = Reader::new(bytes.as_slice()).records();
    assert_eq!(records.next().unwrap().unwrap(), b"a");
    assert_eq!(records.next().unwrap().unwrap(), b"b");
    let err = records.next().unwrap().unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::NegativeLength { length: -5 }
    ));
    assert_eq!((err.offset(), err.index()), (18, 2));
    assert!(records.next().is_none());
    assert!(records.next().is_none());
    assert_eq!(
        records.position(),
        Position {
            offset: 18,
            index: 2
        }
    );
}

#[test]
fn records_iterator_stops_at_a_zero_length_record_but_the_reader_goes_on() {
    let mut bytes = stream(&[b"a"]);
    bytes.extend_from_slice(&frame(0, b""));
    bytes.extend_from_slice(&stream(&[b"c"]));

    let mut records = Reader::new(bytes.as_slice()).records();
    assert_eq!(records.next().unwrap().unwrap(), b"a");
    assert!(matches!(
        records.next().unwrap().unwrap_err().kind(),
        ErrorKind::ZeroLength
    ));
    assert!(records.next().is_none());

    let mut reader = records.into_reader();
    assert!(reader.recover());
    let rest: Vec<_> = reader.records().collect::<Result<_, _>>().unwrap();
    assert_eq!(rest, [b"c".to_vec()]);
}

#[test]
fn reader_is_fused_after_an_error() {
    let mut bytes = stream(&[b"a"]);
    bytes.extend_from_slice(&frame(9, b"short"));
    let mut reader = Reader::new(bytes.as_slice());
    let mut buf = Vec::new();
    assert!(reader.read_record(&mut buf).unwrap());
    let err = read_err(&mut reader);
    assert!(matches!(
        err.kind(),
        ErrorKind::Truncated {
            length: 9,
            available: 5
        }
    ));
    assert_eq!((err.offset(), err.index()), (9, 1));
    for _ in 0..3 {
        assert!(!reader.read_record(&mut buf).unwrap());
        assert_eq!(reader.skip_record().unwrap(), None);
    }
    assert!(!reader.recover());
    assert_eq!(
        reader.position(),
        Position {
            offset: 9,
            index: 1
        }
    );
}

#[test]
fn display_says_what_and_where() {
    let cases: [(Vec<u8>, &str); 4] = [
        (
            vec![1, 2, 3],
            "truncated length field (3 of 8 bytes) at offset 0 (record #0)",
        ),
        (
            [stream(&[b"a"]), frame(4, b"xy")].concat(),
            "truncated record (length 4, only 2 payload bytes follow) at offset 9 (record #1)",
        ),
        (
            [stream(&[b"a", b"b"]), frame(0, b"")].concat(),
            "zero-length record (OneFlow aborts on it) at offset 18 (record #2)",
        ),
        (
            frame(-2, b"zz"),
            "negative record length -2 at offset 0 (record #0)",
        ),
    ];
    for (bytes, expected) in cases {
        let (_, err) = read_until_error(&bytes);
        assert_eq!(err.to_string(), expected);
        assert!(err.source().is_none());
    }
}

#[test]
fn reused_buffer_is_not_reallocated_once_grown() {
    let bytes = stream(&[&[9u8; 4096], b"small", &[3u8; 1000], &[4u8; 4096]]);
    let mut reader = Reader::new(bytes.as_slice());
    let mut buf = Vec::new();
    assert!(reader.read_record(&mut buf).unwrap());
    let (ptr, capacity) = (buf.as_ptr(), buf.capacity());
    while reader.read_record(&mut buf).unwrap() {
        assert_eq!((buf.as_ptr(), buf.capacity()), (ptr, capacity));
    }
    assert_eq!(reader.position().index, 4);
}

/// The payload of record `index` in the many-records file: its length varies from 1 byte to
/// well past the reader's internal buffer, and its bytes depend on the index.
fn many_payload(index: u64) -> Vec<u8> {
    let length = if index % 1000 == 999 {
        300 * 1024 + index as usize
    } else {
        1 + (index as usize * 7919) % 2000
    };
    (0..length)
        .map(|i| (index as usize).wrapping_mul(31).wrapping_add(i) as u8)
        .collect()
}

#[test]
fn file_with_many_records_round_trips() {
    const COUNT: u64 = 20_000;
    let mut file = tempfile::tempfile().unwrap();
    let mut writer = Writer::new(&mut file);
    for index in 0..COUNT {
        writer.write_record(&many_payload(index)).unwrap();
    }
    let written = writer.bytes_written();
    assert_eq!(writer.records_written(), COUNT);
    writer.finish().unwrap();
    assert_eq!(file.metadata().unwrap().len(), written);

    file.seek(SeekFrom::Start(0)).unwrap();
    let mut reader = Reader::new(&mut file);
    let mut buf = Vec::new();
    let mut index = 0;
    while reader.read_record(&mut buf).unwrap() {
        assert!(buf == many_payload(index), "record #{index} differs");
        index += 1;
    }
    assert_eq!(index, COUNT);
    assert_eq!(
        reader.position(),
        Position {
            offset: written,
            index: COUNT
        }
    );

    file.seek(SeekFrom::Start(0)).unwrap();
    let mut reader = Reader::new(&mut file);
    let mut total = 0;
    let mut index = 0;
    while let Some(length) = reader.skip_record().unwrap() {
        assert_eq!(length, many_payload(index).len() as u64);
        total += HEADER_LEN as u64 + length;
        index += 1;
    }
    assert_eq!((index, total), (COUNT, written));
}

proptest! {
    #[test]
    fn arbitrary_non_empty_records_round_trip(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..600), 0..40)
    ) {
        let mut writer = Writer::new(Vec::new());
        for payload in &payloads {
            writer.write_record(payload).unwrap();
        }
        prop_assert_eq!(writer.records_written(), payloads.len() as u64);
        let expected_len: usize = payloads.iter().map(|p| HEADER_LEN + p.len()).sum();
        prop_assert_eq!(writer.bytes_written(), expected_len as u64);
        let bytes = writer.finish().unwrap();
        prop_assert_eq!(bytes.len(), expected_len);

        let mut reader = Reader::new(bytes.as_slice());
        let mut buf = Vec::new();
        let mut read = Vec::new();
        while reader.read_record(&mut buf).unwrap() {
            read.push(buf.clone());
        }
        prop_assert_eq!(&read, &payloads);
        prop_assert_eq!(
            reader.position(),
            Position { offset: bytes.len() as u64, index: payloads.len() as u64 }
        );

        let lengths: Vec<u64> = {
            let mut reader = Reader::new(bytes.as_slice());
            std::iter::from_fn(|| reader.skip_record().unwrap()).collect()
        };
        let expected: Vec<u64> = payloads.iter().map(|p| p.len() as u64).collect();
        prop_assert_eq!(lengths, expected);
    }

    #[test]
    fn any_cut_of_a_valid_stream_is_a_truncation_at_the_cut_record(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..50), 1..10),
        cut_seed in any::<prop::sample::Index>(),
    ) {
        let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
        let bytes = stream(&refs);
        let cut = cut_seed.index(bytes.len());
        let starts: Vec<usize> = payloads
            .iter()
            .scan(0, |offset, p| {
                let start = *offset;
                *offset += HEADER_LEN + p.len();
                Some(start)
            })
            .collect();
        let mut reader = Reader::new(&bytes[..cut]);
        let mut buf = Vec::new();
        let mut index = 0usize;
        let outcome = loop {
            match reader.read_record(&mut buf) {
                Ok(true) => index += 1,
                other => break other,
            }
        };
        if starts.contains(&cut) {
            prop_assert!(matches!(outcome, Ok(false)));
            prop_assert_eq!(starts.get(index).copied().unwrap_or(bytes.len()), cut);
        } else {
            let err = outcome.unwrap_err();
            let start = starts[index];
            prop_assert_eq!((err.offset(), err.index()), (start as u64, index as u64));
            let within = cut - start;
            if within < HEADER_LEN {
                let is_truncated_length = matches!(
                    err.kind(),
                    ErrorKind::TruncatedLength { available } if *available == within
                );
                prop_assert!(is_truncated_length, "{:?}", err);
            } else {
                let expected_length = payloads[index].len() as u64;
                let expected_available = (within - HEADER_LEN) as u64;
                prop_assert!(
                    matches!(err.kind(), ErrorKind::Truncated { length, available }
                        if *length == expected_length && *available == expected_available),
                    "{:?}", err
                );
            }
        }
    }
}
