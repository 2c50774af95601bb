//! A bounded cache of spans on local disk: bytes read of objects in a store kept as files
//! under `spans/` in the cache directory, each named after its object as it was then (URL,
//! size, version) and its byte range, so that a changed object is never read through what
//! was fetched of its former content. The files least recently used go first to keep the
//! cache within its limit, which counts the bytes kept (an entry's trailer, like the file
//! system's own blocks, is not counted).
//!
//! An entry holds a piece of a span that a reader fetched, or a segment of an object (all of
//! it, or [`SEGMENT_BYTES`] of it) that an index pass kept as it streamed the object
//! ([`Keeping`](keeping::Keeping)): a read is served by its own entry, else by the segments
//! it lies in, so that a cold start reads a dataset from its store once, index pass included.
//!
//! Processes on one machine share it through files and locks only. The first to miss an
//! entry takes the entry's lock ([`EntryLock`]), fetches and keeps it, while the others wait
//! for the lock and then read what it kept (or fetch themselves if nothing was: it died, or
//! the bytes do not fit). An entry is written to a hidden temporary name, synced, renamed
//! into place and its directory synced ([`entry`]); room is made for it under the room's
//! lock ([`room`]), which keeps a running count of the bytes kept, so that the files never
//! add up to more than the limit and the directory is read once a process (at its first
//! put, which removes what writers killed before left), then only when the count says an
//! entry would not fit. Entries of an object's other versions go when an entry of a new one
//! comes. Reading takes no lock: the blocks of an entry a read lies in are checked against
//! the hashes of its trailer the first time this process reads them, and an entry cut short
//! or damaged is removed, never read, and fetched again; a file renamed or removed under a
//! reader stays whole for it; reading marks the entry used by its modification time.

mod entry;
mod keeping;
mod limit;
mod room;
#[cfg(test)]
mod tests;
mod writer;

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::access::cache::cache_name;
use crate::access::held::Held;
use crate::access::locks::EntryLock;
use room::{Room, ENTRY_SUFFIX, TEMP_PREFIX};
use writer::EntryWriter;

pub use limit::parse_limit;

/// Where a cache keeps its entries, under the cache directory.
const SPANS_DIR: &str = "spans";
/// Where the version of each object whose entries are kept is noted, under `spans/`.
const VERSIONS_DIR: &str = ".versions";
/// Bytes of the segments an index pass keeps an object in (one, the whole object, when it
/// is smaller): large, so that few pieces of spans lie across two, each read out of its
/// segment where it lies.
#[cfg(not(test))]
const SEGMENT_BYTES: u64 = 64 << 20;
/// Small in the tests, for objects of a few segments.
#[cfg(test)]
const SEGMENT_BYTES: u64 = 16;
/// When a put must evict, it frees this part of the limit more than it needs, so that the
/// puts after it fit without reading the directory again.
const SPARE_PART: u64 = 64;

/// A cache of spans in `dir`, of `limit` bytes at most.
#[derive(Clone, Debug)]
pub struct SpanCache {
    cache_dir: PathBuf,
    dir: PathBuf,
    limit: u64,
    shared: Arc<Shared>,
}

/// What the copies of a cache in one process share.
#[derive(Debug, Default)]
struct Shared {
    /// The blocks of each entry this process found whole, one bit each: not checked again.
    checked: Mutex<HashMap<EntryFile, Vec<u64>>>,
    /// Objects at a version (the start of their entries' names) whose other versions'
    /// entries this process has seen to.
    versions_seen: Mutex<HashSet<String>>,
    /// Entries that could not be kept or locked, and why the first could not.
    failures: AtomicU64,
    first_failure: Mutex<Option<String>>,
    reported: AtomicBool,
    /// Whether this process counted the room.
    counted: AtomicBool,
    /// Reads of the directory to count its room.
    #[cfg(test)]
    counts: AtomicU64,
}

/// An entry's file: a hash of its name, and which file it is ([`identity`]).
type EntryFile = (u64, (u64, u64));

/// An object of a store as it was when its index was found: what a span's entry is named after.
#[derive(Clone, Copy, Debug)]
pub struct Object<'a> {
    /// Its URL.
    pub url: &'a str,
    /// Its size in bytes.
    pub size: u64,
    /// Its version (ETag), where the store gives one.
    pub version: Option<&'a str>,
}

impl SpanCache {
    /// A cache of `limit` bytes in `spans/` under the cache directory `cache_dir`.
    pub fn new(cache_dir: &Path, limit: u64) -> SpanCache {
        SpanCache {
            cache_dir: cache_dir.to_path_buf(),
            dir: cache_dir.join(SPANS_DIR),
            limit,
            shared: Arc::default(),
        }
    }

