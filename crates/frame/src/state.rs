//! What a reader may do after an error: the same in both framings.

use crate::{Position, Resync};

/// How an error leaves a reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The framing is intact and the reader stands at the next record: `recover` goes on.
    Recoverable,
    /// The framing of the record at the reader's position is damaged: `resync` goes on.
    Damaged,
    /// Nothing more can be read (an I/O error).
    Fused,
}

/// Where a reader stands: reading, or stopped after an error, and how it may go on.
///
/// A stopped reader reports a clean end until `recover` (after a [`Stop::Recoverable`]
/// error) or `resync` (after a [`Stop::Damaged`] one) lets it go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReaderState {
    /// Reading.
    #[default]
    Ready,
    /// Stopped on an error that left the framing intact.
    Recoverable,
    /// Stopped on damage to the framing, `consumed` bytes into the damaged record.
    Damaged {
        /// How many bytes of the damaged record were read past.
        consumed: u64,
    },
    /// Stopped for good.
    Fused,
}

impl ReaderState {
    /// Whether the reader may read.
    pub fn is_ready(self) -> bool {
        self == ReaderState::Ready
    }

    /// Stops the reader, `consumed` bytes into the record that failed.
    pub fn stop(&mut self, how: Stop, consumed: u64) {
        *self = match how {
            Stop::Recoverable => ReaderState::Recoverable,
            Stop::Damaged => ReaderState::Damaged { consumed },
            Stop::Fused => ReaderState::Fused,
        };
    }

    /// Goes on after a recoverable error. `true` when the reader may read again (also when
    /// it had not stopped), `false` when it stays stopped.
    pub fn recover(&mut self) -> bool {
        match self {
            ReaderState::Ready => true,
            ReaderState::Recoverable => {
                *self = ReaderState::Ready;
                true
            }
            ReaderState::Damaged { .. } | ReaderState::Fused => false,
        }
    }

    /// How many bytes of the damaged record were read past, when stopped on damage.
    pub fn damaged(self) -> Option<u64> {
        match self {
            ReaderState::Damaged { consumed } => Some(consumed),
            _ => None,
        }
    }

    /// Goes on after a resync that passed over `passed` more bytes from where the reader
    /// stopped on damage at `position`; moves `position` to where reading resumes and
    /// returns the report. `None` (and nothing changes) unless stopped on damage.
    pub fn resynced(
        &mut self,
        position: &mut Position,
        passed: u64,
        recovered: bool,
    ) -> Option<Resync> {
        let consumed = self.damaged()?;
        let start = *position;
        let end = start.offset + consumed + passed;
        *position = Position {
            offset: end,
            index: start.index + 1,
        };
        *self = ReaderState::Ready;
        Some(Resync {
            index: start.index,
            damaged: start.offset..end,
            recovered,
        })
    }
}
