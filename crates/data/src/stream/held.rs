//! The bytes of a piece of a chunk, held while a batch's records are read out of them.

/// The bytes of a piece of a chunk (of a span, or one a batch reads records out of): fetched,
/// or mapped from the cache that holds it.
#[derive(Debug)]
pub(crate) enum Held {
    Fetched(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Held {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Held::Fetched(bytes) => bytes,
            Held::Mapped(map) => map,
        }
    }
}
