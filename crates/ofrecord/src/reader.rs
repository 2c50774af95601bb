use std::io::{BufRead, Read};
use std::iter::FusedIterator;

use ofconvert_frame::input::{BufInput, Candidate, Verdict};
use ofconvert_frame::{ReaderState, Stop};

use crate::frame::{self, HEADER_LEN};
use crate::{Error, ErrorKind, Position, Resync};

/// Size of the reader's internal buffer, and the window a [`resync`](Reader::resync) scans.
const BUFFER_CAPACITY: usize = 256 * 1024;

/// Reads OFRecord frames from any [`Read`].
///
/// The reader buffers internally, so a raw `File` is fine. [`read_record`](Reader::read_record)
/// fills a buffer the caller reuses; [`records`](Reader::records) is the convenient iterator.
///
/// After an error the reader is fused: further calls report a clean end. A zero-length record
/// ([`ErrorKind::ZeroLength`]) leaves the framing intact, and [`recover`](Reader::recover) lets
/// reading go on with the record after it; after damage to the framing (a negative length, a
/// record cut short), [`resync`](Reader::resync) looks for the next plausible record.
pub struct Reader<R> {
    input: BufInput<R>,
    position: Position,
    state: ReaderState,
    /// Bytes of the current record consumed so far, for a resync after it fails.
    consumed: u64,
    /// How many bytes the stream holds, when known.
    stream_len: Option<u64>,
    /// The size of the record just read, for a [`reject`](Reader::reject).
    last_framed: Option<usize>,
    /// The length of the last payload read, when it was left in the buffer, just behind the
    /// read position.
    in_buffer: Option<usize>,
}

impl<R: Read> Reader<R> {
    /// Wraps `inner`, which should be at the start of a record (usually the start of a file).
    pub fn new(inner: R) -> Self {
        Reader {
            input: BufInput::with_capacity(BUFFER_CAPACITY, inner),
            position: Position::default(),
            state: ReaderState::Ready,
            consumed: 0,
            stream_len: None,
            last_framed: None,
            in_buffer: None,
        }
    }

    /// Tells the reader that the stream holds `len` bytes from where it starts (a file's
    /// size). A record whose length runs past them is then [`Truncated`](ErrorKind::Truncated)
    /// before any of it is read: a damaged length costs neither the memory of the rest of the
    /// stream nor the scan [`resync`](Reader::resync) makes from the record's start. Without
    /// it, only a stream that ends within the reader's 256 KiB window is seen to end early
    /// before the payload is read.
    #[must_use]
    pub fn with_stream_len(mut self, len: u64) -> Self {
        self.stream_len = Some(len);
        self
    }

    /// Reads the next payload into `buf`, which is cleared first. Returns `Ok(false)` at a
    /// clean end of stream (no bytes left where a record would start), and once the reader
    /// has stopped after an error.
    ///
    /// `buf` grows only as payload bytes actually arrive, so a corrupt length cannot make it
    /// allocate more than the stream holds. After an error `buf` holds whatever part of the
    /// payload arrived.
    pub fn read_record(&mut self, buf: &mut Vec<u8>) -> Result<bool, Error> {
        self.read_record_at(buf, false)
    }

    /// Reads the next payload as [`read_record`](Reader::read_record) does, but leaves a
    /// record that lies whole in the reader's buffer where it is, with `buf` left empty,
    /// rather than copying it out; [`last_record`](Reader::last_record) gives the payload,
    /// wherever it is. A small record then costs no copy.
    ///
    /// # Errors
    ///
    /// As [`read_record`](Reader::read_record).
    pub fn read_record_in_place(&mut self, buf: &mut Vec<u8>) -> Result<bool, Error> {
        if self.take_buffered() {
            buf.clear();
            return Ok(true);
        }
        self.read_record_at(buf, true)
    }

