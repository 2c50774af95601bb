//! The framing of one record over byte slices, with no I/O: what the reader, the writer and
//! the compression sniffer share, and what tests use to build streams by hand.
//!
//! ```
//! use ofconvert_tfrecord::frame::{self, HEADER_LEN};
//!
//! let mut header = [0; HEADER_LEN];
//! frame::encode_header(3, &mut header);
//! assert_eq!(frame::decode_header(&header).unwrap(), 3);
//!
//! let mut record = Vec::new();
//! frame::encode_record(b"foo", &mut record);
//! assert_eq!(&record[..HEADER_LEN], &header);
//! assert_eq!(record.len(), frame::framed_len(3).unwrap() as usize);
//! ```

use crate::crc;
use crate::ErrorKind;

/// The 8-byte little-endian length and the 4-byte masked CRC of those 8 bytes.
pub const HEADER_LEN: usize = 12;

/// The 4-byte masked CRC after the data.
pub const FOOTER_LEN: usize = 4;

/// Writes the header of a record of `length` data bytes.
pub fn encode_header(length: u64, out: &mut [u8; HEADER_LEN]) {
    let length = length.to_le_bytes();
    out[..8].copy_from_slice(&length);
    out[8..].copy_from_slice(&crc::masked_crc32c_u64(length).to_le_bytes());
}

/// The footer that follows `data`: its masked CRC.
pub fn encode_footer(data: &[u8]) -> [u8; FOOTER_LEN] {
    crc::masked_crc32c(data).to_le_bytes()
}

/// Appends `data` framed as one record to `out`.
pub fn encode_record(data: &[u8], out: &mut Vec<u8>) {
    let mut header = [0; HEADER_LEN];
    encode_header(data.len() as u64, &mut header);
    out.extend_from_slice(&header);
    out.extend_from_slice(data);
    out.extend_from_slice(&encode_footer(data));
}

/// The data length in the first [`HEADER_LEN`] bytes of `bytes`, once its masked CRC checks
/// out.
///
/// # Errors
///
/// [`ErrorKind::TruncatedHeader`] when `bytes` holds fewer than 12 bytes,
/// [`ErrorKind::LengthCrcMismatch`] when the CRC does not match.
pub fn decode_header(bytes: &[u8]) -> Result<u64, ErrorKind> {
    let length = decode_length(bytes)?;
    let expected = u32::from_le_bytes(to_array(&bytes[8..HEADER_LEN]));
    let actual = crc::masked_crc32c_u64(to_array(&bytes[..8]));
    if expected != actual {
        return Err(ErrorKind::LengthCrcMismatch { expected, actual });
    }
    Ok(length)
}

/// The data length in the first [`HEADER_LEN`] bytes of `bytes`, without checking its CRC.
///
/// # Errors
///
/// [`ErrorKind::TruncatedHeader`] when `bytes` holds fewer than 12 bytes.
pub fn decode_length(bytes: &[u8]) -> Result<u64, ErrorKind> {
    match bytes.get(..HEADER_LEN) {
        Some(header) => Ok(u64::from_le_bytes(to_array(&header[..8]))),
        None => Err(ErrorKind::TruncatedHeader {
            available: bytes.len(),
        }),
    }
}

/// Whether `footer` (at least [`FOOTER_LEN`] bytes) holds the masked CRC of `data`; the
/// stored and the computed CRC when it does not.
#[inline]
pub(crate) fn check_footer(data: &[u8], footer: &[u8]) -> Result<(), (u32, u32)> {
    let expected = u32::from_le_bytes(to_array(&footer[..FOOTER_LEN]));
    let actual = crc::masked_crc32c(data);
    if expected == actual {
        Ok(())
    } else {
        Err((expected, actual))
    }
}

/// How many bytes a record of `length` data bytes takes, header and footer included; `None`
/// when that overflows a `u64` (a damaged length).
pub fn framed_len(length: u64) -> Option<u64> {
    length.checked_add((HEADER_LEN + FOOTER_LEN) as u64)
}

/// Where a record of `length` data bytes framed at the start of `bytes` ends, when `bytes`
/// holds all of it and its data matches its CRC.
pub(crate) fn confirmed_len(bytes: &[u8], length: u64) -> Option<Result<usize, ()>> {
    let framed = usize::try_from(framed_len(length)?).ok()?;
    let record = bytes.get(..framed)?;
    let (data, footer) = record[HEADER_LEN..].split_at(framed - HEADER_LEN - FOOTER_LEN);
    Some(check_footer(data, footer).map(|()| framed).map_err(|_| ()))
}

fn to_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut array = [0; N];
    array.copy_from_slice(bytes);
    array
}
