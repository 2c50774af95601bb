//! The error type of this crate: what went wrong, and where.

use std::fmt;
use std::io;

/// An error while reading or writing TFRecords, with the byte offset and record index where it
/// happened.
///
/// Offsets count bytes of the framed stream, that is after decompression. For a reader, the
/// offset is the start of the record that failed, except for [`ErrorKind::DataCrcMismatch`],
/// which (like TensorFlow) points at the data, 12 bytes further. For a writer, it is the number
/// of framed bytes written before the failing record.
///
/// `Display` reads like `truncated record (...) at offset 37 (record #2)`; a length-CRC
/// mismatch at offset 0 adds `(Is this even a TFRecord file?)`, as TensorFlow does. The cause
/// of an [`ErrorKind::Io`] error (including a damaged or cut-short compressed stream) is
/// available through [`source`](std::error::Error::source), not repeated in the message.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    offset: u64,
    index: u64,
}

/// What went wrong.
#[non_exhaustive]
#[derive(Debug)]
pub enum ErrorKind {
    /// The underlying reader or writer failed, or the compressed stream is damaged or cut short.
    Io(io::Error),
    /// The masked CRC stored after the 8 length bytes does not match them. The length cannot be
    /// trusted, so the reader cannot go on.
    LengthCrcMismatch {
        /// The masked CRC stored in the stream.
        expected: u32,
        /// The masked CRC computed over the length bytes.
        actual: u32,
    },
    /// The masked CRC stored after the data does not match it. The framing is intact: the
    /// reader can [`recover`](crate::Reader::recover) and go on with the next record.
    DataCrcMismatch {
        /// The masked CRC stored in the stream.
        expected: u32,
        /// The masked CRC computed over the data.
        actual: u32,
    },
    /// The stream ends with 1 to 11 bytes, too few for a record header. TensorFlow silently
    /// ignores such a tail.
    TruncatedHeader {
        /// How many bytes are left.
        available: usize,
    },
    /// The header is complete, but the stream ends before the data and its CRC do.
    Truncated {
        /// The data length the header announces.
        length: u64,
        /// How many bytes follow the header (data plus CRC), fewer than `length + 4`.
        available: u64,
    },
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, offset: u64, index: u64) -> Error {
        Error {
            kind,
            offset,
            index,
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Consumes the error and returns what went wrong.
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }

    /// The byte offset in the (decompressed) framed stream; see [`Error`] for which byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The 0-based index of the record that failed.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Whether the stream is still usable after this error. Only a data-CRC mismatch is: the
    /// framing was intact, the reader stands at the next record, and
    /// [`recover`](crate::Reader::recover) lets it go on.
    pub fn is_recoverable(&self) -> bool {
        matches!(self.kind, ErrorKind::DataCrcMismatch { .. })
    }

    /// A copy to hand out again from a fused writer. `io::Error` is not `Clone`, so an I/O
    /// error is rebuilt from its kind and message.
    pub(crate) fn replay(&self) -> Error {
        let kind = match &self.kind {
            ErrorKind::Io(e) => ErrorKind::Io(io::Error::new(e.kind(), e.to_string())),
            ErrorKind::LengthCrcMismatch { expected, actual } => ErrorKind::LengthCrcMismatch {
                expected: *expected,
                actual: *actual,
            },
            ErrorKind::DataCrcMismatch { expected, actual } => ErrorKind::DataCrcMismatch {
                expected: *expected,
                actual: *actual,
            },
            ErrorKind::TruncatedHeader { available } => ErrorKind::TruncatedHeader {
                available: *available,
            },
            ErrorKind::Truncated { length, available } => ErrorKind::Truncated {
                length: *length,
                available: *available,
            },
        };
        Error::new(kind, self.offset, self.index)
    }

    /// Whether the very first length fails its checksum, the usual sign of a file that is not
    /// a TFRecord at all (or is compressed, and read as if it were not). A data checksum
    /// mismatch is never at offset 0: it points 12 bytes into its record.
    fn hints_wrong_format(&self) -> bool {
        self.offset == 0 && matches!(self.kind, ErrorKind::LengthCrcMismatch { .. })
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(_) => f.write_str("I/O error"),
            ErrorKind::LengthCrcMismatch { expected, actual } => write!(
                f,
                "corrupted record (length checksum mismatch: stored {expected:#010x}, computed {actual:#010x})"
            ),
            ErrorKind::DataCrcMismatch { expected, actual } => write!(
                f,
                "corrupted record (data checksum mismatch: stored {expected:#010x}, computed {actual:#010x})"
            ),
            ErrorKind::TruncatedHeader { available } => write!(
                f,
                "truncated record header ({available} trailing bytes, a header needs 12)"
            ),
            ErrorKind::Truncated { length, available } => write!(
                f,
                "truncated record (the header announces {length} data bytes and a 4-byte checksum, \
                 only {available} bytes follow)"
            ),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at offset {} (record #{})",
            self.kind, self.offset, self.index
        )?;
        if self.hints_wrong_format() {
            f.write_str(" (Is this even a TFRecord file?)")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(err) => Some(err),
            _ => None,
        }
    }
}

/// Keeps the I/O error kind for [`ErrorKind::Io`]; every other kind becomes
/// [`io::ErrorKind::InvalidData`]. The [`Error`] itself, position included, stays the payload.
impl From<Error> for io::Error {
    fn from(err: Error) -> io::Error {
        let kind = match &err.kind {
            ErrorKind::Io(inner) => inner.kind(),
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, err)
    }
}
