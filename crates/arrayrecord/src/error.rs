//! The error type of this crate: what went wrong, and where.

use std::fmt;
use std::io;

/// An error while reading or writing ArrayRecord files, with the byte offset and record index
/// where it happened.
///
/// The offset is physical (a position in the file, block headers included): the beginning of
/// the chunk that failed, or of the block header whose hash failed. The index is the index of
/// the first record that chunk would have held (for a writer, of the record being written).
///
/// `Display` reads like `chunk data hash mismatch (...) at offset 4096 (record #12)`.
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
    /// The file does not begin with a Riegeli file signature.
    NotRiegeli,
    /// A block header's stored hash does not match its bytes.
    BlockHeaderHashMismatch {
        /// The hash stored in the block header.
        expected: u64,
        /// The hash computed over it.
        actual: u64,
    },
    /// A chunk header's stored hash does not match its bytes: nothing in it can be trusted.
    ChunkHeaderHashMismatch {
        /// The hash stored in the chunk header.
        expected: u64,
        /// The hash computed over it.
        actual: u64,
    },
    /// A chunk's data does not match the hash its header stores.
    ChunkDataHashMismatch {
        /// The hash stored in the chunk header.
        expected: u64,
        /// The hash computed over the data.
        actual: u64,
    },
    /// The file ends inside a chunk.
    Truncated {
        /// The physical position where the chunk (or the file's footer) should end.
        expected_end: u64,
        /// How long the file is.
        file_len: u64,
    },
    /// A chunk of a type Riegeli does not define.
    UnsupportedChunkType {
        /// The chunk type byte.
        chunk_type: u8,
    },
    /// A compression type other than none, brotli, zstd or snappy.
    UnknownCompression {
        /// The compression type byte.
        compression_type: u8,
    },
    /// A chunk whose header says it decodes to more than the reader's limit (1 GiB of record
    /// bytes by default): refused before anything is decompressed.
    ChunkTooLarge {
        /// The record bytes the chunk header announces.
        decoded_data_size: u64,
        /// The records it announces.
        num_records: u64,
        /// The reader's limit in bytes (it takes a sixteenth as many records).
        limit: u64,
    },
    /// A transposed chunk whose state machine moves more than 16 times for each byte it has
    /// written and each record it has ended, and 65,536 times more: refused there, before it
    /// costs more. A sound chunk moves at most 12 times a field or record. A hostile one may
    /// walk a chain of nodes that write nothing on every transition, the chain's length times
    /// the transitions: a file of 8 KB took a reader 39 s before its moves were counted.
    TooManyMoves {
        /// The moves made when it was refused.
        moves: u64,
        /// The record bytes written by then.
        written: u64,
        /// The records ended by then.
        records: u64,
    },
    /// A chunk whose hash is right but whose contents do not decode to what its header says.
    InvalidChunk {
        /// What does not add up.
        reason: String,
    },
    /// The ArrayRecord footer or postscript is missing or does not describe the file.
    InvalidFooter {
        /// What does not add up.
        reason: String,
    },
    /// A record number past the end of the file.
    RecordOutOfRange {
        /// How many records the file holds.
        num_records: u64,
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

    pub(crate) fn invalid_chunk(reason: impl Into<String>, offset: u64, index: u64) -> Error {
        Error::new(
            ErrorKind::InvalidChunk {
                reason: reason.into(),
            },
            offset,
            index,
        )
    }

    pub(crate) fn invalid_footer(reason: impl Into<String>, offset: u64, index: u64) -> Error {
        Error::new(
            ErrorKind::InvalidFooter {
                reason: reason.into(),
            },
            offset,
            index,
        )
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Consumes the error and returns what went wrong.
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }

    /// The physical byte offset; see [`Error`] for which byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The 0-based index of the record that failed.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// A copy to hand out again from a fused writer. `io::Error` is not `Clone`, so an I/O
    /// error is rebuilt from its kind and message.
    pub(crate) fn replay(&self) -> Error {
        let kind = match &self.kind {
            ErrorKind::Io(e) => ErrorKind::Io(io::Error::new(e.kind(), e.to_string())),
            ErrorKind::NotRiegeli => ErrorKind::NotRiegeli,
            ErrorKind::BlockHeaderHashMismatch { expected, actual } => {
                ErrorKind::BlockHeaderHashMismatch {
                    expected: *expected,
                    actual: *actual,
                }
            }
            ErrorKind::ChunkHeaderHashMismatch { expected, actual } => {
                ErrorKind::ChunkHeaderHashMismatch {
                    expected: *expected,
                    actual: *actual,
                }
            }
            ErrorKind::ChunkDataHashMismatch { expected, actual } => {
                ErrorKind::ChunkDataHashMismatch {
                    expected: *expected,
                    actual: *actual,
                }
            }
            ErrorKind::Truncated {
                expected_end,
                file_len,
            } => ErrorKind::Truncated {
                expected_end: *expected_end,
                file_len: *file_len,
            },
            ErrorKind::UnsupportedChunkType { chunk_type } => ErrorKind::UnsupportedChunkType {
                chunk_type: *chunk_type,
            },
            ErrorKind::UnknownCompression { compression_type } => ErrorKind::UnknownCompression {
                compression_type: *compression_type,
            },
            ErrorKind::ChunkTooLarge {
                decoded_data_size,
                num_records,
                limit,
            } => ErrorKind::ChunkTooLarge {
                decoded_data_size: *decoded_data_size,
                num_records: *num_records,
                limit: *limit,
            },
            ErrorKind::TooManyMoves {
                moves,
                written,
                records,
            } => ErrorKind::TooManyMoves {
                moves: *moves,
                written: *written,
                records: *records,
            },
            ErrorKind::InvalidChunk { reason } => ErrorKind::InvalidChunk {
                reason: reason.clone(),
            },
            ErrorKind::InvalidFooter { reason } => ErrorKind::InvalidFooter {
                reason: reason.clone(),
            },
            ErrorKind::RecordOutOfRange { num_records } => ErrorKind::RecordOutOfRange {
                num_records: *num_records,
            },
        };
        Error::new(kind, self.offset, self.index)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(_) => f.write_str("I/O error"),
            ErrorKind::NotRiegeli => f.write_str(
                "not an ArrayRecord file (no Riegeli file signature at its beginning)",
            ),
            ErrorKind::BlockHeaderHashMismatch { expected, actual } => write!(
                f,
                "corrupted block header (hash mismatch: stored {expected:#018x}, computed {actual:#018x})"
            ),
            ErrorKind::ChunkHeaderHashMismatch { expected, actual } => write!(
                f,
                "corrupted chunk header (hash mismatch: stored {expected:#018x}, computed {actual:#018x})"
            ),
            ErrorKind::ChunkDataHashMismatch { expected, actual } => write!(
                f,
                "corrupted chunk data (hash mismatch: stored {expected:#018x}, computed {actual:#018x})"
            ),
            ErrorKind::Truncated {
                expected_end,
                file_len,
            } => write!(
                f,
                "truncated file (a chunk runs to offset {expected_end}, the file ends at {file_len})"
            ),
            ErrorKind::UnsupportedChunkType { chunk_type } => {
                write!(f, "unknown chunk type {chunk_type:#04x}")
            }
            ErrorKind::UnknownCompression { compression_type } => {
                write!(f, "unknown compression type {compression_type:#04x}")
            }
            ErrorKind::ChunkTooLarge {
                decoded_data_size,
                num_records,
                limit,
            } => write!(
                f,
                "chunk too large to decode ({decoded_data_size} bytes in {num_records} records; \
                 a reader takes up to {limit} bytes in {} records)",
                limit / 16
            ),
            ErrorKind::TooManyMoves {
                moves,
                written,
                records,
            } => write!(
                f,
                "transposed chunk's state machine runs away ({moves} moves for {written} bytes \
                 and {records} records written; a chunk may make 16 a byte or record, and \
                 65536 more)"
            ),
            ErrorKind::InvalidChunk { reason } => write!(f, "invalid chunk ({reason})"),
            ErrorKind::InvalidFooter { reason } => {
                write!(f, "invalid ArrayRecord footer ({reason})")
            }
            ErrorKind::RecordOutOfRange { num_records } => {
                write!(f, "record out of range (the file holds {num_records})")
            }
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
