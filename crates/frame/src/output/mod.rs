//! The buffered output both writers write through. Records are gathered in a buffer, and
//! the writer underneath only ever gets whole buffers, at offsets that are multiples of the
//! buffer's size, plus the last, shorter piece when the file is finished.
//!
//! Large, aligned writes are what a file system's page cache handles best: on Linux ext4,
//! writing a file in 256 KiB pieces costs about two thirds of the CPU time of writing it
//! in one piece per 60–160 KB record, as a `writev` of each record did, and the copy into the
//! buffer costs far less than that saves.
//!
//! A record can also be written straight into the buffer ([`RecordBuffer::pending`], then
//! [`RecordBuffer::settle`]): a converter appends its output there, and the record is not
//! copied again on its way out.
//!
//! The writes can also go through a thread of their own
//! ([`RecordBuffer::writing_on_thread`]): whole buffers are handed to it as they are, not
//! copied, and the caller fills the next one meanwhile.

use std::io::{self, Write};

mod thread;

use thread::Behind;

/// A buffer of records in front of a writer, which gets only whole buffers (a multiple of
/// the capacity at a time) until [`flush`](RecordBuffer::flush).
///
/// ```
/// use ofconvert_frame::output::RecordBuffer;
///
/// let mut out = RecordBuffer::with_capacity(16, Vec::new());
/// out.write_parts(&[b"head", b"a record's data", b"foot"]).unwrap();
/// // Only whole buffers reached the vector; the rest waits in the buffer.
/// assert_eq!(out.get_ref().unwrap().as_slice(), b"heada record's d");
/// // A record written in place: appended to the pending bytes, then settled.
/// out.pending().extend_from_slice(b"small");
/// out.settle().unwrap();
/// let written = out.into_inner().unwrap();
/// assert_eq!(written, b"heada record's datafootsmall");
/// ```
#[derive(Debug)]
pub struct RecordBuffer<W: Write> {
    sink: Sink<W>,
    buf: Vec<u8>,
    capacity: usize,
}

/// Where whole buffers go.
#[derive(Debug)]
enum Sink<W: Write> {
    /// Written on the caller's thread.
    Here(W),
    /// Handed to a thread that writes them.
    Thread(Behind<W>),
}

impl<W: Write> RecordBuffer<W> {
    /// A buffer of `capacity` bytes (at least 1) in front of `inner`.
    pub fn with_capacity(capacity: usize, inner: W) -> Self {
        RecordBuffer {
            sink: Sink::Here(inner),
            buf: Vec::with_capacity(capacity.max(1)),
            capacity: capacity.max(1),
        }
    }

    /// From now on, whole buffers go to a thread that writes them to the writer underneath,
    /// in order, while the caller fills the next; at most three buffers are in flight. The
    /// buffers change hands whole, so nothing is copied on the way. An error of the thread
    /// comes out of a later call (at the latest [`flush`](RecordBuffer::flush) or
    /// [`into_inner`](RecordBuffer::into_inner)). Without a thread to be had, writes stay
    /// on the caller's thread.
    #[must_use]
    pub fn writing_on_thread(self) -> Self
    where
        W: Send + 'static,
    {
        let RecordBuffer {
            sink,
            buf,
            capacity,
        } = self;
        let sink = match sink {
            Sink::Here(inner) => match Behind::start(inner) {
                Ok(behind) => Sink::Thread(behind),
                Err(inner) => Sink::Here(inner),
            },
            thread @ Sink::Thread(_) => thread,
        };
        RecordBuffer {
            sink,
            buf,
            capacity,
        }
    }

    /// Writes the pieces of one framed record, in order. The buffer is filled to the brim
    /// before it is written, and a piece that spans more than a buffer goes through in whole
    /// multiples of it, straight from the caller's slice.
    ///
    /// # Errors
    ///
    /// When the writer underneath fails; what it took of the buffer is then unknown.
    pub fn write_parts(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        parts.iter().try_for_each(|part| self.write_filling(part))
    }

    fn write_filling(&mut self, bytes: &[u8]) -> io::Result<()> {
        let spare = self.capacity.saturating_sub(self.buf.len());
        if bytes.len() <= spare {
            self.buf.extend_from_slice(bytes);
            return Ok(());
        }
        let (brim, rest) = bytes.split_at(spare);
        self.buf.extend_from_slice(brim);
        self.settle()?;
        if !self.buf.is_empty() {
            // Bytes appended in place took the buffer past its capacity unsettled.
            self.buf.extend_from_slice(rest);
            return self.settle();
        }
        // The buffer is empty now (its bytes were a whole multiple of the capacity): whole
        // multiples of the capacity go through straight, which keeps every write aligned.
        // A thread needs buffers of its own: the bytes are copied into them.
        let Sink::Here(inner) = &mut self.sink else {
            self.buf.extend_from_slice(rest);
            return self.settle();
        };
        let whole = rest.len() - rest.len() % self.capacity;
        if whole > 0 {
            inner.write_all(&rest[..whole])?;
        }
        self.buf.extend_from_slice(&rest[whole..]);
        Ok(())
    }

    /// The bytes waiting to be written, for a caller to append records to in place; the
    /// buffer may grow past its capacity until [`settle`](RecordBuffer::settle).
    pub fn pending(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Writes out every whole multiple of the capacity the buffer holds, keeping the rest
    /// (less than the capacity) for later.
    ///
    /// # Errors
    ///
    /// When the writer underneath fails; what it took of the buffer is then unknown.
    #[inline]
    pub fn settle(&mut self) -> io::Result<()> {
        if self.buf.len() < self.capacity {
            return Ok(());
        }
        let whole = self.buf.len() - self.buf.len() % self.capacity;
        match &mut self.sink {
            Sink::Here(inner) => {
                inner.write_all(&self.buf[..whole])?;
                self.buf.drain(..whole);
                Ok(())
            }
            Sink::Thread(behind) => behind.hand_over(&mut self.buf, whole, self.capacity),
        }
    }

    /// Writes out everything buffered and flushes the writer underneath.
    ///
    /// # Errors
    ///
    /// When the writer underneath fails.
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Here(inner) => {
                if !self.buf.is_empty() {
                    inner.write_all(&self.buf)?;
                    self.buf.clear();
                }
                inner.flush()
            }
            Sink::Thread(behind) => behind.flush(&mut self.buf, self.capacity),
        }
    }

    /// The writer underneath; `None` while a thread writes to it.
    pub fn get_ref(&self) -> Option<&W> {
        match &self.sink {
            Sink::Here(inner) => Some(inner),
            Sink::Thread(_) => None,
        }
    }

    /// Writes out everything buffered (without flushing the writer underneath) and returns
    /// the writer.
    ///
    /// # Errors
    ///
    /// When the writer underneath fails.
    pub fn into_inner(self) -> io::Result<W> {
        match self.sink {
            Sink::Here(mut inner) => {
                if !self.buf.is_empty() {
                    inner.write_all(&self.buf)?;
                }
                Ok(inner)
            }
            Sink::Thread(behind) => behind.finish(self.buf),
        }
    }
}

#[cfg(test)]
mod tests;
