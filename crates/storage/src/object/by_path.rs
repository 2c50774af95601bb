//! The storage of inputs that live in several places (two buckets, a bucket and the local
//! disk): every call goes to the storage of the path it names.

use std::io;
use std::ops::Range;
use std::path::Path;

use super::storage_for;
use crate::holder::LockHolder;
use crate::{Durability, Listing, LockError, Opened, OutputFile, OutputLock, Storage};

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

    fn read_ranges(&self, path: &Path, ranges: &[Range<u64>], out: &mut Vec<u8>) -> io::Result<()> {
        let (storage, path) = storage_for(path)?;
        storage.read_ranges(&path, ranges, out)
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
