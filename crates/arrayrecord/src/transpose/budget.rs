//! What decoding a transposed chunk may hold besides its records' bytes, and the blocks it
//! decompresses held to it.
//!
//! A transposed chunk's header, buckets and transitions are compressed blocks, each opening
//! with the size it decompresses to, and the header describes tables the decoder builds. A
//! block is held to what the chunk's declared sizes allow, but those allow much: the
//! transitions of a chunk declaring 1 GiB may soundly take 64 GiB. So everything decoding
//! holds besides the records' bytes (where each record ends, the blocks decompressed, the
//! tables) is also held to the reader's limit, one budget for the chunk, and a block is
//! refused by the size it announces, before anything of it is decompressed.

use crate::codec::{decompress, take_varint, ZstdContexts};

/// What a chunk's header declares it holds, and the most record bytes the reader takes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    /// The records the chunk's header declares.
    pub(crate) num_records: u64,
    /// Their bytes, as the chunk's header declares them.
    pub(crate) decoded_data_size: u64,
    /// The reader's limit on a chunk's record bytes, which its records are held to first.
    pub(crate) limit: u64,
}

/// The bytes a chunk's decoding may still take besides its records' bytes.
pub(super) struct Budget {
    left: u64,
    limit: u64,
}

impl Budget {
    /// The reader's limit, less where each of the chunk's records ends.
    pub(super) fn new(bounds: &Bounds) -> Budget {
        let ends = bounds
            .num_records
            .saturating_mul(std::mem::size_of::<usize>() as u64);
        Budget {
            left: bounds.limit.saturating_sub(ends),
            limit: bounds.limit,
        }
    }

    /// Takes `bytes` for a table, `what`, before it is made.
    pub(super) fn take(&mut self, bytes: u64, what: &str) -> Result<(), String> {
        if bytes > self.left {
            return Err(format!(
                "{what} would take {bytes} bytes, more than the {} left of the reader's limit \
                 of {}",
                self.left, self.limit
            ));
        }
        self.left -= bytes;
        Ok(())
    }

    /// Decompresses `block`, `what` of the chunk, into `out`: refused by the size it announces,
    /// before anything is decompressed, when that passes `bound` (what the chunk's declared
    /// sizes allow it) or what is left of the budget; then taken from the budget.
    pub(super) fn decompress(
        &mut self,
        what: &str,
        compression: u8,
        block: &[u8],
        bound: u64,
        zstd: &mut ZstdContexts,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        out.clear();
        let announced = if compression == 0 {
            Some(block.len() as u64)
        } else {
            take_varint(&mut &block[..])
        };
        if let Some(size) = announced {
            let (most, allowing) = if size > bound {
                (bound, "the chunk's declared sizes allow".to_owned())
            } else {
                (
                    self.left,
                    format!("left of the reader's limit of {}", self.limit),
                )
            };
            if size > most {
                return Err(format!(
                    "{what}: {size} bytes announced, more than the {most} {allowing}"
                ));
            }
            self.left -= size;
        }
        let limit = announced.unwrap_or(0);
        decompress(compression, block, limit, zstd, out).map_err(|err| format!("{what}: {err}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zstd_block(data: &[u8]) -> Vec<u8> {
        let mut block = Vec::new();
        crate::codec::put_varint(&mut block, data.len() as u64);
        block.extend_from_slice(&zstd::bulk::compress(data, 3).unwrap());
        block
    }

    /// A block that announces more than its bound or the budget is refused before a byte of
    /// it is decompressed: the output buffer is never grown to the size it announces.
    #[test]
    fn a_block_past_its_bound_or_the_budget_is_refused_unbuilt() {
        let zeros = vec![0; 8 << 20];
        let block = zstd_block(&zeros);
        assert!(block.len() < 4096, "{} bytes", block.len());
        let bounds = Bounds {
            num_records: 1,
            decoded_data_size: 1 << 20,
            limit: 1 << 20,
        };
        let mut zstd = ZstdContexts::default();
        for (bound, limit, says) in [
            (1 << 20, 1 << 30, "the chunk's declared sizes allow"),
            (1 << 30, 1 << 20, "left of the reader's limit of 1048576"),
        ] {
            let mut budget = Budget::new(&Bounds { limit, ..bounds });
            let mut out = Vec::new();
            let err = budget
                .decompress("the transitions", b'z', &block, bound, &mut zstd, &mut out)
                .unwrap_err();
            assert!(err.starts_with("the transitions: "), "{err}");
            assert!(err.contains("8388608 bytes"), "{err}");
            assert!(err.contains(says), "{err}");
            assert_eq!(out.capacity(), 0, "{err}");
        }

        // Within both, it is decompressed and taken from the budget, which a second one then
        // does not fit.
        let mut budget = Budget::new(&Bounds {
            limit: 12 << 20,
            ..bounds
        });
        let mut out = Vec::new();
        budget
            .decompress("bucket 0", b'z', &block, 1 << 30, &mut zstd, &mut out)
            .unwrap();
        assert_eq!(out, zeros);
        let err = budget
            .decompress("bucket 1", b'z', &block, 1 << 30, &mut zstd, &mut out)
            .unwrap_err();
        assert!(err.contains("more than the 4194296 left"), "{err}");
        // Uncompressed blocks are held to the same.
        let err = budget
            .decompress("bucket 1", 0, &zeros, 1 << 30, &mut zstd, &mut out)
            .unwrap_err();
        assert!(err.starts_with("bucket 1: 8388608 bytes"), "{err}");
        assert!(out.is_empty());
    }
}
