//! The buffered output both writers write through. Records are copied into the buffer up to
//! its brim, and the writer underneath only ever gets whole buffers, at offsets that are
//! multiples of the buffer's size, plus the last, shorter piece when the file is finished.
//!
//! Large, aligned writes are what a file system's page cache handles best: on Linux ext4,
//! writing a file in 256 KiB pieces costs about two thirds of the CPU time of writing it
//! in one piece per 60–160 KB record, as a `writev` of each record did, and the copy into the
//! buffer costs far less than that saves.

use std::io::{self, BufWriter, Write};

/// Writes the pieces of one framed record to `out`, in order, keeping every write the inner
/// writer receives a whole buffer: the buffer is filled to the brim before it is written,
/// and a piece that spans more than a buffer goes through in whole multiples of it, straight
/// from the caller's slice.
///
/// The inner writer is never flushed: this suits a file or an upload as well as a
/// compressor.
///
/// ```
/// use std::io::BufWriter;
/// use ofconvert_frame::output;
///
/// let mut out = BufWriter::with_capacity(16, Vec::new());
/// output::write_record(&mut out, &[b"head", b"a record's data", b"foot"]).unwrap();
/// // Only whole buffers reached the vector; the rest waits in the buffer.
/// assert_eq!(out.get_ref().as_slice(), b"heada record's d");
/// output::write_record(&mut out, &[b"small"]).unwrap();
/// let written = out.into_inner().unwrap();
/// assert_eq!(written, b"heada record's datafootsmall");
/// ```
pub fn write_record<W: Write>(out: &mut BufWriter<W>, parts: &[&[u8]]) -> io::Result<()> {
    parts.iter().try_for_each(|part| write_filling(out, part))
}

/// Writes `bytes` through `out` so that the inner writer only gets whole buffers.
fn write_filling<W: Write>(out: &mut BufWriter<W>, bytes: &[u8]) -> io::Result<()> {
    let spare = out.capacity() - out.buffer().len();
    if bytes.len() <= spare {
        return out.write_all(bytes);
    }
    let (brim, rest) = bytes.split_at(spare);
    out.write_all(brim)?;
    // The buffer is full. `BufWriter` writes a full buffer whole before it takes more, and
    // passes a slice at least as large as its capacity straight through: whole multiples
    // of the capacity keep every write the same size and aligned.
    let whole = rest.len() - rest.len() % out.capacity();
    out.write_all(&rest[..whole])?;
    out.write_all(&rest[whole..])
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

    fn write_all_records(out: &mut BufWriter<Trickle>) -> Vec<u8> {
        let mut expected = Vec::new();
        for (round, data) in records().iter().enumerate() {
            let header = [round as u8; 12];
            let footer = [!(round as u8); 4];
            write_record(out, &[&header, data, &footer]).unwrap();
            [&header[..], data, &footer]
                .iter()
                .for_each(|part| expected.extend_from_slice(part));
        }
        expected
    }

    #[test]
    fn every_write_but_the_last_is_a_whole_buffer_at_an_aligned_offset() {
        let mut out = BufWriter::with_capacity(CAPACITY, Trickle::new(usize::MAX));
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
    fn records_come_out_in_order_whatever_the_writer_takes() {
        let mut out = BufWriter::with_capacity(CAPACITY, Trickle::new(300));
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
        let mut out = BufWriter::with_capacity(CAPACITY, Full);
        let large = pattern(2 * CAPACITY);
        let err = write_record(&mut out, &[&large]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WriteZero);
    }
}
