//! The TFRecord reader against a slice-based reference, plain, GZIP, ZLIB or sniffed.
//!
//! Input: `[mode][io][fail][stream...]`.
//! - `mode` bits 0-1: no compression, GZIP, ZLIB, or sniffed by `Reader::sniffed`;
//!   bit 2: the stream is framed records that the target compresses first (GZIP, or for
//!   the sniffed mode ZLIB when `io` bit 7 is set), else the bytes go to the reader as they
//!   are; bits 3-4: `read_record`, `skip_record`, or the two alternating; bit 5: `recover`
//!   after a data-CRC mismatch; bit 6: no length CRC check; bit 7: no data CRC check.
//! - `io`: piece size and interruptions of the underlying reader (see `Pieces`).
//! - `fail`: uncompressed only; non-zero makes reads fail from `fail/256` of the stream on.
//!
//! With an exact reference (uncompressed, or a compressed stream that decompresses whole)
//! every call must give what the reference gives, position included. When decompression
//! fails, every record the reader returns must be the reference's, and the reader must end
//! with an error, never a clean end.

#![no_main]

use std::borrow::Cow;
use std::io::{Read, Write};

use flate2::bufread::{MultiGzDecoder, ZlibDecoder};
use flate2::write::{GzEncoder, ZlibEncoder};
use libfuzzer_sys::fuzz_target;
use ofconvert_fuzz::pieces::Pieces;
use ofconvert_fuzz::reference::{Step, TfFailure, TfReference};
use ofconvert_tfrecord::{Compression, Error, ErrorKind, Reader, ReaderOptions, Writer};

/// Decompressed streams larger than this are not compared (a 4 KiB input inflates to at
/// most about 4 MiB).
const MAX_DECOMPRESSED: u64 = 64 << 20;

fn compress(data: &[u8], compression: Compression) -> Vec<u8> {
    // The fastest level: compressing is not under test, and level 6 costs a third of a run.
    let level = flate2::Compression::fast();
    match compression {
        Compression::Gzip => {
            let mut encoder = GzEncoder::new(Vec::new(), level);
            encoder.write_all(data).expect("writes to a Vec");
            encoder.finish().expect("writes to a Vec")
        }
        Compression::Zlib => {
            let mut encoder = ZlibEncoder::new(Vec::new(), level);
            encoder.write_all(data).expect("writes to a Vec");
            encoder.finish().expect("writes to a Vec")
        }
        _ => data.to_vec(),
    }
}

/// The framed stream inside `stream`, and whether it is all of it (decompression failed or
/// was cut off otherwise).
fn decompress(stream: &[u8], compression: Compression) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let complete = match compression {
        Compression::Gzip => MultiGzDecoder::new(stream)
            .take(MAX_DECOMPRESSED)
            .read_to_end(&mut out)
            .is_ok(),
        Compression::Zlib => {
            let mut decoder = ZlibDecoder::new(stream);
            let read = (&mut decoder).take(MAX_DECOMPRESSED).read_to_end(&mut out);
            // The reader refuses bytes after the end of the zlib stream.
            read.is_ok() && decoder.into_inner().is_empty()
        }
        _ => return (stream.to_vec(), true),
    };
    let complete = complete && (out.len() as u64) < MAX_DECOMPRESSED;
    (out, complete)
}

fn failure(err: &Error) -> TfFailure {
    match *err.kind() {
        ErrorKind::Io(_) => TfFailure::Io,
        ErrorKind::TruncatedHeader { available } => TfFailure::TruncatedHeader { available },
        ErrorKind::LengthCrcMismatch { expected, actual } => TfFailure::LengthCrc {
            stored: expected,
            computed: actual,
        },
        ErrorKind::DataCrcMismatch { expected, actual } => TfFailure::DataCrc {
            stored: expected,
            computed: actual,
        },
        ErrorKind::Truncated { length, available } => TfFailure::Truncated { length, available },
        ref other => panic!("unexpected error kind {other:?}"),
    }
}

