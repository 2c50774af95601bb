//! Writing framed records, optionally compressed.

use std::io::{self, Write};

use ofconvert_frame::output::RecordBuffer;

use crate::deflate::Deflater;
use crate::error::{Error, ErrorKind};
use crate::frame::{self, HEADER_LEN};
use crate::{Compression, Position};

/// Framed bytes gathered before they reach the compressor or the underlying writer.
const BUFFER_CAPACITY: usize = 256 * 1024;

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
    Plain(RecordBuffer<W>),
    Compressed(RecordBuffer<Deflater<W>>),
}

impl<W: Write> Writer<W> {
    /// A writer of uncompressed records.
    pub fn new(inner: W) -> Self {
        Self::with_compression(inner, Compression::None)
    }

    /// A writer that compresses the whole stream as TensorFlow's `TFRecordWriter` does,
    /// with zlib and TensorFlow's settings (level 6, memory level 9; for
    /// [`Compression::Gzip`] a single gzip member whose header has no name and no time):
    /// the same records give the same bytes as TensorFlow's, unless
    /// [`flush`](Writer::flush) ends a block early. TensorFlow reads the output with
    /// `compression_type="GZIP"` or `"ZLIB"`.
    pub fn with_compression(inner: W, compression: Compression) -> Self {
        let sink = match compression {
            Compression::None => Sink::Plain(RecordBuffer::with_capacity(BUFFER_CAPACITY, inner)),
            Compression::Gzip | Compression::Zlib => Sink::Compressed(RecordBuffer::with_capacity(
                BUFFER_CAPACITY,
                Deflater::new(inner, compression),
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
            Sink::Plain(out) => out.write_parts(&parts),
            Sink::Compressed(out) => out.write_parts(&parts),
        };
        result.map_err(|err| self.fail(err))?;
        self.records_written += 1;
        self.bytes_written += (header.len() + data.len() + footer.len()) as u64;
        Ok(())
    }

    /// Writes one record whose data `fill` appends to the vector it is given: the writer's
    /// own buffer, after room for the header, so that a converter writes the data where it
    /// leaves from and it is not copied again. `fill` must only append. When `fill` fails,
    /// nothing is written and its error comes back inside `Ok`.
    ///
    /// ```
    /// use ofconvert_tfrecord::{Reader, Writer};
    ///
    /// let mut writer = Writer::new(Vec::new());
    /// let fill = |buf: &mut Vec<u8>| {
    ///     buf.extend_from_slice(b"data");
    ///     Ok::<_, &str>(())
    /// };
    /// writer.write_record_with(fill).unwrap().unwrap();
    /// assert_eq!(writer.write_record_with(|_| Err("no")).unwrap(), Err("no"));
    /// let bytes = writer.finish().unwrap();
    /// let records: Vec<_> = Reader::new(bytes.as_slice()).records().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(records, [b"data".to_vec()]);
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the underlying writer or the compressor fails.
    pub fn write_record_with<E>(
        &mut self,
        fill: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<Result<(), E>, Error> {
        self.check_usable()?;
        let out = match &mut self.sink {
            Sink::Plain(out) => framed_in_place(out, fill),
            Sink::Compressed(out) => framed_in_place(out, fill),
        };
        match out {
            Ok(Ok(len)) => {
                self.records_written += 1;
                self.bytes_written += (HEADER_LEN + len + frame::FOOTER_LEN) as u64;
                Ok(Ok(()))
            }
            Ok(Err(err)) => Ok(Err(err)),
            Err(err) => Err(self.fail(err)),
        }
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
            Sink::Compressed(out) => out.flush(),
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

    /// The underlying writer; `None` while a thread writes to it
    /// ([`writing_on_thread`](Writer::writing_on_thread)).
    pub fn get_ref(&self) -> Option<&W> {
        match &self.sink {
            Sink::Plain(out) => out.get_ref(),
            Sink::Compressed(out) => out.get_ref().map(Deflater::get_ref),
        }
    }

    /// From now on, whole buffers of framed records go to a thread that compresses them
    /// (when the stream is compressed) and writes them while the caller prepares the next
    /// (see `ofconvert_frame::output::RecordBuffer::writing_on_thread`); nothing is copied
    /// on the way. A write that fails there is reported by a later call, at the latest by
    /// [`finish`](Writer::finish).
    #[must_use]
    pub fn writing_on_thread(mut self) -> Self
    where
        W: Send + 'static,
    {
        self.sink = match self.sink {
            Sink::Plain(out) => Sink::Plain(out.writing_on_thread()),
            Sink::Compressed(out) => Sink::Compressed(out.writing_on_thread()),
        };
        self
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
            Sink::Plain(out) => out.into_inner(),
            Sink::Compressed(out) => out.into_inner().and_then(Deflater::finish),
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

/// Frames the data `fill` appends to `out`'s pending bytes, and returns its length.
fn framed_in_place<W: Write, E>(
    out: &mut RecordBuffer<W>,
    fill: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> io::Result<Result<usize, E>> {
    let buf = out.pending();
    let start = buf.len();
    buf.extend_from_slice(&[0; HEADER_LEN]);
    if let Err(err) = fill(buf) {
        buf.truncate(start);
        return Ok(Err(err));
    }
    let data_start = (start + HEADER_LEN).min(buf.len());
    let len = buf.len() - data_start;
    let footer = frame::encode_footer(&buf[data_start..]);
    let mut header = [0; HEADER_LEN];
    frame::encode_header(len as u64, &mut header);
    buf[start..start + HEADER_LEN].copy_from_slice(&header);
    buf.extend_from_slice(&footer);
    out.settle()?;
    Ok(Ok(len))
}
