//! Masked CRC-32C, as TensorFlow stores it in every record.
//!
//! A CRC of data that itself embeds CRCs is weak, so TensorFlow rotates and offsets the
//! checksum before storing it ("masking"). The CRC itself is CRC-32C (Castagnoli), computed
//! with the `crc32c` crate, which uses the SSE 4.2 / ARMv8 CRC instructions when present.

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

/// The masked CRC-32C of `data`: the value a TFRecord stores after the length and after the data.
///
/// ```
/// use ofconvert_tfrecord::crc;
/// assert_eq!(crc::masked_crc32c(b"foo"), u32::from_le_bytes([0x61, 0x8a, 0xbe, 0xfe]));
/// ```
#[inline]
pub fn masked_crc32c(data: &[u8]) -> u32 {
    mask(crc32c::crc32c(data))
}
