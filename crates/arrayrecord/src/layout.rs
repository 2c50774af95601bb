//! Riegeli's physical layout: 64 KiB blocks whose first 24 bytes are a block header, chunks
//! that run across them, and the HighwayHash-64 that guards both headers and chunk data.
//!
//! Positions here are physical: byte offsets in the file, block headers included.

use highway::{HighwayHash, HighwayHasher, Key};

/// The size of a block: a block header stands at every multiple of it.
pub const BLOCK_SIZE: u64 = 1 << 16;
/// The size of a block header.
pub const BLOCK_HEADER_SIZE: u64 = 24;
/// What a block holds besides its header.
pub const USABLE_BLOCK_SIZE: u64 = BLOCK_SIZE - BLOCK_HEADER_SIZE;
/// The size of a chunk header.
pub const CHUNK_HEADER_SIZE: usize = 40;

/// Riegeli's hash key: "Riegeli/", "records\n" twice, read as little-endian words.
const KEY: [u64; 4] = [
    0x2f69_6c65_6765_6952,
    0x0a73_6472_6f63_6572,
    0x2f69_6c65_6765_6952,
    0x0a73_6472_6f63_6572,
];

/// HighwayHash-64 of `data` under Riegeli's key.
pub fn hash(data: &[u8]) -> u64 {
    HighwayHasher::new(Key(KEY)).hash64(data)
}

/// HighwayHash-64 of `parts` one after the other, as [`hash`] of them joined.
fn hash_parts(parts: [&[u8]; 2]) -> u64 {
    let mut hasher = HighwayHasher::new(Key(KEY));
    for part in parts {
        hasher.append(part);
    }
    hasher.finalize64()
}

/// Bytes from `pos` to the next block boundary (0 at a boundary).
pub fn remaining_in_block(pos: u64) -> u64 {
    pos.wrapping_neg() % BLOCK_SIZE
}

/// How many block headers interrupt `size` bytes of chunk written from `pos` on.
fn overhead_blocks(pos: u64, size: u64) -> u64 {
    (size + (pos + USABLE_BLOCK_SIZE - 1) % BLOCK_SIZE) / USABLE_BLOCK_SIZE
}

/// The physical position after `size` bytes of chunk written from `pos`.
pub fn add_with_overhead(pos: u64, size: u64) -> u64 {
    pos.saturating_add(size)
        .saturating_add(overhead_blocks(pos, size).saturating_mul(BLOCK_HEADER_SIZE))
}

/// The first position from `pos` on where a chunk may begin: not inside a block header, nor
/// right after one.
fn round_up_to_chunk_boundary(pos: u64) -> u64 {
    pos + remaining_in_block(pos).saturating_sub(USABLE_BLOCK_SIZE - 1)
}

/// Where a chunk that begins at `begin` ends, padding included.
pub fn chunk_end(begin: u64, header: &ChunkHeader) -> u64 {
    let framed = (CHUNK_HEADER_SIZE as u64).saturating_add(header.data_size);
    add_with_overhead(begin, framed).max(round_up_to_chunk_boundary(
        begin.saturating_add(header.num_records),
    ))
}

/// The kinds of chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkType {
    /// The file signature, first in every file.
    Signature,
    /// File metadata: describes the records, holds none.
    Metadata,
    /// Padding: holds nothing.
    Padding,
    /// Record sizes and values in two buffers.
    Simple,
    /// Records taken apart field by field, protocol buffers by their fields.
    Transposed,
    /// A type this crate does not know.
    Other(u8),
}

impl ChunkType {
    /// The type from its byte.
    pub fn from_byte(byte: u8) -> ChunkType {
        match byte {
            b's' => ChunkType::Signature,
            b'm' => ChunkType::Metadata,
            b'p' => ChunkType::Padding,
            b'r' => ChunkType::Simple,
            b't' => ChunkType::Transposed,
            other => ChunkType::Other(other),
        }
    }

    /// The type's byte.
    pub fn byte(self) -> u8 {
        match self {
            ChunkType::Signature => b's',
            ChunkType::Metadata => b'm',
            ChunkType::Padding => b'p',
            ChunkType::Simple => b'r',
            ChunkType::Transposed => b't',
            ChunkType::Other(other) => other,
        }
    }
}

/// A chunk header, its hash checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkHeader {
    /// Size of the chunk's data, block headers not counted.
    pub data_size: u64,
    /// HighwayHash-64 of the data.
    pub data_hash: u64,
    /// What the data holds.
    pub chunk_type: ChunkType,
    /// How many records the chunk holds (7 bytes on disk).
    pub num_records: u64,
    /// The records' total size once decoded.
    pub decoded_data_size: u64,
}