    /// Its limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Where its entries are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The bytes `range` of `object`, if the cache holds them whole.
    pub fn get(&self, object: Object<'_>, range: &Range<u64>) -> Option<Vec<u8>> {
        self.hold(object, range).map(|held| held.to_vec())
    }

    /// The bytes `range` of `object`, if the cache holds them whole: mapped where they lie
    /// in their own entry or in the segment that holds them, or copied out of the segments
    /// they lie across.
    pub(crate) fn hold(&self, object: Object<'_>, range: &Range<u64>) -> Option<Held> {
        if range.start > range.end || range.end > object.size {
            return None;
        }
        let len = range.end - range.start;
        if let Some(held) = self.hold_entry(object, range, 0..len) {
            return Some(held);
        }
        let first = segment(object.size, range.start);
        if first == *range {
            return None;
        }
        if range.end <= first.end {
            let sub = range.start - first.start..range.end - first.start;
            return self.hold_entry(object, &first, sub);
        }
        let mut bytes = Vec::with_capacity(usize::try_from(len).ok()?);
        let mut at = range.start;
        while at < range.end {
            let segment = segment(object.size, at);
            let end = range.end.min(segment.end);
            let sub = at - segment.start..end - segment.start;
            bytes.extend_from_slice(&self.hold_entry(object, &segment, sub)?);
            at = end;
        }
        Some(Held::Fetched(bytes))
    }

    /// The bytes `sub` (counted from the entry's start) of the entry of `range` of `object`,
    /// if they are whole: their blocks checked against its trailer the first time this
    /// process reads them, the entry removed if one is not.
    fn hold_entry(&self, object: Object<'_>, range: &Range<u64>, sub: Range<u64>) -> Option<Held> {
        let name = entry_name(object, range);
        let path = self.dir.join(&name);
        let file = fs::File::open(&path).ok()?;
        let meta = file.metadata().ok()?;
        let len = range.end - range.start;
        if entry::file_len(len) != Some(meta.len()) {
            self.remove_bad(&path, &meta);
            return None;
        }
        // SAFETY: only read. An entry is written whole under a temporary name and renamed into
        // place, never changed after; one evicted or replaced meanwhile stays whole for this
        // mapping.
        let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        if !entry::ends_whole(&map, len) || !self.check_blocks(&name, &meta, &map, len, &sub) {
            self.remove_bad(&path, &meta);
            return None;
        }
        // Used now: the last to be evicted.
        let _ = file.set_modified(SystemTime::now());
        Some(Held::Mapped(map, sub.start as usize..sub.end as usize))
    }

    /// Whether the blocks of the entry `name` (the file `meta`, mapped as `map`, of `len`
    /// bytes) that `sub` lies in are whole: those this process has not found whole before
    /// are hashed.
    fn check_blocks(
        &self,
        name: &str,
        meta: &fs::Metadata,
        map: &[u8],
        len: u64,
        sub: &Range<u64>,
    ) -> bool {
        let key = (xxhash_rust::xxh3::xxh3_64(name.as_bytes()), identity(meta));
        let is_set =
            |bits: &[u64], block: u64| bits[(block / 64) as usize] & (1 << (block % 64)) != 0;
        let unchecked: Vec<u64> = {
            let mut checked = lock(&self.shared.checked);
            let words = entry::blocks(&(0..len)).end.div_ceil(64) as usize;
            let bits = checked.entry(key).or_insert_with(|| vec![0; words]);
            entry::blocks(sub)
                .filter(|&block| !is_set(bits, block))
                .collect()
        };
        // Hashed without the lock: other threads read other entries meanwhile.
        if !unchecked
            .iter()
            .all(|&block| entry::block_whole(map, len, block))
        {
            return false;
        }
        if let Some(bits) = lock(&self.shared.checked).get_mut(&key) {
            for block in unchecked {
                bits[(block / 64) as usize] |= 1 << (block % 64);
            }
        }
        true
    }

    /// Whether the entry of `range` of `object` is there, at its length (not read).
    fn holds(&self, object: Object<'_>, range: &Range<u64>) -> bool {
        fs::metadata(self.dir.join(entry_name(object, range)))
            .is_ok_and(|meta| entry::file_len(range.end - range.start) == Some(meta.len()))
    }

