//! A record's framing checked in the bytes an index says it takes: what a reader that jumps
//! to record `i` does instead of reading the records before it. For an ArrayRecord file,
//! those bytes are the record's chunk, checked and decoded.

use std::io;
use std::path::Path;

use ofconvert_arrayrecord::ChunkDecoder;
use ofconvert_tfrecord::{crc, frame, ReaderOptions, HEADER_LEN};

use crate::access::index::IndexedFile;

use ofconvert_engine::Checksums;
use ofconvert_engine::Format;
use ofconvert_engine::RecordAt;
use ofconvert_engine::{Error, ErrorKind};

/// The payload of the one record framed in `framed` (the bytes its index entry spans), its
/// framing checked: a TFRecord's length and, with [`Checksums::Verify`], both checksums; an
/// OFRecord's length. `at` is where the record is in `path`, which errors name.
///
/// # Errors
///
/// The errors reading the file from its start would give at that record (a checksum
/// mismatch, a truncated or zero-length record), with the file, offset and record; a record
/// that does not fill its index entry says the index does not match the file.
pub fn payload<'b>(
    framed: &'b [u8],
    format: Format,
    checksums: Checksums,
    path: &Path,
    at: RecordAt,
) -> Result<&'b [u8], Error> {
    let verify = checksums == Checksums::Verify;
    let whole = match format {
        Format::Tf => tf_payload(framed, verify),
        Format::Of => of_payload(framed),
    };
    match whole {
        Some(payload) => Ok(payload),
        None => Err(framing_error(framed, format, verify, path, at)),
    }
}

/// The payloads of records read one after another, each out of the bytes its index entry
/// spans: a framed record's checked by [`payload`], an ArrayRecord file's out of its chunk,
/// decoded once for the records of it that follow one another.
#[derive(Default)]
pub(crate) struct Payloads {
    chunks: ChunkDecoder,
    /// The chunk decoded last: its file's number and its offset.
    decoded: Option<(usize, u64)>,
}

impl Payloads {
    /// The payload of record `at` of `file` (the dataset's file `number`), whose index entry
    /// spans `framed`. `checksums` says whether data is checked against its checksums (a
    /// TFRecord's) or hashes (an ArrayRecord chunk's; its header and block headers always are).
    pub(crate) fn of<'s>(
        &'s mut self,
        number: usize,
        file: &IndexedFile,
        framed: &'s [u8],
        at: RecordAt,
        checksums: Checksums,
    ) -> Result<&'s [u8], Error> {
        if !file.array_record {
            return payload(framed, file.format, checksums, &file.path, at);
        }
        let records = file.index.made().records_with(at.index);
        if self.decoded != Some((number, at.offset)) {
            self.decoded = None;
            self.chunks
                .check_data_hashes(checksums == Checksums::Verify);
            self.chunks
                .decode(framed, at.offset, records.clone())
                .map_err(|err| Error::arrayrecord(&file.path, err))?;
            self.decoded = Some((number, at.offset));
        }
        Ok(self.chunks.record((at.index - records.start) as usize))
    }
}

fn tf_payload(framed: &[u8], verify: bool) -> Option<&[u8]> {
    let length = usize::try_from(frame::decode_length(framed).ok()?).ok()?;
    if framed.len().checked_sub(HEADER_LEN + frame::FOOTER_LEN)? != length {
        return None;
    }
    let data = &framed[HEADER_LEN..HEADER_LEN + length];
    if verify {
        frame::decode_header(framed).ok()?;
        let stored = u32::from_le_bytes(framed[HEADER_LEN + length..].try_into().ok()?);
        if stored != crc::masked_crc32c(data) {
            return None;
        }
    }
    Some(data)
}

fn of_payload(framed: &[u8]) -> Option<&[u8]> {
    let length = i64::from_le_bytes(framed.get(..8)?.try_into().ok()?);
    let length = usize::try_from(length).ok().filter(|&length| length > 0)?;
    (framed.len() - 8 == length).then(|| &framed[8..])
}

