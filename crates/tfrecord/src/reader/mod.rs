//! Reading framed records, optionally from a gzip or zlib stream.

use std::io::{self, Read};
use std::iter::FusedIterator;

use flate2::bufread::MultiGzDecoder;
use ofconvert_frame::input::BufInput;
use ofconvert_frame::ReaderState;

use crate::compression::StrictZlibDecoder;
use crate::error::Error;
#[cfg(doc)]
use crate::error::ErrorKind;
use crate::frame::{FOOTER_LEN, HEADER_LEN};
use crate::{Compression, Position, Resync};

mod framing;

use framing::Framing;

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

/// Reads TFRecords from any [`Read`], buffering internally.
///
/// [`read_record`](Reader::read_record) fills a buffer the caller reuses, so reading costs no
/// allocation per record once the buffer has grown; [`records`](Reader::records) is the
/// convenient owned-`Vec` iterator. Pass a raw `File`: the reader has its own buffer.
///
/// After an error the reader is fused: further calls report a clean end. A data-CRC mismatch
/// leaves the framing intact, and [`recover`](Reader::recover) lets reading go on; after
/// damage to the framing (a length that fails its CRC, a record cut short),
/// [`resync`](Reader::resync) looks for the next good record.
pub struct Reader<R> {
    source: Source<R>,
    framing: Framing,
}

