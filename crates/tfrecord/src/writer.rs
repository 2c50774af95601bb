//! Writing framed records, optionally compressed.

use std::io::{self, BufWriter, Write};

use flate2::write::{GzEncoder, ZlibEncoder};

use crate::crc;
use crate::error::{Error, ErrorKind};
use crate::Compression;

/// Framed bytes gathered before they reach the compressor or the underlying writer.
const BUFFER_CAPACITY: usize = 256 * 1024;

/// Compressed bytes gathered before they reach the underlying writer.
const COMPRESSED_BUFFER_CAPACITY: usize = 64 * 1024;

/// TensorFlow's writer compresses at zlib level 6.
const LEVEL: flate2::Compression = flate2::Compression::new(6);

/// Writes TFRecords to any [`Write`], buffering internally.
///
/// Call [`finish`](Writer::finish) at the end: it flushes the buffers, completes the compressed
/// stream and reports errors that dropping the writer would swallow. After an error the output
/// is incomplete and should be discarded.
pub struct Writer<W: Write> {
    sink: Sink<W>,
    records_written: u64,
    bytes_written: u64,
}

enum Sink<W: Write> {
    Plain(BufWriter<W>),
    Gzip(BufWriter<GzEncoder<BufWriter<W>>>),
    Zlib(BufWriter<ZlibEncoder<BufWriter<W>>>),
}

impl<W: Write> Writer<W> {
    /// A writer of uncompressed records.
    pub fn new(inner: W) -> Self {
        Self::with_compression(inner, Compression::None)
    }

    /// A writer that compresses the whole stream as TensorFlow does: zlib level 6, and for
    /// [`Compression::Gzip`] a single gzip member. TensorFlow reads the output with
    /// `compression_type="GZIP"` or `"ZLIB"`.
    pub fn with_compression(inner: W, compression: Compression) -> Self {
        let sink = match compression {
            Compression::None => Sink::Plain(BufWriter::with_capacity(BUFFER_CAPACITY, inner)),
            Compression::Gzip => Sink::Gzip(BufWriter::with_capacity(
                BUFFER_CAPACITY,
                GzEncoder::new(compressed_buffer(inner), LEVEL),
            )),
            Compression::Zlib => Sink::Zlib(BufWriter::with_capacity(
                BUFFER_CAPACITY,
                ZlibEncoder::new(compressed_buffer(inner), LEVEL),
            )),
        };
        Writer {
            sink,
            records_written: 0,
            bytes_written: 0,
        }
    }

    /// Frames `data` as one record and writes it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the underlying writer or the compressor fails.
    pub fn write_record(&mut self, data: &[u8]) -> Result<(), Error> {
        let length = (data.len() as u64).to_le_bytes();
        let mut header = [0; 12];
        header[..8].copy_from_slice(&length);
        header[8..].copy_from_slice(&crc::masked_crc32c(&length).to_le_bytes());
        let footer = crc::masked_crc32c(data).to_le_bytes();
        let result = match &mut self.sink {
            Sink::Plain(out) => write_framed(out, &header, data, &footer),
            Sink::Gzip(out) => write_framed(out, &header, data, &footer),
            Sink::Zlib(out) => write_framed(out, &header, data, &footer),
        };
        result.map_err(|err| self.error(err))?;
        self.records_written += 1;
        self.bytes_written += (header.len() + data.len() + footer.len()) as u64;
        Ok(())
    }

    /// Pushes everything written so far to the underlying writer. With compression this ends
    /// the current deflate block (a sync flush), which costs a little compression; readers
    /// then see every record written so far.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the underlying writer or the compressor fails.
    pub fn flush(&mut self) -> Result<(), Error> {
        let result = match &mut self.sink {
            Sink::Plain(out) => out.flush(),
            Sink::Gzip(out) => out.flush(),
            Sink::Zlib(out) => out.flush(),
        };
        result.map_err(|err| self.error(err))
    }

    /// How many records have been written.
    pub fn records_written(&self) -> u64 {
        self.records_written
    }

    /// How many framed bytes (headers, data and CRCs) have been written, before compression.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Flushes the buffers, completes the compressed stream and returns the underlying writer.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the underlying writer or the compressor fails.
    pub fn finish(self) -> Result<W, Error> {
        let offset = self.bytes_written;
        let index = self.records_written;
        let result = match self.sink {
            Sink::Plain(out) => into_inner(out),
            Sink::Gzip(out) => into_inner(out)
                .and_then(GzEncoder::finish)
                .and_then(into_inner),
            Sink::Zlib(out) => into_inner(out)
                .and_then(ZlibEncoder::finish)
                .and_then(into_inner),
        };
        result.map_err(|err| Error::new(ErrorKind::Io(err), offset, index))
    }

    fn error(&self, err: io::Error) -> Error {
        Error::new(ErrorKind::Io(err), self.bytes_written, self.records_written)
    }
}

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("records_written", &self.records_written)
            .field("bytes_written", &self.bytes_written)
            .finish_non_exhaustive()
    }
}

/// The compressor writes whenever its small output buffer fills; this keeps those writes from
/// reaching a raw file one by one.
fn compressed_buffer<W: Write>(inner: W) -> BufWriter<W> {
    BufWriter::with_capacity(COMPRESSED_BUFFER_CAPACITY, inner)
}

fn write_framed<W: Write>(
    out: &mut W,
    header: &[u8],
    data: &[u8],
    footer: &[u8],
) -> io::Result<()> {
    out.write_all(header)?;
    out.write_all(data)?;
    out.write_all(footer)
}

fn into_inner<W: Write>(out: BufWriter<W>) -> io::Result<W> {
    out.into_inner().map_err(io::IntoInnerError::into_error)
}
