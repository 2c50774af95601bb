//! Protobuf wire primitives over byte slices: no allocation, every read bounds-checked.

use std::ops::Range;

use crate::Error;

pub(crate) const VARINT: u8 = 0;
pub(crate) const FIXED64: u8 = 1;
pub(crate) const LEN: u8 = 2;
pub(crate) const FIXED32: u8 = 5;

/// A read position in one message; offsets in errors are relative to the outermost buffer
/// because nested cursors keep absolute positions.
#[derive(Clone, Copy)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor {
            buf,
            pos: 0,
            end: buf.len(),
        }
    }

    /// A cursor over `range` of the same buffer.
    pub(crate) fn sub(&self, range: Range<usize>) -> Self {
        Cursor {
            buf: self.buf,
            pos: range.start,
            end: range.end,
        }
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.end
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64, Error> {
        // Tags, lengths of short fields and small numbers take one byte.
        if self.pos < self.end {
            if let Some(&byte) = self.buf.get(self.pos) {
                if byte < 0x80 {
                    self.pos += 1;
                    return Ok(u64::from(byte));
                }
            }
        }
        self.varint_slow()
    }

    fn varint_slow(&mut self) -> Result<u64, Error> {
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&byte) = self.buf[..self.end].get(self.pos) else {
                return Err(Error::malformed("varint runs past the end", start));
            };
            self.pos += 1;
            if i == 9 && byte > 1 {
                return Err(Error::malformed("varint overflows 64 bits", start));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Error::malformed("varint longer than 10 bytes", start))
    }

    /// Reads a tag; field numbers outside 1..2^29 and group wire types are malformed.
    pub(crate) fn tag(&mut self) -> Result<(u32, u8), Error> {
        let start = self.pos;
        let tag = self.varint()?;
        let field = tag >> 3;
        let wire_type = (tag & 7) as u8;
        if field == 0 || field > (1 << 29) - 1 {
            return Err(Error::malformed("invalid field number", start));
        }
        if !matches!(wire_type, VARINT | FIXED64 | LEN | FIXED32) {
            return Err(Error::malformed("unsupported wire type", start));
        }
        Ok((field as u32, wire_type))
    }

    /// Reads a length prefix and returns the absolute range it covers.
    pub(crate) fn len_delimited(&mut self) -> Result<Range<usize>, Error> {
        let start = self.pos;
        let len = self.varint()?;
        let remaining = (self.end - self.pos) as u64;
        if len > remaining {
            return Err(Error::malformed("length runs past the end", start));
        }
        let range = self.pos..self.pos + len as usize;
        self.pos = range.end;
        Ok(range)
    }

    pub(crate) fn fixed32(&mut self) -> Result<u32, Error> {
        let bytes = self.take(4, "fixed32 runs past the end")?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64, Error> {
        let bytes = self.take(8, "fixed64 runs past the end")?;
        let mut le = [0u8; 8];
        le.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(le))
    }

    fn take(&mut self, n: usize, reason: &'static str) -> Result<&'a [u8], Error> {
        if self.end - self.pos < n {
            return Err(Error::malformed(reason, self.pos));
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }
}

impl Cursor<'_> {
    /// Skips a field's value of the given wire type.
    pub(crate) fn skip(&mut self, wire_type: u8) -> Result<(), Error> {
        match wire_type {
            VARINT => self.varint().map(drop),
            FIXED64 => self.fixed64().map(drop),
            FIXED32 => self.fixed32().map(drop),
            _ => self.len_delimited().map(drop),
        }
    }
}

pub(crate) fn varint_len(value: u64) -> usize {
    // Each byte holds 7 bits; zero still takes one byte.
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(crate) fn put_tag(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

/// The size of a length-delimited field with a one-byte tag holding `len` bytes.
pub(crate) fn field_size(len: usize) -> usize {
    1 + varint_len(len as u64) + len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trips_and_sizes_match() {
        for value in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out.len(), varint_len(value), "{value}");
            let mut cursor = Cursor::new(&out);
            assert_eq!(cursor.varint().unwrap(), value);
            assert!(cursor.at_end());
        }
    }

    #[test]
    fn overlong_and_overflowing_varints_are_malformed() {
        let overflow = [0xff; 9].iter().copied().chain([0x02]).collect::<Vec<_>>();
        assert!(Cursor::new(&overflow).varint().is_err());
        assert!(Cursor::new(&[0x80, 0x80]).varint().is_err());
    }

    #[test]
    fn length_past_end_is_malformed_at_the_length() {
        let bytes = [0x0a, 0x05, 1, 2];
        let mut cursor = Cursor::new(&bytes);
        cursor.tag().unwrap();
        let err = cursor.len_delimited().unwrap_err();
        assert_eq!(
            err.kind(),
            &crate::ErrorKind::Malformed {
                reason: "length runs past the end",
                offset: 1
            }
        );
    }
}
