//! Reading framed records, optionally from a gzip or zlib stream.

use std::io::{self, BufRead, Read};
use std::iter::FusedIterator;

use flate2::bufread::MultiGzDecoder;

use crate::crc;
use crate::error::{Error, ErrorKind};
use crate::input::{BufInput, StrictZlibDecoder, DIRECT_READ_MIN};
use crate::{Compression, FOOTER_LEN, HEADER_LEN};

/// Bytes read ahead from the underlying reader, and from the decompressor when there is one.
const BUFFER_CAPACITY: usize = 256 * 1024;

/// How a [`Reader`] checks and decodes its input.
#[derive(Clone, Copy, Debug)]
pub struct ReaderOptions {
    /// Check the masked CRC of every record's length (default `true`). Without it, a damaged
    /// length shows up as a [`Truncated`](ErrorKind::Truncated) record or as garbage records.
    pub verify_length_crc: bool,
    /// Check the masked CRC of every record's data (default `true`).
    pub verify_data_crc: bool,
    /// The compression wrapping the stream (default [`Compression::None`]).
    pub compression: Compression,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            verify_length_crc: true,
            verify_data_crc: true,
            compression: Compression::None,
        }
    }
}

/// Where a [`Reader`] stands: the next record's byte offset in the decompressed stream, and
/// its 0-based index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Position {
    /// Byte offset of the next record in the (decompressed) framed stream.
    pub offset: u64,
    /// Index of the next record.
    pub index: u64,
}

/// Reads TFRecords from any [`Read`], buffering internally.
///
/// [`read_record`](Reader::read_record) fills a buffer the caller reuses, so reading costs no
/// allocation per record once the buffer has grown; [`records`](Reader::records) is the
/// convenient owned-`Vec` iterator. Pass a raw `File`: the reader has its own buffer.
///
/// After an error the reader is fused: further calls report a clean end. A data-CRC mismatch
/// leaves the framing intact, and [`recover`](Reader::recover) lets reading go on.
pub struct Reader<R> {
    source: Source<R>,
    framing: Framing,
}

enum Source<R> {
    Plain(BufInput<R>),
    Gzip(BufInput<MultiGzDecoder<BufInput<R>>>),
    Zlib(BufInput<StrictZlibDecoder<BufInput<R>>>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Ready,
    /// Stopped after a data-CRC mismatch, standing at the next record.
    Recoverable,
    Fused,
}

/// The reader's bookkeeping, apart from the input so that one generic routine serves every
/// kind of source.
struct Framing {
    options: ReaderOptions,
    position: Position,
    state: State,
}

impl<R: Read> Reader<R> {
    /// A reader of uncompressed records that verifies both CRCs.
    pub fn new(inner: R) -> Self {
        Self::with_options(inner, ReaderOptions::default())
    }

    /// A reader with the given checks and compression.
    pub fn with_options(inner: R, options: ReaderOptions) -> Self {
        let raw = BufInput::with_capacity(BUFFER_CAPACITY, inner);
        Self::from_raw(raw, options)
    }

    /// A reader whose compression is guessed from the first bytes of `inner` with
    /// [`Compression::sniff`]; `options.compression` is ignored. The peeked bytes stay in the
    /// reader's buffer, so nothing is lost. Returns the reader and the compression it chose.
    ///
    /// # Errors
    ///
    /// Fails when reading the first bytes fails.
    pub fn sniffed(inner: R, options: ReaderOptions) -> io::Result<(Self, Compression)> {
        let mut raw = BufInput::with_capacity(BUFFER_CAPACITY, inner);
        let compression = Compression::sniff(raw.fill_to(HEADER_LEN)?);
        let options = ReaderOptions {
            compression,
            ..options
        };
        Ok((Self::from_raw(raw, options), compression))
    }

    fn from_raw(raw: BufInput<R>, options: ReaderOptions) -> Self {
        let source = match options.compression {
            Compression::None => Source::Plain(raw),
            Compression::Gzip => Source::Gzip(BufInput::with_capacity(
                BUFFER_CAPACITY,
                MultiGzDecoder::new(raw),
            )),
            Compression::Zlib => Source::Zlib(BufInput::with_capacity(
                BUFFER_CAPACITY,
                StrictZlibDecoder::new(raw),
            )),
        };
        Reader {
            source,
            framing: Framing {
                options,
                position: Position::default(),
                state: State::Ready,
            },
        }
    }

