//! Buffered input that can guarantee a minimum number of contiguous bytes.
//!
//! `std::io::BufReader` only refills when it is empty, so a record header that straddles the
//! end of its buffer, or a short first read from a pipe, cannot be seen in one piece. Seeing
//! the header (and a small record as a whole) in one slice keeps the per-record path to a
//! single copy and makes sniffing the first 12 bytes reliable.

use std::io::{self, BufRead, Read};

use flate2::bufread::ZlibDecoder;

pub(crate) struct BufInput<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    filled: usize,
}

impl<R: Read> BufInput<R> {
    pub(crate) fn with_capacity(capacity: usize, inner: R) -> Self {
        BufInput {
            inner,
            buf: vec![0; capacity].into_boxed_slice(),
            pos: 0,
            filled: 0,
        }
    }

    /// Bytes read ahead and not consumed yet.
    pub(crate) fn buffered(&self) -> usize {
        self.filled - self.pos
    }

    /// Drops the buffer, and with it any bytes read ahead but not consumed.
    pub(crate) fn into_inner(self) -> R {
        self.inner
    }

    /// Buffers at least `wanted` bytes (at most the capacity), fewer only at the end of the
    /// stream, and returns everything buffered.
    pub(crate) fn fill_to(&mut self, wanted: usize) -> io::Result<&[u8]> {
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
    pub(crate) fn append_to(&mut self, out: &mut Vec<u8>, limit: u64) -> io::Result<u64> {
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
    pub(crate) fn skip(&mut self, limit: u64) -> io::Result<u64> {
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
}

/// From this many bytes on, a payload is read straight into the caller's vector rather than
/// through the buffer: a read call per record costs less than copying it once more.
pub(crate) const DIRECT_READ_MIN: usize = 16 * 1024;

/// The most a large payload reserves ahead of the data that arrives for it.
const MAX_RESERVE: usize = 1 << 20;

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

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.filled);
    }
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
