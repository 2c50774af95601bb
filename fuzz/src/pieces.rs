//! A reader over a byte slice that behaves like a pipe or a flaky disk.

use std::io::{self, Read};

/// Hands out bytes in pieces of alternating sizes, answers `Interrupted` every few calls,
/// and can fail for good once it reaches a chosen offset. The framing readers must give the
/// same records whatever the pieces and however often they are interrupted.
///
/// Calls alternate between a small piece and a large one, so that headers land across piece
/// boundaries at every offset without a byte-by-byte crawl through the whole input (which
/// would cost thousands of calls per run).
pub struct Pieces<'a> {
    data: &'a [u8],
    pos: usize,
    small: usize,
    large: usize,
    interrupt_every: Option<u32>,
    calls: u32,
    fail_at: Option<usize>,
}

/// Piece sizes around the header sizes (8 and 12) and the readers' buffer sizes.
const SMALL: [usize; 16] = [
    1,
    2,
    3,
    5,
    7,
    8,
    11,
    12,
    13,
    16,
    31,
    64,
    255,
    4096,
    65_536,
    usize::MAX,
];

impl<'a> Pieces<'a> {
    /// Reads `data` in pieces chosen by `config`: bits 0-3 pick the small piece size, bits
    /// 4-5 how often a call is interrupted (never, every 2nd, 3rd or 7th call), bits 6-7 the
    /// large piece size (the small one again, 64, 509 or 4096 bytes).
    pub fn new(data: &'a [u8], config: u8) -> Self {
        let small = SMALL[usize::from(config & 0x0f)];
        Pieces {
            data,
            pos: 0,
            small,
            large: match config >> 6 {
                0 => small,
                1 => 64,
                2 => 509,
                _ => 4096,
            },
            interrupt_every: match (config >> 4) & 3 {
                0 => None,
                1 => Some(2),
                2 => Some(3),
                _ => Some(7),
            },
            calls: 0,
            fail_at: None,
        }
    }

    /// Makes every read at or past `offset` fail with an I/O error, when `offset` lies inside
    /// the data (an offset at or past the end changes nothing: the reader sees a clean end).
    pub fn failing_at(mut self, offset: usize) -> Self {
        self.fail_at = Some(offset).filter(|&at| at < self.data.len());
        self
    }

    /// The offset from which reads fail, if any.
    pub fn fail_at(&self) -> Option<usize> {
        self.fail_at
    }
}

impl Read for Pieces<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.calls = self.calls.wrapping_add(1);
        if self
            .interrupt_every
            .is_some_and(|every| self.calls.is_multiple_of(every))
        {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let end = self.fail_at.unwrap_or(self.data.len());
        if self.pos >= end && self.fail_at.is_some() {
            return Err(io::Error::other("injected read failure"));
        }
        let piece = if self.calls.is_multiple_of(2) {
            self.large
        } else {
            self.small
        };
        let n = out.len().min(piece).min(end - self.pos);
        out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
