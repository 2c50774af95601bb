//! Whole files copied into a dataset's directory beside its parts (the files that came
//! with the records, the empty files of a dataset given back as it was), written so that
//! they appear whole or not at all: under a temporary name where renames are cheap, then
//! put in place with the parts (`swap`); straight under their name in an object store, where an
//! upload is invisible until complete and the manifest, written last, publishes them.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};
use crate::naming::layout;
use crate::storage::{Durability, Storage};

/// Bytes read and written at a time.
const CHUNK: usize = 1 << 20;

/// A file written into a dataset's directory, not yet in place.
pub(crate) struct Copied {
    /// Its name in the directory (invalid UTF-8 replaced).
    pub(crate) name: String,
    /// Its size.
    pub(crate) bytes: u64,
    /// The CRC-32C of its bytes.
    pub(crate) crc32c: u32,
    target: PathBuf,
    /// Where it waits for its name, where renames are cheap.
    temp: Option<PathBuf>,
    /// Whether a file of that name was there before (it is never removed on failure then:
    /// datasets sharing a folder bring the same files).
    existed: bool,
    /// Whether it is under its name.
    placed: bool,
}

/// Where whole files go: a dataset's directory.
#[derive(Clone, Copy)]
pub(crate) struct Destination<'a> {
    pub(crate) storage: &'a dyn Storage,
    pub(crate) dir: &'a Path,
    /// What the temporary names carry, so that datasets sharing the directory never share
    /// a temporary file.
    pub(crate) tag: &'a str,
    pub(crate) durability: Durability,
    /// Whether a file waits under a temporary name until it is put in place: where renames
    /// are cheap, and wherever a dataset there before must stay whole until then.
    pub(crate) temporary: bool,
}

/// Copies `from` (`size` bytes, as listed) out of `input` into the destination as `name`:
/// under a temporary name where renames are cheap (then [`Copied::place`] puts it in
/// place), else straight under its name.
///
/// # Errors
///
/// When it cannot be read or written, or its size is not `size` any more (it changed
/// since it was listed).
pub(crate) fn copy_file(
    input: &dyn Storage,
    from: &Path,
    size: u64,
    to: Destination<'_>,
    name: &OsStr,
) -> Result<Copied, Error> {
    let opened = input.open(from, 0).map_err(|err| Error::io(from, err))?;
    let copied =
        write_file(to, name, opened.reader).map_err(|(path, err)| Error::io(&path, err))?;
    if copied.bytes != size {
        copied.undo(to.storage);
        let changed = io::Error::other(format!(
            "changed while it was copied: {size} bytes when listed, {} when read",
            copied.bytes
        ));
        return Err(Error::new(ErrorKind::Io(changed)).in_file(from));
    }
    Ok(copied)
}

/// Writes an empty file as `name`, as [`copy_file`] writes a copy.
pub(crate) fn empty_file(to: Destination<'_>, name: &OsStr) -> Result<Copied, Error> {
    write_file(to, name, Box::new(io::empty())).map_err(|(path, err)| Error::io(&path, err))
}

/// Writes `bytes` as the file `name`, as [`copy_file`] writes a copy.
pub(crate) fn bytes_file(
    to: Destination<'_>,
    name: &OsStr,
    bytes: Vec<u8>,
) -> Result<Copied, Error> {
    write_file(to, name, Box::new(io::Cursor::new(bytes)))
        .map_err(|(path, err)| Error::io(&path, err))
}

