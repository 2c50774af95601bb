//! The local file system as [`Storage`]: parts written in aligned buffers and handed to
//! the disk a few mebibytes at a time, renames that publish, and the lock file.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::holder::LockHolder;
use crate::{
    Durability, Listed, Listing, LockError, NotListed, Opened, OutputFile, OutputLock, Storage,
};

/// The local file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalFs;

/// A local output file, unbuffered: the record writers above it buffer.
///
/// A file to be synced is handed to write-back as it grows, a few mebibytes at a time, so
/// that the disk works while the conversion goes on and the sync at the end finds little
/// left to write.
struct LocalFile {
    file: File,
    durability: Durability,
    /// Bytes written so far.
    written: u64,
    /// Where the bytes not handed to write-back yet start.
    behind: u64,
}

/// How many bytes a synced file gathers before they are handed to write-back.
const WRITE_BEHIND_BYTES: u64 = 4 << 20;

impl Write for LocalFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.file.write(buf)?;
        self.written += written as u64;
        if self.durability == Durability::Synced && self.written - self.behind >= WRITE_BEHIND_BYTES
        {
            start_write_back(&self.file, self.behind..self.written);
            self.behind = self.written;
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl OutputFile for LocalFile {
    fn finish(self: Box<Self>) -> io::Result<u64> {
        let file = self.file;
        if self.durability == Durability::Synced {
            file.sync_all()?;
        }
        Ok(file.metadata()?.len())
    }
}

/// Starts writing `range` of `file` to the device, without waiting for it. Only a head
/// start: the sync at the end still writes and waits for everything, so a failure here
/// (a file system without the call) changes nothing but the timing.
#[cfg(target_os = "linux")]
fn start_write_back(file: &File, range: Range<u64>) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (range.start.try_into(), (range.end - range.start).try_into())
    else {
        return;
    };
    // SAFETY: a system call on a descriptor `file` keeps open; no memory is passed.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

/// Elsewhere the sync at the end does all the writing.
#[cfg(not(target_os = "linux"))]
fn start_write_back(_file: &File, _range: Range<u64>) {}

/// The lock file of an output directory, held with an exclusive advisory lock.
#[derive(Debug)]
struct LocalLock {
    path: PathBuf,
    _file: File,
}

impl OutputLock for LocalLock {}

impl Drop for LocalLock {
    fn drop(&mut self) {
        // Removed while still held, so that a run that opened it in the meantime finds the
        // name gone (see `LocalFs::lock`) rather than a lock nobody holds.
        let _ = fs::remove_file(&self.path);
    }
}

impl Storage for LocalFs {
    fn list(&self, root: &Path) -> io::Result<Listing> {
        let mut listing = Listing::default();
        let meta = fs::metadata(root)?;
        if meta.is_file() {
            let name = root
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            listing
                .directories
                .entry(PathBuf::new())
                .or_default()
                .push(Listed {
                    path: root.to_path_buf(),
                    name,
                    size: meta.len(),
                    version: None,
                    changed: modified(&meta),
                });
            listing.single_file = true;
            return Ok(listing);
        }
        let walker = walkdir::WalkDir::new(root)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|entry| entry.depth() == 0 || !is_hidden(entry.file_name()));
        for entry in walker {
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    let path = err.path().unwrap_or(root).to_path_buf();
                    let (list, reason) = match (err.loop_ancestor(), err.io_error()) {
                        (Some(ancestor), _) => (
                            &mut listing.skipped,
                            format!("symbolic link loop to {}", ancestor.display()),
                        ),
                        (None, Some(io)) if is_symlink(&path) => {
                            (&mut listing.skipped, format!("broken symbolic link: {io}"))
                        }
                        (None, Some(io)) => (&mut listing.unreadable, format!("cannot read: {io}")),
                        (None, None) => (&mut listing.unreadable, err.to_string()),
                    };
                    list.push(NotListed { path, reason });
                    continue;
                }
            };
            let kind = entry.file_type();
            if kind.is_dir() {
                continue;
            }
            if !kind.is_file() {
                // A FIFO, a socket or a device: never read, and never passed over unsaid.
                listing.skipped.push(NotListed {
                    path: entry.path().to_path_buf(),
                    reason: format!("not a regular file ({})", special_kind(&kind)),
                });
                continue;
            }
            let (size, changed) = match entry.metadata() {
                Ok(meta) => (meta.len(), modified(&meta)),
                Err(err) => {
                    listing.unreadable.push(NotListed {
                        path: entry.path().to_path_buf(),
                        reason: format!("cannot read: {err}"),
                    });
                    continue;
                }
            };
            let relative_dir = entry
                .path()
                .parent()
                .and_then(|parent| parent.strip_prefix(root).ok())
                .unwrap_or(Path::new(""))
                .to_path_buf();
            listing
                .directories
                .entry(relative_dir)
                .or_default()
                .push(Listed {
                    path: entry.path().to_path_buf(),
                    name: entry.file_name().to_string_lossy().into_owned(),
                    size,
                    version: None,
                    changed,
                });
        }
        Ok(listing)
    }

    fn open(&self, path: &Path, offset: u64) -> io::Result<Opened> {
        let mut file = File::open(path)?;
        if offset > 0 {
            file.seek(SeekFrom::Start(offset))?;
        }
        let meta = file.metadata()?;
        Ok(Opened {
            size: meta.is_file().then_some(meta.len()),
            reader: Box::new(file),
        })
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    fn size(&self, path: &Path) -> io::Result<Option<u64>> {
        match fs::metadata(path) {
            Ok(meta) if meta.is_file() => Ok(Some(meta.len())),
            Ok(_) => Ok(None),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    fn version(&self, path: &Path) -> io::Result<Option<String>> {
        let meta = fs::metadata(path)?;
        meta.modified()?;
        Ok(modified(&meta))
    }

    fn file_names(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in read_dir_if_any(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(names)
    }

    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = read_dir_if_any(dir)?
            .map(|entry| entry.map(|entry| entry.file_name().to_string_lossy().into_owned()))
            .collect::<io::Result<Vec<_>>>()?;
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn put_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        file.write_all(bytes)?;
        file.sync_all()
    }

    fn create(&self, path: &Path, durability: Durability) -> io::Result<Box<dyn OutputFile>> {
        Ok(Box::new(LocalFile {
            file: File::create(path)?,
            durability,
            written: 0,
            behind: 0,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        match File::open(dir) {
            Ok(handle) => handle.sync_all(),
            // Some platforms cannot open directories; there is nothing more to do there.
            Err(err) if err.kind() == io::ErrorKind::PermissionDenied => Ok(()),
            Err(err) => Err(err),
        }
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        match fs::remove_file(path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
            _ => Ok(()),
        }
    }

    fn remove_dir_if_empty(&self, dir: &Path) {
        // Only succeeds when nothing is in it.
        let _ = fs::remove_dir(dir);
    }

    fn lock(&self, dir: &Path) -> Result<Box<dyn OutputLock>, LockError> {
        let path = dir.join(crate::LOCK_NAME);
        // A holder removes the file while it still holds the lock: a lock taken on a file
        // that is no longer at `path` guards nothing, so take it again on the new one.
        for _ in 0..LOCK_ATTEMPTS {
            let mut file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(LockError::Io)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(LockError::Busy(Box::new(held_by(&path, &mut file))))
                }
                Err(fs::TryLockError::Error(err)) => return Err(LockError::Io(err)),
            }
            if !same_file(&file, &path) {
                continue;
            }
            let written = file
                .set_len(0)
                .and_then(|()| writeln!(file, "{}", LockHolder::this_process()));
            written.map_err(LockError::Io)?;
            return Ok(Box::new(LocalLock { path, _file: file }));
        }
        Err(LockError::Busy(Box::new(LockHolder::read(
            path, "", None, true,
        ))))
    }

    fn lock_holder(&self, dir: &Path) -> io::Result<Option<LockHolder>> {
        let path = dir.join(crate::LOCK_NAME);
        let mut file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        // Taken and at once released when nobody holds it: a lock file left by a killed
        // run is nobody's.
        match file.try_lock_shared() {
            Ok(()) => Ok(None),
            Err(fs::TryLockError::WouldBlock) => Ok(Some(held_by(&path, &mut file))),
            Err(fs::TryLockError::Error(err)) => Err(err),
        }
    }

    fn break_lock(&self, holder: &LockHolder) -> io::Result<()> {
        match fs::read_to_string(&holder.lock) {
            // A new lock file is a new lock: its holder's process no longer holds it.
            Ok(text) if holder.says(&text) => self.remove(&holder.lock),
            Ok(_) => Ok(()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(err) => Err(err),
        }
    }
}

/// A file's modification time, in nanoseconds, as [`Storage::version`] words it.
fn modified(meta: &fs::Metadata) -> Option<String> {
    let since = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!("mtime:{}", since.as_nanos()))
}

/// The holder of the lock file `path` that another process holds, as it wrote itself in.
fn held_by(path: &Path, file: &mut File) -> LockHolder {
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    LockHolder::read(path.to_path_buf(), &text, None, true)
}

/// The entries of `dir`, none when it does not exist.
fn read_dir_if_any(dir: &Path) -> io::Result<impl Iterator<Item = io::Result<fs::DirEntry>>> {
    match fs::read_dir(dir) {
        Ok(entries) => Ok(Some(entries).into_iter().flatten()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None.into_iter().flatten()),
        Err(err) => Err(err),
    }
}

/// How often taking a lock is tried when its file keeps being replaced under it.
const LOCK_ATTEMPTS: usize = 8;

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

/// The canonical form of `path`, which may not exist yet: its nearest existing ancestor is
/// canonicalized and the rest appended (`..` in the rest is resolved lexically).
pub fn absolute_through_existing(path: &Path) -> io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        match fs::canonicalize(existing) {
            Ok(mut resolved) => {
                for component in rest.iter().rev() {
                    match component {
                        std::path::Component::ParentDir => {
                            resolved.pop();
                        }
                        std::path::Component::Normal(name) => resolved.push(name),
                        _ => {}
                    }
                }
                return Ok(resolved);
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                let Some(parent) = existing.parent() else {
                    return Err(err);
                };
                if let Some(last) = existing.components().next_back() {
                    rest.push(last);
                }
                existing = parent;
            }
            Err(err) => return Err(err),
        }
    }
}

/// What a file that is not regular nor a directory is, as its listing says it.
fn special_kind(kind: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a named pipe";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    let _ = kind;
    "neither a file nor a directory"
}

/// Whether a path the walk could not follow is a symbolic link: one that leads nowhere or to
/// itself holds no records and is only skipped, while anything else that cannot be read (a
/// directory without permission, one removed while the walk read it) may hold records.
pub(crate) fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink())
}

