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

use std::io::{self, Write};

/// A buffer of records in front of a writer, which gets only whole buffers (a multiple of
/// the capacity at a time) until [`flush`](RecordBuffer::flush).
///
/// ```
/// use ofconvert_frame::output::RecordBuffer;
///
/// let mut out = RecordBuffer::with_capacity(16, Vec::new());
/// out.write_parts(&[b"head", b"a record's data", b"foot"]).unwrap();
/// // Only whole buffers reached the vector; the rest waits in the buffer.
/// assert_eq!(out.get_ref().as_slice(), b"heada record's d");
/// // A record written in place: appended to the pending bytes, then settled.
/// out.pending().extend_from_slice(b"small");
/// out.settle().unwrap();
/// let written = out.into_inner().unwrap();
/// assert_eq!(written, b"heada record's datafootsmall");
/// ```
#[derive(Debug)]
pub struct RecordBuffer<W: Write> {
    inner: W,
    buf: Vec<u8>,
    capacity: usize,
}

impl<W: Write> RecordBuffer<W> {
    /// A buffer of `capacity` bytes (at least 1) in front of `inner`.
    pub fn with_capacity(capacity: usize, inner: W) -> Self {
        RecordBuffer {
            inner,
            buf: Vec::with_capacity(capacity.max(1)),
            capacity: capacity.max(1),
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
        let whole = rest.len() - rest.len() % self.capacity;
        if whole > 0 {
            self.inner.write_all(&rest[..whole])?;
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
        if whole > 0 {
            self.inner.write_all(&self.buf[..whole])?;
            self.buf.drain(..whole);
        }
        Ok(())
    }

    /// Writes out everything buffered and flushes the writer underneath.
    ///
    /// # Errors
    ///
    /// When the writer underneath fails.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.inner.write_all(&self.buf)?;
            self.buf.clear();
        }
        self.inner.flush()
    }

    /// The writer underneath.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Writes out everything buffered (without flushing the writer underneath) and returns
    /// the writer.
    ///
    /// # Errors
    ///
    /// When the writer underneath fails.
    pub fn into_inner(mut self) -> io::Result<W> {
        if !self.buf.is_empty() {
            self.inner.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes at most `limit` bytes a call, and notes the size of every call.
    struct Trickle {
        written: Vec<u8>,
        limit: usize,
        calls: Vec<usize>,
    }

    impl Trickle {
        fn new(limit: usize) -> Self {
            Trickle {
                written: Vec::new(),
                limit,
                calls: Vec::new(),
            }
        }
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.limit);
            self.calls.push(n);
            self.written.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 251) as u8).collect()
    }

    const CAPACITY: usize = 1024;

    /// Records of every size around the buffer's: empty, small, one short of it, exactly it,
    /// one past it, several times it.
    fn records() -> Vec<Vec<u8>> {
        [
            0,
            10,
            CAPACITY - 1,
            CAPACITY,
            CAPACITY + 1,
            3 * CAPACITY + 17,
            5,
            2 * CAPACITY,
        ]
        .into_iter()
        .map(pattern)
        .collect()
    }

    fn write_all_records(out: &mut RecordBuffer<Trickle>) -> Vec<u8> {
        let mut expected = Vec::new();
        for (round, data) in records().iter().enumerate() {
            let header = [round as u8; 12];
            let footer = [!(round as u8); 4];
            out.write_parts(&[&header, data, &footer]).unwrap();
            [&header[..], data, &footer]
                .iter()
                .for_each(|part| expected.extend_from_slice(part));
        }
        expected
    }

    #[test]
    fn every_write_but_the_last_is_a_whole_buffer_at_an_aligned_offset() {
        let mut out = RecordBuffer::with_capacity(CAPACITY, Trickle::new(usize::MAX));
        let expected = write_all_records(&mut out);
        let trickle = out.into_inner().unwrap_or_else(|_| panic!("flush failed"));
        assert_eq!(trickle.written, expected);
        let (last, whole) = trickle.calls.split_last().unwrap();
        assert!(*last > 0 && *last < CAPACITY, "{:?}", trickle.calls);
        // Each earlier write is a whole number of buffers, so every one starts aligned; a
        // slice that spans several buffers went through in one write.
        assert!(
            whole.iter().all(|&n| n > 0 && n % CAPACITY == 0),
            "{:?}",
            trickle.calls
        );
        assert!(whole.iter().any(|&n| n > CAPACITY), "{:?}", trickle.calls);
    }

    #[test]
    fn records_appended_in_place_come_out_in_order_in_whole_buffers() {
        let mut out = RecordBuffer::with_capacity(CAPACITY, Trickle::new(usize::MAX));
        let mut expected = Vec::new();
        for (round, data) in records().iter().enumerate() {
            if round % 2 == 0 {
                out.write_parts(&[&[round as u8; 3], data]).unwrap();
            } else {
                out.pending().extend_from_slice(&[round as u8; 3]);
                out.pending().extend_from_slice(data);
                if round % 3 != 0 {
                    out.settle().unwrap();
                }
            }
            expected.extend_from_slice(&[round as u8; 3]);
            expected.extend_from_slice(data);
            assert!(out.get_ref().calls.iter().all(|&n| n % CAPACITY == 0));
        }
        let trickle = out.into_inner().unwrap_or_else(|_| panic!("flush failed"));
        assert_eq!(trickle.written, expected);
    }

    #[test]
    fn records_come_out_in_order_whatever_the_writer_takes() {
        let mut out = RecordBuffer::with_capacity(CAPACITY, Trickle::new(300));
        let expected = write_all_records(&mut out);
        let trickle = out.into_inner().unwrap_or_else(|_| panic!("flush failed"));
        assert_eq!(trickle.written, expected);
    }

    #[test]
    fn a_writer_that_takes_nothing_is_an_error() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Ok(0)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut out = RecordBuffer::with_capacity(CAPACITY, Full);
        let large = pattern(2 * CAPACITY);
        let err = out.write_parts(&[&large]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WriteZero);
    }
}
