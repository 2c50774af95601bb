//! The framing of one record over byte slices, with no I/O: what the reader and the writer
//! share, and what tests use to build streams by hand.
//!
//! ```
//! use ofconvert_ofrecord::frame::{self, HEADER_LEN};
//!
//! let mut header = [0; HEADER_LEN];
//! frame::encode_header(5, &mut header);
//! assert_eq!(frame::decode_header(&header).unwrap(), 5);
//!
//! let mut record = Vec::new();
//! frame::encode_record(b"first", &mut record);
//! assert_eq!(record.len(), HEADER_LEN + 5);
//! ```

use crate::ErrorKind;

/// Size in bytes of the length field in front of every payload.
pub const HEADER_LEN: usize = 8;

/// Writes the length field of a payload of `length` bytes: a little-endian `i64`, which a
/// `u64` up to `i64::MAX` (any slice length) shares its bytes with.
pub fn encode_header(length: u64, out: &mut [u8; HEADER_LEN]) {
    *out = length.to_le_bytes();
}

/// Appends `payload` framed as one record to `out`.
pub fn encode_record(payload: &[u8], out: &mut Vec<u8>) {
    let mut header = [0; HEADER_LEN];
    encode_header(payload.len() as u64, &mut header);
    out.extend_from_slice(&header);
    out.extend_from_slice(payload);
}

/// The payload length in the first [`HEADER_LEN`] bytes of `bytes`, read as the signed
/// integer OneFlow reads.
///
/// # Errors
///
/// [`ErrorKind::TruncatedLength`] when `bytes` holds fewer than 8 bytes,
/// [`ErrorKind::NegativeLength`] and [`ErrorKind::ZeroLength`] for lengths OneFlow cannot read.
pub fn decode_header(bytes: &[u8]) -> Result<u64, ErrorKind> {
    let Some(header) = bytes.get(..HEADER_LEN) else {
        return Err(ErrorKind::TruncatedLength {
            available: bytes.len(),
        });
    };
    let mut length = [0; HEADER_LEN];
    length.copy_from_slice(header);
    let signed = i64::from_le_bytes(length);
    match u64::try_from(signed) {
        Err(_) => Err(ErrorKind::NegativeLength { length: signed }),
        Ok(0) => Err(ErrorKind::ZeroLength),
        Ok(length) => Ok(length),
    }
}

/// How many bytes a record of a `length`-byte payload takes; `None` when that overflows.
pub fn framed_len(length: u64) -> Option<u64> {
    length.checked_add(HEADER_LEN as u64)
}