    /// Reads the next record's data into `buf`, which is cleared first. Returns `Ok(false)` at
    /// a clean end of the stream (and once the reader has stopped after an error).
    ///
    /// # Errors
    ///
    /// Any [`ErrorKind`]; see [`Error`] for the offsets reported.
    pub fn read_record(&mut self, buf: &mut Vec<u8>) -> Result<bool, Error> {
        buf.clear();
        if self.framing.state != State::Ready {
            return Ok(false);
        }
        let result = match &mut self.source {
            Source::Plain(input) => self.framing.read_record(input, buf),
            Source::Gzip(input) => self.framing.read_record(input, buf),
            Source::Zlib(input) => self.framing.read_record(input, buf),
        };
        self.framing.note(result.map(|length| length.is_some()))
    }

    /// Skips the next record without keeping its data, and returns the data length, or `None`
    /// at a clean end of the stream (and once the reader has stopped after an error).
    ///
    /// Only the length and its CRC are checked (when enabled); the data CRC is not, which is
    /// what makes counting and indexing fast.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`], [`ErrorKind::LengthCrcMismatch`], [`ErrorKind::TruncatedHeader`] or
    /// [`ErrorKind::Truncated`].
    pub fn skip_record(&mut self) -> Result<Option<u64>, Error> {
        if self.framing.state != State::Ready {
            return Ok(None);
        }
        let result = match &mut self.source {
            Source::Plain(input) => self.framing.skip_record(input),
            Source::Gzip(input) => self.framing.skip_record(input),
            Source::Zlib(input) => self.framing.skip_record(input),
        };
        self.framing.note(result)
    }

    /// The offset and index of the next record.
    pub fn position(&self) -> Position {
        self.framing.position
    }

    /// The compression this reader decodes.
    pub fn compression(&self) -> Compression {
        self.framing.options.compression
    }

    /// Lets reading go on after a [`DataCrcMismatch`](ErrorKind::DataCrcMismatch): the
    /// framing was intact and the reader already stands at the next record. Returns `true`
    /// when the reader can read again (also when it had not stopped), `false` after any other
    /// error, which leaves the reader stopped.
    pub fn recover(&mut self) -> bool {
        match self.framing.state {
            State::Ready => true,
            State::Recoverable => {
                self.framing.state = State::Ready;
                true
            }
            State::Fused => false,
        }
    }

    /// An iterator over the remaining records as owned vectors. It ends after the first error.
    pub fn records(self) -> Records<R> {
        Records { reader: self }
    }

    /// Returns the underlying reader.
    ///
    /// Only meaningful for an uncompressed stream read to its end: bytes read ahead into the
    /// reader's buffer are dropped, and with compression the underlying reader has been read
    /// ahead by the decompressor as well.
    pub fn into_inner(self) -> R {
        match self.source {
            Source::Plain(input) => input.into_inner(),
            Source::Gzip(input) => input.into_inner().into_inner().into_inner(),
            Source::Zlib(input) => input.into_inner().into_inner().into_inner(),
        }
    }
}

impl<R> std::fmt::Debug for Reader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("options", &self.framing.options)
            .field("position", &self.framing.position)
            .finish_non_exhaustive()
    }
}

