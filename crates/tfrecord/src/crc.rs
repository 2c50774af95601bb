//! Masked CRC-32C, as TensorFlow stores it in every record.
//!
//! A CRC of data that itself embeds CRCs is weak, so TensorFlow rotates and offsets the
//! checksum before storing it ("masking"). The CRC itself is CRC-32C (Castagnoli), computed
//! with the `crc32c` crate, which uses the SSE 4.2 / ARMv8 CRC instructions when present.
//! Short inputs (every record's 8-byte length, the data of small records) get a shortcut on
//! x86-64: one CRC instruction per 8 bytes read unaligned, instead of the crate's
//! byte-by-byte handling of an unaligned start, which dominates so short an input. Longer
//! ones go to the crate, which runs three CRC streams side by side.

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
    mask(if data.len() < SHORT_INPUT {
        crc32c_short(data)
    } else {
        crc32c::crc32c(data)
    })
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
    mask(crc32c_short(&bytes))
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn crc32c_short(data: &[u8]) -> u32 {
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above.
        unsafe { crc32c_sse42(data) }
    } else {
        crc32c::crc32c(data)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_sse42(data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    // CRC-32C starts from all ones and inverts the result; the instructions do neither.
    let mut crc = u64::from(u32::MAX);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(word);
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(bytes));
    }
    let mut crc = crc as u32;
    for &byte in words.remainder() {
        crc = _mm_crc32_u8(crc, byte);
    }
    !crc
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn crc32c_short(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
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
}
