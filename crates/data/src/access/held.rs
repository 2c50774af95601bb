//! The bytes of a piece of a chunk, held while a batch's records are read out of them.

use std::ops::Range;

/// The bytes of a piece of a chunk (of a span, or one a batch reads records out of): fetched,
/// or mapped from the cache entry that holds them (its own, or a larger one they lie in).
#[derive(Debug)]
pub(crate) enum Held {
    Fetched(Vec<u8>),
    Mapped(memmap2::Mmap, Range<usize>),
}

impl std::ops::Deref for Held {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Held::Fetched(bytes) => bytes,
            Held::Mapped(map, range) => &map[range.clone()],
        }
    }
}
