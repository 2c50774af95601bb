use std::io::{self, Write};

use ofconvert_frame::output::RecordBuffer;

use crate::frame::{self, HEADER_LEN};
use crate::{Error, ErrorKind, Position};

/// Size of the writer's internal buffer.
const BUFFER_CAPACITY: usize = 256 * 1024;

/// Writes OFRecord frames to any [`Write`].
///
/// The writer buffers internally, so a raw `File` is fine; call [`finish`](Writer::finish) to
/// flush and get the inner writer back (dropping the writer flushes too, but ignores errors).
///
/// After an I/O error the output may end inside a record, so the writer is fused: every later
/// call returns a copy of that error. Refusing a zero-length record writes nothing and leaves
/// the writer usable.
#[derive(Debug)]
pub struct Writer<W: Write> {
    inner: RecordBuffer<W>,
    records_written: u64,
    bytes_written: u64,
    failed: Option<Error>,
}

impl<W: Write> Writer<W> {
    /// Wraps `inner`; records are written from its current position.
    pub fn new(inner: W) -> Self {
        Writer {
            inner: RecordBuffer::with_capacity(BUFFER_CAPACITY, inner),
            records_written: 0,
            bytes_written: 0,
            failed: None,
        }
    }

    /// Writes one record: the payload length as a little-endian `i64`, then `data`.
    ///
    /// An empty `data` is refused with [`ErrorKind::ZeroLength`] and nothing is written:
    /// OneFlow aborts when it reads a zero-length record.
    pub fn write_record(&mut self, data: &[u8]) -> Result<(), Error> {
        self.check_usable()?;
        if data.is_empty() {
            return Err(self.error(ErrorKind::ZeroLength));
        }
        // A slice holds at most isize::MAX bytes, so its length is always a valid
        // non-negative i64.
        let mut header = [0; HEADER_LEN];
        frame::encode_header(data.len() as u64, &mut header);
        if let Err(e) = self.inner.write_parts(&[&header, data]) {
            return Err(self.fail(e));
        }
        self.records_written += 1;
        self.bytes_written += (HEADER_LEN + data.len()) as u64;
        Ok(())
    }

    /// Writes one record whose payload `fill` appends to the vector it is given: the
    /// writer's own buffer, after room for the length, so that a converter writes the
    /// payload where it leaves from and it is not copied again. `fill` must only append.
    ///
    /// When `fill` fails, nothing is written and its error comes back inside `Ok`; a payload
    /// left empty is refused with [`ErrorKind::ZeroLength`], as
    /// [`write_record`](Writer::write_record) refuses it.
    ///
    /// ```
    /// use ofconvert_ofrecord::{Reader, Writer};
    ///
    /// let mut writer = Writer::new(Vec::new());
    /// let fill = |buf: &mut Vec<u8>| {
    ///     buf.extend_from_slice(b"payload");
    ///     Ok::<_, &str>(())
    /// };
    /// writer.write_record_with(fill).unwrap().unwrap();
    /// assert_eq!(writer.write_record_with(|_| Err("no")).unwrap(), Err("no"));
    /// let bytes = writer.finish().unwrap();
    /// let records: Vec<_> = Reader::new(bytes.as_slice()).records().collect::<Result<_, _>>().unwrap();
    /// assert_eq!(records, [b"payload".to_vec()]);
    /// ```
    pub fn write_record_with<E>(
        &mut self,
        fill: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<Result<(), E>, Error> {
        self.check_usable()?;
        let buf = self.inner.pending();
        let start = buf.len();
        buf.extend_from_slice(&[0; HEADER_LEN]);
        if let Err(err) = fill(buf) {
            buf.truncate(start);
            return Ok(Err(err));
        }
        let len = buf.len().saturating_sub(start + HEADER_LEN);
        if len == 0 {
            buf.truncate(start);
            return Err(self.error(ErrorKind::ZeroLength));
        }
        let mut header = [0; HEADER_LEN];
        frame::encode_header(len as u64, &mut header);
        buf[start..start + HEADER_LEN].copy_from_slice(&header);
        if let Err(e) = self.inner.settle() {
            return Err(self.fail(e));
        }
        self.records_written += 1;
        self.bytes_written += (HEADER_LEN + len) as u64;
        Ok(Ok(()))
    }

    /// How many records have been written.
    pub fn records_written(&self) -> u64 {
        self.records_written
    }

    /// How many bytes of framed output have been written, headers included (some may still
    /// sit in the internal buffer until [`flush`](Writer::flush) or [`finish`](Writer::finish)).
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// The offset and index the next record will have.
    pub fn position(&self) -> Position {
        Position {
            offset: self.bytes_written,
            index: self.records_written,
        }
    }

    /// Pushes buffered records through to the inner writer and flushes it.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.check_usable()?;
        if let Err(e) = self.inner.flush() {
            return Err(self.fail(e));
        }
        Ok(())
    }

    /// The wrapped writer; `None` while a thread writes to it
    /// ([`writing_on_thread`](Writer::writing_on_thread)).
    pub fn get_ref(&self) -> Option<&W> {
        self.inner.get_ref()
    }

    /// From now on, whole buffers of records go to a thread that writes them to the inner
    /// writer while the caller prepares the next (see
    /// `ofconvert_frame::output::RecordBuffer::writing_on_thread`); nothing is copied on
    /// the way. A write that fails there is reported by a later call, at the latest by
    /// [`finish`](Writer::finish).
    #[must_use]
    pub fn writing_on_thread(mut self) -> Self
    where
        W: Send + 'static,
    {
        self.inner = self.inner.writing_on_thread();
        self
    }

    /// Flushes everything and gives back the inner writer.
    pub fn finish(mut self) -> Result<W, Error> {
        self.flush()?;
        let (offset, index) = (self.bytes_written, self.records_written);
        self.inner
            .into_inner()
            .map_err(|e| Error::new(ErrorKind::Io(e), offset, index))
    }

    fn check_usable(&self) -> Result<(), Error> {
        match &self.failed {
            Some(failed) => Err(failed.replay()),
            None => Ok(()),
        }
    }

    fn error(&self, kind: ErrorKind) -> Error {
        Error::new(kind, self.bytes_written, self.records_written)
    }

    /// Builds the error for the record being written and fuses the writer.
    fn fail(&mut self, e: io::Error) -> Error {
        let error = self.error(ErrorKind::Io(e));
        self.failed = Some(error.replay());
        error
    }
}