/// Hidden files and directories (`.git`, `.DS_Store`, our own temporary files) are never
/// datasets.
fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().first() == Some(&b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_directory_is_refused_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(LocalFs.lock_holder(dir.path()).unwrap(), None);
        let held = LocalFs.lock(dir.path()).unwrap();
        match LocalFs.lock(dir.path()) {
            Err(LockError::Busy(holder)) => {
                assert!(holder.dies_with_holder);
                assert_eq!(holder.pid, Some(std::process::id()));
                assert_eq!(
                    holder.liveness(),
                    crate::holder::Liveness::Running,
                    "{holder}"
                );
                assert_eq!(LocalFs.lock_holder(dir.path()).unwrap(), Some(*holder));
            }
            other => panic!("expected Busy, got {other:?}"),
        }
        drop(held);
        assert!(!dir.path().join(crate::LOCK_NAME).exists());
        let again = LocalFs.lock(dir.path()).unwrap();
        drop(again);
    }

    #[test]
    fn a_synced_file_handed_to_write_back_as_it_grows_holds_every_byte_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..2 * WRITE_BEHIND_BYTES + 12_345)
            .map(|i| (i * 7 % 253) as u8)
            .collect();
        for durability in [Durability::Synced, Durability::Unsynced] {
            let path = dir.path().join(format!("{durability:?}"));
            let mut file = LocalFs.create(&path, durability).unwrap();
            // Pieces of odd sizes, so that write-back starts at no particular boundary.
            for piece in data.chunks(99_991) {
                file.write_all(piece).unwrap();
            }
            assert_eq!(file.finish().unwrap(), data.len() as u64);
            assert!(fs::read(&path).unwrap() == data, "{durability:?}");
        }
    }

    #[test]
    fn output_files_report_their_size_and_reads_start_at_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut file = LocalFs.create(&path, Durability::Synced).unwrap();
        file.write_all(b"0123456789").unwrap();
        assert_eq!(file.finish().unwrap(), 10);
        let mut rest = String::new();
        let mut opened = LocalFs.open(&path, 4).unwrap();
        opened.reader.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "456789");
        assert_eq!(opened.size, Some(10));
        assert_eq!(LocalFs.size(&path).unwrap(), Some(10));
        assert_eq!(LocalFs.size(&dir.path().join("none")).unwrap(), None);
        LocalFs.remove(&path).unwrap();
        LocalFs.remove(&path).unwrap();
    }
}