    /// Removes the entry at `path`, found cut short or damaged, if it is still the file
    /// `seen` (a whole one may have been renamed into its place since).
    fn remove_bad(&self, path: &Path, seen: &fs::Metadata) {
        let Ok(room) = Room::lock(&self.dir) else {
            return;
        };
        let same = fs::metadata(path).is_ok_and(|now| identity(&now) == identity(seen));
        if same && fs::remove_file(path).is_ok() {
            room.give_back(entry::counted(seen.len()));
        }
    }

    /// The bytes `range` of `object`: held by the cache, else fetched by `fetch` and kept,
    /// once between the processes of the machine: the first to miss them takes the entry's
    /// lock, fetches and keeps them while the others wait for it, then read what it kept
    /// (or fetch themselves if it kept nothing). A failure to lock or keep does not fail the
    /// read: it is counted and told once ([`failure_to_report`](SpanCache::failure_to_report)).
    pub(crate) fn hold_or_fetch<E>(
        &self,
        object: Object<'_>,
        range: &Range<u64>,
        fetch: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<Held, E> {
        if let Some(held) = self.hold(object, range) {
            return Ok(held);
        }
        let lock = EntryLock::take(&self.cache_dir, &entry_name(object, range));
        match &lock {
            Ok(_) => {
                if let Some(held) = self.hold(object, range) {
                    return Ok(held);
                }
            }
            Err(err) => self.failed(err),
        }
        let bytes = fetch()?;
        if let Err(err) = self.put(object, range, &bytes) {
            self.failed(&err);
        }
        drop(lock);
        Ok(Held::Fetched(bytes))
    }

    /// Keeps `bytes`, the range `range` of `object`, evicting the entries least recently
    /// used to stay within the limit (and those of the object's other versions). Bytes larger
    /// than the limit, or for which writers of other entries leave no room, are not kept.
    pub fn put(&self, object: Object<'_>, range: &Range<u64>, bytes: &[u8]) -> io::Result<()> {
        if bytes.len() as u64 != range.end - range.start {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} bytes for the range {}..{}",
                    bytes.len(),
                    range.start,
                    range.end
                ),
            ));
        }
        let Some(mut writer) = self.begin(object, range)? else {
            return Ok(());
        };
        writer.write(bytes)?;
        writer.publish()
    }

    /// Room made and reserved for the entry of `range` of `object`, and a writer of it;
    /// `None` when it cannot fit (see [`put`](SpanCache::put)).
    fn begin(&self, object: Object<'_>, range: &Range<u64>) -> io::Result<Option<EntryWriter>> {
        let len = range.end - range.start;
        if len > self.limit {
            return Ok(None);
        }
        let name = entry_name(object, range);
        let room = Room::lock(&self.dir)?;
        self.forget_other_versions(object, &name, &room)?;
        // Counted again at a process's first put (what writers killed before left goes, the
        // count comes back to what is there), then only when the count says it does not fit.
        let first = !self.shared.counted.swap(true, Ordering::Relaxed);
        let total = match room.total() {
            Some(total) if !first && total.saturating_add(len) <= self.limit => total,
            _ => self.make_room(&room, len)?,
        };
        if total + len > self.limit {
            return Ok(None);
        }
        // Counted before its file is made: the count is never below what is there.
        room.set_total(total + len)?;
        let temp = self.dir.join(format!("{TEMP_PREFIX}{name}"));
        match reserve(&temp, len) {
            Ok(Some(file)) => Ok(Some(EntryWriter::new(&self.dir, name, temp, file, len))),
            other => {
                room.give_back(len);
                other.map(|_| None)
            }
        }
    }

    /// Counts the room (removing what dead writers left) and, if `len` more bytes do not
    /// fit, evicts entries, least recently used first, until they fit with a spare part of
    /// the limit free. Returns the bytes counted then. Called with the room's lock held.
    fn make_room(&self, room: &Room, len: u64) -> io::Result<u64> {
        #[cfg(test)]
        self.shared.counts.fetch_add(1, Ordering::Relaxed);
        let counted = room.count(&self.dir)?;
        let mut total = counted.total;
        if total.saturating_add(len) > self.limit {
            let spare = (self.limit / SPARE_PART).min(self.limit - len);
            for (_, size, path) in counted.entries {
                if total + len <= self.limit - spare {
                    break;
                }
                if fs::remove_file(&path).is_ok() {
                    total -= size;
                }
            }
        }
        room.set_total(total)?;
        Ok(total)
    }

    /// Removes the entries of `object`'s other versions, the first time this process keeps
    /// one of its entries (`name`) and a version other than its own is noted for it. Called
    /// with the room's lock held.
    fn forget_other_versions(&self, object: Object<'_>, name: &str, room: &Room) -> io::Result<()> {
        // Entries of the object start with the hash of its URL, those of this version with
        // the hash of its URL, size and version after it.
        let of_object = format!("{}-", object_hash(object.url));
        let of_version = &name[..of_object.len() + 17];
        if lock(&self.shared.versions_seen).contains(of_version) {
            return Ok(());
        }
        let versions = self.dir.join(VERSIONS_DIR);
        let noted = versions.join(&of_object[..of_object.len() - 1]);
        match fs::read(&noted) {
            Ok(version) if version == of_version.as_bytes() => {}
            found => {
                if found.is_ok() {
                    for entry in fs::read_dir(&self.dir)? {
                        let entry = entry?;
                        let file_name = entry.file_name();
                        let file_name = file_name.to_string_lossy();
                        if file_name.starts_with(&of_object)
                            && !file_name.starts_with(of_version)
                            && file_name.ends_with(ENTRY_SUFFIX)
                        {
                            let len = entry.metadata().map(|meta| meta.len()).unwrap_or(0);
                            if fs::remove_file(entry.path()).is_ok() {
                                room.give_back(entry::counted(len));
                            }
                        }
                    }
                }
                fs::create_dir_all(&versions)?;
                fs::write(&noted, of_version)?;
            }
        }
        lock(&self.shared.versions_seen).insert(of_version.to_string());
        Ok(())
    }

    /// Counts a failure to keep or lock an entry.
    pub(crate) fn failed(&self, err: &io::Error) {
        lock(&self.shared.first_failure).get_or_insert_with(|| err.to_string());
        self.shared.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// What to tell of the entries that could not be kept (or locked), the first time this
    /// is asked after one could not: reads go on from the store, fetching what the cache
    /// would have held. `None` when all were kept, or once it was told.
    pub fn failure_to_report(&self) -> Option<String> {
        if self.shared.failures.load(Ordering::Relaxed) == 0
            || self.shared.reported.swap(true, Ordering::Relaxed)
        {
            return None;
        }
        let first = lock(&self.shared.first_failure).clone().unwrap_or_default();
        Some(format!(
            "the cache of spans in {} could not keep what was read ({first}); reading goes on \
             from the store, which is asked again for what the cache would have held",
            self.dir.display()
        ))
    }
}

