//! ArrayRecord files read through their footer, in any store: the chunks after a damaged one,
//! which the streaming reader never reaches, are still there to be checked and converted.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ofconvert_arrayrecord::{IndexedReader, ReadAt};
use ofconvert_tfrecord::{Position as RecordAt, Resync};

use crate::storage::object::storage_for;
use crate::storage::Storage;

/// Bytes a read of a [`StoredFile`] asks for at least: a small chunk's header and data, or
/// the postscript's, in one request.
const READ_AHEAD: u64 = 4 << 10;

/// A file, local or in a store, read at any offset (an ArrayRecord file opened by its footer):
/// a ranged read of at least 4 KiB where the bytes of the last one do not hold what is asked
/// for, so that a chunk's header and its data, or the postscript's, cost one request, and a
/// larger chunk's data is not asked for again where it held some.
pub struct StoredFile {
    storage: Arc<dyn Storage>,
    path: PathBuf,
    size: u64,
    /// The version of the file its bytes must be of, when known (`Storage::read_ranges`).
    version: Option<String>,
    /// The bytes of the last read, and where they start.
    ahead: Mutex<(u64, Vec<u8>)>,
}

impl StoredFile {
    /// The file `path` of `storage`, `size` bytes long.
    pub fn new(storage: Arc<dyn Storage>, path: PathBuf, size: u64) -> StoredFile {
        StoredFile {
            storage,
            path,
            size,
            version: None,
            ahead: Mutex::new((0, Vec::new())),
        }
    }

    /// The same file, read only as it was at `version` (as `Storage::stat` gave it): a file
    /// replaced since fails its reads rather than give bytes of another file.
    pub fn of_version(self, version: Option<String>) -> StoredFile {
        StoredFile { version, ..self }
    }

    /// The same file, holding `bytes` read from its offset `start`: reads within them ask
    /// for nothing (until a read elsewhere replaces them).
    pub fn holding(self, start: u64, bytes: Vec<u8>) -> StoredFile {
        StoredFile {
            ahead: Mutex::new((start, bytes)),
            ..self
        }
    }
}

impl ReadAt for StoredFile {
    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&end| end <= self.size)
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        let mut ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
        let (start, bytes) = &mut *ahead;
        // What the last read holds of the start.
        if let Some(held) = offset
            .checked_sub(*start)
            .and_then(|from| bytes.get(from as usize..))
            .filter(|held| !held.is_empty())
        {
            let take = held.len().min(buf.len());
            buf[..take].copy_from_slice(&held[..take]);
            buf = &mut buf[take..];
            offset += take as u64;
        }
        if buf.is_empty() {
            return Ok(());
        }
        let range = offset..end.max(offset.saturating_add(READ_AHEAD).min(self.size));
        bytes.clear();
        *start = offset;
        let read = self.storage.read_ranges(
            &self.path,
            self.version.as_deref(),
            std::slice::from_ref(&range),
            bytes,
        );
        match read {
            Ok(()) if bytes.len() >= buf.len() => {
                buf.copy_from_slice(&bytes[..buf.len()]);
                Ok(())
            }
            failed => {
                bytes.clear();
                failed.and(Err(io::ErrorKind::UnexpectedEof.into()))
            }
        }
    }
}

/// Opens the ArrayRecord file `path` (a local path or a URL) by its footer; with the file's
/// size.
pub(crate) fn open_by_footer(
    path: &Path,
) -> io::Result<(
    Result<IndexedReader<StoredFile>, ofconvert_arrayrecord::Error>,
    u64,
)> {
    let (storage, path) = storage_for(path)?;
    let (size, version) = storage
        .stat(&path)?
        .ok_or_else(|| io::Error::other("not a file"))?;
    let opened = IndexedReader::open(StoredFile::new(storage, path, size).of_version(version));
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
    reader: IndexedReader<StoredFile>,
    /// The next record to read.
    next: u64,
    /// The file's size: where the records end.
    size: u64,
}

impl PastDamage {
    /// The records of the ArrayRecord file `path` past the damage the streaming reader met at
    /// offset `damaged.offset`, having given out the records before `damaged.index`: from the
    /// first chunk the footer lists past the damage (damage in a chunk of records loses that
    /// chunk's records; damage between them, in padding, loses none), and where reading
    /// resumes; `None` when the footer cannot be read or lists no chunk past the damage.
    pub(crate) fn after(path: &Path, damaged: RecordAt) -> Option<(PastDamage, Resync)> {
        let Ok((Ok(reader), size)) = open_by_footer(path) else {
            return None;
        };
        // A chunk that begins where the damage is, is the damaged one.
        let mut after = reader.first_chunk_from(damaged.offset.saturating_add(1));
        while after < reader.num_chunks() && reader.chunk(after).0.start < damaged.index {
            after += 1;
        }
        if after >= reader.num_chunks() {
            return None;
        }
        let (records, offset) = reader.chunk(after);
        let past = PastDamage {
            reader,
            next: records.start,
            size,
        };
        let resync = Resync {
            index: records.start,
            damaged: damaged.offset..offset,
            recovered: false,
        };
        Some((past, resync))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;

    #[test]
    fn reads_at_any_offset_give_the_files_bytes_whatever_the_last_read_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = StoredFile::new(Arc::new(LocalFs), path, bytes.len() as u64);
        // Within the last read, across its end, before its start, far on, empty, to the end.
        for (offset, len) in [
            (0, 64),
            (64, 100),
            (4000, 200),
            (30, 10),
            (12_000, 7000),
            (19_000, 1000),
            (5, 0),
            (19_999, 1),
        ] {
            let mut buf = vec![0; len];
            file.read_exact_at(&mut buf, offset as u64).unwrap();
            assert_eq!(buf, &bytes[offset..offset + len], "{offset}+{len}");
        }
        for (offset, len) in [(19_990, 11), (20_001, 0), (u64::MAX, 1)] {
            let mut buf = vec![0; len];
            let err = file.read_exact_at(&mut buf, offset).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{offset}+{len}");
        }
        let mut buf = vec![0; 8];
        file.read_exact_at(&mut buf, 100).unwrap();
        assert_eq!(buf, &bytes[100..108]);

        // Bytes it holds are what it reads: here, a stand-in for the file's, told apart.
        let gone = dir.path().join("gone");
        let held = StoredFile::new(Arc::new(LocalFs), gone, 20_000).holding(10, vec![7; 90]);
        let mut buf = vec![0; 50];
        held.read_exact_at(&mut buf, 40).unwrap();
        assert_eq!(buf, [7; 50]);
        assert!(
            held.read_exact_at(&mut buf, 60).is_err(),
            "past them, the file is read"
        );
    }
}
