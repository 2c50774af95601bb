//! Which compression wraps a TFRecord stream, and how to guess it.

use crate::crc;
use crate::HEADER_LEN;

/// The compression that wraps a whole TFRecord stream.
///
/// TensorFlow compresses the framed stream as a whole (not record by record) and calls these
/// `compression_type=""`, `"GZIP"` and `"ZLIB"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Compression {
    /// Plain framed records.
    #[default]
    None,
    /// A gzip stream. Concatenated gzip members are read as one stream, as TensorFlow does;
    /// a stream cut short, or followed by bytes that are no gzip member, is an
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) error.
    Gzip,
    /// A single zlib (RFC 1950) stream. A stream cut short is an
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) error, and so are bytes after its end
    /// (`InvalidData`): TensorFlow ignores them, but they can only be damage or data nobody
    /// can read, and silence would hide it.
    Zlib,
}

impl Compression {
    /// Guesses the compression from the first bytes of a file.
    ///
    /// Pass at least 12 bytes when the file has them. A plain TFRecord wins first: when the
    /// first 12 bytes are a length followed by its valid masked CRC, the answer is `None`
    /// even if the bytes would also open a compressed stream (a record of length `0x9c78`
    /// starts with `78 9c`, a common zlib header). Otherwise `1f 8b` means gzip, a valid zlib
    /// header (`CMF` = `0x78`, `(CMF * 256 + FLG) % 31 == 0`) means zlib, and anything else,
    /// an empty prefix included, is `None`.
    ///
    /// ```
    /// use ofconvert_tfrecord::Compression;
    /// assert_eq!(Compression::sniff(&[0x1f, 0x8b, 0x08, 0x00]), Compression::Gzip);
    /// assert_eq!(Compression::sniff(&[0x78, 0x9c, 0x01, 0x02]), Compression::Zlib);
    /// assert_eq!(Compression::sniff(b""), Compression::None);
    /// ```
    pub fn sniff(prefix: &[u8]) -> Compression {
        if starts_with_valid_header(prefix) {
            return Compression::None;
        }
        match prefix {
            [0x1f, 0x8b, ..] => Compression::Gzip,
            [cmf @ 0x78, flg, ..] if (u16::from(*cmf) * 256 + u16::from(*flg)) % 31 == 0 => {
                Compression::Zlib
            }
            _ => Compression::None,
        }
    }

    /// The file name suffix conventionally used for this compression: `""`, `".gz"` or `".zz"`.
    pub fn file_suffix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => ".gz",
            Compression::Zlib => ".zz",
        }
    }
}

/// Whether `prefix` opens with a record length whose masked CRC checks out.
fn starts_with_valid_header(prefix: &[u8]) -> bool {
    let Some(header) = prefix.get(..HEADER_LEN) else {
        return false;
    };
    let (length, stored) = header.split_at(8);
    let mut stored_crc = [0; 4];
    stored_crc.copy_from_slice(stored);
    crc::masked_crc32c(length) == u32::from_le_bytes(stored_crc)
}
