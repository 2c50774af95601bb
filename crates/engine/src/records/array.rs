//! ArrayRecord files read through their footer, in any store: the chunks after a damaged one,
//! which the streaming reader never reaches, are still there to be checked and converted.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ofconvert_arrayrecord::{IndexedReader, ReadAt};
use ofconvert_tfrecord::{Position as RecordAt, Resync};

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

/// The records of an ArrayRecord file from record `next` on, read through its footer: the
/// streaming reader stops at a damaged chunk, the footer says where the next ones are.
pub(crate) struct PastDamage {
    reader: IndexedReader<Stored>,
    /// The next record to read.
    next: u64,
    /// The file's size: where the records end.
    size: u64,
}

impl PastDamage {
    /// The records of the ArrayRecord file `path` after the chunk that holds record
    /// `damaged.index` (which the streaming reader failed to read, at `damaged.offset`), and
    /// where reading resumes; `None` when the footer cannot be read or no chunk follows.
    pub(crate) fn after(path: &Path, damaged: RecordAt) -> Option<(PastDamage, Resync)> {
        let Ok((Ok(reader), size)) = open_by_footer(path) else {
            return None;
        };
        let mut past = PastDamage {
            reader,
            next: damaged.index,
            size,
        };
        let resync = past.skip_chunk()?;
        Some((
            past,
            Resync {
                damaged: damaged.offset..resync.damaged.end,
                ..resync
            },
        ))
    }

    /// Where record `next` is: the offset of its chunk (the file's end after the last).
    pub(crate) fn position(&self) -> RecordAt {
        let offset = if self.next < self.reader.num_records() {
            self.reader
                .chunk(first_chunk_after(&self.reader, self.next) - 1)
                .1
        } else {
            self.size
        };
        RecordAt {
            offset,
            index: self.next,
        }
    }

    /// Reads record `next` into `buf`; `Ok(false)` after the last.
    pub(crate) fn read(&mut self, buf: &mut Vec<u8>) -> Result<bool, ofconvert_arrayrecord::Error> {
        if self.next >= self.reader.num_records() {
            return Ok(false);
        }
        self.reader.read_record(self.next, buf)?;
        self.next += 1;
        Ok(true)
    }

    /// Steps past the chunk holding record `next`, which failed to read: where reading
    /// resumes, `None` when no chunk follows.
    pub(crate) fn skip_chunk(&mut self) -> Option<Resync> {
        let damaged = self.position().offset;
        let after = first_chunk_after(&self.reader, self.next);
        if after >= self.reader.num_chunks() {
            return None;
        }
        let (records, offset) = self.reader.chunk(after);
        self.next = records.start;
        Some(Resync {
            index: records.start,
            damaged: damaged..offset,
            recovered: false,
        })
    }
}
