//! Where the indexed reader reads from: any source that reads bytes at an offset (a file,
//! bytes in memory, a store's ranged reads), lending the bytes it holds in memory rather than
//! copying them.

use std::io;

/// A source that reads bytes at any offset: a file, or bytes in memory.
pub trait ReadAt {
    /// The source's size in bytes.
    fn size(&self) -> io::Result<u64>;
    /// Fills `buf` with the bytes at `offset`; an error if the source ends first.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;

    /// The bytes `start..end`: read into `scratch`, unless the source holds them in memory
    /// and lends them as they are.
    fn bytes_at<'a>(
        &'a self,
        start: u64,
        end: u64,
        scratch: &'a mut Vec<u8>,
    ) -> io::Result<&'a [u8]> {
        scratch.clear();
        scratch.resize(end.saturating_sub(start) as usize, 0);
        self.read_exact_at(scratch, start)?;
        Ok(scratch)
    }
}

/// The bytes `start..end` of `bytes`, which begin at offset `base` of their source.
pub(crate) fn lent(bytes: &[u8], base: u64, start: u64, end: u64) -> io::Result<&[u8]> {
    start
        .checked_sub(base)
        .zip(end.checked_sub(base))
        .and_then(|(from, to)| bytes.get(usize::try_from(from).ok()?..usize::try_from(to).ok()?))
        .ok_or_else(|| io::ErrorKind::UnexpectedEof.into())
}

impl ReadAt for [u8] {
    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let bytes = usize::try_from(offset)
            .ok()
            .and_then(|start| self.get(start..)?.get(..buf.len()))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(bytes);
        Ok(())
    }

    fn bytes_at<'a>(&'a self, start: u64, end: u64, _: &'a mut Vec<u8>) -> io::Result<&'a [u8]> {
        lent(self, 0, start, end)
    }
}

impl ReadAt for Vec<u8> {
    fn size(&self) -> io::Result<u64> {
        self.as_slice().size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }

    fn bytes_at<'a>(&'a self, start: u64, end: u64, _: &'a mut Vec<u8>) -> io::Result<&'a [u8]> {
        lent(self, 0, start, end)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn size(&self) -> io::Result<u64> {
        (**self).size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }

    fn bytes_at<'a>(
        &'a self,
        start: u64,
        end: u64,
        scratch: &'a mut Vec<u8>,
    ) -> io::Result<&'a [u8]> {
        (**self).bytes_at(start, end, scratch)
    }
}

impl ReadAt for std::fs::File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    #[cfg(unix)]
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }

    #[cfg(windows)]
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_read(self, buf, offset) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
