//! The buffered output both writers write through: small records gather in a buffer, a large
//! one goes to the writer in one vectored write of its header, data and footer, without being
//! copied into the buffer first.

use std::io::{self, BufWriter, IoSlice, Write};

/// A record of this many bytes or more (framing included) bypasses the buffer: copying it
/// would cost more than the one extra write call it saves.
pub const DIRECT_WRITE_MIN: usize = 64 * 1024;

/// The most pieces one record is written from (header, data, footer, and one to spare).
pub const MAX_PARTS: usize = 4;

/// Writes the pieces of one framed record to `out`, in order: into its buffer when they are
/// small, else straight to the inner writer with vectored writes (after what is buffered).
///
/// Before a large record the whole `BufWriter` is flushed, the inner writer included: use
/// this over a file or an upload, not over a compressor, whose flush changes its output.
///
/// # Panics
///
/// When given more than [`MAX_PARTS`] pieces.
///
/// ```
/// use std::io::BufWriter;
/// use ofconvert_frame::output;
///
/// let mut out = BufWriter::new(Vec::new());
/// let data = vec![7u8; output::DIRECT_WRITE_MIN];
/// output::write_record(&mut out, &[b"head", &data, b"foot"]).unwrap();
/// output::write_record(&mut out, &[b"small"]).unwrap();
/// let written = out.into_inner().unwrap();
/// assert_eq!(written.len(), 4 + data.len() + 4 + 5);
/// assert!(written.starts_with(b"head") && written.ends_with(b"footsmall"));
/// ```
pub fn write_record<W: Write>(out: &mut BufWriter<W>, parts: &[&[u8]]) -> io::Result<()> {
    assert!(
        parts.len() <= MAX_PARTS,
        "a record has at most {MAX_PARTS} pieces"
    );
    let total: usize = parts.iter().map(|part| part.len()).sum();
    if total < DIRECT_WRITE_MIN {
        return parts.iter().try_for_each(|part| out.write_all(part));
    }
    out.flush()?;
    write_all_vectored(out.get_mut(), parts)
}

/// Writes every byte of `parts` with as few vectored writes as the writer allows.
fn write_all_vectored<W: Write>(out: &mut W, parts: &[&[u8]]) -> io::Result<()> {
    // On the stack: no allocation per record.
    let mut storage = [IoSlice::new(&[]); MAX_PARTS];
    for (slot, part) in storage.iter_mut().zip(parts) {
        *slot = IoSlice::new(part);
    }
    let mut slices = &mut storage[..parts.len()];
    while !slices.is_empty() {
        match out.write_vectored(slices) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "failed to write whole record",
                ))
            }
            Ok(written) => IoSlice::advance_slices(&mut slices, written),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes at most `limit` bytes a call and only the first buffer of a vectored write, as
    /// `Write`'s default `write_vectored` does.
    struct Trickle {
        written: Vec<u8>,
        limit: usize,
        calls: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.calls += 1;
            let n = buf.len().min(self.limit);
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

    #[test]
    fn small_and_large_records_come_out_in_order_whatever_the_writer_takes() {
        let large = pattern(DIRECT_WRITE_MIN + 17);
        let mut expected = Vec::new();
        let mut out = BufWriter::with_capacity(
            1024,
            Trickle {
                written: Vec::new(),
                limit: 5000,
                calls: 0,
            },
        );
        for round in 0..3 {
            let small = pattern(10 + round);
            let records: [&[&[u8]]; 3] = [
                &[b"hd", &small, b"ft"],
                &[b"header", &large, b"", b"footer"],
                &[&small],
            ];
            for parts in records {
                write_record(&mut out, parts).unwrap();
                parts
                    .iter()
                    .for_each(|part| expected.extend_from_slice(part));
            }
        }
        let trickle = out.into_inner().unwrap_or_else(|_| panic!("flush failed"));
        assert_eq!(trickle.written, expected);
    }

    #[test]
    fn a_large_record_skips_the_buffer() {
        let large = pattern(DIRECT_WRITE_MIN);
        let mut out = BufWriter::with_capacity(
            4 * DIRECT_WRITE_MIN,
            Trickle {
                written: Vec::new(),
                limit: usize::MAX,
                calls: 0,
            },
        );
        write_record(&mut out, &[b"abc"]).unwrap();
        write_record(&mut out, &[&large]).unwrap();
        // The small record was flushed ahead of the large one, which went straight through.
        assert!(out.buffer().is_empty());
        assert_eq!(out.get_ref().calls, 2);
        assert_eq!(&out.get_ref().written[..3], b"abc");
        assert_eq!(&out.get_ref().written[3..], &large[..]);
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
        let mut out = BufWriter::new(Full);
        let large = pattern(DIRECT_WRITE_MIN);
        let err = write_record(&mut out, &[&large]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WriteZero);
    }
}
