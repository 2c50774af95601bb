//! Damage in a record file, in words and by kind: what is damage (which salvaging may step
//! over) rather than a failure to read, and what reading did past it.

use std::io;

use ofconvert_arrayrecord::ErrorKind as ArrayErrorKind;
use ofconvert_ofrecord::ErrorKind as OfErrorKind;
use ofconvert_parquet::ErrorKind as ParquetErrorKind;
use ofconvert_tfrecord::{self as tfrecord, ErrorKind as TfErrorKind};

use crate::error::{Error, ErrorKind};

/// What reading did after damage to the framing, in words: a `resync` came back with the
/// damaged record, passed over a stretch of bytes, or found nothing good after it.
pub(crate) fn resumed(resync: Option<&tfrecord::Resync>) -> String {
    match resync {
        Some(resync) if resync.recovered => {
            "record recovered: its data checksum vouches for the length that reaches the next \
             record"
                .to_owned()
        }
        Some(resync) => format!(
            "bytes {}..{} skipped: {} bytes, reading resumed at offset {}",
            resync.damaged.start,
            resync.damaged.end,
            resync.len(),
            resync.damaged.end
        ),
        None => "the rest of the file is lost".to_owned(),
    }
}

/// `n` records, in words.
pub(crate) fn records(n: u64) -> String {
    match n {
        0 => "no record".to_owned(),
        1 => "1 record".to_owned(),
        n => format!("{n} records"),
    }
}

/// Whether `err` is damage to a TFRecord's or an OFRecord's framing (not an I/O error).
pub(crate) fn is_framing_damage(err: &Error) -> bool {
    matches!(
        err.kind(),
        ErrorKind::TfRecord(kind) if !matches!(kind, TfErrorKind::Io(_))
    ) || matches!(
        err.kind(),
        ErrorKind::OfRecord(kind) if !matches!(kind, OfErrorKind::Io(_))
    )
}

/// Whether an error is damage in the file (which salvaging may step over) rather than a
/// failure to read it.
pub(crate) fn is_damage(err: &Error) -> bool {
    match err.kind() {
        ErrorKind::TfRecord(TfErrorKind::Io(io)) | ErrorKind::OfRecord(OfErrorKind::Io(io)) => {
            // A damaged or cut-short compressed stream surfaces as these.
            matches!(
                io.kind(),
                io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof
            )
        }
        ErrorKind::ArrayRecord(ArrayErrorKind::Io(io)) => matches!(
            io.kind(),
            io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof
        ),
        // A table of columns is no damaged file: it is refused as what it is.
        ErrorKind::Parquet(ParquetErrorKind::Io(_) | ParquetErrorKind::NotRecords { .. }) => false,
        ErrorKind::TfRecord(_)
        | ErrorKind::OfRecord(_)
        | ErrorKind::ArrayRecord(_)
        | ErrorKind::Parquet(_) => true,
        _ => false,
    }
}
