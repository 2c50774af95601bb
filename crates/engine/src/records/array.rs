//! ArrayRecord files read through their footer, in any store: the chunks after a damaged one,
//! which the streaming reader never reaches, are still there to be checked.

use std::io;
use std::path::Path;

use ofconvert_arrayrecord::{IndexedReader, ReadAt};

use crate::storage::Storage;

/// A file in a store, read at any offset: one ranged read a call.
pub(crate) struct Stored<'a> {
    storage: &'a dyn Storage,
    path: &'a Path,
    size: u64,
}

impl ReadAt for Stored<'_> {
    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut read = Vec::with_capacity(buf.len());
        let range = offset..offset + buf.len() as u64;
        self.storage
            .read_ranges(self.path, std::slice::from_ref(&range), &mut read)?;
        if read.len() != buf.len() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.copy_from_slice(&read);
        Ok(())
    }
}

/// Opens the ArrayRecord file `path` in `storage` by its footer.
pub(crate) fn open_by_footer<'a>(
    storage: &'a dyn Storage,
    path: &'a Path,
) -> io::Result<Result<IndexedReader<Stored<'a>>, ofconvert_arrayrecord::Error>> {
    let size = storage
        .size(path)?
        .ok_or_else(|| io::Error::other("not a file"))?;
    Ok(IndexedReader::open(Stored {
        storage,
        path,
        size,
    }))
}
