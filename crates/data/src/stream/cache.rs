//! A bounded cache of spans on local disk: each piece of a span read from a store kept as a
//! file under `spans/` in the cache directory, named after the object it came from as it was
//! then (URL, size, version) and its byte range, so that a changed object is never read
//! through what was fetched of its former content. The files least recently used go first
//! to keep the cache within its limit.
//!
//! Processes on one machine share it through files and a lock only: an entry is written
//! to a hidden temporary name and renamed into place while the lock (`spans/.lock`) is
//! held, with the entries evicted to make room for it, so the files never add up to more
//! than the limit. Reading takes no lock (a file renamed or removed under a reader stays
//! whole for it) and marks the entry used by its modification time. A temporary file found
//! under the lock is a writer's that died: it is removed. An entry of another length than
//! its range is never used.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::access::cache::cache_name;

/// Where a cache keeps its entries, under the cache directory.
const SPANS_DIR: &str = "spans";
/// The lock every write and eviction holds.
const LOCK_NAME: &str = ".lock";
/// How temporary names start.
const TEMP_PREFIX: &str = ".tmp-";

/// A cache of spans in `dir`, of `limit` bytes at most.
#[derive(Clone, Debug)]
pub struct SpanCache {
    dir: PathBuf,
    limit: u64,
}

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
            dir: cache_dir.join(SPANS_DIR),
            limit,
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
    pub fn get(&self, object: Object<'_>, range: &std::ops::Range<u64>) -> Option<Vec<u8>> {
        let path = self.dir.join(entry_name(object, range));
        let file = fs::File::open(&path).ok()?;
        let len = range.end - range.start;
        if file.metadata().ok()?.len() != len {
            return None;
        }
        let mut bytes = Vec::with_capacity(len as usize);
        io::Read::read_to_end(&mut &file, &mut bytes).ok()?;
        if bytes.len() as u64 != len {
            return None;
        }
        // Used now: the last to be evicted. A file another process removed meanwhile stays
        // whole for this reader.
        let _ = file.set_modified(SystemTime::now());
        Some(bytes)
    }

    /// The entry of `range` of `object`, opened and marked used, if the cache holds it whole.
    pub fn open(&self, object: Object<'_>, range: &std::ops::Range<u64>) -> Option<fs::File> {
        let file = fs::File::open(self.dir.join(entry_name(object, range))).ok()?;
        if file.metadata().ok()?.len() != range.end - range.start {
            return None;
        }
        let _ = file.set_modified(SystemTime::now());
        Some(file)
    }

    /// The bytes `sub` (counted from the entry's start) of the entry of `range` of
    /// `object`, if the cache holds it whole.
    pub fn get_range(
        &self,
        object: Object<'_>,
        range: &std::ops::Range<u64>,
        sub: &std::ops::Range<u64>,
    ) -> Option<Vec<u8>> {
        let file = self.open(object, range)?;
        read_at(&file, sub)
    }

    /// Keeps `bytes`, the range `range` of `object`, evicting the entries least recently
    /// used (and those of the object's former versions) to stay within the limit. Bytes
    /// larger than the limit are not kept.
    pub fn put(
        &self,
        object: Object<'_>,
        range: &std::ops::Range<u64>,
        bytes: &[u8],
    ) -> io::Result<()> {
        let len = bytes.len() as u64;
        if len > self.limit {
            return Ok(());
        }
        fs::create_dir_all(&self.dir)?;
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(LOCK_NAME))?;
        lock.lock()?;
        let name = entry_name(object, range);
        let written = self.make_room(object, &name, len).and_then(|()| {
            let temp = self.dir.join(format!("{TEMP_PREFIX}{name}"));
            let result = fs::File::create(&temp)
                .and_then(|mut file| file.write_all(bytes))
                .and_then(|()| fs::rename(&temp, self.dir.join(&name)));
            if result.is_err() {
                let _ = fs::remove_file(&temp);
            }
            result
        });
        let _ = lock.unlock();
        written
    }

    /// Removes what a dead writer left, the entries of `object`'s other versions and, least
    /// recently used first, entries until `len` more bytes fit. Called with the lock held.
    fn make_room(&self, object: Object<'_>, name: &str, len: u64) -> io::Result<()> {
        // Entries of the object start with the hash of its URL, those of this version with
        // the hash of its URL, size and version after it.
        let stale = format!("{}-", object_hash(object.url));
        let current = &name[..stale.len() + 17];
        let mut entries = Vec::new();
        for found in fs::read_dir(&self.dir)? {
            let found = found?;
            let file_name = found.file_name();
            let Some(file_name) = file_name.to_str() else {
                continue;
            };
            if file_name == LOCK_NAME || file_name == name {
                continue;
            }
            if file_name.starts_with(TEMP_PREFIX)
                || (file_name.starts_with(&stale) && !file_name.starts_with(current))
            {
                let _ = fs::remove_file(found.path());
                continue;
            }
            let Ok(meta) = found.metadata() else {
                continue;
            };
            let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            entries.push((used, meta.len(), found.path()));
        }
        let mut total: u64 = entries.iter().map(|(_, size, _)| size).sum();
        entries.sort_by_key(|(used, _, _)| *used);
        for (_, size, path) in entries {
            if total + len <= self.limit {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                total -= size;
            }
        }
        Ok(())
    }
}

