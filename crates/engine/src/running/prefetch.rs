//! Objects opened ahead of the workers. Opening an object in a store starts fetching its
//! first ranges ([`transfer`]); a worker that opened each input only once done with the
//! last would have one object coming in at a time. So before a worker takes a work item,
//! the run opens the input of the item after it, and the worker that takes that one finds
//! it coming in already. One object is held ahead at most per worker, so memory stays at
//! one object's ranges in flight more a worker.
//!
//! [`transfer`]: crate::storage::transfer

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::storage::{Opened, Storage};

/// Objects opened ahead, by path and offset.
pub(crate) struct Prefetch {
    opened: Mutex<Vec<(PathBuf, u64, Opened)>>,
    /// How many may wait at once: one a worker.
    limit: usize,
}

impl Prefetch {
    /// Room for `limit` objects opened ahead.
    pub(crate) fn new(limit: usize) -> Prefetch {
        Prefetch {
            opened: Mutex::new(Vec::new()),
            limit: limit.max(1),
        }
    }

    /// Opens `path` at `offset` ahead of the worker that will read it, unless it is open
    /// already or enough are; a failure is left for that worker's own open to report.
    pub(crate) fn open(&self, storage: &dyn Storage, path: &Path, offset: u64) {
        {
            let opened = self.lock();
            if opened.len() >= self.limit
                || opened.iter().any(|(p, o, _)| p == path && *o == offset)
            {
                return;
            }
        }
        if let Ok(file) = storage.open(path, offset) {
            let mut opened = self.lock();
            if opened.len() < self.limit {
                opened.push((path.to_path_buf(), offset, file));
            }
        }
    }

    /// The object `path` opened at `offset` ahead, if it was.
    pub(crate) fn take(&self, path: &Path, offset: u64) -> Option<Opened> {
        let mut opened = self.lock();
        let at = opened
            .iter()
            .position(|(p, o, _)| p == path && *o == offset)?;
        Some(opened.swap_remove(at).2)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(PathBuf, u64, Opened)>> {
        self.opened
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
