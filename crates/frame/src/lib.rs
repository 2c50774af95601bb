//! What the two record framings, TFRecord (`ofconvert-tfrecord`) and OFRecord
//! (`ofconvert-ofrecord`), have in common: the [`Position`] of a record in a stream, the
//! buffered [`input`] their readers read through, the buffered [`output`] their writers
//! write through, what a reader may do after an error
//! ([`ReaderState`]), and the report of a [`Resync`] after damage.
//!
//! Both framing crates re-export what their users need, so depending on this crate directly
//! is only useful to name the shared types once, as the engine does.
//!
//! ```
//! use ofconvert_frame::Position;
//!
//! // A reader that started at a known record further in reports positions from there on;
//! // `after` turns them into positions in the whole file.
//! let start = Position { offset: 4096, index: 100 };
//! let local = Position { offset: 37, index: 2 };
//! assert_eq!(local.after(start), Position { offset: 4133, index: 102 });
//! ```

#![deny(missing_docs)]

use std::ops::Range;

pub mod input;
pub mod output;
mod state;

pub use state::{ReaderState, Stop};

/// Where a record is, or where a reader or writer stands: a byte offset in the framed stream
/// (after decompression, for a compressed TFRecord) and a 0-based record index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Position {
    /// Byte offset of the record's first byte.
    pub offset: u64,
    /// Index of the record.
    pub index: u64,
}

impl Position {
    /// This position, counted in a stream that began at `start`, as a position in the whole
    /// stream: offsets and indices add up.
    #[must_use]
    pub fn after(self, start: Position) -> Position {
        Position {
            offset: start.offset + self.offset,
            index: start.index + self.index,
        }
    }
}

/// What a reader's `resync` did after damage to the framing.
///
/// The damaged stretch runs from the first byte of the record whose framing failed to the
/// next record the scan accepted, or to the end of the stream. It counts as one record,
/// whatever it held: the record after it has the next index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resync {
    /// The index of the damaged record.
    pub index: u64,
    /// The byte offsets of the damaged stretch.
    pub damaged: Range<u64>,
    /// Whether the damaged record itself was recovered: its data is then in the caller's
    /// buffer, and the stretch held exactly that one record with a damaged header.
    pub recovered: bool,
}

impl Resync {
    /// How many bytes the stretch spans.
    pub fn len(&self) -> u64 {
        self.damaged.end - self.damaged.start
    }

    /// Whether the stretch is empty (it never is after real damage).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
