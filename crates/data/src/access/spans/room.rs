//! The room of the cache of spans: the lock its writers take (`.lock`), which also keeps a
//! running count of the bytes of its entries and of those being written, so that making room
//! for an entry reads the directory only when the count says the entry would not fit (or
//! when there is no count yet). Only then are the entries counted again, dead writers'
//! temporary files removed, and the least recently used entries evicted, with a little more
//! room made than the entry needs so that the next entries fit without a count.
//!
//! The count never falls below what the directory holds: an entry is counted before its
//! temporary file is made, and uncounted after its file is removed. A writer that dies
//! leaves it counted (more than there is), which at worst brings the next count early.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::entry::counted;

/// The lock every writer holds while it reserves, publishes or removes an entry.
pub(crate) const LOCK_NAME: &str = ".lock";
/// How temporary names start.
pub(crate) const TEMP_PREFIX: &str = ".tmp-";
/// How entries' names end.
pub(crate) const ENTRY_SUFFIX: &str = ".span";
/// What starts the count kept in the lock's file.
const COUNT_MARK: &[u8; 8] = b"ofroom\x00\x01";

/// The room's lock, held until dropped.
pub(crate) struct Room {
    file: File,
}

/// What a count of the room found.
pub(crate) struct Counted {
    /// The bytes of the entries and of the temporary files being written.
    pub(crate) total: u64,
    /// The entries, least recently used first: when, their bytes, where.
    pub(crate) entries: Vec<(SystemTime, u64, PathBuf)>,
}

impl Room {
    /// Takes the lock of the room of the cache whose entries are in `dir`.
    pub(crate) fn lock(dir: &Path) -> io::Result<Room> {
        fs::create_dir_all(dir)?;
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(dir.join(LOCK_NAME))?;
        file.lock()?;
        Ok(Room { file })
    }

    /// The bytes counted, if a count is kept.
    pub(crate) fn total(&self) -> Option<u64> {
        let mut kept = [0; 16];
        let mut file = &self.file;
        file.seek(SeekFrom::Start(0)).ok()?;
        file.read_exact(&mut kept).ok()?;
        (&kept[..8] == COUNT_MARK).then(|| u64::from_le_bytes(kept[8..].try_into().unwrap()))
    }

    /// Keeps `total` as the bytes counted.
    pub(crate) fn set_total(&self, total: u64) -> io::Result<()> {
        let mut kept = [0; 16];
        kept[..8].copy_from_slice(COUNT_MARK);
        kept[8..].copy_from_slice(&total.to_le_bytes());
        let mut file = &self.file;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&kept)
    }

    /// Uncounts `len` bytes, whose file was removed.
    pub(crate) fn give_back(&self, len: u64) {
        if let Some(total) = self.total() {
            let _ = self.set_total(total.saturating_sub(len));
        }
    }

    /// Counts the entries in `dir` and the temporary files live writers are writing; those
    /// of dead writers (whose lock went with them) are removed.
    pub(crate) fn count(&self, dir: &Path) -> io::Result<Counted> {
        let mut counted_now = Counted {
            total: 0,
            entries: Vec::new(),
        };
        for found in fs::read_dir(dir)? {
            let found = found?;
            let file_name = found.file_name();
            let Some(file_name) = file_name.to_str() else {
                continue;
            };
            let Ok(meta) = found.metadata() else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            if file_name.starts_with(TEMP_PREFIX) {
                if writer_lives(&found.path()) {
                    counted_now.total += counted(meta.len());
                } else {
                    let _ = fs::remove_file(found.path());
                }
                continue;
            }
            if !file_name.ends_with(ENTRY_SUFFIX) {
                continue;
            }
            let size = counted(meta.len());
            let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            counted_now.total += size;
            counted_now.entries.push((used, size, found.path()));
        }
        counted_now.entries.sort_by_key(|(used, _, _)| *used);
        Ok(counted_now)
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Whether a writer holds the temporary file at `path` (locked while it is written).
pub(crate) fn writer_lives(path: &Path) -> bool {
    match File::open(path) {
        Ok(file) => match file.try_lock() {
            Ok(()) => {
                let _ = file.unlock();
                false
            }
            Err(_) => true,
        },
        // Gone meanwhile: nothing to count or remove.
        Err(_) => true,
    }
}
