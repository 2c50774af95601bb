//! An entry of the cache of spans as it lies on disk: its bytes, then a trailer of the
//! XXH3-64 hash of each block of them, their length and a mark, so that an entry cut short
//! or damaged (a crash, a disk) is told from a whole one and never read. Blocks are checked
//! as they are first read, each once in a process: a read of a few records out of a large
//! entry checks the blocks it reads, not the whole entry.

use std::ops::Range;

use xxhash_rust::xxh3::xxh3_64;

/// Bytes of a block, each hashed on its own.
#[cfg(not(test))]
pub(crate) const BLOCK: u64 = 1 << 20;
/// Small in the tests, for entries of a few blocks.
#[cfg(test)]
pub(crate) const BLOCK: u64 = 8;
/// Bytes that end every entry: its length, then the mark.
const FOOTER: u64 = 16;
/// What ends an entry: one written before trailers (or anything else) ends otherwise.
const MARK: &[u8; 8] = b"ofspan\x00\x02";

/// Bytes of the file of an entry of `len` bytes: `None` past what a file's length can be, as
/// for a length read from a damaged trailer.
pub(crate) fn file_len(len: u64) -> Option<u64> {
    len.div_ceil(BLOCK)
        .checked_mul(8)?
        .checked_add(len)?
        .checked_add(FOOTER)
}

/// Bytes of the entry whose file is `file_len` bytes long ([`file_len`] undone), as its
/// room is counted: the trailer, like the file system's own blocks, is not. A file cut
/// short of its first block's hash (a damaged one, about to be removed) holds none.
pub(crate) fn counted(file_len: u64) -> u64 {
    let hashed = file_len.saturating_sub(FOOTER);
    hashed.saturating_sub(8 * hashed.div_ceil(BLOCK + 8))
}

/// The trailer of an entry of `len` bytes whose blocks hash to `hashes`.
pub(crate) fn trailer(len: u64, hashes: &[u64]) -> Vec<u8> {
    let mut trailer = Vec::with_capacity(hashes.len() * 8 + FOOTER as usize);
    for hash in hashes {
        trailer.extend_from_slice(&hash.to_le_bytes());
    }
    trailer.extend_from_slice(&len.to_le_bytes());
    trailer.extend_from_slice(MARK);
    trailer
}

/// Whether `entry` (its whole file) ends as an entry of `len` bytes does.
pub(crate) fn ends_whole(entry: &[u8], len: u64) -> bool {
    let Some(footer) = entry.len().checked_sub(FOOTER as usize) else {
        return false;
    };
    file_len(len) == Some(entry.len() as u64)
        && &entry[footer + 8..] == MARK
        && entry[footer..footer + 8] == len.to_le_bytes()
}

/// The blocks of an entry that its bytes `sub` lie in.
pub(crate) fn blocks(sub: &Range<u64>) -> Range<u64> {
    if sub.is_empty() {
        return 0..0;
    }
    sub.start / BLOCK..(sub.end - 1) / BLOCK + 1
}

/// Whether block `block` of the entry `entry` of `len` bytes (which [`ends_whole`]) hashes
/// as its trailer says.
pub(crate) fn block_whole(entry: &[u8], len: u64, block: u64) -> bool {
    let start = block * BLOCK;
    let end = (start + BLOCK).min(len);
    let at = (len + 8 * block) as usize;
    start < end && xxh3_64(&entry[start as usize..end as usize]).to_le_bytes() == entry[at..at + 8]
}

/// The bytes of the entry `entry` (its whole file), if they are all whole.
#[cfg(test)]
pub(crate) fn payload(entry: &[u8]) -> Option<&[u8]> {
    let footer = entry.len().checked_sub(FOOTER as usize)?;
    let len = u64::from_le_bytes(entry[footer..footer + 8].try_into().ok()?);
    let whole =
        ends_whole(entry, len) && blocks(&(0..len)).all(|block| block_whole(entry, len, block));
    whole.then(|| &entry[..len as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(bytes: &[u8]) -> Vec<u8> {
        let hashes: Vec<u64> = bytes.chunks(BLOCK as usize).map(xxh3_64).collect();
        let mut entry = bytes.to_vec();
        entry.extend_from_slice(&trailer(bytes.len() as u64, &hashes));
        entry
    }

    #[test]
    fn an_entry_is_read_whole_or_not_at_all() {
        let bytes: Vec<u8> = (0..20).collect();
        let whole = entry(&bytes);
        assert_eq!(Some(whole.len() as u64), file_len(20));
        assert_eq!(counted(whole.len() as u64), 20);
        assert_eq!(payload(&whole), Some(&bytes[..]));
        assert_eq!(payload(&entry(b"")), Some(&b""[..]));
        // Cut anywhere, a byte flipped anywhere, the bytes alone (an entry of before trailers).
        for cut in 0..whole.len() {
            assert_eq!(payload(&whole[..cut]), None, "cut at {cut}");
        }
        for at in 0..whole.len() {
            let mut flipped = whole.clone();
            flipped[at] ^= 0x10;
            assert_eq!(payload(&flipped), None, "flipped at {at}");
        }
        // A torn write leaves zeros where the disk had nothing yet.
        let mut torn = whole.clone();
        torn[3..7].fill(0);
        assert_eq!(payload(&torn), None);
        // A block is checked on its own: the others are whole.
        let mut flipped = whole.clone();
        flipped[9] ^= 1;
        assert!(ends_whole(&flipped, 20));
        let checked: Vec<bool> = (0..3).map(|b| block_whole(&flipped, 20, b)).collect();
        assert_eq!(checked, [true, false, true]);
        assert_eq!(blocks(&(7..9)), 0..2);
        assert_eq!(blocks(&(8..16)), 1..2);
    }

    #[test]
    fn the_bytes_counted_are_those_an_entry_of_any_length_holds() {
        for len in (0..200).chain([BLOCK * 1000 - 1, BLOCK * 1000, BLOCK * 1000 + 1]) {
            assert_eq!(counted(file_len(len).unwrap()), len, "{len}");
        }
    }

    /// A damaged trailer's length is any number: the file it would need is past a file's
    /// length, and the entry is not whole. Its length was added and multiplied unchecked,
    /// which overflowed (wrapped, in a release build) on a flipped top byte.
    #[test]
    fn a_length_past_any_file_is_no_entry() {
        assert_eq!(file_len(u64::MAX), None);
        assert_eq!(file_len(u64::MAX - FOOTER), None);
        let mut flipped = entry(b"twenty bytes, whole.");
        let top_of_len = flipped.len() - FOOTER as usize + 7;
        flipped[top_of_len] ^= 0x80;
        assert_eq!(payload(&flipped), None);
    }

    /// A file cut short (or torn) is removed and its room given back: what it counts is at
    /// most its length. Files of 17 to 23 bytes counted a block's hash they do not hold, less
    /// than nothing, which wrapped to nearly 2^64 in a release build and emptied the room's
    /// count of everything else the cache held.
    #[test]
    fn a_file_cut_short_counts_at_most_its_length() {
        for file_len in 0..(FOOTER + 3 * (BLOCK + 8)) {
            assert!(counted(file_len) <= file_len, "{file_len}");
        }
        assert_eq!(counted(FOOTER + 7), 0);
    }
}