fn outcome<'a>(result: Result<Option<Step<'a, TfFailure>>, Error>) -> Step<'a, TfFailure> {
    match result {
        Ok(Some(step)) => step,
        Ok(None) => Step::End,
        Err(err) => {
            // Display and the cause chain must work for every error.
            let _ = err.to_string();
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
    let [mode, io, fail, body @ ..] = data else {
        return;
    };
    let (mode, io, fail) = (*mode, *io, *fail);
    let requested = match mode & 3 {
        0 => Some(Compression::None),
        1 => Some(Compression::Gzip),
        2 => Some(Compression::Zlib),
        _ => None,
    };
    let compress_first = mode & 0x04 != 0;
    let pattern = (mode >> 3) & 3;
    let recover = mode & 0x20 != 0;
    let options = ReaderOptions {
        verify_length_crc: mode & 0x40 == 0,
        verify_data_crc: mode & 0x80 == 0,
        compression: requested.unwrap_or_default(),
    };

    let stream: Cow<[u8]> = match (compress_first, requested) {
        (true, Some(c)) => Cow::Owned(compress(body, c)),
        (true, None) if io & 0x80 != 0 => Cow::Owned(compress(body, Compression::Zlib)),
        (true, None) => Cow::Owned(compress(body, Compression::Gzip)),
        (false, _) => Cow::Borrowed(body),
    };
    let mut pieces = Pieces::new(&stream, io);
    if requested == Some(Compression::None) && fail != 0 {
        pieces = pieces.failing_at(usize::from(fail) * stream.len() / 256);
    }
    let fail_at = pieces.fail_at();

    let (mut reader, compression) = match requested {
        Some(c) => (Reader::with_options(pieces, options), c),
        None => Reader::sniffed(pieces, options).expect("the pieces reader only fails on request"),
    };
    assert_eq!(reader.compression(), compression);
    if requested.is_none() {
        let prefix = &stream[..stream.len().min(12)];
        assert_eq!(compression, Compression::sniff(prefix));
    }

    let (framed, exact) = decompress(&stream, compression);
    let mut reference = TfReference::new(
        &framed,
        options.verify_length_crc,
        options.verify_data_crc,
        fail_at,
    );
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
        if !exact {
            match (&got, &expected) {
                (Step::Record(a), Step::Record(b)) => assert_eq!(a, b),
                (Step::Skipped(a), Step::Skipped(b)) => assert_eq!(a, b),
                (Step::Record(_) | Step::Skipped(_), _) => {}
                (Step::End, _) => panic!("a damaged compressed stream ended cleanly"),
                (Step::Error { .. }, _) => break,
            }
            continue;
        }
        assert_eq!(got, expected, "call {call}");
        let position = reader.position();
        assert_eq!((position.offset, position.index), reference.position());
        match got {
            Step::Record(data) if contiguous => records.push(data.to_vec()),
            Step::Record(_) => {}
            Step::Skipped(_) => contiguous = false,
            Step::End => break,
            Step::Error { failure, .. } => {
                contiguous = false;
                let may_go_on = matches!(failure, TfFailure::DataCrc { .. });
                if recover && may_go_on {
                    assert!(reader.recover());
                    assert!(reference.recover());
                    continue;
                }
                // Stopped for good, or until `recover`: a clean end from now on.
                assert!(matches!(reader.read_record(&mut buf), Ok(false)));
                assert!(matches!(reader.skip_record(), Ok(None)));
                assert_eq!(reader.recover(), may_go_on);
                break;
            }
        }
    }

    // Records read with both checks on frame back into the very bytes they came from.
    if exact && options.verify_length_crc && options.verify_data_crc {
        let mut writer = Writer::new(Vec::new());
        for record in &records {
            writer.write_record(record).expect("writes to a Vec");
        }
        let written = writer.finish().expect("writes to a Vec");
        assert_eq!(written, framed[..written.len()]);
    }
});
