//! Where `ofconvert`'s files live. Everything the engine does to storage while converting
//! (list the input, open a file at an offset, create a temporary part, publish it, remove
//! files, lock the output) goes through [`Storage`], so that another kind of storage can
//! serve a conversion without the run loop knowing. [`LocalFs`] is the local file system.
//!
//! This crate owns the trait and what serves it: the local disk ([`LocalFs`]), object
//! stores (`object`: S3, GCS, Azure, HTTP through `object_store`), how each is built from
//! the environment (`stores`; what each is, `kind`) with the HTTP client its requests go
//! through (`client`: certificates, `Retry-After`), ranged reads and uploads (`transfer`),
//! directories on HTTP servers (`webdav`), the stores' errors (`store_error`) and how hard a
//! request is tried (`retry`), and the output's lock (`lock`, named [`LOCK_NAME`], and
//! `holder`: what a lock says of its holder); and, for the tests that fail or kill a run at
//! each of its steps, a storage that does so (`faults`). Nothing in it knows of records,
//! plans or runs: the engine (`ofconvert-engine`) builds on it, and it is the only crate of
//! the workspace that speaks to a network (object_store, reqwest, rustls and tokio are its
//! dependencies alone).
//!
//! # Example
//!
//! [`object::storage_for`] gives the storage a path or URL lives in (the local disk here;
//! an `s3://`, `gs://`, `az://` or `http(s)://` URL is the store it names, configured from
//! the environment), and the path as that storage knows it:
//!
//! ```
//! use std::path::Path;
//!
//! use ofconvert_storage::object::storage_for;
//!
//! # fn main() -> std::io::Result<()> {
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("train"))?;
//! std::fs::write(dir.path().join("train/part-00000"), b"0123456789")?;
//!
//! let (storage, root) = storage_for(dir.path())?;
//! let listing = storage.list(&root)?;
//! let files = &listing.directories[Path::new("train")];
//! assert_eq!((files[0].name.as_str(), files[0].size), ("part-00000", 10));
//!
//! // Two ranges of the file in one call: a store asks for them side by side.
//! let mut bytes = Vec::new();
//! storage.read_ranges(&files[0].path, None, &[2..4, 7..9], &mut bytes)?;
//! assert_eq!(bytes, b"2378");
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod client;
pub mod faults;
pub mod holder;
pub mod kind;
mod local;
pub mod lock;
pub mod object;
pub mod retry;
pub mod store_error;
pub mod stores;
pub mod transfer;
mod tries;
mod webdav;

pub use local::absolute_through_existing;
pub use local::LocalFs;
pub use lock::{LockError, OutputLock};
pub use tries::take_failed_tries;

use crate::holder::LockHolder;

/// The lock file a converting run holds in its output root (hidden, like the engine's
/// temporary files, whose prefix it starts with).
pub const LOCK_NAME: &str = ".ofconvert-lock";

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A file of the input found by [`Storage::list`].
#[derive(Clone, Debug)]
pub struct Listed {
    /// The file, as reachable through the storage.
    pub path: PathBuf,
    /// Its name (invalid UTF-8 replaced).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its version as [`Storage::stat`] gives it (a store's ETag), when the listing asked
    /// for it in the same words: for a single file named in a store (its HEAD); not for the
    /// files of a prefix, whose listing words ETags its own way in some stores.
    pub version: Option<String>,
    /// What changes when the file is rewritten, even at the same size, in the listing's own
    /// words: its modification time on a file system, its ETag (or else its modification
    /// time) in a store's listing. Two listings of a file not rewritten between them say the
    /// same; it is not to be compared with [`version`](Listed::version).
    pub changed: Option<String>,
}

