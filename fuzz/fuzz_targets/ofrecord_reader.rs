//! The OFRecord reader against a slice-based reference.
//!
//! Input: `[mode][io][fail][stream...]`.
//! - `mode` bits 0-1: `read_record`, `skip_record`, or the two alternating; bit 2: go on
//!   past a zero-length record (else stop there).
//! - `io`: piece size and interruptions of the underlying reader (see `Pieces`).
//! - `fail`: non-zero makes reads fail from `fail/256` of the stream on.
//!
//! Every call must give what the reference gives, position included; after an error other
//! than a zero length, every later call gives that error again. The `records()` iterator
//! yields the same records and stops at the first error; the records read frame back into
//! the same bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ofconvert_fuzz::pieces::Pieces;
use ofconvert_fuzz::reference::{OfFailure, OfReference, Step};
use ofconvert_ofrecord::{Error, ErrorKind, Reader, Writer};

fn failure(err: &Error) -> OfFailure {
    match *err.kind() {
        ErrorKind::Io(_) => OfFailure::Io,
        ErrorKind::TruncatedLength { available } => OfFailure::TruncatedLength { available },
        ErrorKind::Truncated { length, available } => OfFailure::Truncated { length, available },
        ErrorKind::ZeroLength => OfFailure::ZeroLength,
        ErrorKind::NegativeLength { length } => OfFailure::NegativeLength { length },
        ref other => panic!("unexpected error kind {other:?}"),
    }
}

fn outcome<'a>(result: Result<Option<Step<'a, OfFailure>>, Error>) -> Step<'a, OfFailure> {
    match result {
        Ok(Some(step)) => step,
        Ok(None) => Step::End,
        Err(err) => {
            let _ = err.to_string();
            assert_eq!(
                err.is_recoverable(),
                matches!(err.kind(), ErrorKind::ZeroLength)
            );
            assert_eq!(
                std::error::Error::source(&err).is_some(),
                matches!(err.kind(), ErrorKind::Io(_))
            );
            Step::Error {
                failure: failure(&err),
                offset: err.offset(),
                index: err.index(),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [mode, io, fail, stream @ ..] = data else {
        return;
    };
    let pattern = mode & 3;
    let past_zero = mode & 0x04 != 0;
    let mut pieces = Pieces::new(stream, *io);
    if *fail != 0 {
        pieces = pieces.failing_at(usize::from(*fail) * stream.len() / 256);
    }
    let fail_at = pieces.fail_at();
    let mut reader = Reader::new(pieces);
    let mut reference = OfReference::new(stream, fail_at);

    let mut buf = Vec::new();
    // The records read from the start of the stream up to the first skip or error.
    let mut records: Vec<Vec<u8>> = Vec::new();
    let mut contiguous = true;
    let mut call = 0u64;
    loop {
        let skip = match pattern {
            0 => false,
            1 => true,
            2 => call % 2 == 1,
            _ => call.is_multiple_of(3),
        };
        call += 1;
        let expected = reference.next(skip);
        let got = if skip {
            outcome(reader.skip_record().map(|n| n.map(Step::Skipped)))
        } else {
            let read = reader.read_record(&mut buf);
            outcome(read.map(|more| more.then_some(Step::Record(&buf))))
        };
        assert_eq!(got, expected, "call {call}");
        let position = reader.position();
        assert_eq!((position.offset, position.index), reference.position());
        match got {
            Step::Record(data) if contiguous => records.push(data.to_vec()),
            Step::Record(_) => {}
            Step::Skipped(_) => contiguous = false,
            Step::End => break,
            Step::Error {
                failure: OfFailure::ZeroLength,
                ..
            } => {
                contiguous = false;
                if !past_zero {
                    break;
                }
                // Fused until recovered.
                assert!(!reader.read_record(&mut buf).unwrap());
                assert!(reader.recover());
            }
            Step::Error { .. } => {
                // Fused: a clean end for a read and for a skip, and no way on but a resync.
                assert!(!reader.read_record(&mut buf).unwrap());
                assert_eq!(reader.skip_record().unwrap(), None);
                assert!(!reader.recover());
                break;
            }
        }
    }

    let mut writer = Writer::new(Vec::new());
    for record in &records {
        writer
            .write_record(record)
            .expect("only non-empty records are read");
    }
    let written = writer.finish().expect("writes to a Vec");
    assert_eq!(written, stream[..written.len()]);

    // The iterator: the same records, then the first error, then nothing.
    let mut reference = OfReference::new(stream, None);
    let mut iter = Reader::new(stream).records();
    loop {
        let expected = reference.next(false);
        match iter.next() {
            Some(Ok(record)) => assert_eq!(expected, Step::Record(&record)),
            Some(Err(err)) => {
                assert_eq!(outcome(Err(err)), expected);
                assert!(iter.next().is_none());
                break;
            }
            None => {
                assert_eq!(expected, Step::End);
                break;
            }
        }
    }
});
