//! A reader over a byte slice that behaves like a pipe or a flaky disk.

use std::io::{self, Read};

/// Hands out at most `piece` bytes per call, answers `Interrupted` every few calls, and can
/// fail for good once it reaches a chosen offset. The framing readers must give the same
/// records whatever the piece size and however often they are interrupted.
pub struct Pieces<'a> {
    data: &'a [u8],
    pos: usize,
    piece: usize,
    interrupt_every: Option<u32>,
    calls: u32,
    fail_at: Option<usize>,
}

/// Piece sizes around the header sizes (8 and 12) and the readers' buffer sizes.
const PIECE_SIZES: [usize; 16] = [
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
    /// Reads `data`, with the piece size and interruptions chosen by `config`: the low four
    /// bits pick the piece size, the next two how often a call is interrupted.
    pub fn new(data: &'a [u8], config: u8) -> Self {
        Pieces {
            data,
            pos: 0,
            piece: PIECE_SIZES[usize::from(config & 0x0f)],
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
            .is_some_and(|every| self.calls % every == 0)
        {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let end = self.fail_at.unwrap_or(self.data.len());
        if self.pos >= end && self.fail_at.is_some() {
            return Err(io::Error::other("injected read failure"));
        }
        let n = out.len().min(self.piece).min(end - self.pos);
        out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