impl Framing {
    /// Records the outcome of a read: whether the reader stops, and for good or not.
    fn note<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(err) = &result {
            self.state = match err.kind() {
                ErrorKind::DataCrcMismatch { .. } => State::Recoverable,
                _ => State::Fused,
            };
        }
        result
    }

    fn error(&self, kind: ErrorKind) -> Error {
        Error::new(kind, self.position.offset, self.position.index)
    }

    /// Advances past a record of `length` data bytes.
    fn advance(&mut self, length: u64) {
        self.position.offset += HEADER_LEN as u64 + length + FOOTER_LEN as u64;
        self.position.index += 1;
    }

    /// Reads and checks the next header without consuming it. `None` at a clean end.
    fn peek_header<S: Read>(&self, input: &mut BufInput<S>) -> Result<Option<u64>, Error> {
        let available = input
            .fill_to(HEADER_LEN)
            .map_err(|err| self.error(ErrorKind::Io(err)))?;
        let Some(header) = available.get(..HEADER_LEN) else {
            return if available.is_empty() {
                Ok(None)
            } else {
                Err(self.error(ErrorKind::TruncatedHeader {
                    available: available.len(),
                }))
            };
        };
        let (length_bytes, crc_bytes) = header.split_at(8);
        let length = u64::from_le_bytes(to_array(length_bytes));
        if self.options.verify_length_crc {
            let expected = u32::from_le_bytes(to_array(crc_bytes));
            let actual = crc::masked_crc32c(length_bytes);
            if expected != actual {
                return Err(self.error(ErrorKind::LengthCrcMismatch { expected, actual }));
            }
        }
        Ok(Some(length))
    }

    fn read_record<S: Read>(
        &mut self,
        input: &mut BufInput<S>,
        buf: &mut Vec<u8>,
    ) -> Result<Option<u64>, Error> {
        let Some(length) = self.peek_header(input)? else {
            return Ok(None);
        };
        let framed = length.checked_add((HEADER_LEN + FOOTER_LEN) as u64);
        let stored_crc = match framed.and_then(|n| usize::try_from(n).ok()) {
            // A small record, or one already buffered, is read in one piece: one copy, no
            // extra calls. Larger ones stream into `buf` past the buffer.
            Some(framed) if framed < DIRECT_READ_MIN || framed <= input.buffered() => {
                let available = input
                    .fill_to(framed)
                    .map_err(|err| self.error(ErrorKind::Io(err)))?;
                let Some(record) = available.get(..framed) else {
                    let available = available.len().saturating_sub(HEADER_LEN) as u64;
                    return Err(self.error(ErrorKind::Truncated { length, available }));
                };
                let (data, footer) =
                    record[HEADER_LEN..].split_at(framed - HEADER_LEN - FOOTER_LEN);
                buf.extend_from_slice(data);
                let stored_crc = u32::from_le_bytes(to_array(footer));
                input.consume(framed);
                stored_crc
            }
            _ => {
                input.consume(HEADER_LEN);
                let read = input
                    .append_to(buf, length)
                    .map_err(|err| self.error(ErrorKind::Io(err)))?;
                let footer = input
                    .fill_to(FOOTER_LEN)
                    .map_err(|err| self.error(ErrorKind::Io(err)))?;
                let Some(footer) = footer.get(..FOOTER_LEN).filter(|_| read == length) else {
                    let available = read + footer.len().min(FOOTER_LEN) as u64;
                    return Err(self.error(ErrorKind::Truncated { length, available }));
                };
                let stored_crc = u32::from_le_bytes(to_array(footer));
                input.consume(FOOTER_LEN);
                stored_crc
            }
        };
        let data_offset = self.position.offset + HEADER_LEN as u64;
        let index = self.position.index;
        self.advance(length);
        if self.options.verify_data_crc {
            let actual = crc::masked_crc32c(buf);
            if stored_crc != actual {
                let kind = ErrorKind::DataCrcMismatch {
                    expected: stored_crc,
                    actual,
                };
                return Err(Error::new(kind, data_offset, index));
            }
        }
        Ok(Some(length))
    }

    fn skip_record<S: Read>(&mut self, input: &mut BufInput<S>) -> Result<Option<u64>, Error> {
        let Some(length) = self.peek_header(input)? else {
            return Ok(None);
        };
        input.consume(HEADER_LEN);
        let skipped = input
            .skip(length)
            .map_err(|err| self.error(ErrorKind::Io(err)))?;
        let skipped_footer = if skipped == length {
            input
                .skip(FOOTER_LEN as u64)
                .map_err(|err| self.error(ErrorKind::Io(err)))?
        } else {
            0
        };
        if skipped_footer < FOOTER_LEN as u64 {
            let available = skipped + skipped_footer;
            return Err(self.error(ErrorKind::Truncated { length, available }));
        }
        self.advance(length);
        Ok(Some(length))
    }
}

/// Copies a slice of known length into an array.
fn to_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut array = [0; N];
    array.copy_from_slice(bytes);
    array
}

/// An iterator over the records of a [`Reader`], each as an owned vector.
///
/// It yields the first error and then ends, even after a recoverable data-CRC mismatch; to go
/// on past one, use [`Reader::read_record`] and [`Reader::recover`].
#[derive(Debug)]
pub struct Records<R> {
    reader: Reader<R>,
}

impl<R> Records<R> {
    /// The reader underneath, for its [`position`](Reader::position).
    pub fn reader(&self) -> &Reader<R> {
        &self.reader
    }

    /// Returns the reader underneath.
    pub fn into_reader(self) -> Reader<R> {
        self.reader
    }
}

impl<R: Read> Iterator for Records<R> {
    type Item = Result<Vec<u8>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut buf = Vec::new();
        match self.reader.read_record(&mut buf) {
            Ok(true) => Some(Ok(buf)),
            Ok(false) => None,
            Err(err) => Some(Err(err)),
        }
    }
}

impl<R: Read> FusedIterator for Records<R> {}
