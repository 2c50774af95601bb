//! Compressing a framed stream the way TensorFlow's `ZlibOutputBuffer` does, so that the
//! same records give the same bytes: zlib's own deflate (TensorFlow links zlib; other
//! deflate implementations choose other matches and blocks), at level 6, a 32 KiB window
//! (gzip: zlib writes the header itself, with no name and no time), memory level 9 (zlib's
//! default is 8, which cuts blocks elsewhere on any stream over some 100 KiB) and the default
//! strategy, fed with no flush until the end. zlib's output does not depend on how its input
//! is cut, so buffer sizes need not match TensorFlow's.

use std::io::{self, Write};
use std::os::raw::c_int;
use std::ptr;

use libz_sys as zlib;

use crate::Compression;

/// TensorFlow's `ZlibCompressionOptions`: `Z_DEFAULT_COMPRESSION` (level 6), `MAX_WBITS`,
/// `mem_level = 9`.
const LEVEL: c_int = 6;
const WINDOW_BITS: c_int = 15;
/// What zlib adds to the window bits to wrap the stream in gzip rather than zlib.
const GZIP_WRAPPER: c_int = 16;
const MEM_LEVEL: c_int = 9;

/// Compressed bytes gathered before they reach the underlying writer.
const OUTPUT_CAPACITY: usize = 64 * 1024;

/// A [`Write`] that deflates what it is given into `W`, as a gzip or zlib stream, until
/// [`finish`](Deflater::finish).
pub(crate) struct Deflater<W: Write> {
    /// Boxed: zlib keeps a pointer to it and checks it, so it must not move.
    stream: Box<zlib::z_stream>,
    out: Vec<u8>,
    filled: usize,
    /// Taken by [`finish`](Deflater::finish).
    inner: Option<W>,
}

// The stream's pointers point only into memory this value owns (zlib's state, allocated for
// it) or lent for the length of one call; zlib keeps no thread-local state.
unsafe impl<W: Write + Send> Send for Deflater<W> {}

impl<W: Write> Deflater<W> {
    /// A deflater writing `compression`'s stream (gzip or zlib) into `inner`.
    ///
    /// # Panics
    ///
    /// For [`Compression::None`], and if zlib cannot set up a stream (it is out of memory).
    pub(crate) fn new(inner: W, compression: Compression) -> Self {
        let window_bits = match compression {
            Compression::Gzip => WINDOW_BITS + GZIP_WRAPPER,
            Compression::Zlib => WINDOW_BITS,
            Compression::None => panic!("no deflate stream for uncompressed records"),
        };
        let mut stream = Box::new(zlib::z_stream {
            next_in: ptr::null_mut(),
            avail_in: 0,
            total_in: 0,
            next_out: ptr::null_mut(),
            avail_out: 0,
            total_out: 0,
            msg: ptr::null_mut(),
            state: ptr::null_mut(),
            zalloc,
            zfree,
            opaque: ptr::null_mut(),
            data_type: 0,
            adler: 0,
            reserved: 0,
        });
        // SAFETY: `stream` is a valid, boxed z_stream; the version and size are those of the
        // headers the bindings were made for.
        let status = unsafe {
            zlib::deflateInit2_(
                &mut *stream,
                LEVEL,
                zlib::Z_DEFLATED,
                window_bits,
                MEM_LEVEL,
                zlib::Z_DEFAULT_STRATEGY,
                zlib::zlibVersion(),
                std::mem::size_of::<zlib::z_stream>() as c_int,
            )
        };
        assert_eq!(status, zlib::Z_OK, "deflateInit2 failed");
        Deflater {
            stream,
            out: vec![0; OUTPUT_CAPACITY],
            filled: 0,
            inner: Some(inner),
        }
    }

    /// Ends the stream (its trailer: the CRC-32 and length for gzip, the Adler-32 for zlib)
    /// and returns the underlying writer.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.deflate(&[], zlib::Z_FINISH)?;
        self.write_out()?;
        Ok(self.inner.take().expect("a deflater is finished once"))
    }

    /// The underlying writer.
    pub(crate) fn get_ref(&self) -> &W {
        self.inner.as_ref().expect("a deflater is finished once")
    }

    /// Deflates all of `input` with `flush`, writing out the output buffer whenever it
    /// fills. Returns once zlib has taken every byte and, for a flush, put out everything.
    fn deflate(&mut self, mut input: &[u8], flush: c_int) -> io::Result<()> {
        loop {
            if self.filled == self.out.len() {
                self.write_out()?;
            }
            let taken = input.len().min(u32::MAX as usize);
            let room = self.out.len() - self.filled;
            let stream = &mut *self.stream;
            // zlib reads through `next_in`, never writes.
            stream.next_in = input.as_ptr().cast_mut();
            stream.avail_in = taken as u32;
            stream.next_out = self.out[self.filled..].as_mut_ptr();
            stream.avail_out = room as u32;
            // SAFETY: the stream was set up by `new`; its input and output point into
            // `input` and `self.out`, valid for the lengths given, for this call only.
            let status = unsafe { zlib::deflate(stream, flush) };
            let left_in = stream.avail_in as usize;
            let left_out = stream.avail_out as usize;
            stream.next_in = ptr::null_mut();
            stream.next_out = ptr::null_mut();
            input = &input[taken - left_in..];
            self.filled += room - left_out;
            match status {
                zlib::Z_STREAM_END => return Ok(()),
                // Z_BUF_ERROR: no progress was possible, which is no error here.
                zlib::Z_OK | zlib::Z_BUF_ERROR => {}
                other => {
                    return Err(io::Error::other(format!(
                        "zlib's deflate failed (status {other})"
                    )))
                }
            }
            // With room left over, zlib has put out all it will for now.
            if input.is_empty() && left_out > 0 && flush != zlib::Z_FINISH {
                return Ok(());
            }
        }
    }

    fn write_out(&mut self) -> io::Result<()> {
        let inner = self.inner.as_mut().expect("a deflater is finished once");
        inner.write_all(&self.out[..self.filled])?;
        self.filled = 0;
        Ok(())
    }
}

impl<W: Write> Write for Deflater<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.deflate(buf, zlib::Z_NO_FLUSH)?;
        Ok(buf.len())
    }

    /// Ends the current deflate block (a sync flush) and writes out everything so far, so
    /// that a reader sees every record written.
    fn flush(&mut self) -> io::Result<()> {
        self.deflate(&[], zlib::Z_SYNC_FLUSH)?;
        self.write_out()?;
        self.inner
            .as_mut()
            .expect("a deflater is finished once")
            .flush()
    }
}

impl<W: Write> Drop for Deflater<W> {
    fn drop(&mut self) {
        // SAFETY: the stream was set up by `new`, and is ended here only.
        unsafe { zlib::deflateEnd(&mut *self.stream) };
    }
}

/// zlib's allocations, zeroed as its own default does.
unsafe extern "C" fn zalloc(_: zlib::voidpf, items: zlib::uInt, size: zlib::uInt) -> zlib::voidpf {
    // SAFETY: calloc takes any counts, and returns null when it cannot, which zlib checks.
    unsafe { libc::calloc(items as usize, size as usize) }
}

unsafe extern "C" fn zfree(_: zlib::voidpf, address: zlib::voidpf) {
    // SAFETY: zlib frees only what `zalloc` returned.
    unsafe { libc::free(address) }
}