/// Makes the temporary file `temp` of an entry of `len` bytes, locked (its writer lives) and
/// as long as the entry will be; `None` when a live writer has it. What a dead writer left
/// there goes. Called with the room's lock held.
fn reserve(temp: &Path, len: u64) -> io::Result<Option<fs::File>> {
    for _ in 0..2 {
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(temp)
        {
            Ok(file) => {
                let made = file.lock().and_then(|()| {
                    let file_len = entry::file_len(len).ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::InvalidInput,
                            format!("an entry of {len} bytes would pass a file's largest length"),
                        )
                    })?;
                    file.set_len(file_len)
                });
                return match made {
                    Ok(()) => Ok(Some(file)),
                    Err(err) => {
                        let _ = fs::remove_file(temp);
                        Err(err)
                    }
                };
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                if room::writer_lives(temp) {
                    return Ok(None);
                }
                fs::remove_file(temp)?;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(None)
}

/// The segment of an object of `size` bytes that its byte `at` lies in.
fn segment(size: u64, at: u64) -> Range<u64> {
    let start = at / SEGMENT_BYTES * SEGMENT_BYTES;
    start..(start + SEGMENT_BYTES).min(size)
}

/// The entry of `range` of `object`: a hash of its URL, then its name in the index cache's
/// way (a hash of URL, size and version, the object's own name cut short), then the range.
pub(crate) fn entry_name(object: Object<'_>, range: &Range<u64>) -> String {
    let suffix = format!(".{}-{}{ENTRY_SUFFIX}", range.start, range.end);
    format!(
        "{}-{}",
        object_hash(object.url),
        cache_name(object.url, object.size, object.version, &suffix)
    )
}

/// A hash of `url` (FNV-1a: stable across processes and versions).
fn object_hash(url: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in url.as_bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Which file `meta` is: its device and inode (where files have them), else its length and
/// modification time.
fn identity(meta: &fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let modified = meta
            .modified()
            .ok()
            .and_then(|at| at.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |since| since.as_nanos() as u64);
        (meta.len(), modified)
    }
}

/// `mutex` locked; a thread that panicked holding it left nothing half-done in these sets.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
