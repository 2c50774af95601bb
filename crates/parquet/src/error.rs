//! The error type of this crate: what went wrong, and where.

use std::fmt;
use std::io;

/// An error while reading or writing a Parquet file of records, with the byte offset of what
/// failed (the footer, or a row group's column chunk) and the index of the first record it
/// would have given.
///
/// `Display` reads like `damaged Parquet footer (...) at offset 1234 (record #0)`.
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
    /// The underlying writer failed.
    Io(io::Error),
    /// The file does not open with Parquet's magic, `PAR1`.
    NotParquet,
    /// The file opens as Parquet but does not end with the magic: it was cut short, or its
    /// end was overwritten.
    Truncated {
        /// How long the file is.
        file_len: u64,
    },
    /// The footer does not decode, or its length does not fit the file.
    Footer(String),
    /// A row group's pages do not decode: a damaged page header or page, a page whose CRC-32
    /// does not match, or values the footer does not account for.
    Page(String),
    /// A record that is null: TFDS's layout has a record in every row. The error's index is
    /// its row group's first record's (the group is what fails).
    NullRecord {
        /// The null record's index in the file.
        record: u64,
    },
    /// The file's columns are not TFDS's layout (one binary column `data`).
    NotRecords {
        /// The file's columns, by their paths (`a.b` for a nested one).
        columns: Vec<String>,
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

    /// What went wrong, taking it.
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }

    /// The byte offset in the file of what failed.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The index of the first record what failed would have given.
    pub fn index(&self) -> u64 {
        self.index
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(err) => write!(f, "I/O error: {err}"),
            ErrorKind::NotParquet => f.write_str("not a Parquet file (no PAR1 magic at its start)"),
            ErrorKind::Truncated { file_len } => write!(
                f,
                "damaged Parquet file: no PAR1 magic at its end ({file_len} bytes; cut short?)"
            ),
            ErrorKind::Footer(what) => write!(f, "damaged Parquet footer ({what})"),
            ErrorKind::Page(what) => write!(f, "damaged Parquet page ({what})"),
            ErrorKind::NullRecord { record } => {
                write!(f, "a null record (#{record}) in a Parquet file of records")
            }
            ErrorKind::NotRecords { columns } => write!(
                f,
                "a Parquet file of columns {}, not of serialized records (TFDS's layout: one \
                 binary column `data`)",
                columns.join(", ")
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
