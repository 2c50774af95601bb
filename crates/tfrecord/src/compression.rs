//! Which compression wraps a TFRecord stream, and how to guess it.

use std::fmt;
use std::io::{self, BufRead, Read};
use std::str::FromStr;

use flate2::bufread::ZlibDecoder;

use crate::frame;

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

    /// The lower-case name: `"none"`, `"gzip"` or `"zlib"`. [`FromStr`] reads it back.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zlib => "zlib",
        }
    }

    /// The name TensorFlow gives this compression in `compression_type`: `""`, `"GZIP"` or
    /// `"ZLIB"`. [`FromStr`] reads it back.
    pub fn tf_name(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => "GZIP",
            Compression::Zlib => "ZLIB",
        }
    }
}

/// Shows the [`name`](Compression::name).
impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reads TensorFlow's spellings (`""`, `"GZIP"`, `"ZLIB"`) and the lower-case names `none`,
/// `gzip` and `zlib`, in any case.
///
/// ```
/// use ofconvert_tfrecord::Compression;
/// assert_eq!("GZIP".parse(), Ok(Compression::Gzip));
/// assert_eq!("zlib".parse(), Ok(Compression::Zlib));
/// assert_eq!("".parse(), Ok(Compression::None));
/// assert!("lz4".parse::<Compression>().is_err());
/// ```
impl FromStr for Compression {
    type Err = UnknownCompression;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        [Compression::None, Compression::Gzip, Compression::Zlib]
            .into_iter()
            .find(|c| name.eq_ignore_ascii_case(c.tf_name()) || name.eq_ignore_ascii_case(c.name()))
            .ok_or_else(|| UnknownCompression(name.to_owned()))
    }
}

/// A compression name [`Compression::from_str`] does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownCompression(pub String);

impl fmt::Display for UnknownCompression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown compression {:?} (expected \"\", GZIP or ZLIB, in any case, or none)",
            self.0
        )
    }
}

impl std::error::Error for UnknownCompression {}

/// Whether `prefix` opens with a record length whose masked CRC checks out.
fn starts_with_valid_header(prefix: &[u8]) -> bool {
    frame::decode_header(prefix).is_ok()
}

/// A zlib decoder that refuses bytes after the end of the zlib stream.
///
/// TensorFlow writes exactly one zlib stream per file; anything after it is damage (or a
/// second stream nobody wrote), and ignoring it would hide records.
pub(crate) struct StrictZlibDecoder<R> {
    decoder: ZlibDecoder<R>,
}

impl<R: BufRead> StrictZlibDecoder<R> {
    pub(crate) fn new(inner: R) -> Self {
        StrictZlibDecoder {
            decoder: ZlibDecoder::new(inner),
        }
    }

    pub(crate) fn get_ref(&self) -> &R {
        self.decoder.get_ref()
    }

    pub(crate) fn into_inner(self) -> R {
        self.decoder.into_inner()
    }
}

impl<R: BufRead> Read for StrictZlibDecoder<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.decoder.read(out)?;
        // flate2 reports a stream cut short as UnexpectedEof, so 0 here means the stream ended.
        if n == 0 && !out.is_empty() && !self.decoder.get_mut().fill_buf()?.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "unexpected data after the end of the zlib stream",
            ));
        }
        Ok(n)
    }
}
