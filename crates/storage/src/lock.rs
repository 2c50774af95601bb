//! An output's lock as every storage keeps it: taken by a converting run (and `commit`),
//! released when it ends, reported with its holder when another run finds it held, and
//! broken on request when its holder no longer runs (a lock object outlives a killed run).

use std::fmt;
use std::io;
use std::path::Path;

use crate::holder::{Liveness, LockHolder};
use crate::Storage;

/// Held while a run owns an output directory; dropping it releases the lock.
pub trait OutputLock: Send + fmt::Debug {}

/// Why an output directory could not be locked.
#[derive(Debug)]
pub enum LockError {
    /// Another run holds it (or a killed one left it, where a lock outlives its holder).
    Busy(Box<LockHolder>),
    /// The lock could not be taken for another reason.
    Io(io::Error),
}

/// Takes the lock of `dir`; with `break_stale`, a lock whose holder is not known to run
/// on this machine is removed first (when it still names that holder) and taken anew.
pub fn take(
    storage: &dyn Storage,
    dir: &Path,
    break_stale: bool,
) -> Result<Box<dyn OutputLock>, LockError> {
    match storage.lock(dir) {
        Err(LockError::Busy(holder)) if break_stale && holder.liveness() != Liveness::Running => {
            storage.break_lock(&holder).map_err(LockError::Io)?;
            storage.lock(dir)
        }
        taken => taken,
    }
}
