use std::fmt;
use std::io;

/// A framing error, with where it happened.
///
/// [`offset`](Error::offset) is the byte offset of the start of the record the error concerns
/// (its length field), and [`index`](Error::index) is that record's zero-based index in the
/// stream. For a writer they are the offset and index the record would have had.
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
    /// The underlying reader or writer failed.
    Io(io::Error),
    /// The stream ends inside a length field: `available` (1 to 7) of its 8 bytes are present.
    TruncatedLength {
        /// How many bytes of the length field are present.
        available: usize,
    },
    /// The stream ends inside a payload. Absurd lengths (say 2^60) end up here too, since no
    /// stream holds that many bytes.
    Truncated {
        /// The payload length the record declares.
        length: u64,
        /// How many payload bytes follow the length field before the stream ends.
        available: u64,
    },
    /// A record with an empty payload. OneFlow aborts the whole process on one, so the writer
    /// refuses to write it and the reader reports it.
    ZeroLength,
    /// The length field, read as the signed integer OneFlow reads, is negative.
    NegativeLength {
        /// The length as read.
        length: i64,
    },
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, offset: u64, index: u64) -> Self {
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

    /// Byte offset of the start of the record concerned.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Zero-based index of the record concerned.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Takes the kind out, for instance to get at the `io::Error`.
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }

    /// Whether the stream is still usable after this error. Only a zero-length record is: its
    /// frame is well formed, so the reader has already stepped past it (and
    /// [`recover`](crate::Reader::recover) lets it go on), and a writer that refused one wrote
    /// nothing.
    pub fn is_recoverable(&self) -> bool {
        matches!(self.kind, ErrorKind::ZeroLength)
    }

    /// A copy to hand out again from a fused writer. `io::Error` is not `Clone`, so
    /// an I/O error is rebuilt from its kind and message.
    pub(crate) fn replay(&self) -> Error {
        let kind = match &self.kind {
            ErrorKind::Io(e) => ErrorKind::Io(io::Error::new(e.kind(), e.to_string())),
            ErrorKind::TruncatedLength { available } => ErrorKind::TruncatedLength {
                available: *available,
            },
            ErrorKind::Truncated { length, available } => ErrorKind::Truncated {
                length: *length,
                available: *available,
            },
            ErrorKind::ZeroLength => ErrorKind::ZeroLength,
            ErrorKind::NegativeLength { length } => ErrorKind::NegativeLength { length: *length },
        };
        Error::new(kind, self.offset, self.index)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The io::Error itself is the source: printing it here too would repeat it in
            // every cause chain.
            ErrorKind::Io(_) => f.write_str("I/O error"),
            ErrorKind::TruncatedLength { available } => {
                write!(f, "truncated length field ({available} of 8 bytes)")
            }
            ErrorKind::Truncated { length, available } => write!(
                f,
                "truncated record (length {length}, only {available} payload bytes follow)"
            ),
            ErrorKind::ZeroLength => f.write_str("zero-length record (OneFlow aborts on it)"),
            ErrorKind::NegativeLength { length } => write!(f, "negative record length {length}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at offset {} (record #{})",
            self.kind, self.offset, self.index
        )
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}
