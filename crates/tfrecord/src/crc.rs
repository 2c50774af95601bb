//! Masked CRC-32C, as TensorFlow stores it in every record.
//!
//! A CRC of data that itself embeds CRCs is weak, so TensorFlow rotates and offsets the
//! checksum before storing it ("masking"). The CRC itself is CRC-32C (Castagnoli). Every CRC
//! the project computes goes through [`crc32c`] (and [`crc32c_append`] for a running one):
//! inputs of 512 bytes and more go to the `crc-fast` crate, which folds many streams at once
//! with carry-less multiplication (about 2.5 times the `crc32c` crate's throughput from
//! 4 KiB up on the x86-64 machines measured, `bench/crate/benches/framing.rs`) and falls
//! back to portable tables elsewhere. Shorter inputs (every record's 8-byte length, the data
//! of small records) get a shortcut on x86-64: one CRC instruction per 8 bytes read
//! unaligned, which beats any crate's set-up for so short an input.

/// The constant TensorFlow adds to a rotated CRC.
const MASK_DELTA: u32 = 0xa282_ead8;

/// Masks a CRC-32C the way TensorFlow does before it writes one.
///
/// ```
/// use ofconvert_tfrecord::crc;
/// assert_eq!(crc::unmask(crc::mask(0x1234_5678)), 0x1234_5678);
/// ```
#[inline]
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Reverses [`mask`].
#[inline]
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// Below this many bytes the crate computes one CRC stream too, so the shortcut loses nothing.
const SHORT_INPUT: usize = 512;

/// The masked CRC-32C of `data`: the value a TFRecord stores after the length and after the data.
///
/// ```
/// use ofconvert_tfrecord::crc;
/// assert_eq!(crc::masked_crc32c(b"foo"), u32::from_le_bytes([0x61, 0x8a, 0xbe, 0xfe]));
/// ```
#[inline]
pub fn masked_crc32c(data: &[u8]) -> u32 {
    mask(crc32c(data))
}

/// The CRC-32C of `data`, unmasked.
///
/// ```
/// use ofconvert_tfrecord::crc;
/// // RFC 3720, B.4: 32 bytes of zeros.
/// assert_eq!(crc::crc32c(&[0; 32]), 0x8a91_36aa);
/// ```
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    if data.len() < SHORT_INPUT {
        crc32c_short(data)
    } else {
        crc32c_long(data)
    }
}

/// The CRC-32C of `a` followed by `data`, from `crc`, the CRC-32C of `a`: a running CRC of
/// what is written piece by piece (0 is the CRC of nothing).
///
/// ```
/// use ofconvert_tfrecord::crc;
/// let whole = crc::crc32c(b"hello, world");
/// assert_eq!(crc::crc32c_append(crc::crc32c(b"hello, "), b"world"), whole);
/// assert_eq!(crc::crc32c_append(0, b"hello, world"), whole);
/// ```
#[inline]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    // The CRC goes on from the register the CRC of `a` left (its inverse), byte by byte as
    // if `a` and `data` were one input: a few instructions a call, where combining two CRCs
    // costs a multiplication by x^(8 * data.len()), which a part's writer, summing each of
    // its many small writes, paid once a write.
    if data.len() < SHORT_INPUT {
        crc32c_short_from(crc, data)
    } else {
        crc32c_long_from(crc, data)
    }
}

fn crc32c_long(data: &[u8]) -> u32 {
    // CRC-32/ISCSI is CRC-32C; the value fits the low 32 bits.
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, data) as u32
}

/// [`crc32c_long`] going on from the CRC-32C `crc` of what came before.
fn crc32c_long_from(crc: u32, data: &[u8]) -> u32 {
    let mut digest =
        crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc32Iscsi, u64::from(!crc));
    digest.update(data);
    digest.finalize() as u32
}

/// The masked CRC-32C of a record's 8-byte length field, equal to [`masked_crc32c`] of the
/// same bytes.
///
/// ```
/// use ofconvert_tfrecord::crc;
/// let length = 84u64.to_le_bytes();
/// assert_eq!(crc::masked_crc32c_u64(length), crc::masked_crc32c(&length));
/// ```
#[inline]
pub fn masked_crc32c_u64(bytes: [u8; 8]) -> u32 {
    mask(crc32c_word(bytes))
}

