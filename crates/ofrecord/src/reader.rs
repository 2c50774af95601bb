use std::io::{self, BufRead, BufReader, Read};
use std::iter::FusedIterator;

use crate::{Error, ErrorKind, Position, HEADER_LEN};

/// Size of the reader's internal buffer, and the most a read reserves ahead of the data that
/// has actually arrived.
const BUFFER_CAPACITY: usize = 256 * 1024;

/// Reads OFRecord frames from any [`Read`].
///
/// The reader buffers internally, so a raw `File` is fine. [`read_record`](Reader::read_record)
/// fills a buffer the caller reuses; [`records`](Reader::records) is the convenient iterator.
///
/// After an error the reader is fused: every later call returns a copy of the same error, with
/// the same offset and index, and reads nothing more. The one exception is
/// [`ErrorKind::ZeroLength`]: that frame is well formed, so the reader steps past it and the
/// next call reads the record after it.
#[derive(Debug)]
pub struct Reader<R> {
    inner: BufReader<R>,
    position: Position,
    failed: Option<Error>,
}

impl<R: Read> Reader<R> {
    /// Wraps `inner`, which should be at the start of a record (usually the start of a file).
    pub fn new(inner: R) -> Self {
        Reader {
            inner: BufReader::with_capacity(BUFFER_CAPACITY, inner),
            position: Position::default(),
            failed: None,
        }
    }

    /// Reads the next payload into `buf`, which is cleared first. Returns `Ok(false)` at a
    /// clean end of stream (no bytes left where a record would start).
    ///
    /// `buf` grows only as payload bytes actually arrive, so a corrupt length cannot make it
    /// allocate more than the stream holds. After an error `buf` holds whatever part of the
    /// payload arrived.
    pub fn read_record(&mut self, buf: &mut Vec<u8>) -> Result<bool, Error> {
        buf.clear();
        let Some(length) = self.read_length()? else {
            return Ok(false);
        };
        // Reserving at most one chunk keeps small records allocation-free once `buf` has grown,
        // while an absurd length costs no more than one chunk.
        let chunk = usize::try_from(length)
            .unwrap_or(usize::MAX)
            .min(BUFFER_CAPACITY);
        buf.reserve(chunk);
        // What is buffered is copied; the rest is read from the source straight into `buf`,
        // which spares large payloads a second copy through the buffer.
        let buffered = self.inner.buffer();
        let from_buffer = buffered.len().min(chunk);
        buf.extend_from_slice(&buffered[..from_buffer]);
        self.inner.consume(from_buffer);
        let rest = length - from_buffer as u64;
        let available = match self.inner.get_mut().take(rest).read_to_end(buf) {
            Ok(n) => from_buffer as u64 + n as u64,
            Err(e) => return Err(self.fail(ErrorKind::Io(e))),
        };
        self.finish_payload(length, available)?;
        Ok(true)
    }

    /// Skips the next payload without keeping it and returns its length, or `None` at a clean
    /// end of stream. Errors are the same as [`read_record`](Reader::read_record)'s.
    pub fn skip_record(&mut self) -> Result<Option<u64>, Error> {
        let Some(length) = self.read_length()? else {
            return Ok(None);
        };
        let mut remaining = length;
        while remaining > 0 {
            let buffered = match self.inner.fill_buf() {
                Ok(bytes) => bytes.len(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.fail(ErrorKind::Io(e))),
            };
            if buffered == 0 {
                break;
            }
            let step = remaining.min(buffered as u64);
            // `step` is at most `buffered`, a usize.
            self.inner.consume(step as usize);
            remaining -= step;
        }
        self.finish_payload(length, length - remaining)?;
        Ok(Some(length))
    }

    /// Where the next record starts. After an error (other than a zero-length record), where
    /// the failed record starts.
    pub fn position(&self) -> Position {
        self.position
    }

    /// Turns the reader into an iterator over owned payloads, which allocates one `Vec` per
    /// record. The iterator ends after the first error it yields.
    pub fn records(self) -> Records<R> {
        Records {
            reader: self,
            done: false,
        }
    }

    /// The wrapped reader.
    pub fn get_ref(&self) -> &R {
        self.inner.get_ref()
    }

    /// Gives back the wrapped reader. Bytes already pulled into the internal buffer are lost,
    /// so its position is generally past [`position`](Reader::position).
    pub fn into_inner(self) -> R {
        self.inner.into_inner()
    }

    /// Reads the length field. `None` at a clean end of stream.
    fn read_length(&mut self) -> Result<Option<u64>, Error> {
        if let Some(failed) = &self.failed {
            return Err(failed.replay());
        }
        let mut header = [0u8; HEADER_LEN];
        let mut filled = 0;
        while filled < HEADER_LEN {
            match self.inner.read(&mut header[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(ErrorKind::Io(e))),
            }
        }
        if filled == 0 {
            return Ok(None);
        }
        if filled < HEADER_LEN {
            return Err(self.fail(ErrorKind::TruncatedLength { available: filled }));
        }
        // OneFlow reads the length as a signed 64-bit integer.
        let signed = i64::from_le_bytes(header);
        match u64::try_from(signed) {
            Err(_) => Err(self.fail(ErrorKind::NegativeLength { length: signed })),
            Ok(0) => {
                let error = Error::new(
                    ErrorKind::ZeroLength,
                    self.position.offset,
                    self.position.index,
                );
                self.advance(0);
                Err(error)
            }
            Ok(length) => Ok(Some(length)),
        }
    }

    /// Checks that the whole payload arrived and moves past the record.
    fn finish_payload(&mut self, length: u64, available: u64) -> Result<(), Error> {
        if available < length {
            return Err(self.fail(ErrorKind::Truncated { length, available }));
        }
        self.advance(length);
        Ok(())
    }

    fn advance(&mut self, length: u64) {
        self.position.offset = self
            .position
            .offset
            .saturating_add(HEADER_LEN as u64)
            .saturating_add(length);
        self.position.index = self.position.index.saturating_add(1);
    }

    /// Builds the error for the record at the current position and fuses the reader.
    fn fail(&mut self, kind: ErrorKind) -> Error {
        let error = Error::new(kind, self.position.offset, self.position.index);
        self.failed = Some(error.replay());
        error
    }
}

/// Iterator over owned payloads, made by [`Reader::records`].
///
/// Yields `Err` at most once, then `None` forever, zero-length records included.
#[derive(Debug)]
pub struct Records<R> {
    reader: Reader<R>,
    done: bool,
}

impl<R: Read> Records<R> {
    /// Where the next record starts (see [`Reader::position`]).
    pub fn position(&self) -> Position {
        self.reader.position()
    }

    /// Gives back the reader, for instance to step past a zero-length record and go on.
    pub fn into_reader(self) -> Reader<R> {
        self.reader
    }
}

impl<R: Read> Iterator for Records<R> {
    type Item = Result<Vec<u8>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut buf = Vec::new();
        match self.reader.read_record(&mut buf) {
            Ok(true) => Some(Ok(buf)),
            Ok(false) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl<R: Read> FusedIterator for Records<R> {}