    /// The payload of the record the last call read: in the reader's buffer after a
    /// [`read_record_in_place`](Reader::read_record_in_place) that left it there, else
    /// `buf` (the buffer that call was given).
    pub fn last_record<'a>(&'a self, buf: &'a [u8]) -> &'a [u8] {
        match self.in_buffer {
            Some(len) => self.input.behind(0, len).unwrap_or_default(),
            None => buf,
        }
    }

    /// Takes the next record in place when it lies whole in the buffer, sound (see
    /// [`sound_record`]). False, with nothing consumed, for anything else, which the general
    /// path then reads or reports: this one is only the quick way through the common case.
    #[inline]
    fn take_buffered(&mut self) -> bool {
        if !self.state.is_ready() {
            return false;
        }
        let Some(len) = sound_record(self.input.buffer(), self.position.offset, self.stream_len)
        else {
            return false;
        };
        self.input.consume(HEADER_LEN + len);
        self.in_buffer = Some(len);
        self.advance(len as u64);
        self.last_framed = Some(HEADER_LEN + len);
        true
    }

    /// Hands each record that lies whole and sound in the reader's buffer to `each`, with
    /// its position, in order and where it lies (no copy), until `each` returns false, `max`
    /// records are handed, or the next record is not whole in the buffer or not sound (a
    /// positive length that ends within the stream). Returns how many were handed; each one
    /// is read, as by [`read_record_in_place`](Reader::read_record_in_place), and
    /// [`last_record`](Reader::last_record) gives the last one's payload.
    ///
    /// It reads nothing from the stream and reports nothing: the next
    /// [`read_record_in_place`](Reader::read_record_in_place) refills the buffer, or says
    /// what is wrong with the record that stopped the run. The many-records-a-step form of
    /// reading in place, for loops over small records.
    pub fn take_run(&mut self, max: u64, mut each: impl FnMut(Position, &[u8]) -> bool) -> u64 {
        if !self.state.is_ready() {
            return 0;
        }
        let bytes = self.input.buffer();
        let (mut used, mut taken, mut last) = (0, 0, None);
        let mut position = self.position;
        while taken < max {
            let Some(len) = sound_record(&bytes[used..], position.offset, self.stream_len) else {
                break;
            };
            let payload = &bytes[used + HEADER_LEN..used + HEADER_LEN + len];
            let at = position;
            used += HEADER_LEN + len;
            position.offset += (HEADER_LEN + len) as u64;
            position.index += 1;
            taken += 1;
            last = Some(len);
            if !each(at, payload) {
                break;
            }
        }
        self.input.consume(used);
        self.position = position;
        if let Some(len) = last {
            self.in_buffer = Some(len);
            self.last_framed = Some(HEADER_LEN + len);
        }
        taken
    }

    fn read_record_at(&mut self, buf: &mut Vec<u8>, in_place: bool) -> Result<bool, Error> {
        buf.clear();
        self.in_buffer = None;
        let result = self.read_length().and_then(|length| match length {
            None => Ok(None),
            Some(length) => {
                let buffered = usize::try_from(length)
                    .ok()
                    .filter(|&length| in_place && length <= self.input.buffered());
                let available = match buffered {
                    Some(len) => {
                        self.input.consume(len);
                        self.in_buffer = Some(len);
                        length
                    }
                    None => self
                        .input
                        .append_to(buf, length)
                        .map_err(|e| self.error(ErrorKind::Io(e)))?,
                };
                self.finish_payload(length, available).map(Some)
            }
        });
        if let Err(err) = &result {
            self.in_buffer = None;
            if matches!(err.kind(), ErrorKind::Truncated { .. }) && self.consumed == 0 {
                // Cut short within the window: the payload that arrived is still buffered.
                if let Ok(buffered) = self.input.fill_to(0) {
                    buf.extend_from_slice(&buffered[HEADER_LEN.min(buffered.len())..]);
                }
            }
        }
        self.note(result).map(|length| length.is_some())
    }