fn write_file(
    to: Destination<'_>,
    name: &OsStr,
    mut reader: Box<dyn Read + Send>,
) -> Result<Copied, (PathBuf, io::Error)> {
    let Destination {
        storage: output,
        dir,
        tag,
        durability,
        temporary,
    } = to;
    let target = dir.join(name);
    let existed = output
        .size(&target)
        .map_err(|err| (target.clone(), err))?
        .is_some();
    let temp = temporary.then(|| dir.join(layout::temp_copy_name(tag, &name.to_string_lossy())));
    let path = temp.clone().unwrap_or_else(|| target.clone());
    let mut copied = Copied {
        name: name.to_string_lossy().into_owned(),
        bytes: 0,
        crc32c: 0,
        placed: temp.is_none(),
        target,
        temp,
        existed,
    };
    let written = (|| {
        let mut file = output.create(&path, durability)?;
        let mut buf = vec![0; CHUNK];
        loop {
            let read = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(read) => read,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            file.write_all(&buf[..read])?;
            copied.crc32c = ofconvert_tfrecord::crc::crc32c_append(copied.crc32c, &buf[..read]);
            copied.bytes += read as u64;
        }
        file.finish().map(|_| ())
    })();
    match written {
        Ok(()) => Ok(copied),
        Err(err) => {
            copied.undo(output);
            Err((path, err))
        }
    }
}

impl Copied {
    /// Where it waits and the name it takes, while it waits under a temporary name.
    pub(crate) fn waiting(&self) -> Option<(String, String)> {
        let temp = self.temp.as_ref().filter(|_| !self.placed)?;
        let waits = temp.file_name()?.to_string_lossy().into_owned();
        Some((waits, self.name.clone()))
    }

    /// The same copy, never removed by [`undo`](Copied::undo) once in place: a file that
    /// datasets sharing a directory each bring.
    pub(crate) fn kept_once_placed(mut self) -> Copied {
        self.existed = true;
        self
    }

    /// Removes what was written: the temporary file, or the file itself when there was
    /// none of its name before.
    pub(crate) fn undo(&self, output: &dyn Storage) {
        if self.placed {
            if !self.existed {
                let _ = output.remove(&self.target);
            }
        } else if let Some(temp) = &self.temp {
            let _ = output.remove(temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;
    use std::fs;

    /// What publishing does to a copy: its temporary file renamed to its name.
    fn place(copied: &mut Copied) {
        let (waits, name) = copied.waiting().unwrap();
        let dir = copied.target.parent().unwrap().to_path_buf();
        LocalFs.rename(&dir.join(waits), &dir.join(name)).unwrap();
        copied.placed = true;
    }

    #[test]
    fn a_copy_waits_under_a_temporary_name_and_keeps_its_crc() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("labels.txt");
        let text = "cat\ndog\nbird\n".repeat(100_000);
        fs::write(&source, &text).unwrap();
        let out = dir.path().join("out");
        fs::create_dir(&out).unwrap();
        let size = text.len() as u64;
        let to = Destination {
            storage: &LocalFs,
            dir: &out,
            tag: "",
            durability: Durability::Unsynced,
            temporary: true,
        };
        let mut copied = copy_file(&LocalFs, &source, size, to, "labels.txt".as_ref()).unwrap();
        assert_eq!(copied.bytes, size);
        assert_eq!(
            copied.crc32c,
            ofconvert_tfrecord::crc::crc32c(text.as_bytes())
        );
        assert!(!out.join("labels.txt").exists());
        place(&mut copied);
        assert_eq!(fs::read_to_string(out.join("labels.txt")).unwrap(), text);
        assert_eq!(fs::read_dir(&out).unwrap().count(), 1);

        // Listed at another size: changed since, and nothing is left.
        let err = copy_file(&LocalFs, &source, size + 1, to, "other.txt".as_ref())
            .err()
            .unwrap();
        let message = crate::error::error_chain(&err);
        assert!(message.contains("changed while it was copied"), "{message}");
        assert_eq!(fs::read_dir(&out).unwrap().count(), 1);

        // Undone after it was placed: removed, unless a file of its name was there before.
        let mut empty = empty_file(Destination { tag: "x.", ..to }, "empty".as_ref()).unwrap();
        place(&mut empty);
        assert_eq!(fs::metadata(out.join("empty")).unwrap().len(), 0);
        empty.undo(&LocalFs);
        assert!(!out.join("empty").exists());
        let mut again = copy_file(&LocalFs, &source, size, to, "labels.txt".as_ref()).unwrap();
        place(&mut again);
        again.undo(&LocalFs);
        assert!(out.join("labels.txt").exists());
    }
}
