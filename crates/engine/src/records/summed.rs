//! The CRC-32C of a whole file, taken as its bytes go by so that no file is read twice for
//! it: a part as its writer writes it, for the manifest to list.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use ofconvert_tfrecord::crc::crc32c_append;

use crate::storage::OutputFile;

/// The running CRC-32C of the bytes that went through a [`SummedFile`]. Shared, as the
/// writer of a part may hand its file to a thread of its own.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sum(Arc<Mutex<u32>>);

impl Sum {
    fn add(&self, bytes: &[u8]) {
        let mut sum = self.lock();
        *sum = crc32c_append(*sum, bytes);
    }

    /// The CRC-32C of the bytes so far.
    pub(crate) fn crc32c(&self) -> u32 {
        *self.lock()
    }

    fn lock(&self) -> MutexGuard<'_, u32> {
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