    /// Skips the next payload without keeping it and returns its length, or `None` at a clean
    /// end of stream (and once the reader has stopped). Errors are the same as
    /// [`read_record`](Reader::read_record)'s.
    pub fn skip_record(&mut self) -> Result<Option<u64>, Error> {
        self.in_buffer = None;
        let result = self.read_length().and_then(|length| match length {
            None => Ok(None),
            Some(length) => {
                let available = self
                    .input
                    .skip(length)
                    .map_err(|e| self.error(ErrorKind::Io(e)))?;
                self.finish_payload(length, available).map(Some)
            }
        });
        self.note(result)
    }

    /// Where the next record starts. After an error (other than a zero-length record), where
    /// the failed record starts.
    pub fn position(&self) -> Position {
        self.position
    }

    /// Lets reading go on after a [`ZeroLength`](ErrorKind::ZeroLength) record: its frame was
    /// well formed and the reader already stands at the next record. Returns `true` when the
    /// reader can read again (also when it had not stopped), `false` after any other error,
    /// which leaves the reader stopped.
    pub fn recover(&mut self) -> bool {
        self.state.recover()
    }

    /// After damage to the framing ([`NegativeLength`](ErrorKind::NegativeLength),
    /// [`TruncatedLength`](ErrorKind::TruncatedLength) or [`Truncated`](ErrorKind::Truncated)),
    /// scans forward for the next plausible record and lets reading go on there. Returns what
    /// was passed over, or `None` when the reader had not stopped on such damage (it is then
    /// left as it was).
    ///
    /// OFRecord has no checksum, so this is a heuristic: a place to resume at is an offset
    /// whose length is positive, whose payload fits in the reader's 256 KiB window and
    /// passes `is_payload` (which a caller that knows the payloads supplies: this crate knows
    /// nothing of protobuf), and after which the stream either ends or goes on with another
    /// positive length. A record larger than the window cannot be confirmed and is passed
    /// over. The damaged record itself is recovered into `buf` when the bytes up to the next
    /// record found, read as its payload, pass `is_payload` (not at the end of the stream: a
    /// record cut short there is usually a truncated file, and a prefix of an OFRecord often
    /// parses). The scan never allocates, and the damaged stretch counts as one record.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when reading fails during the scan; the reader is then stopped.
    pub fn resync(
        &mut self,
        buf: &mut Vec<u8>,
        mut is_payload: impl FnMut(&[u8]) -> bool,
    ) -> Result<Option<Resync>, Error> {
        buf.clear();
        self.in_buffer = None;
        if self.state.damaged().is_none() {
            return Ok(None);
        }
        let mut recovered = false;
        let passed = self
            .input
            .resync(|candidate| resume_at(candidate, buf, &mut recovered, &mut is_payload));
        let passed = self.note(passed.map_err(|e| self.error(ErrorKind::Io(e))))?;
        Ok(self.state.resynced(&mut self.position, passed, recovered))
    }

    /// Treats the record just read as damage to the framing: its payload failed a check of
    /// the caller's, and without a checksum a wrong length looks just like that, running
    /// into the records after it. The reader steps back to the record's start and stops as
    /// after damage, so that [`resync`](Reader::resync) scans from there and can recover the
    /// record with its true length. Returns `false`, and nothing changes, when no record was
    /// just read, or when its bytes are no longer buffered (a record larger than the
    /// reader's 256 KiB window).
    pub fn reject(&mut self) -> bool {
        self.in_buffer = None;
        let Some(framed) = self.last_framed.take() else {
            return false;
        };
        if !self.state.is_ready() || !self.input.unconsume(framed) {
            return false;
        }
        self.position.offset -= framed as u64;
        self.position.index -= 1;
        self.state.stop(Stop::Damaged, 0);
        true
    }

    /// Turns the reader into an iterator over owned payloads, which allocates one `Vec` per
    /// record. The iterator ends after the first error it yields.
    pub fn records(self) -> Records<R> {
        Records { reader: self }
    }