/// A chunk header whose stored hash does not match its bytes.
pub struct HeaderHashMismatch {
    /// The hash stored in the header.
    pub expected: u64,
    /// The hash of the header's other 32 bytes.
    pub actual: u64,
}

fn word(bytes: &[u8], at: usize) -> u64 {
    let mut le = [0; 8];
    le.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(le)
}

impl ChunkHeader {
    /// Parses and checks the 40 bytes of a chunk header.
    pub fn parse(bytes: &[u8; CHUNK_HEADER_SIZE]) -> Result<ChunkHeader, HeaderHashMismatch> {
        let expected = word(bytes, 0);
        let actual = hash(&bytes[8..]);
        if expected != actual {
            return Err(HeaderHashMismatch { expected, actual });
        }
        let type_and_count = word(bytes, 24);
        Ok(ChunkHeader {
            data_size: word(bytes, 8),
            data_hash: word(bytes, 16),
            chunk_type: ChunkType::from_byte(type_and_count as u8),
            num_records: type_and_count >> 8,
            decoded_data_size: word(bytes, 32),
        })
    }

    /// The header of a chunk holding `data`.
    #[cfg(test)]
    pub fn new(
        data: &[u8],
        chunk_type: ChunkType,
        num_records: u64,
        decoded_data_size: u64,
    ) -> ChunkHeader {
        ChunkHeader::of_parts([data, &[]], chunk_type, num_records, decoded_data_size)
    }

    /// The header of a chunk whose data is `parts` one after the other.
    pub fn of_parts(
        parts: [&[u8]; 2],
        chunk_type: ChunkType,
        num_records: u64,
        decoded_data_size: u64,
    ) -> ChunkHeader {
        ChunkHeader {
            data_size: (parts[0].len() + parts[1].len()) as u64,
            data_hash: hash_parts(parts),
            chunk_type,
            num_records,
            decoded_data_size,
        }
    }

    /// The 40 bytes on disk.
    pub fn encode(&self) -> [u8; CHUNK_HEADER_SIZE] {
        let mut bytes = [0; CHUNK_HEADER_SIZE];
        bytes[8..16].copy_from_slice(&self.data_size.to_le_bytes());
        bytes[16..24].copy_from_slice(&self.data_hash.to_le_bytes());
        let type_and_count = (self.num_records << 8) | u64::from(self.chunk_type.byte());
        bytes[24..32].copy_from_slice(&type_and_count.to_le_bytes());
        bytes[32..40].copy_from_slice(&self.decoded_data_size.to_le_bytes());
        let header_hash = hash(&bytes[8..]);
        bytes[..8].copy_from_slice(&header_hash.to_le_bytes());
        bytes
    }
}

/// The 24 bytes of the block header at `block_begin`, inside the chunk `chunk_begin` to
/// `chunk_end`.
pub fn block_header(block_begin: u64, chunk_begin: u64, chunk_end: u64) -> [u8; 24] {
    let mut bytes = [0; 24];
    bytes[8..16].copy_from_slice(&(block_begin - chunk_begin).to_le_bytes());
    bytes[16..24].copy_from_slice(&(chunk_end - block_begin).to_le_bytes());
    let header_hash = hash(&bytes[8..]);
    bytes[..8].copy_from_slice(&header_hash.to_le_bytes());
    bytes
}

/// Checks a block header's hash: `Err((stored, computed))` when they differ.
pub fn check_block_header(bytes: &[u8; 24]) -> Result<(), (u64, u64)> {
    let expected = word(bytes, 0);
    let actual = hash(&bytes[8..]);
    if expected == actual {
        Ok(())
    } else {
        Err((expected, actual))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SIGNATURE;

    #[test]
    fn the_signature_is_the_documented_one() {
        let header = ChunkHeader::new(&[], ChunkType::Signature, 0, 0);
        assert_eq!(block_header(0, 0, 64), SIGNATURE[..24]);
        assert_eq!(header.encode(), SIGNATURE[24..]);
    }

    #[test]
    fn chunk_ends_follow_the_formulas() {
        let header = |data_size, num_records| ChunkHeader {
            data_size,
            data_hash: 0,
            chunk_type: ChunkType::Simple,
            num_records,
            decoded_data_size: 0,
        };
        // The signature: a block header, then 40 bytes.
        assert_eq!(chunk_end(0, &header(0, 0)), 64);
        // A chunk that crosses a block boundary pays for its block header.
        assert_eq!(chunk_end(65_500, &header(100, 1)), 65_500 + 140 + 24);
        // Padding to as many bytes as records, and never right after a block header.
        assert_eq!(chunk_end(100, &header(0, 1000)), 1100);
        assert_eq!(chunk_end(65_000, &header(0, 540)), 65_536 + 25);
    }
}
