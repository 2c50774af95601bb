//! The storage of inputs that live in several places (two buckets, a bucket and the local
//! disk): every call goes to the storage of the path it names.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::storage_for;
use crate::holder::LockHolder;
use crate::{Durability, Listing, LockError, Opened, OutputFile, OutputLock, RangeRead, Storage};

/// Each path served by its own storage, as [`storage_for`] finds it.
#[derive(Debug)]
pub struct ByPath;

impl Storage for ByPath {
    fn list(&self, root: &Path) -> io::Result<Listing> {
        let (storage, root) = storage_for(root)?;
        storage.list(&root)
    }

    fn open(&self, path: &Path, offset: u64) -> io::Result<Opened> {
        let (storage, path) = storage_for(path)?;
        storage.open(&path, offset)
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        let (storage, path) = storage_for(path)?;
        storage.read(&path)
    }

    fn read_ranges(
        &self,
        path: &Path,
        version: Option<&str>,
        ranges: &[Range<u64>],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let (storage, path) = storage_for(path)?;
        storage.read_ranges(&path, version, ranges, out)
    }

    fn read_each(
        &self,
        requests: &[RangeRead<'_>],
        at_once: usize,
        out: &mut [Vec<u8>],
    ) -> Vec<io::Result<()>> {
        read_each_anywhere(requests, at_once, out)
    }

    fn size(&self, path: &Path) -> io::Result<Option<u64>> {
        let (storage, path) = storage_for(path)?;
        storage.size(&path)
    }

    fn version(&self, path: &Path) -> io::Result<Option<String>> {
        let (storage, path) = storage_for(path)?;
        storage.version(&path)
    }

    fn stat(&self, path: &Path) -> io::Result<Option<(u64, Option<String>)>> {
        let (storage, path) = storage_for(path)?;
        storage.stat(&path)
    }

    fn file_names(&self, dir: &Path) -> io::Result<Vec<String>> {
        let (storage, dir) = storage_for(dir)?;
        storage.file_names(&dir)
    }

    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        let (storage, dir) = storage_for(dir)?;
        storage.entries(&dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let (storage, dir) = storage_for(dir)?;
        storage.create_dir_all(&dir)
    }

    fn create(&self, path: &Path, durability: Durability) -> io::Result<Box<dyn OutputFile>> {
        let (storage, path) = storage_for(path)?;
        storage.create(&path, durability)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (storage, from) = storage_for(from)?;
        storage.rename(&from, to)
    }

    fn renames_cheaply(&self) -> bool {
        // Not for every path: reads are prefetched and writes published as a store's are.
        false
    }

    fn put_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let (storage, path) = storage_for(path)?;
        storage.put_new(&path, bytes)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let (storage, dir) = storage_for(dir)?;
        storage.sync_dir(&dir)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let (storage, path) = storage_for(path)?;
        storage.remove(&path)
    }

    fn remove_dir_if_empty(&self, dir: &Path) {
        if let Ok((storage, dir)) = storage_for(dir) {
            storage.remove_dir_if_empty(&dir);
        }
    }

    fn lock(&self, dir: &Path) -> Result<Box<dyn OutputLock>, LockError> {
        let (storage, dir) = storage_for(dir).map_err(LockError::Io)?;
        storage.lock(&dir)
    }

    fn lock_holder(&self, dir: &Path) -> io::Result<Option<LockHolder>> {
        let (storage, dir) = storage_for(dir)?;
        storage.lock_holder(&dir)
    }

    fn break_lock(&self, holder: &LockHolder) -> io::Result<()> {
        let (storage, _) = storage_for(&holder.lock)?;
        storage.break_lock(holder)
    }
}

/// [`Storage::read_each`] of requests for files anywhere: each path read through its own
/// storage ([`storage_for`]), the requests of one storage side by side, one storage after
/// another (a batch of records in two buckets waits for the first bucket's before it asks the
/// second).
pub fn read_each_anywhere(
    requests: &[RangeRead<'_>],
    at_once: usize,
    out: &mut [Vec<u8>],
) -> Vec<io::Result<()>> {
    /// The requests of one storage: their places in `requests`, their paths as it names them.
    struct Group {
        storage: Arc<dyn Storage>,
        places: Vec<usize>,
        paths: Vec<PathBuf>,
    }
    let mut results: Vec<Option<io::Result<()>>> = requests.iter().map(|_| None).collect();
    let mut groups: Vec<Group> = Vec::new();
    // The paths already seen: their group, and the path as their storage names it.
    let mut seen: Vec<(&Path, usize, PathBuf)> = Vec::new();
    for (at, RangeRead { path, .. }) in requests.iter().enumerate() {
        let (group, inner) = match seen.iter().find(|(known, ..)| known == path) {
            Some((_, group, inner)) => (*group, inner.clone()),
            None => match storage_for(path) {
                Ok((storage, inner)) => {
                    let same = |other: &Group| {
                        std::ptr::addr_eq(Arc::as_ptr(&other.storage), Arc::as_ptr(&storage))
                    };
                    let group = groups.iter().position(same).unwrap_or_else(|| {
                        groups.push(Group {
                            storage,
                            places: Vec::new(),
                            paths: Vec::new(),
                        });
                        groups.len() - 1
                    });
                    seen.push((path, group, inner.clone()));
                    (group, inner)
                }
                Err(err) => {
                    results[at] = Some(Err(err));
                    continue;
                }
            },
        };
        groups[group].places.push(at);
        groups[group].paths.push(inner);
    }
    for group in groups {
        let asked: Vec<RangeRead<'_>> = group
            .places
            .iter()
            .zip(&group.paths)
            .map(|(&at, path)| RangeRead {
                path,
                ..requests[at].clone()
            })
            .collect();
        let mut buffers: Vec<Vec<u8>> = group
            .places
            .iter()
            .map(|&at| std::mem::take(&mut out[at]))
            .collect();
        let done = group.storage.read_each(&asked, at_once, &mut buffers);
        for ((&at, buffer), result) in group.places.iter().zip(buffers).zip(done) {
            out[at] = buffer;
            results[at] = Some(result);
        }
    }
    results
        .into_iter()
        .map(|result| result.unwrap_or_else(|| Err(io::Error::other("not read"))))
        .collect()
}