enum Source<R> {
    Plain(BufInput<R>),
    Gzip(BufInput<MultiGzDecoder<BufInput<R>>>),
    Zlib(BufInput<StrictZlibDecoder<BufInput<R>>>),
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
                state: ReaderState::Ready,
                consumed: 0,
                stream_len: None,
                in_buffer: None,
            },
        }
    }

    /// Tells the reader that the framed stream holds `len` bytes from where it starts (a
    /// file's size, for an uncompressed file). A record whose length runs past them is then
    /// [`Truncated`](ErrorKind::Truncated) before any of it is read, which matters when
    /// checksums are off: a damaged length then costs neither the memory of the rest of the
    /// stream nor the scan [`resync`](Reader::resync) makes from the record's start.
    #[must_use]
    pub fn with_stream_len(mut self, len: u64) -> Self {
        self.framing.stream_len = Some(len);
        self
    }

    /// Reads the next record's data into `buf`, which is cleared first. Returns `Ok(false)` at
    /// a clean end of the stream (and once the reader has stopped after an error).
    ///
    /// # Errors
    ///
    /// Any [`ErrorKind`]; see [`Error`] for the offsets reported.
    pub fn read_record(&mut self, buf: &mut Vec<u8>) -> Result<bool, Error> {
        buf.clear();
        if !self.framing.state.is_ready() {
            return Ok(false);
        }
        let result = match &mut self.source {
            Source::Plain(input) => self.framing.read_record_at(input, buf, false),
            Source::Gzip(input) => self.framing.read_record_at(input, buf, false),
            Source::Zlib(input) => self.framing.read_record_at(input, buf, false),
        };
        self.framing.note(result.map(|length| length.is_some()))
    }

    /// Reads the next record as [`read_record`](Reader::read_record) does, but leaves a
    /// record that lies whole in the reader's buffer where it is, with `buf` left empty,
    /// rather than copying it out; [`last_record`](Reader::last_record) gives its data,
    /// wherever it is. A small record then costs no copy.
    ///
    /// # Errors
    ///
    /// As [`read_record`](Reader::read_record).
    pub fn read_record_in_place(&mut self, buf: &mut Vec<u8>) -> Result<bool, Error> {
        buf.clear();
        if !self.framing.state.is_ready() {
            return Ok(false);
        }
        let found = match &mut self.source {
            Source::Plain(input) => self.framing.take_buffered(input),
            Source::Gzip(input) => self.framing.take_buffered(input),
            Source::Zlib(input) => self.framing.take_buffered(input),
        };
        if found {
            return Ok(true);
        }
        let result = match &mut self.source {
            Source::Plain(input) => self.framing.read_record_at(input, buf, true),
            Source::Gzip(input) => self.framing.read_record_at(input, buf, true),
            Source::Zlib(input) => self.framing.read_record_at(input, buf, true),
        };
        self.framing.note(result.map(|length| length.is_some()))
    }

    /// The data of the record the last call read: in the reader's buffer after a
    /// [`read_record_in_place`](Reader::read_record_in_place) that left it there, else
    /// `buf` (the buffer that call was given).
    pub fn last_record<'a>(&'a self, buf: &'a [u8]) -> &'a [u8] {
        let Some(len) = self.framing.in_buffer else {
            return buf;
        };
        let data = match &self.source {
            Source::Plain(input) => input.behind(FOOTER_LEN, len),
            Source::Gzip(input) => input.behind(FOOTER_LEN, len),
            Source::Zlib(input) => input.behind(FOOTER_LEN, len),
        };
        data.unwrap_or_default()
    }

    /// Hands each record that lies whole and sound in the reader's buffer to `each`, with
    /// its position, in order and where it lies (no copy), until `each` returns false, `max`
    /// records are handed, or the next record is not whole in the buffer or not sound.
    /// Returns how many were handed; each one is read, as by
    /// [`read_record_in_place`](Reader::read_record_in_place), and
    /// [`last_record`](Reader::last_record) gives the last one's data.
    ///
    /// It reads nothing from the stream and reports nothing: the next
    /// [`read_record_in_place`](Reader::read_record_in_place) refills the buffer, or says
    /// what is wrong with the record that stopped the run. This is the many-records-a-step
    /// form of reading in place, for loops over small records: the framing's checks run for
    /// each record, but the reader's state is settled once a run.
    pub fn take_run(&mut self, max: u64, mut each: impl FnMut(Position, &[u8]) -> bool) -> u64 {
        if !self.framing.state.is_ready() {
            return 0;
        }
        match &mut self.source {
            Source::Plain(input) => self.framing.take_run(input, max, &mut each),
            Source::Gzip(input) => self.framing.take_run(input, max, &mut each),
            Source::Zlib(input) => self.framing.take_run(input, max, &mut each),
        }
    }

    /// Skips the next record without keeping its data, and returns the data length, or `None`
    /// at a clean end of the stream (and once the reader has stopped after an error).
    ///
    /// Only the length and its CRC are checked (when enabled); the data CRC is not, which is
    /// what makes counting and indexing fast.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](ErrorKind::Io), [`ErrorKind::LengthCrcMismatch`](ErrorKind::LengthCrcMismatch), [`ErrorKind::TruncatedHeader`](ErrorKind::TruncatedHeader) or
    /// [`ErrorKind::Truncated`](ErrorKind::Truncated).
    pub fn skip_record(&mut self) -> Result<Option<u64>, Error> {
        if !self.framing.state.is_ready() {
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
        self.framing.state.recover()
    }

    /// After damage to the framing ([`LengthCrcMismatch`](ErrorKind::LengthCrcMismatch),
    /// [`TruncatedHeader`](ErrorKind::TruncatedHeader) or [`Truncated`](ErrorKind::Truncated)),
    /// scans forward for the next record and lets reading go on there. Returns what was
    /// passed over, or `None` when the reader had not stopped on such damage (it is then left
    /// as it was).
    ///
    /// A place to resume at is an offset whose 8 bytes and their masked CRC agree (a chance
    /// match is a 1-in-2^32 event per offset), confirmed by the data CRC of the record there
    /// when the record fits in the reader's 256 KiB window. A larger record is accepted on its
    /// length CRC alone and its data CRC is checked as it is read; a length of 2^40 or more is
    /// taken for a chance match. The damaged record itself is recovered into `buf` when the
    /// only length that reaches the next good header (or the end of the stream) gives data
    /// that matches the CRC stored before that header. The scan never allocates, and the
    /// damaged stretch counts as one record.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](ErrorKind::Io) when reading fails during the scan; the reader is then stopped.
    pub fn resync(&mut self, buf: &mut Vec<u8>) -> Result<Option<Resync>, Error> {
        buf.clear();
        let result = match &mut self.source {
            Source::Plain(input) => self.framing.resync(input, buf),
            Source::Gzip(input) => self.framing.resync(input, buf),
            Source::Zlib(input) => self.framing.resync(input, buf),
        };
        self.framing.note(result)
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        match &self.source {
            Source::Plain(input) => input.get_ref(),
            Source::Gzip(input) => input.get_ref().get_ref().get_ref(),
            Source::Zlib(input) => input.get_ref().get_ref().get_ref(),
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
