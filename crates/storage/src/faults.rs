//! Storage that fails, or ends its process, at a chosen step: what the tests that try every
//! step of a run are built on, as SQLite's I/O-error and crash tests are on a file system
//! shim. A test process turns it on with [`inject`]; from then on every storage that
//! `object::storage_for` gives (the local disk and each object store)
//! counts its operations (each call that lists, opens, reads, sizes, creates, writes,
//! flushes, finishes, renames or copies, removes, puts, syncs or locks) and fails the one
//! chosen with an I/O error, or kills the process with SIGKILL once it is done.
//!
//! Off (the default), [`wrap`] costs one atomic load a call of `storage_for`: nothing a
//! record pays for.

use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::holder::LockHolder;
use crate::{Durability, Listing, LockError, Opened, OutputFile, OutputLock, RangeRead, Storage};

/// What the storages of this process do at a chosen operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Nothing: operations are only counted (how many a run takes, to try each).
    Count,
    /// Operation number `at` (from 1) fails with an I/O error; `persistent`, every one after
    /// it fails too (a disk gone read-only, a store that stopped answering).
    Fail {
        /// The operation that fails first.
        at: u64,
        /// Whether every later one fails as well.
        persistent: bool,
    },
    /// The process is killed (SIGKILL: no destructor, no cleanup) as soon as operation
    /// number `after` has been done.
    Kill {
        /// The last operation done.
        after: u64,
    },
    /// The process is killed as soon as the `nth` (from 1) operation whose description
    /// (what an injected failure names: `rename A -> B`) contains each of `matching` has
    /// been done: a point of
    /// a run found by what happens there, where threads make the count of operations vary.
    KillAfterNth {
        /// What the operations counted say.
        matching: Vec<String>,
        /// How many of them are done.
        nth: u64,
    },
}

/// The message of an injected failure, which tests find in what the run says.
pub const INJECTED: &str = "injected fault";

/// A count of operations and the fault to inject at one of them, shared by the storages
/// wrapped with it ([`Faults::wrap`]).
#[derive(Debug)]
pub struct Faults {
    fault: Fault,
    done: AtomicU64,
    /// Operations done that [`Fault::KillAfterNth`] counts.
    matched: AtomicU64,
}

impl Faults {
    /// A count from zero, `fault` to come.
    pub fn new(fault: Fault) -> Arc<Faults> {
        Arc::new(Faults {
            fault,
            done: AtomicU64::new(0),
            matched: AtomicU64::new(0),
        })
    }

    /// `storage`, its operations counted and failed as these faults say.
    pub fn wrap(self: &Arc<Self>, storage: Arc<dyn Storage>) -> Arc<dyn Storage> {
        Arc::new(Faulty {
            inner: storage,
            faults: Arc::clone(self),
        })
    }

    /// How many operations were tried.
    pub fn operations(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }

    /// Counts one operation, described by `what`, and says whether it is to fail.
    fn step(&self, what: impl FnOnce() -> String) -> io::Result<Step> {
        let number = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        let what = what();
        match &self.fault {
            Fault::Fail { at, persistent } if number == *at || (*persistent && number > *at) => {
                Err(io::Error::other(format!(
                    "{INJECTED} at operation {number}: {what}"
                )))
            }
            Fault::Kill { after } if number == *after => Ok(Step::KillAfter),
            Fault::KillAfterNth { matching, nth }
                if matching.iter().all(|part| what.contains(part.as_str())) =>
            {
                match self.matched.fetch_add(1, Ordering::SeqCst) + 1 == *nth {
                    true => Ok(Step::KillAfter),
                    false => Ok(Step::Go),
                }
            }
            _ => Ok(Step::Go),
        }
    }
}

static ON: AtomicBool = AtomicBool::new(false);
static INJECTED_FAULTS: Mutex<Option<Arc<Faults>>> = Mutex::new(None);

/// Turns fault injection on for every storage this process gets from
/// `object::storage_for` from now on, as `fault` says, the count
/// starting at zero; returns the count.
pub fn inject(fault: Fault) -> Arc<Faults> {
    let faults = Faults::new(fault);
    *lock(&INJECTED_FAULTS) = Some(Arc::clone(&faults));
    ON.store(true, Ordering::SeqCst);
    faults
}

