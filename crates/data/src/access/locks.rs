//! A lock per entry of the cache directory, shared by the processes of a machine, so that
//! what is made from a whole read of a store (an index, a span kept) is made once between
//! them: the first to want it takes its lock and makes it while the others wait for the
//! lock, then find what it made (or make it themselves if nothing came of it).
//!
//! The lock is the operating system's (`flock`) on a file of the entry's own under `.locks/`
//! in the cache directory: the kernel lets go of it when the process holding it ends,
//! however it ends, so that a killed process never leaves a lock that blocks the next one.
//! A lock belongs to the open file, not to the process: two threads of one process each
//! taking it wait for each other as two processes do. The holder removes the file as it
//! lets go, so that lock files do not pile up; a waiter that then gets the lock of a file no
//! longer at its path takes the lock again, on the file there now.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// Where the locks of a cache directory's entries are, under it.
const LOCKS_DIR: &str = ".locks";

/// Times a lock is taken again because its file was removed or replaced while it was
/// waited for, before it is kept as it is: on a file system whose files cannot be told
/// apart, the lock only saves fetches, it never guards what is read.
const TRIES: usize = 1000;

/// The lock of one entry of the cache directory, held until dropped.
#[derive(Debug)]
pub(crate) struct EntryLock {
    file: File,
    path: PathBuf,
}

impl EntryLock {
    /// Waits for the lock of the entry `name` of the cache directory `cache_dir` and takes it.
    pub(crate) fn take(cache_dir: &Path, name: &str) -> io::Result<EntryLock> {
        let dir = cache_dir.join(LOCKS_DIR);
        fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{name}.lock"));
        let mut tries = 0;
        loop {
            let file = fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)?;
            file.lock()?;
            tries += 1;
            if tries >= TRIES || still_at(&file, &path) {
                return Ok(EntryLock { file, path });
            }
        }
    }
}

impl Drop for EntryLock {
    fn drop(&mut self) {
        // Removed while held: a waiter on it finds it gone and takes the one made anew.
        #[cfg(unix)]
        let _ = fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// Whether the file at `path` is still `file` (a holder before did not remove it).
#[cfg(unix)]
fn still_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(held), Ok(there)) => (held.dev(), held.ino()) == (there.dev(), there.ino()),
        _ => false,
    }
}

/// Lock files are never removed where open files cannot be (Windows): always still there.
#[cfg(not(unix))]
fn still_at(_: &File, _: &Path) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};

    #[test]
    fn one_holder_at_a_time_the_next_gets_it_when_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = EntryLock::take(dir.path(), "a.span").unwrap();
        // Another entry's lock is not this one's.
        drop(EntryLock::take(dir.path(), "b.span").unwrap());
        let step = Arc::new(AtomicUsize::new(0));
        let (taken, took) = mpsc::channel();
        let waiter = {
            let (dir, step) = (dir.path().to_path_buf(), Arc::clone(&step));
            std::thread::spawn(move || {
                let lock = EntryLock::take(&dir, "a.span").unwrap();
                taken.send(step.load(Ordering::SeqCst)).unwrap();
                drop(lock);
            })
        };
        // The waiter opens its own file, as another process would: it waits for the first,
        // and takes the lock only after this step.
        std::thread::yield_now();
        step.store(1, Ordering::SeqCst);
        drop(first);
        assert_eq!(took.recv().unwrap(), 1);
        waiter.join().unwrap();
        // Nothing is left behind.
        #[cfg(unix)]
        assert_eq!(fs::read_dir(dir.path().join(LOCKS_DIR)).unwrap().count(), 0);
    }

    #[test]
    fn a_lock_file_its_holder_left_unlocked_is_taken_at_once() {
        let dir = tempfile::tempdir().unwrap();
        // What a killed holder leaves: the file, its lock gone with the process.
        fs::create_dir_all(dir.path().join(LOCKS_DIR)).unwrap();
        fs::write(dir.path().join(LOCKS_DIR).join("a.span.lock"), b"").unwrap();
        drop(EntryLock::take(dir.path(), "a.span").unwrap());
    }

    #[test]
    fn many_takers_of_one_lock_hold_it_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let dir = dir.path().to_path_buf();
                let (inside, most) = (Arc::clone(&inside), Arc::clone(&most));
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let lock = EntryLock::take(&dir, "a.span").unwrap();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(lock);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        // Removing the file as each lets go never lets two in at once.
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }
}
