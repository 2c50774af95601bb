//! An output's lock in an object store: an object created only if absent, holding what
//! [`LockHolder::this_process`] says, deleted when the run ends. A run killed hard leaves it
//! behind; a run with `--break-lock` deletes it when its holder is not known to run.

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::runtime::Runtime;

use super::{Created, ObjectStorage};
use crate::holder::LockHolder;
use crate::LOCK_NAME;
use crate::{LockError, OutputLock};

impl ObjectStorage {
    /// Creates the lock object of `dir`, unless one is there.
    pub(super) fn take_lock(&self, dir: &Path) -> Result<Box<dyn OutputLock>, LockError> {
        let path = dir.join(LOCK_NAME);
        let key = self.key(&path).map_err(LockError::Io)?;
        match self.create(&key, LockHolder::this_process().as_bytes()) {
            Ok(Created::IfAbsent) => Ok(Box::new(ObjectLock {
                store: Arc::clone(&self.store),
                runtime: Arc::clone(&self.runtime),
                key,
            })),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => {
                let holder = self.holder_of(&path).map_err(LockError::Io)?;
                // Deleted in between: its holder ended.
                let holder = holder.unwrap_or_else(|| LockHolder::read(path, "", None, false));
                Err(LockError::Busy(Box::new(holder)))
            }
            // A store without conditional writes cannot lock: the manifest's write is all
            // there is to keep two runs apart.
            Ok(Created::Unconditional) => Ok(Box::new(NoLock)),
            Err(err) => Err(LockError::Io(self.error(err))),
        }
    }

    /// Who holds the lock object at `path`, and since when; `Ok(None)` when there is none.
    pub(super) fn holder_of(&self, path: &Path) -> io::Result<Option<LockHolder>> {
        let key = self.key(path)?;
        let fetched = self.block_on(async {
            let result = self.store.get(&key).await?;
            let since = result.meta.last_modified;
            Ok::<_, object_store::Error>((result.bytes().await?, since))
        });
        match fetched {
            Ok((bytes, since)) => Ok(Some(LockHolder::read(
                path.to_path_buf(),
                &String::from_utf8_lossy(&bytes),
                Some(since.format("%Y-%m-%d %H:%M:%S UTC").to_string()),
                false,
            ))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(self.error(err)),
        }
    }

    /// Deletes the lock object `holder` was read from, if it still names that holder. (A
    /// store deletes without a condition: another run that took the lock between this read
    /// and the delete would lose it; both would have to break it in the same instant.)
    pub(super) fn remove_lock(&self, holder: &LockHolder) -> io::Result<()> {
        let key = self.key(&holder.lock)?;
        let fetched = self.block_on(async { self.store.get(&key).await?.bytes().await });
        match fetched {
            Ok(bytes) if holder.says(&String::from_utf8_lossy(&bytes)) => {
                match self.block_on(self.store.delete(&key)) {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                    Err(err) => Err(self.error(err)),
                }
            }
            Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(err) => Err(self.error(err)),
        }
    }
}

#[derive(Debug)]
struct NoLock;

impl OutputLock for NoLock {}

/// A lock object this run created, deleted when the run ends.
struct ObjectLock {
    store: Arc<dyn ObjectStore>,
    runtime: Arc<Runtime>,
    key: ObjectPath,
}

impl fmt::Debug for ObjectLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectLock")
            .field("key", &self.key)
            .finish()
    }
}

impl OutputLock for ObjectLock {}

impl Drop for ObjectLock {
    fn drop(&mut self) {
        let _ = self.runtime.block_on(self.store.delete(&self.key));
    }
}