    /// The wrapped reader.
    pub fn get_ref(&self) -> &R {
        self.input.get_ref()
    }

    /// Gives back the wrapped reader. Bytes already pulled into the internal buffer are lost,
    /// so its position is generally past [`position`](Reader::position).
    pub fn into_inner(self) -> R {
        self.input.into_inner()
    }

    /// Reads the length field. `None` at a clean end of stream, or when stopped.
    fn read_length(&mut self) -> Result<Option<u64>, Error> {
        self.last_framed = None;
        if !self.state.is_ready() {
            return Ok(None);
        }
        let position = self.position;
        let available = self
            .input
            .fill_to(HEADER_LEN)
            .map_err(|e| Error::new(ErrorKind::Io(e), position.offset, position.index))?;
        if available.is_empty() {
            return Ok(None);
        }
        match frame::decode_header(available) {
            Ok(length) => {
                if let Some(stream_len) = self.stream_len {
                    let after_header =
                        stream_len.saturating_sub(position.offset + HEADER_LEN as u64);
                    if length > after_header {
                        let kind = ErrorKind::Truncated {
                            length,
                            available: after_header,
                        };
                        return Err(self.error(kind));
                    }
                }
                // A stream that ends within the window before the payload does is seen before
                // anything is consumed, so that a resync can scan all of it.
                let framed = frame::framed_len(length).map_or(usize::MAX, |framed| {
                    usize::try_from(framed).unwrap_or(usize::MAX)
                });
                if framed > available.len() {
                    let wanted = framed.min(self.input.capacity());
                    let available = self.input.fill_to(wanted).map_err(|e| {
                        Error::new(ErrorKind::Io(e), position.offset, position.index)
                    })?;
                    if available.len() < wanted {
                        let available = (available.len() - HEADER_LEN) as u64;
                        return Err(self.error(ErrorKind::Truncated { length, available }));
                    }
                }
                self.input.consume(HEADER_LEN);
                self.consumed = HEADER_LEN as u64;
                Ok(Some(length))
            }
            Err(ErrorKind::ZeroLength) => {
                self.input.consume(HEADER_LEN);
                let error = self.error(ErrorKind::ZeroLength);
                self.advance(0);
                Err(error)
            }
            Err(kind) => Err(self.error(kind)),
        }
    }

    /// Checks that the whole payload arrived and moves past the record.
    fn finish_payload(&mut self, length: u64, available: u64) -> Result<u64, Error> {
        self.consumed += available;
        if available < length {
            return Err(self.error(ErrorKind::Truncated { length, available }));
        }
        self.advance(length);
        self.last_framed = usize::try_from(length)
            .ok()
            .and_then(|length| length.checked_add(HEADER_LEN));
        Ok(length)
    }

    fn advance(&mut self, length: u64) {
        self.position.offset = self
            .position
            .offset
            .saturating_add(HEADER_LEN as u64)
            .saturating_add(length);
        self.position.index = self.position.index.saturating_add(1);
    }

    /// The error for the record at the current position.
    fn error(&self, kind: ErrorKind) -> Error {
        Error::new(kind, self.position.offset, self.position.index)
    }

    /// Records the outcome of a read: whether the reader stops, and how it may go on.
    fn note<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(err) = &result {
            let how = match err.kind() {
                ErrorKind::ZeroLength => Stop::Recoverable,
                ErrorKind::Io(_) => Stop::Fused,
                _ => Stop::Damaged,
            };
            self.state.stop(how, self.consumed);
        }
        self.consumed = 0;
        result
    }
}

