//! ArrayRecord files read through their footer, in any store: the chunks after a damaged one,
//! which the streaming reader never reaches, are still there to be checked and converted.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ofconvert_arrayrecord::{IndexedReader, ReadAt};

use crate::storage::object::storage_for;
use crate::storage::Storage;

/// A file in a store, read at any offset: one ranged read a call.
pub(crate) struct Stored {
    storage: Arc<dyn Storage>,
    path: PathBuf,
    size: u64,
}

impl ReadAt for Stored {
    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut read = Vec::with_capacity(buf.len());
        let range = offset..offset + buf.len() as u64;
        self.storage
            .read_ranges(&self.path, std::slice::from_ref(&range), &mut read)?;
        if read.len() != buf.len() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.copy_from_slice(&read);
        Ok(())
    }
}

/// Opens the ArrayRecord file `path` (a local path or a URL) by its footer; with the file's
/// size.
pub(crate) fn open_by_footer(
    path: &Path,
) -> io::Result<(
    Result<IndexedReader<Stored>, ofconvert_arrayrecord::Error>,
    u64,
)> {
    let (storage, path) = storage_for(path)?;
    let size = storage
        .size(&path)?
        .ok_or_else(|| io::Error::other("not a file"))?;
    let opened = IndexedReader::open(Stored {
        storage,
        path,
        size,
    });
    Ok((opened, size))
}

/// The first chunk of `reader` whose records all come after record `index` (the number of
/// chunks when none does).
pub(crate) fn first_chunk_after<S: ReadAt>(reader: &IndexedReader<S>, index: u64) -> usize {
    let (mut low, mut high) = (0, reader.num_chunks());
    while low < high {
        let middle = low + (high - low) / 2;
        if reader.chunk(middle).0.start <= index {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}