/// Why `framed` does not hold one good record: read by the format's own reader, which
/// words damage as reading the whole file would.
fn framing_error(framed: &[u8], format: Format, verify: bool, path: &Path, at: RecordAt) -> Error {
    let mut buf = Vec::new();
    let read = match format {
        Format::Tf => {
            let options = ReaderOptions {
                verify_length_crc: verify,
                verify_data_crc: verify,
                ..ReaderOptions::default()
            };
            ofconvert_tfrecord::Reader::with_options(framed, options)
                .read_record(&mut buf)
                .map_err(|err| Error::tfrecord(path, at, err))
        }
        Format::Of => ofconvert_ofrecord::Reader::new(framed)
            .read_record(&mut buf)
            .map_err(|err| Error::ofrecord(path, at, err)),
    };
    match read {
        Err(err) => err,
        Ok(_) => {
            let stale = io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the record at offset {} does not fill the {} bytes its index gives it: the \
                     index is not that of this file (remove it, or write it again with \
                     `ofconvert index`)",
                    at.offset,
                    framed.len()
                ),
            );
            let kind = match format {
                Format::Tf => ErrorKind::TfRecord(ofconvert_tfrecord::ErrorKind::Io(stale)),
                Format::Of => ErrorKind::OfRecord(ofconvert_ofrecord::ErrorKind::Io(stale)),
            };
            Error::new(kind).in_file(path).at(at.offset, at.index)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tf(data: &[u8]) -> Vec<u8> {
        let mut framed = Vec::new();
        frame::encode_record(data, &mut framed);
        framed
    }

    const AT: RecordAt = RecordAt {
        offset: 100,
        index: 3,
    };

    #[test]
    fn a_good_record_gives_its_payload_in_both_formats() {
        let framed = tf(b"foo");
        let path = Path::new("x.tfrecord");
        assert_eq!(
            payload(&framed, Format::Tf, Checksums::Verify, path, AT).unwrap(),
            b"foo"
        );
        let mut of = 3i64.to_le_bytes().to_vec();
        of.extend_from_slice(b"bar");
        assert_eq!(
            payload(&of, Format::Of, Checksums::Verify, path, AT).unwrap(),
            b"bar"
        );
    }

    #[test]
    fn damage_is_reported_where_it_is_in_the_file() {
        let path = Path::new("x.tfrecord");
        let mut framed = tf(b"foo");
        framed[13] ^= 1;
        let err = payload(&framed, Format::Tf, Checksums::Verify, path, AT).unwrap_err();
        assert!(matches!(
            err.kind(),
            ErrorKind::TfRecord(ofconvert_tfrecord::ErrorKind::DataCrcMismatch { .. })
        ));
        // TensorFlow's offset of a data mismatch is the data's, 12 bytes on.
        assert_eq!((err.offset(), err.record()), (Some(112), Some(3)));
        assert!(payload(&framed, Format::Tf, Checksums::Ignore, path, AT).is_ok());

        let err = payload(&framed[..10], Format::Tf, Checksums::Verify, path, AT).unwrap_err();
        assert_eq!(err.offset(), Some(100), "{err}");
        let zero = 0i64.to_le_bytes();
        let err = payload(&zero, Format::Of, Checksums::Verify, path, AT).unwrap_err();
        assert!(matches!(
            err.kind(),
            ErrorKind::OfRecord(ofconvert_ofrecord::ErrorKind::ZeroLength)
        ));
    }

    #[test]
    fn an_entry_longer_than_its_record_says_the_index_is_not_this_files() {
        let mut framed = tf(b"foo");
        framed.extend_from_slice(&tf(b"next"));
        let err = payload(&framed, Format::Tf, Checksums::Verify, Path::new("x"), AT).unwrap_err();
        let message = ofconvert_engine::error_chain(&err);
        assert!(
            message.contains("index is not that of this file"),
            "{message}"
        );
    }
}