/// A path the listing passed over or could not read, and why.
#[derive(Clone, Debug)]
pub struct NotListed {
    /// The path.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// What [`Storage::list`] found under a root.
#[derive(Debug, Default)]
pub struct Listing {
    /// The files, per directory relative to the root, in name order. Hidden files and
    /// directories (a name starting with `.`) are left out.
    pub directories: BTreeMap<PathBuf, Vec<Listed>>,
    /// Paths passed over because they hold no records (a broken or looping link).
    pub skipped: Vec<NotListed>,
    /// Paths that could not be read: whatever records they hold are missing.
    pub unreadable: Vec<NotListed>,
    /// Whether the root is a single file rather than a directory.
    pub single_file: bool,
}

/// A file opened for reading.
pub struct Opened {
    /// Its bytes from the offset asked for.
    pub reader: Box<dyn Read + Send>,
    /// Its whole size, when it has one (a pipe has none).
    pub size: Option<u64>,
}

/// A byte range of a file that [`Storage::read_each`] reads.
#[derive(Clone, Debug)]
pub struct RangeRead<'a> {
    /// The file.
    pub path: &'a Path,
    /// The version of the file the bytes must be of, as [`Storage::stat`] gave it (see
    /// [`Storage::read_ranges`]); `None` for whatever is there.
    pub version: Option<&'a str>,
    /// The bytes.
    pub range: Range<u64>,
}

/// How a finished output file is made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Flushed to the storage device before it is published.
    Synced,
    /// Left to the operating system: a killed run still leaves nothing half-written, but a
    /// power failure may lose what was written.
    Unsynced,
}

/// A file being written under a temporary name.
pub trait OutputFile: Write + Send {
    /// Flushes and closes the file, syncing it as the [`Durability`] it was created with
    /// says; returns its size.
    fn finish(self: Box<Self>) -> io::Result<u64>;
}

/// Everything a conversion does to the storage of its input and output.
///
/// Paths are those the storage understands: for [`LocalFs`], ordinary paths.
pub trait Storage: Send + Sync + fmt::Debug {
    /// The files under `root` (or `root` itself when it is a file), grouped by directory.
    fn list(&self, root: &Path) -> io::Result<Listing>;

    /// Opens `path` for reading from byte `offset`.
    fn open(&self, path: &Path, offset: u64) -> io::Result<Opened>;

    /// Reads a whole small file; `Ok(None)` when there is none.
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>>;

