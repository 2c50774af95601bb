//! Chunks built byte by byte, framed with their hashes as a writer frames them: what a
//! hostile or damaged file holds, which no writer makes.

use highway::{HighwayHash, HighwayHasher, Key};
use ofconvert_arrayrecord::SIGNATURE;

fn riegeli_hash(bytes: &[u8]) -> u64 {
    let key = [*b"Riegeli/", *b"records\n", *b"Riegeli/", *b"records\n"].map(u64::from_le_bytes);
    HighwayHasher::new(Key(key)).hash64(bytes)
}

/// `value` as a varint, after `out`.
pub fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The signature and `chunks` (type, records, decoded size, data), each framed with its hashes,
/// all in the file's first block; no footer.
pub fn file_of_chunks(chunks: &[(u8, u64, u64, Vec<u8>)]) -> Vec<u8> {
    let mut file = SIGNATURE.to_vec();
    for (chunk_type, num_records, decoded_data_size, data) in chunks {
        let mut header = [0; 40];
        header[8..16].copy_from_slice(&(data.len() as u64).to_le_bytes());
        header[16..24].copy_from_slice(&riegeli_hash(data).to_le_bytes());
        let type_and_count = num_records << 8 | u64::from(*chunk_type);
        header[24..32].copy_from_slice(&type_and_count.to_le_bytes());
        header[32..40].copy_from_slice(&decoded_data_size.to_le_bytes());
        let header_hash = riegeli_hash(&header[8..]);
        header[..8].copy_from_slice(&header_hash.to_le_bytes());
        file.extend_from_slice(&header);
        file.extend_from_slice(data);
    }
    assert!(
        file.len() < 1 << 16,
        "{} bytes: past the first block",
        file.len()
    );
    file
}

/// A zstd frame of `len` zeros (a multiple of 128 KiB), in blocks of one byte repeated: 4
/// bytes for every 128 KiB.
fn zstd_zeros(len: u64) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    // The magic number; no content size, a 128 KiB window.
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    let blocks = len / BLOCK;
    for block in 0..blocks {
        let last = u64::from(block + 1 == blocks);
        let header = last | 1 << 1 | BLOCK << 3;
        frame.extend_from_slice(&header.to_le_bytes()[..3]);
        frame.push(0);
    }
    frame
}

/// A transposed chunk's data, zstd-compressed: `header` (the buckets, buffers and state
/// machine, no bucket's bytes), and transitions that announce `transitions` bytes and hold
/// that many zeros.
pub fn transposed(header: &[u8], transitions: u64) -> Vec<u8> {
    let mut header_block = Vec::new();
    varint(&mut header_block, header.len() as u64);
    header_block.extend_from_slice(&zstd::bulk::compress(header, 3).unwrap());
    let mut data = vec![b'z'];
    varint(&mut data, header_block.len() as u64);
    data.extend_from_slice(&header_block);
    varint(&mut data, transitions);
    data.extend_from_slice(&zstd_zeros(transitions));
    data
}
