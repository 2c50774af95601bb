//! The input's storage as planning reads it: every read that fails is noted, so that a
//! dataset whose folder could not be read whole fails, rather than being planned from
//! what could be read (a manifest or `dataset_info.json` that failed to load would give
//! another layout; a file that could not be sniffed would be left out, records and all).

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::Error;
use crate::planning::dataset::DatasetPlan;
use crate::storage::holder::LockHolder;
use crate::storage::{
    Durability, Listing, LockError, Opened, OutputFile, OutputLock, RangeRead, Storage,
};
use crate::tfds::{DATASET_INFO, FEATURES};

/// A storage that notes the paths whose reads failed.
#[derive(Debug)]
pub(crate) struct Noting<'a> {
    inner: &'a dyn Storage,
    failed: Failed,
}

/// The reads that failed: each path and why. Shared with the files opened, whose reads
/// fail on their own.
type Failed = Arc<Mutex<Vec<(PathBuf, String)>>>;

fn note(failed: &Failed, path: &Path, err: &io::Error) {
    let mut failed = failed.lock().unwrap_or_else(|p| p.into_inner());
    failed.push((path.to_path_buf(), err.to_string()));
}

impl<'a> Noting<'a> {
    pub(crate) fn new(inner: &'a dyn Storage) -> Noting<'a> {
        Noting {
            inner,
            failed: Failed::default(),
        }
    }

    fn noted<T>(&self, path: &Path, result: io::Result<T>) -> io::Result<T> {
        if let Err(err) = &result {
            note(&self.failed, path, err);
        }
        result
    }

    /// Fails each dataset of `datasets` (under the input root `input`) a read of whose
    /// folder failed: a file in it, or TFDS's metadata in the folder above.
    pub(crate) fn fail_datasets(self, input: &Path, datasets: &mut [DatasetPlan]) {
        let failed = std::mem::take(&mut *self.failed.lock().unwrap_or_else(|p| p.into_inner()));
        for dataset in datasets {
            let folder = match dataset.source.as_os_str().is_empty() {
                true => input.to_path_buf(),
                false => input.join(&dataset.source),
            };
            let in_folder = |path: &Path| {
                let dir = path.parent();
                let metadata = path
                    .file_name()
                    .is_some_and(|name| name == DATASET_INFO || name == FEATURES);
                dir == Some(folder.as_path())
                    || path == folder
                    || (metadata && dir.is_some() && dir == folder.parent())
            };
            let Some((path, why)) = failed.iter().find(|(path, _)| in_folder(path)) else {
                continue;
            };
            if dataset.problem.is_none() {
                let what =
                    io::Error::other(format!("cannot read a file of the dataset's folder: {why}"));
                dataset.problem = Some(Error::io(path, what));
            }
        }
    }
}

/// A file opened through [`Noting`], whose failed reads are noted too.
struct NotingReader {
    inner: Box<dyn io::Read + Send>,
    path: PathBuf,
    failed: Failed,
}

impl io::Read for NotingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf);
        if let Err(err) = &read {
            note(&self.failed, &self.path, err);
        }
        read
    }
}

impl Storage for Noting<'_> {
    fn list(&self, root: &Path) -> io::Result<Listing> {
        self.noted(root, self.inner.list(root))
    }

    fn open(&self, path: &Path, offset: u64) -> io::Result<Opened> {
        let opened = self.noted(path, self.inner.open(path, offset))?;
        Ok(Opened {
            reader: Box::new(NotingReader {
                inner: opened.reader,
                path: path.to_path_buf(),
                failed: Arc::clone(&self.failed),
            }),
            size: opened.size,
        })
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        self.noted(path, self.inner.read(path))
    }

    fn read_ranges(
        &self,
        path: &Path,
        version: Option<&str>,
        ranges: &[Range<u64>],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        self.noted(path, self.inner.read_ranges(path, version, ranges, out))
    }

    fn read_each(
        &self,
        requests: &[RangeRead<'_>],
        at_once: usize,
        out: &mut [Vec<u8>],
    ) -> Vec<io::Result<()>> {
        let results = self.inner.read_each(requests, at_once, out);
        requests
            .iter()
            .zip(results)
            .map(|(request, result)| self.noted(request.path, result))
            .collect()
    }

    fn size(&self, path: &Path) -> io::Result<Option<u64>> {
        self.noted(path, self.inner.size(path))
    }

    fn version(&self, path: &Path) -> io::Result<Option<String>> {
        self.noted(path, self.inner.version(path))
    }

    fn stat(&self, path: &Path) -> io::Result<Option<(u64, Option<String>)>> {
        self.noted(path, self.inner.stat(path))
    }

    fn file_names(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.noted(dir, self.inner.file_names(dir))
    }

    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.noted(dir, self.inner.entries(dir))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn create(&self, path: &Path, durability: Durability) -> io::Result<Box<dyn OutputFile>> {
        self.inner.create(path, durability)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn renames_cheaply(&self) -> bool {
        self.inner.renames_cheaply()
    }

    fn put_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.inner.put_new(path, bytes)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }

    fn remove_dir_if_empty(&self, dir: &Path) {
        self.inner.remove_dir_if_empty(dir)
    }

    fn lock(&self, dir: &Path) -> Result<Box<dyn OutputLock>, LockError> {
        self.inner.lock(dir)
    }

    fn lock_holder(&self, dir: &Path) -> io::Result<Option<LockHolder>> {
        self.inner.lock_holder(dir)
    }

    fn break_lock(&self, holder: &LockHolder) -> io::Result<()> {
        self.inner.break_lock(holder)
    }
}