    /// Reads the byte ranges `ranges` of `path`, each whole, appending them to `out` one
    /// after the other. An object store asks for them in few requests at once (near ones
    /// merged), which a batch of records scattered over a file wants.
    ///
    /// `version`, when given, is the version of the file (as [`stat`](Storage::stat) gave
    /// it) that the bytes must be of: an object store asks for that ETag (`If-Match`), and a
    /// file replaced since fails the read with a [`Replaced`](transfer::Replaced) error
    /// ([`is_replaced`](transfer::is_replaced)), no byte of the new version given. A
    /// storage with no conditional reads (the local disk) reads what is there.
    fn read_ranges(
        &self,
        path: &Path,
        version: Option<&str>,
        ranges: &[Range<u64>],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let _ = version;
        for range in ranges {
            let len = range.end.saturating_sub(range.start);
            let mut reader = self.open(path, range.start)?.reader.take(len);
            let read = reader.read_to_end(out)?;
            if (read as u64) < len {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "bytes {}..{} are past the end of the file",
                        range.start, range.end
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Reads each of `requests` (a byte range of a file, of a version as
    /// [`read_ranges`](Storage::read_ranges) takes it) whole into the buffer of `out` at the
    /// same place, cleared first; the results in the requests' order. An object store sends
    /// them side by side from the calling thread, at most `at_once` in flight, which a batch
    /// of records far apart in many files wants; the default reads them one after another.
    fn read_each(
        &self,
        requests: &[RangeRead<'_>],
        at_once: usize,
        out: &mut [Vec<u8>],
    ) -> Vec<io::Result<()>> {
        let _ = at_once;
        requests
            .iter()
            .zip(out)
            .map(|(request, buffer)| {
                buffer.clear();
                self.read_ranges(
                    request.path,
                    request.version,
                    std::slice::from_ref(&request.range),
                    buffer,
                )
            })
            .collect()
    }

    /// The size of the file at `path`, `Ok(None)` when there is no such file.
    fn size(&self, path: &Path) -> io::Result<Option<u64>>;

    /// What changes when the file at `path` is rewritten, even at the same size: its
    /// modification time on a file system, its ETag in an object store. `Ok(None)` when the
    /// storage keeps nothing of the kind.
    fn version(&self, path: &Path) -> io::Result<Option<String>> {
        let _ = path;
        Ok(None)
    }

    /// The size and the [`version`](Storage::version) of the file at `path` together (in
    /// one request to a store), `Ok(None)` when there is no such file.
    fn stat(&self, path: &Path) -> io::Result<Option<(u64, Option<String>)>> {
        let Some(size) = self.size(path)? else {
            return Ok(None);
        };
        Ok(Some((size, self.version(path).ok().flatten())))
    }

    /// The names of the files directly in `dir` (none when `dir` does not exist).
    fn file_names(&self, dir: &Path) -> io::Result<Vec<String>>;

    /// The names of everything directly in `dir`, files and directories, sorted (none
    /// when `dir` does not exist).
    fn entries(&self, dir: &Path) -> io::Result<Vec<String>>;

    /// Makes `dir` and its parents exist.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Creates (or truncates) a file to write, to be made as durable as `durability` says
    /// when it is finished (a storage may start on that while the file is written).
    fn create(&self, path: &Path, durability: Durability) -> io::Result<Box<dyn OutputFile>>;

    /// Gives a finished file its final name, replacing any file of that name.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Whether [`rename`](Storage::rename) is cheap and atomic, as on a file system. Where
    /// it is not (object stores copy), parts are written under their final names and the
    /// manifest, written last with [`put_new`](Storage::put_new), publishes them.
    fn renames_cheaply(&self) -> bool {
        true
    }

    /// Writes a whole small file that must not exist yet, atomically.
    fn put_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;

    /// Makes the renames done in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// Removes a file; one already gone is no error.
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// Removes `dir` if nothing is in it; anything else is left as it is.
    fn remove_dir_if_empty(&self, dir: &Path);

    /// Takes the lock of the output directory `dir` (which exists), failing at once when
    /// another run holds it; this process writes into it who it is (its process id and
    /// machine, and what tells that process from a later one of the same number).
    fn lock(&self, dir: &Path) -> Result<Box<dyn OutputLock>, LockError>;

    /// Who holds the lock of `dir` now, without taking it; `Ok(None)` when nobody does.
    fn lock_holder(&self, dir: &Path) -> io::Result<Option<LockHolder>>;

    /// Removes the lock `holder` was read from, if it still says what it said then (another
    /// run may have taken it since).
    fn break_lock(&self, holder: &LockHolder) -> io::Result<()>;
}

/// Requests to a store a reader sends side by side when it looks at many files at once
/// (opening a dataset's files, listing its inputs): each waits a round trip, not a core.
pub const REQUESTS_AT_ONCE: usize = 16;

/// `work` of each of `items`, `at_once` of them side by side at most, the results in the
/// order of `items`.
pub fn each_at_once<T: Sync, R: Send>(
    items: &[T],
    at_once: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    if items.len() <= 1 {
        return items.iter().map(work).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (next, work) = (&next, &work);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..at_once.clamp(1, items.len()))
            .map(|_| {
                scope.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(at) else {
                            return done;
                        };
                        done.push((at, work(item)));
                    }
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|thread| match thread.join() {
                Ok(done) => done,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    done.sort_unstable_by_key(|(at, _)| *at);
    done.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use super::each_at_once;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn each_item_is_worked_once_in_its_order_and_never_more_at_once_than_asked() {
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let items: Vec<u64> = (0..200).collect();
        let done = each_at_once(&items, 5, |&item| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::yield_now();
            running.fetch_sub(1, Ordering::SeqCst);
            item * 2
        });
        assert_eq!(done, (0..200).map(|item| item * 2).collect::<Vec<_>>());
        assert!((1..=5).contains(&most.load(Ordering::SeqCst)));
        assert!(each_at_once(&[] as &[u64], 5, |&item| item).is_empty());
        assert_eq!(each_at_once(&[7u64], 0, |&item| item + 1), vec![8]);
    }
}
