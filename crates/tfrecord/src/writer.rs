//! Writing framed records, optionally compressed.

use std::io::{self, BufWriter, Write};

use flate2::write::{GzEncoder, ZlibEncoder};
use ofconvert_frame::output;

use crate::error::{Error, ErrorKind};
use crate::frame::{self, HEADER_LEN};
use crate::{Compression, Position};

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
/// is incomplete and should be discarded: the writer is fused, and every later call returns a
/// copy of that error.
pub struct Writer<W: Write> {
    sink: Sink<W>,
    records_written: u64,
    bytes_written: u64,
    failed: Option<Error>,
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
            failed: None,
        }
    }

    /// Frames `data` as one record and writes it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the underlying writer or the compressor fails.
    pub fn write_record(&mut self, data: &[u8]) -> Result<(), Error> {
        self.check_usable()?;
        let mut header = [0; HEADER_LEN];
        frame::encode_header(data.len() as u64, &mut header);
        let footer = frame::encode_footer(data);
        let parts: [&[u8]; 3] = [&header, data, &footer];
        let result = match &mut self.sink {
            Sink::Plain(out) => output::write_record(out, &parts),
            Sink::Gzip(out) => output::write_record(out, &parts),
            Sink::Zlib(out) => output::write_record(out, &parts),
        };
        result.map_err(|err| self.fail(err))?;
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
        self.check_usable()?;
        let result = match &mut self.sink {
            Sink::Plain(out) => out.flush(),
            Sink::Gzip(out) => out.flush(),
            Sink::Zlib(out) => out.flush(),
        };
        result.map_err(|err| self.fail(err))
    }

    /// The offset and index the next record will have.
    pub fn position(&self) -> Position {
        Position {
            offset: self.bytes_written,
            index: self.records_written,
        }
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        match &self.sink {
            Sink::Plain(out) => out.get_ref(),
            Sink::Gzip(out) => out.get_ref().get_ref().get_ref(),
            Sink::Zlib(out) => out.get_ref().get_ref().get_ref(),
        }
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
        self.check_usable()?;
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

    fn check_usable(&self) -> Result<(), Error> {
        match &self.failed {
            Some(failed) => Err(failed.replay()),
            None => Ok(()),
        }
    }

    /// Builds the error for the record being written and fuses the writer.
    fn fail(&mut self, err: io::Error) -> Error {
        let error = Error::new(ErrorKind::Io(err), self.bytes_written, self.records_written);
        self.failed = Some(error.replay());
        error
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

fn into_inner<W: Write>(out: BufWriter<W>) -> io::Result<W> {
    out.into_inner().map_err(io::IntoInnerError::into_error)
}
