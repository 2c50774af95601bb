//! Buffered input that can guarantee a minimum number of contiguous bytes, and scan forward
//! for a place to resume after damage.
//!
//! `std::io::BufReader` only refills when it is empty, so a record header that straddles the
//! end of its buffer, or a short first read from a pipe, cannot be seen in one piece. Seeing
//! the header (and a small record as a whole) in one slice keeps the per-record path to a
//! single copy and makes sniffing the first 12 bytes reliable.

use std::io::{self, BufRead, Read};

/// A buffered reader whose [`fill_to`](BufInput::fill_to) shows a requested number of bytes in
/// one slice, refilling across its end.
pub struct BufInput<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    filled: usize,
}

impl<R: Read> BufInput<R> {
    /// A reader of `inner` with a buffer of `capacity` bytes, the most
    /// [`fill_to`](BufInput::fill_to) can show at once.
    pub fn with_capacity(capacity: usize, inner: R) -> Self {
        BufInput {
            inner,
            buf: vec![0; capacity].into_boxed_slice(),
            pos: 0,
            filled: 0,
        }
    }

    /// The bytes read ahead and not consumed yet.
    #[inline]
    pub fn buffer(&self) -> &[u8] {
        &self.buf[self.pos..self.filled]
    }

    /// How many bytes are read ahead and not consumed yet.
    pub fn buffered(&self) -> usize {
        self.filled - self.pos
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Drops the buffer, and with it any bytes read ahead but not consumed.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Buffers at least `wanted` bytes (at most the capacity), fewer only at the end of the
    /// stream, and returns everything buffered.
    pub fn fill_to(&mut self, wanted: usize) -> io::Result<&[u8]> {
        let wanted = wanted.min(self.buf.len());
        if self.filled - self.pos < wanted {
            if self.buf.len() - self.pos < wanted {
                self.buf.copy_within(self.pos..self.filled, 0);
                self.filled -= self.pos;
                self.pos = 0;
            }
            while self.filled - self.pos < wanted {
                match self.inner.read(&mut self.buf[self.filled..]) {
                    Ok(0) => break,
                    Ok(n) => self.filled += n,
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => return Err(err),
                }
            }
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    /// Appends up to `limit` bytes to `out`, stopping early only at the end of the stream, and
    /// returns how many were appended. `out` grows with the data that actually arrives, never
    /// by `limit` up front, so an absurd length from a damaged header costs no memory.
    pub fn append_to(&mut self, out: &mut Vec<u8>, limit: u64) -> io::Result<u64> {
        let from_buffer = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .min(self.filled - self.pos);
        out.extend_from_slice(&self.buf[self.pos..self.pos + from_buffer]);
        self.consume(from_buffer);
        let mut appended = from_buffer as u64;
        let rest = limit - appended;
        if rest >= DIRECT_READ_MIN as u64 {
            // Large payloads bypass the buffer and land in the caller's vector directly: one
            // copy out of the kernel instead of two.
            out.reserve(usize::try_from(rest).unwrap_or(usize::MAX).min(MAX_RESERVE));
            appended += (&mut self.inner).take(rest).read_to_end(out)? as u64;
        } else if rest > 0 {
            while appended < limit {
                let available = self.fill_buf()?;
                if available.is_empty() {
                    break;
                }
                let n = usize::try_from(limit - appended)
                    .unwrap_or(usize::MAX)
                    .min(available.len());
                out.extend_from_slice(&available[..n]);
                self.consume(n);
                appended += n as u64;
            }
        }
        Ok(appended)
    }

    /// Skips up to `limit` bytes, stopping early only at the end of the stream, and returns how
    /// many were skipped.
    pub fn skip(&mut self, limit: u64) -> io::Result<u64> {
        let mut skipped = 0;
        while skipped < limit {
            let available = self.fill_buf()?.len();
            if available == 0 {
                break;
            }
            let n = usize::try_from(limit - skipped)
                .unwrap_or(usize::MAX)
                .min(available);
            self.consume(n);
            skipped += n as u64;
        }
        Ok(skipped)
    }
    /// The `len` bytes that end `back` bytes before the read position, while they are still
    /// buffered: bytes just consumed can be looked at again until the buffer is next filled.
    /// A reader hands out a small record that lies whole in its buffer this way, rather than
    /// copying it out.
    pub fn behind(&self, back: usize, len: usize) -> Option<&[u8]> {
        let end = self.pos.checked_sub(back)?;
        self.buf.get(end.checked_sub(len)?..end)
    }

    /// Steps back over the last `amount` bytes consumed, when they are still in the buffer
    /// (nothing was read since they were consumed); `false`, and nothing changes, otherwise.
    pub fn unconsume(&mut self, amount: usize) -> bool {
        if amount > self.pos {
            return false;
        }
        self.pos -= amount;
        true
    }

    /// How many bytes the buffer holds at most: the window [`resync`](BufInput::resync) scans.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Scans forward from the current position, the start of a damaged record, for the first
    /// later offset that `check` accepts, and stops there. Returns how many bytes it passed
    /// over. The start itself is no candidate; the end of the stream is the last one (with no
    /// bytes), and when `check` rejects it too, the whole rest of the stream is passed over.
    ///
    /// Memory stays bounded: the scan looks through the buffer's window and never allocates.
    /// A candidate that [`NeedMore`](Verdict::NeedMore) gets the window to itself (up to the
    /// capacity) and must then decide.
    ///
    /// # Errors
    ///
    /// When reading fails; the position is then somewhere within the scanned stretch.
    pub fn resync(&mut self, mut check: impl FnMut(Candidate<'_>) -> Verdict) -> io::Result<u64> {
        let capacity = self.buf.len();
        let mut end_of_stream = self.fill_to(capacity)?.len() < capacity;
        let mut passed = 0u64;
        let mut start_kept = true;
        let mut at = 1;
        loop {
            let window = &self.buf[self.pos..self.filled];
            let len = window.len();
            // Past the window only when the stream ends right after the start.
            at = at.min(len);
            let verdict = if at == len && !end_of_stream {
                Verdict::NeedMore
            } else {
                check(Candidate {
                    bytes: &window[at..],
                    window: capacity,
                    end_of_stream,
                    complete: end_of_stream || (at == 0 && len == capacity),
                    gap: start_kept.then(|| &window[..at]),
                })
            };
            let complete = end_of_stream || (at == 0 && len == capacity);
            match verdict {
                Verdict::Accept => {
                    self.consume(at);
                    return Ok(passed + at as u64);
                }
                Verdict::Reject | Verdict::NeedMore if at == len && end_of_stream => {
                    self.consume(len);
                    return Ok(passed + len as u64);
                }
                Verdict::NeedMore if !complete => {
                    // Give the candidate the window to itself. Every refill either moves the
                    // window forward or finds the end of the stream, so the scan ends.
                    self.consume(at);
                    passed += at as u64;
                    start_kept &= at == 0;
                    at = 0;
                    end_of_stream = self.fill_to(capacity)?.len() < capacity;
                }
                Verdict::Reject | Verdict::NeedMore => at += 1,
            }
        }
    }
}

/// A place [`BufInput::resync`] considers resuming at.
#[derive(Debug)]
pub struct Candidate<'a> {
    /// The buffered bytes from the candidate offset on.
    pub bytes: &'a [u8],
    /// The most bytes a candidate can be shown: a record larger than this can never be
    /// seen whole, so asking for more is pointless.
    pub window: usize,
    /// Whether the stream ends after `bytes`.
    pub end_of_stream: bool,
    /// Whether `bytes` can grow no more: the stream ends, or they fill the whole window.
    pub complete: bool,
    /// The bytes from the start of the scan up to the candidate, while they are all still in
    /// the window: what the damaged record would hold if it ended here.
    pub gap: Option<&'a [u8]>,
}

impl Candidate<'_> {
    /// Whether this is the end of the stream, the last candidate, with no bytes.
    pub fn is_end(&self) -> bool {
        self.end_of_stream && self.bytes.is_empty()
    }
}

/// What [`BufInput::resync`] makes of a [`Candidate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Resume here.
    Accept,
    /// Look further.
    Reject,
    /// Show more bytes from this candidate on; once the bytes are
    /// [`complete`](Candidate::complete), this counts as [`Reject`](Verdict::Reject).
    NeedMore,
}

/// From this many bytes on, a payload is read straight into the caller's vector rather than
/// through the buffer: a read call per record costs less than copying it once more.
pub const DIRECT_READ_MIN: usize = 16 * 1024;

/// The most a large payload reserves ahead of the data that arrives for it.
const MAX_RESERVE: usize = 256 * 1024;

impl<R: Read> Read for BufInput<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.filled && out.len() >= self.buf.len() {
            return self.inner.read(out);
        }
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for BufInput<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.filled {
            self.pos = 0;
            self.filled = 0;
            loop {
                match self.inner.read(&mut self.buf) {
                    Ok(n) => {
                        self.filled = n;
                        break;
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => return Err(err),
                }
            }
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    #[inline]
    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.filled);
    }
}
