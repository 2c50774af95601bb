//! The CRC-32C of a whole file, taken as its bytes go by so that no file is read twice for
//! it: a part as its writer writes it, for the manifest to list; a part as `verify` reads
//! it, to check it against the manifest.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use ofconvert_tfrecord::crc::crc32c_append;

use crate::storage::OutputFile;

/// The running CRC-32C of the bytes that went through a [`SummedFile`] or a
/// [`SummedReader`], and how many there were. Shared, as the writer of a part may hand its
/// file to a thread of its own.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sum(Arc<Mutex<(u32, u64)>>);

impl Sum {
    fn add(&self, bytes: &[u8]) {
        let mut sum = self.lock();
        sum.0 = crc32c_append(sum.0, bytes);
        sum.1 += bytes.len() as u64;
    }

    /// The CRC-32C of the bytes so far.
    pub(crate) fn crc32c(&self) -> u32 {
        self.lock().0
    }

    /// How many bytes went through so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.lock().1
    }

    fn lock(&self) -> MutexGuard<'_, (u32, u64)> {
        // One thread adds at a time: a panic there leaves a sum no part is published with.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// An output file whose bytes are summed into a [`Sum`] as they are written.
pub(crate) struct SummedFile {
    inner: Box<dyn OutputFile>,
    sum: Sum,
}

impl SummedFile {
    pub(crate) fn new(inner: Box<dyn OutputFile>, sum: Sum) -> SummedFile {
        SummedFile { inner, sum }
    }
}

impl Write for SummedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.sum.add(&buf[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl OutputFile for SummedFile {
    fn finish(self: Box<Self>) -> io::Result<u64> {
        self.inner.finish()
    }
}

/// A reader whose bytes are summed into a [`Sum`] as they are read.
pub(crate) struct SummedReader<R> {
    inner: R,
    sum: Sum,
}

impl<R> SummedReader<R> {
    pub(crate) fn new(inner: R, sum: Sum) -> SummedReader<R> {
        SummedReader { inner, sum }
    }
}

impl<R: Read> Read for SummedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.sum.add(&buf[..read]);
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sum_is_the_crc_of_every_byte_that_went_by() {
        let sum = Sum::default();
        let mut reader = SummedReader::new(&b"123456789"[..], sum.clone());
        io::copy(&mut reader, &mut io::sink()).unwrap();
        // The check value of CRC-32C (RFC 3720).
        assert_eq!((sum.crc32c(), sum.bytes()), (0xe306_9283, 9));
    }
}