/// `storage`, counted and failed as [`inject`] said, once it has been called.
pub fn wrap(storage: Arc<dyn Storage>) -> Arc<dyn Storage> {
    if !ON.load(Ordering::Relaxed) {
        return storage;
    }
    match &*lock(&INJECTED_FAULTS) {
        Some(faults) => faults.wrap(storage),
        None => storage,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What to do once an operation that is not failed is done.
#[must_use]
enum Step {
    Go,
    KillAfter,
}

impl Step {
    fn done<T>(self, result: T) -> T {
        if let Step::KillAfter = self {
            kill_now();
        }
        result
    }
}

fn kill_now() -> ! {
    #[cfg(target_os = "linux")]
    // SAFETY: a signal to this very process; nothing of Rust's state is touched.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    std::process::abort()
}

/// A storage whose every operation goes through [`Faults::step`].
#[derive(Debug)]
struct Faulty {
    inner: Arc<dyn Storage>,
    faults: Arc<Faults>,
}

impl Faulty {
    fn step(&self, what: impl FnOnce() -> String) -> io::Result<Step> {
        self.faults.step(what)
    }
}

fn show(path: &Path) -> String {
    path.display().to_string()
}

impl Storage for Faulty {
    fn list(&self, root: &Path) -> io::Result<Listing> {
        let step = self.step(|| format!("list {}", show(root)))?;
        step.done(self.inner.list(root))
    }

    fn open(&self, path: &Path, offset: u64) -> io::Result<Opened> {
        let step = self.step(|| format!("open {} at {offset}", show(path)))?;
        let opened = step.done(self.inner.open(path, offset))?;
        Ok(Opened {
            reader: Box::new(FaultyReader {
                inner: opened.reader,
                path: path.to_path_buf(),
                faults: Arc::clone(&self.faults),
            }),
            size: opened.size,
        })
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        let step = self.step(|| format!("read {}", show(path)))?;
        step.done(self.inner.read(path))
    }

    fn read_ranges(
        &self,
        path: &Path,
        version: Option<&str>,
        ranges: &[Range<u64>],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let step = self.step(|| format!("read {} ranges of {}", ranges.len(), show(path)))?;
        step.done(self.inner.read_ranges(path, version, ranges, out))
    }

    fn read_each(
        &self,
        requests: &[RangeRead<'_>],
        at_once: usize,
        out: &mut [Vec<u8>],
    ) -> Vec<io::Result<()>> {
        // One operation a request, each failed or not on its own.
        requests
            .iter()
            .zip(out)
            .map(|(request, buffer)| {
                buffer.clear();
                let step = self.step(|| format!("read a range of {}", show(request.path)))?;
                let mut results = self.inner.read_each(
                    std::slice::from_ref(request),
                    at_once,
                    std::slice::from_mut(buffer),
                );
                step.done(results.pop().unwrap_or(Ok(())))
            })
            .collect()
    }

    fn size(&self, path: &Path) -> io::Result<Option<u64>> {
        let step = self.step(|| format!("size {}", show(path)))?;
        step.done(self.inner.size(path))
    }

    fn version(&self, path: &Path) -> io::Result<Option<String>> {
        let step = self.step(|| format!("version {}", show(path)))?;
        step.done(self.inner.version(path))
    }

    fn stat(&self, path: &Path) -> io::Result<Option<(u64, Option<String>)>> {
        let step = self.step(|| format!("stat {}", show(path)))?;
        step.done(self.inner.stat(path))
    }

    fn file_names(&self, dir: &Path) -> io::Result<Vec<String>> {
        let step = self.step(|| format!("list the files of {}", show(dir)))?;
        step.done(self.inner.file_names(dir))
    }

    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        let step = self.step(|| format!("list {}", show(dir)))?;
        step.done(self.inner.entries(dir))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let step = self.step(|| format!("create directory {}", show(dir)))?;
        step.done(self.inner.create_dir_all(dir))
    }

    fn create(&self, path: &Path, durability: Durability) -> io::Result<Box<dyn OutputFile>> {
        let step = self.step(|| format!("create {}", show(path)))?;
        let file = step.done(self.inner.create(path, durability))?;
        Ok(Box::new(FaultyFile {
            inner: file,
            path: path.to_path_buf(),
            faults: Arc::clone(&self.faults),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let step = self.step(|| format!("rename {} -> {}", show(from), show(to)))?;
        step.done(self.inner.rename(from, to))
    }

    fn renames_cheaply(&self) -> bool {
        self.inner.renames_cheaply()
    }

    fn put_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let step = self.step(|| format!("put {}", show(path)))?;
        step.done(self.inner.put_new(path, bytes))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let step = self.step(|| format!("sync {}", show(dir)))?;
        step.done(self.inner.sync_dir(dir))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let step = self.step(|| format!("remove {}", show(path)))?;
        step.done(self.inner.remove(path))
    }

    fn remove_dir_if_empty(&self, dir: &Path) {
        // It says nothing of failing: a failure leaves the directory, as a full one does.
        if let Ok(step) = self.step(|| format!("remove directory {}", show(dir))) {
            self.inner.remove_dir_if_empty(dir);
            step.done(());
        }
    }

    fn lock(&self, dir: &Path) -> Result<Box<dyn OutputLock>, LockError> {
        let step = self
            .step(|| format!("lock {}", show(dir)))
            .map_err(LockError::Io)?;
        step.done(self.inner.lock(dir))
    }

    fn lock_holder(&self, dir: &Path) -> io::Result<Option<LockHolder>> {
        let step = self.step(|| format!("read the lock of {}", show(dir)))?;
        step.done(self.inner.lock_holder(dir))
    }

    fn break_lock(&self, holder: &LockHolder) -> io::Result<()> {
        let step = self.step(|| format!("break the lock {}", show(&holder.lock)))?;
        step.done(self.inner.break_lock(holder))
    }
}

/// A file opened through [`Faulty`]: each read is an operation.
struct FaultyReader {
    inner: Box<dyn Read + Send>,
    path: PathBuf,
    faults: Arc<Faults>,
}

impl Read for FaultyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let step = self
            .faults
            .step(|| format!("read from {}", show(&self.path)))?;
        step.done(self.inner.read(buf))
    }
}

/// A file created through [`Faulty`]: each write, flush and the finish are operations.
struct FaultyFile {
    inner: Box<dyn OutputFile>,
    path: PathBuf,
    faults: Arc<Faults>,
}

impl Write for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let step = self
            .faults
            .step(|| format!("write {} bytes to {}", buf.len(), show(&self.path)))?;
        step.done(self.inner.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        let step = self.faults.step(|| format!("flush {}", show(&self.path)))?;
        step.done(self.inner.flush())
    }
}

impl OutputFile for FaultyFile {
    fn finish(self: Box<Self>) -> io::Result<u64> {
        let step = self
            .faults
            .step(|| format!("finish {}", show(&self.path)))?;
        step.done(self.inner.finish())
    }
}