impl<R> std::fmt::Debug for Reader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("position", &self.position)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// The payload length of the record at the start of `bytes` (at `offset` in a stream of
/// `stream_len` bytes, when known) when it lies whole there and is sound: a positive length
/// that ends within the stream. `None` for anything else.
#[inline(always)]
fn sound_record(bytes: &[u8], offset: u64, stream_len: Option<u64>) -> Option<usize> {
    let header = bytes.first_chunk::<HEADER_LEN>()?;
    let len = usize::try_from(i64::from_le_bytes(*header))
        .ok()
        .filter(|&len| len > 0 && len <= bytes.len() - HEADER_LEN)?;
    let framed = (HEADER_LEN + len) as u64;
    if stream_len.is_some_and(|stream_len| offset + framed > stream_len) {
        return None;
    }
    Some(len)
}

/// Whether a resync resumes at `candidate`; when the damaged record before it is recovered,
/// its payload goes to `buf`.
fn resume_at(
    candidate: Candidate<'_>,
    buf: &mut Vec<u8>,
    recovered: &mut bool,
    is_payload: &mut impl FnMut(&[u8]) -> bool,
) -> Verdict {
    if candidate.is_end() {
        // The end of the stream bounds nothing: a record cut short there is usually a
        // truncated file, and a prefix of an OFRecord often parses as one.
        return Verdict::Reject;
    }
    let length = match frame::decode_header(candidate.bytes) {
        Ok(length) => length,
        Err(ErrorKind::TruncatedLength { .. }) if !candidate.complete => return Verdict::NeedMore,
        Err(_) => return Verdict::Reject,
    };
    let Some(end) = frame::framed_len(length)
        .and_then(|end| usize::try_from(end).ok())
        .filter(|&end| end <= candidate.window)
    else {
        return Verdict::Reject;
    };
    let Some(payload) = candidate.bytes.get(HEADER_LEN..end) else {
        return if candidate.complete {
            Verdict::Reject
        } else {
            Verdict::NeedMore
        };
    };
    let next = &candidate.bytes[end..];
    // Past the window's end, the next length cannot be seen: the payload has to do.
    let next_plausible = match frame::decode_header(next) {
        Ok(_) => true,
        Err(ErrorKind::TruncatedLength { available }) => !candidate.end_of_stream || available == 0,
        Err(_) => false,
    };
    if !next_plausible || !is_payload(payload) {
        return Verdict::Reject;
    }
    // Whether or not the damaged record comes back, this one is good.
    recover_gap(candidate.gap, buf, recovered, is_payload);
    Verdict::Accept
}

/// Recovers the damaged record, `gap`, when its bytes after the length field pass
/// `is_payload`.
fn recover_gap(
    gap: Option<&[u8]>,
    buf: &mut Vec<u8>,
    recovered: &mut bool,
    is_payload: &mut impl FnMut(&[u8]) -> bool,
) -> Verdict {
    match gap.and_then(|gap| gap.get(HEADER_LEN..)) {
        Some(payload) if !payload.is_empty() && is_payload(payload) => {
            buf.extend_from_slice(payload);
            *recovered = true;
            Verdict::Accept
        }
        _ => Verdict::Reject,
    }
}

/// Iterator over owned payloads, made by [`Reader::records`].
///
/// It yields the first error and then ends, even after a zero-length record; to go on past
/// one, use [`Reader::read_record`] and [`Reader::recover`].
#[derive(Debug)]
pub struct Records<R> {
    reader: Reader<R>,
}

impl<R> Records<R> {
    /// The reader underneath, for its [`position`](Reader::position).
    pub fn reader(&self) -> &Reader<R> {
        &self.reader
    }

    /// Gives back the reader, for instance to step past a zero-length record and go on.
    pub fn into_reader(self) -> Reader<R> {
        self.reader
    }
}

impl<R: Read> Records<R> {
    /// Where the next record starts (see [`Reader::position`]).
    pub fn position(&self) -> Position {
        self.reader.position()
    }
}

impl<R: Read> Iterator for Records<R> {
    type Item = Result<Vec<u8>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut buf = Vec::new();
        match self.reader.read_record(&mut buf) {
            Ok(true) => Some(Ok(buf)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

impl<R: Read> FusedIterator for Records<R> {}