/// The CRC-32C of 8 bytes: one instruction on x86-64 with SSE 4.2.
#[cfg(target_arch = "x86_64")]
#[inline]
fn crc32c_word(bytes: [u8; 8]) -> u32 {
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above.
        unsafe { crc32c_word_sse42(bytes) }
    } else {
        crc32c_long(&bytes)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_word_sse42(bytes: [u8; 8]) -> u32 {
    // From all ones, inverted at the end, as for any other length.
    !(std::arch::x86_64::_mm_crc32_u64(u64::from(u32::MAX), u64::from_le_bytes(bytes)) as u32)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn crc32c_word(bytes: [u8; 8]) -> u32 {
    crc32c_long(&bytes)
}

#[inline]
fn crc32c_short(data: &[u8]) -> u32 {
    // The CRC of nothing is 0: its register, all ones, is where every CRC-32C starts.
    crc32c_short_from(0, data)
}

/// [`crc32c_short`] going on from the CRC-32C `crc` of what came before.
#[cfg(target_arch = "x86_64")]
#[inline]
fn crc32c_short_from(crc: u32, data: &[u8]) -> u32 {
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above.
        unsafe { crc32c_sse42(crc, data) }
    } else {
        crc32c_long_from(crc, data)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_sse42(crc: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    // CRC-32C's register starts from all ones (the inverse of the CRC of nothing, 0) and is
    // inverted at the end; the instructions do neither.
    let mut crc = u64::from(!crc);
    let (words, mut rest) = data.as_chunks::<8>();
    for word in words {
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(*word));
    }
    // The last bytes four, two and one at a time: each step waits for the one before, so
    // fewer steps finish sooner.
    let mut crc = crc as u32;
    if let Some((four, after)) = rest.split_first_chunk::<4>() {
        crc = _mm_crc32_u32(crc, u32::from_le_bytes(*four));
        rest = after;
    }
    if let Some((two, after)) = rest.split_first_chunk::<2>() {
        crc = _mm_crc32_u16(crc, u16::from_le_bytes(*two));
        rest = after;
    }
    if let Some(&byte) = rest.first() {
        crc = _mm_crc32_u8(crc, byte);
    }
    !crc
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn crc32c_short_from(crc: u32, data: &[u8]) -> u32 {
    crc32c_long_from(crc, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn the_length_shortcut_matches_the_general_crc() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut lengths = vec![0, 1, 84, u64::MAX, 1 << 63, 0xff];
        lengths.extend((0..10_000).map(|_| xorshift(&mut state)));
        for length in lengths {
            let bytes = length.to_le_bytes();
            assert_eq!(crc32c_short(&bytes), crc32c::crc32c(&bytes), "{length:#x}");
            assert_eq!(crc32c_word(bytes), crc32c::crc32c(&bytes), "{length:#x}");
            assert_eq!(masked_crc32c_u64(bytes), mask(crc32c::crc32c(&bytes)));
        }
    }

    #[test]
    fn the_short_input_shortcut_matches_the_general_crc_at_any_alignment() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let data: Vec<u8> = (0..2 * SHORT_INPUT)
            .map(|_| xorshift(&mut state) as u8)
            .collect();
        for start in 0..8 {
            for len in 0..=SHORT_INPUT + 8 {
                let slice = &data[start..start + len];
                assert_eq!(crc32c_short(slice), crc32c::crc32c(slice), "{start} {len}");
                assert_eq!(masked_crc32c(slice), mask(crc32c::crc32c(slice)));
            }
        }
    }

    #[test]
    fn known_answers_of_rfc_3720() {
        let ascending: Vec<u8> = (0..32).collect();
        let descending: Vec<u8> = (0..32).rev().collect();
        assert_eq!(crc32c(&[0; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(&[0xff; 32]), 0x62a8_ab43);
        assert_eq!(crc32c(&ascending), 0x46dd_794e);
        assert_eq!(crc32c(&descending), 0x113f_db5c);
        // The same through the long path: the answers repeated past the shortcut's reach.
        let zeros = vec![0u8; 4096];
        assert_eq!(crc32c(&zeros), crc32c::crc32c(&zeros));
    }

    #[test]
    fn the_long_path_and_appending_match_the_crc32c_crate_at_any_length_and_alignment() {
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let data: Vec<u8> = (0..300_000).map(|_| xorshift(&mut state) as u8).collect();
        let mut lengths = vec![
            SHORT_INPUT - 1,
            SHORT_INPUT,
            SHORT_INPUT + 1,
            4096,
            65_536,
            262_144,
        ];
        lengths.extend((0..200).map(|_| (xorshift(&mut state) % 290_000) as usize));
        for (i, len) in lengths.into_iter().enumerate() {
            let start = i % 16;
            let slice = &data[start..start + len];
            let expected = crc32c::crc32c(slice);
            assert_eq!(crc32c(slice), expected, "{start} {len}");
            assert_eq!(masked_crc32c(slice), mask(expected), "{start} {len}");
            let cut = (xorshift(&mut state) as usize) % (len + 1);
            let appended = crc32c_append(crc32c(&slice[..cut]), &slice[cut..]);
            assert_eq!(appended, expected, "{start} {len} cut at {cut}");
        }
    }

    #[test]
    fn a_crc_appended_piece_by_piece_is_the_crc_of_the_whole() {
        // As a part's writer sums its writes: pieces short and long, in any order.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let data: Vec<u8> = (0..200_000).map(|_| xorshift(&mut state) as u8).collect();
        let (mut crc, mut at) = (0, 0);
        while at < data.len() {
            let piece = match xorshift(&mut state) % 4 {
                0 => 0,
                1 => (xorshift(&mut state) % 16) as usize,
                2 => (xorshift(&mut state) % SHORT_INPUT as u64) as usize,
                _ => (xorshift(&mut state) % 20_000) as usize,
            }
            .min(data.len() - at);
            crc = crc32c_append(crc, &data[at..at + piece]);
            at += piece;
            assert_eq!(crc, crc32c::crc32c(&data[..at]), "after {at} bytes");
        }
    }
}