/// The bytes `sub` of the opened entry `file`, if it holds them.
fn read_at(file: &fs::File, sub: &std::ops::Range<u64>) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut bytes = vec![0; usize::try_from(sub.end.checked_sub(sub.start)?).ok()?];
    let mut file = file;
    file.seek(SeekFrom::Start(sub.start)).ok()?;
    file.read_exact(&mut bytes).ok()?;
    Some(bytes)
}

/// The entry of `range` of `object`: a hash of its URL, then its name in the index cache's
/// way (a hash of URL, size and version, the object's own name), then the range.
fn entry_name(object: Object<'_>, range: &std::ops::Range<u64>) -> String {
    let suffix = format!(".{}-{}.span", range.start, range.end);
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

/// A cache limit: a whole number of bytes, or a number with a unit, SI (`kB`, `MB`, `GB`,
/// `TB`: powers of 1000) or IEC (`KiB`, `MiB`, `GiB`, `TiB`: powers of 1024), letters in any
/// case: `"20GB"`, `"512MiB"`, `"1.5 GB"`.
pub fn parse_limit(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "cache_limit={text:?} is not a size: give bytes (an int) or a number with a unit, \
             like \"20GB\" (SI, powers of 1000) or \"512MiB\" (IEC, powers of 1024)"
        )
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let mut bytes = whole
        .checked_mul(scale)
        .ok_or_else(|| format!("cache_limit={text:?} is too large"))?;
    if !fraction.is_empty() {
        let digits: u32 = fraction.len().min(18) as u32;
        let part: u64 = fraction[..digits as usize].parse().map_err(|_| bad())?;
        bytes += (u128::from(part) * u128::from(scale) / 10u128.pow(digits)) as u64;
    }
    if bytes == 0 {
        return Err(format!(
            "cache_limit={text:?}: a cache needs at least 1 byte"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Object<'static> = Object {
        url: "s3://b/a.tfrecord",
        size: 100,
        version: Some("etag:1"),
    };

    fn files(cache: &SpanCache) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(cache.dir())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name != LOCK_NAME)
            .collect();
        names.sort();
        names
    }

    fn size(cache: &SpanCache) -> u64 {
        fs::read_dir(cache.dir())
            .unwrap()
            .map(|entry| entry.unwrap().metadata().unwrap().len())
            .sum()
    }

    #[test]
    fn limits_read_in_si_and_iec_units_and_garbage_is_refused() {
        for (text, bytes) in [
            ("1048576", 1 << 20),
            ("20GB", 20_000_000_000),
            ("20 gb", 20_000_000_000),
            ("512MiB", 512 << 20),
            ("1.5GB", 1_500_000_000),
            ("2KiB", 2048),
            ("3kB", 3000),
            ("7B", 7),
        ] {
            assert_eq!(parse_limit(text), Ok(bytes), "{text}");
        }
        for text in [
            "",
            "GB",
            "20G",
            "-1",
            "1.2.3GB",
            "twenty",
            "0",
            "1e9",
            "99999999999TB",
        ] {
            let err = parse_limit(text).unwrap_err();
            assert!(err.contains("cache_limit"), "{text}: {err}");
        }
    }

    #[test]
    fn an_entry_is_named_after_the_object_as_it_was_and_the_range() {
        let name = entry_name(A, &(0..10));
        assert_eq!(name, entry_name(A, &(0..10)));
        assert!(name.ends_with("-a.tfrecord.0-10.span"), "{name}");
        for other in [
            entry_name(A, &(0..11)),
            entry_name(Object { size: 101, ..A }, &(0..10)),
            entry_name(
                Object {
                    version: Some("etag:2"),
                    ..A
                },
                &(0..10),
            ),
            entry_name(
                Object {
                    url: "s3://c/a.tfrecord",
                    ..A
                },
                &(0..10),
            ),
        ] {
            assert_ne!(name, other);
        }
    }

    #[test]
    fn the_least_recently_used_entries_go_to_keep_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SpanCache::new(dir.path(), 30);
        cache.put(A, &(0..10), &[1; 10]).unwrap();
        cache.put(A, &(10..20), &[2; 10]).unwrap();
        cache.put(A, &(20..30), &[3; 10]).unwrap();
        // Used last: the first one outlives the second.
        let past = SystemTime::now() - std::time::Duration::from_secs(60);
        for (at, range) in [(0, 10..20), (1, 20..30)] {
            let path = cache.dir().join(entry_name(A, &range));
            let file = fs::File::options().write(true).open(path).unwrap();
            file.set_modified(past + std::time::Duration::from_secs(at))
                .unwrap();
        }
        assert_eq!(cache.get(A, &(0..10)), Some(vec![1; 10]));
        cache.put(A, &(30..40), &[4; 10]).unwrap();
        assert_eq!(size(&cache), 30);
        assert_eq!(cache.get(A, &(10..20)), None);
        assert_eq!(cache.get(A, &(0..10)), Some(vec![1; 10]));
        assert_eq!(cache.get(A, &(20..30)), Some(vec![3; 10]));
        // Larger than the limit: not kept, nothing evicted for it.
        cache.put(A, &(0..40), &[5; 40]).unwrap();
        assert_eq!(size(&cache), 30);
        assert_eq!(cache.get(A, &(0..40)), None);
    }

    #[test]
    fn a_new_version_evicts_the_old_ones_entries_and_is_never_read_through_them() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SpanCache::new(dir.path(), 1000);
        let other = Object {
            url: "s3://b/other.tfrecord",
            ..A
        };
        cache.put(A, &(0..10), &[1; 10]).unwrap();
        cache.put(other, &(0..10), &[9; 10]).unwrap();
        let changed = Object {
            version: Some("etag:2"),
            ..A
        };
        assert_eq!(cache.get(changed, &(0..10)), None);
        cache.put(changed, &(0..10), &[2; 10]).unwrap();
        assert_eq!(cache.get(changed, &(0..10)), Some(vec![2; 10]));
        assert_eq!(cache.get(A, &(0..10)), None);
        assert_eq!(cache.get(other, &(0..10)), Some(vec![9; 10]));
        assert_eq!(files(&cache).len(), 2);
    }

    #[test]
    fn a_dead_writers_temporary_file_and_an_entry_of_the_wrong_length_are_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SpanCache::new(dir.path(), 1000);
        cache.put(A, &(0..10), &[1; 10]).unwrap();
        let name = entry_name(A, &(10..20));
        fs::write(cache.dir().join(format!("{TEMP_PREFIX}{name}")), [7; 4]).unwrap();
        fs::write(cache.dir().join(&name), [7; 4]).unwrap();
        assert_eq!(cache.get(A, &(10..20)), None);
        assert_eq!(cache.get_range(A, &(10..20), &(0..2)), None);
        cache
            .put(A, &(10..20), &[2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
            .unwrap();
        assert_eq!(cache.get_range(A, &(10..20), &(2..5)), Some(vec![4, 5, 6]));
        assert_eq!(cache.get_range(A, &(10..20), &(8..11)), None);
        assert_eq!(cache.get(A, &(10..20)).map(|b| b.len()), Some(10));
        assert_eq!(files(&cache), [entry_name(A, &(0..10)), name]);
    }
}
