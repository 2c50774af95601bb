//! Files that appear whole or not at all: temporary names, sync, rename.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::detect::{part_number, shard_name};
use crate::manifest::MANIFEST_NAME;
use crate::options::Direction;

/// Every temporary file starts with this: hidden, never a part name OneFlow opens, never
/// matched by a `*.tfrecord` glob, and recognisable when cleaning up after a killed run.
pub(crate) const TEMP_PREFIX: &str = ".ofconvert-";

/// The temporary name of output number `sub` of work item `chunk`, unique to this process.
pub(crate) fn temp_part_path(dir: &Path, chunk: usize, sub: usize) -> PathBuf {
    dir.join(format!(
        "{TEMP_PREFIX}part-{chunk}-{sub}.tmp-{}",
        std::process::id()
    ))
}

/// Makes a directory's entries durable: a rename is only safe once the directory is synced.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir) {
        Ok(handle) => handle.sync_all(),
        // Some platforms cannot open directories; there is nothing more to do there.
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => Ok(()),
        Err(err) => Err(err),
    }
}

/// A file written and synced under its temporary name, waiting to be put in place.
pub(crate) struct Staged {
    temp: PathBuf,
    dir: PathBuf,
    name: String,
}

/// Writes `bytes` to a temporary file in `dir` and syncs it; [`Staged::commit`] renames it
/// to `name`.
pub(crate) fn stage(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<Staged> {
    let staged = Staged {
        temp: dir.join(format!("{TEMP_PREFIX}{name}.tmp-{}", std::process::id())),
        dir: dir.to_path_buf(),
        name: name.to_owned(),
    };
    let written = (|| {
        let mut file = File::create(&staged.temp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    match written {
        Ok(()) => Ok(staged),
        Err(err) => {
            staged.discard();
            Err(err)
        }
    }
}

impl Staged {
    /// Renames the file into place and makes the rename durable.
    pub(crate) fn commit(self) -> io::Result<()> {
        let result = fs::rename(&self.temp, self.dir.join(&self.name));
        if result.is_err() {
            self.discard();
            return result;
        }
        sync_dir(&self.dir)
    }

    /// Removes the temporary file.
    pub(crate) fn discard(self) {
        let _ = fs::remove_file(&self.temp);
    }
}

/// Writes `bytes` to `dir/name` through a temporary file that is synced and renamed.
pub(crate) fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    stage(dir, name, bytes)?.commit()
}

/// Removes what an earlier run may have left of a dataset in `dir`: its manifest, its
/// parts and temporary files. Other files, and subdirectories, stay.
///
/// `stem` is the name of the TFRecord files of an of2tf dataset; tf2of parts are
/// `prefix` + digits.
pub(crate) fn clear_dataset(
    dir: &Path,
    direction: Direction,
    prefix: &str,
    stem: &str,
) -> io::Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = name == MANIFEST_NAME
            || name.starts_with(TEMP_PREFIX)
            || match direction {
                Direction::TfToOf => part_number(&name, prefix).is_some(),
                Direction::OfToTf => {
                    shard_name(&name).is_some_and(|shard| shard.stem == stem)
                        && name.contains(".tfrecord")
                }
            };
        if ours {
            fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Removes the temporary files a killed run left in `dir`.
pub(crate) fn remove_temps(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(TEMP_PREFIX.as_bytes())
            && entry.file_type()?.is_file()
        {
            fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Removes temporary files, ignoring those already gone.
pub(crate) fn remove_all(paths: impl IntoIterator<Item = PathBuf>) {
    for path in paths {
        let _ = fs::remove_file(path);
    }
}
