//! Files that appear whole or not at all: parts written under temporary names, files staged
//! and renamed into place, and cleaning up what a run leaves behind.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ofconvert_arrayrecord as arrayrecord;
use ofconvert_ofrecord as ofrecord;
use ofconvert_tfrecord::{self as tfrecord, Compression};

use crate::error::{Error, ErrorKind};
use crate::naming::layout;
use crate::naming::names::Format;
use crate::options::TfFile;
use crate::records::summed::{Sum, SummedFile};
use crate::storage::{Durability, OutputFile, Storage};

/// A part written under its temporary name.
pub(crate) struct TempPart {
    pub(crate) path: PathBuf,
    pub(crate) records: u64,
    pub(crate) bytes: u64,
    /// The CRC-32C of its bytes, when known (a receipt whose checksum does not read gives
    /// none).
    pub(crate) crc32c: Option<u32>,
}

/// A part being written under its temporary name.
pub(crate) struct PartWriter {
    sink: Sink,
    path: PathBuf,
    /// The CRC-32C of what is written, for the manifest.
    sum: Sum,
}

enum Sink {
    Of(ofrecord::Writer<Box<dyn OutputFile>>),
    Tf(tfrecord::Writer<Box<dyn OutputFile>>),
    /// An ArrayRecord file, the bytes its records would take as a TFRecord's counted (what
    /// parts are sized by), and a buffer records are made in.
    Array {
        writer: arrayrecord::Writer<Box<dyn OutputFile>>,
        bytes: u64,
        scratch: Vec<u8>,
    },
}

impl PartWriter {
    /// Creates the part at `path`: OFRecord when converting from TFRecord (`input_format`),
    /// the other way TFRecord with `compression`, or ArrayRecord, as `to` says; made as
    /// durable as `durability` says
    /// when finished. `first_record`, the size of the first record to be written, tells
    /// whether the part's buffers are written on a thread of their own (when records are
    /// [large](super::LARGE_RECORD) and a [core is idle](super::spare_core)): with large
    /// records the worker's time goes in about equal parts to reading and checking, and to
    /// writing (the kernel's copy into the page cache), which then overlap.
    pub(crate) fn create(
        storage: &dyn Storage,
        path: PathBuf,
        input_format: Format,
        (to, compression, array_record): (TfFile, Compression, arrayrecord::WriterOptions),
        durability: Durability,
        first_record: u64,
    ) -> Result<Self, Error> {
        let file = storage
            .create(&path, durability)
            .map_err(|err| not_writable(&path, err))?;
        let sum = Sum::default();
        let file: Box<dyn OutputFile> = Box::new(SummedFile::new(file, sum.clone()));
        let on_thread = first_record >= super::LARGE_RECORD && super::spare_core();
        let sink = match input_format {
            Format::Tf => {
                let writer = ofrecord::Writer::new(file);
                Sink::Of(if on_thread {
                    writer.writing_on_thread()
                } else {
                    writer
                })
            }
            Format::Of if to == TfFile::ArrayRecord => Sink::Array {
                writer: arrayrecord::Writer::with_options(file, array_record),
                bytes: 0,
                scratch: Vec::new(),
            },
            Format::Of => {
                let writer = tfrecord::Writer::with_compression(file, compression);
                Sink::Tf(if on_thread {
                    writer.writing_on_thread()
                } else {
                    writer
                })
            }
        };
        Ok(PartWriter { sink, path, sum })
    }

    /// The part's temporary path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Records written so far.
    pub(crate) fn records(&self) -> u64 {
        match &self.sink {
            Sink::Of(writer) => writer.records_written(),
            Sink::Tf(writer) => writer.records_written(),
            Sink::Array { writer, .. } => writer.position().index,
        }
    }

    /// Bytes of framed records written so far (before compression).
    pub(crate) fn bytes(&self) -> u64 {
        match &self.sink {
            Sink::Of(writer) => writer.bytes_written(),
            Sink::Tf(writer) => writer.bytes_written(),
            Sink::Array { bytes, .. } => *bytes,
        }
    }

    pub(crate) fn write(&mut self, payload: &[u8]) -> Result<(), Error> {
        match &mut self.sink {
            Sink::Of(writer) => writer
                .write_record(payload)
                .map_err(|err| write_error(&self.path, err.into_kind())),
            Sink::Tf(writer) => writer
                .write_record(payload)
                .map_err(|err| write_error(&self.path, err.into_kind())),
            Sink::Array { writer, bytes, .. } => {
                *bytes += frame_len(Format::Of, payload.len());
                writer
                    .write_record(payload)
                    .map_err(|err| write_error(&self.path, err.into_kind()))
            }
        }
    }

    /// Writes one record whose payload `fill` appends to the vector it is given, the part's
    /// own buffer, so that it is not copied on its way out (see
    /// `ofconvert_ofrecord::Writer::write_record_with`). When `fill` fails, nothing is
    /// written and its error comes back inside `Ok`.
    pub(crate) fn write_with<E>(
        &mut self,
        fill: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<Result<(), E>, Error> {
        match &mut self.sink {
            Sink::Of(writer) => writer
                .write_record_with(fill)
                .map_err(|err| write_error(&self.path, err.into_kind())),
            Sink::Tf(writer) => writer
                .write_record_with(fill)
                .map_err(|err| write_error(&self.path, err.into_kind())),
            Sink::Array {
                writer,
                bytes,
                scratch,
            } => {
                scratch.clear();
                if let Err(err) = fill(scratch) {
                    return Ok(Err(err));
                }
                *bytes += frame_len(Format::Of, scratch.len());
                writer
                    .write_record(scratch)
                    .map(Ok)
                    .map_err(|err| write_error(&self.path, err.into_kind()))
            }
        }
    }

    /// Flushes, syncs as the part was created to be, and closes the file; the part keeps
    /// its temporary name. A part that cannot be finished is removed.
    pub(crate) fn finish(self, storage: &dyn Storage) -> Result<TempPart, Error> {
        let path = self.path.clone();
        self.finish_keeping().inspect_err(|_| {
            let _ = storage.remove(&path);
        })
    }

    /// [`finish`](PartWriter::finish), a part that cannot be finished left where it is,
    /// for the caller to remove.
    pub(crate) fn finish_keeping(self) -> Result<TempPart, Error> {
        let records = self.records();
        let (path, sum) = (self.path, self.sum);
        let file = match self.sink {
            Sink::Of(writer) => writer
                .finish()
                .map_err(|err| write_error(&path, err.into_kind())),
            Sink::Tf(writer) => writer
                .finish()
                .map_err(|err| write_error(&path, err.into_kind())),
            Sink::Array { writer, .. } => writer
                .finish()
                .map_err(|err| write_error(&path, err.into_kind())),
        };
        let bytes = file.and_then(|file| file.finish().map_err(|err| Error::io(&path, err)))?;
        Ok(TempPart {
            path,
            records,
            bytes,
            crc32c: Some(sum.crc32c()),
        })
    }
}

/// An error creating the temporary file `path`: when the directory refuses it, said of the
/// directory, which is what the user can do something about (the file's name means nothing
/// to them).
fn not_writable(path: &Path, err: io::Error) -> Error {
    let refused = matches!(
        err.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
    );
    match path.parent().filter(|_| refused) {
        Some(dir) => Error::io(
            dir,
            io::Error::new(err.kind(), format!("cannot write in it: {err}")),
        ),
        None => Error::io(path, err),
    }
}

/// Bytes a payload takes in the output, framing included (before compression).
pub(crate) fn frame_len(input_format: Format, payload: usize) -> u64 {
    let overhead = match input_format {
        // Written as OFRecord: the 8-byte length.
        Format::Tf => 8,
        // Written as TFRecord: length, its CRC, the data CRC.
        Format::Of => 16,
    };
    payload as u64 + overhead
}

/// Writers fail for I/O reasons (a full disk...); the offset inside a temporary file would
/// not help anyone.
fn write_error<K: IntoWriteError>(path: &Path, kind: K) -> Error {
    kind.into_write_error(path)
}

trait IntoWriteError {
    fn into_write_error(self, path: &Path) -> Error;
}

impl IntoWriteError for ofrecord::ErrorKind {
    fn into_write_error(self, path: &Path) -> Error {
        match self {
            ofrecord::ErrorKind::Io(err) => Error::io(path, err),
            other => Error::new(ErrorKind::OfRecord(other)).in_file(path),
        }
    }
}

impl IntoWriteError for arrayrecord::ErrorKind {
    fn into_write_error(self, path: &Path) -> Error {
        match self {
            arrayrecord::ErrorKind::Io(err) => Error::io(path, err),
            other => Error::new(ErrorKind::ArrayRecord(other)).in_file(path),
        }
    }
}

impl IntoWriteError for tfrecord::ErrorKind {
    fn into_write_error(self, path: &Path) -> Error {
        match self {
            tfrecord::ErrorKind::Io(err) => Error::io(path, err),
            other => Error::new(ErrorKind::TfRecord(other)).in_file(path),
        }
    }
}

/// A file ready to be put in place: written and synced under a temporary name where
/// renames are cheap, held in memory for a create-if-absent write where they are not.
pub(crate) struct Staged<'s> {
    storage: &'s dyn Storage,
    dir: PathBuf,
    name: String,
    held: Held,
}

enum Held {
    Temporary(PathBuf),
    Bytes(Vec<u8>),
}

/// Stages `bytes` as `dir/name`; [`Staged::commit`] puts them in place.
pub(crate) fn stage<'s>(
    storage: &'s dyn Storage,
    dir: &Path,
    name: &str,
    bytes: &[u8],
) -> io::Result<Staged<'s>> {
    let mut staged = Staged {
        storage,
        dir: dir.to_path_buf(),
        name: name.to_owned(),
        held: Held::Bytes(bytes.to_vec()),
    };
    if !storage.renames_cheaply() {
        return Ok(staged);
    }
    let temp = dir.join(layout::staged_name(name));
    staged.held = Held::Temporary(temp.clone());
    let written = storage
        .create(&temp, Durability::Synced)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.finish()
        });
    match written {
        Ok(_) => Ok(staged),
        Err(err) => {
            staged.discard();
            Err(err)
        }
    }
}

impl Staged<'_> {
    /// Puts the file in place and makes that durable.
    pub(crate) fn commit(self) -> io::Result<()> {
        let target = self.dir.join(&self.name);
        let result = match &self.held {
            Held::Temporary(temp) => self.storage.rename(temp, &target),
            Held::Bytes(bytes) => return self.storage.put_new(&target, bytes),
        };
        if result.is_err() {
            self.discard();
            return result;
        }
        self.storage.sync_dir(&self.dir)
    }

    /// Removes the temporary file, if any.
    pub(crate) fn discard(self) {
        if let Held::Temporary(temp) = &self.held {
            let _ = self.storage.remove(temp);
        }
    }
}

/// Removes the temporary files in `dir` of the dataset whose [`temp_tag`](layout::temp_tag)
/// is `tag` (for an empty `tag`, a dataset alone in its directory: every temporary file
/// there), but those named in `keep`; never the lock, nor another dataset's.
pub(crate) fn remove_own_temps(
    storage: &dyn Storage,
    dir: &Path,
    tag: &str,
    keep: &[String],
) -> io::Result<()> {
    for name in storage.file_names(dir)? {
        if layout::is_own_temporary(&name, tag) && !keep.contains(&name) {
            storage.remove(&dir.join(name))?;
        }
    }
    Ok(())
}

/// Removes files this run wrote, ignoring those already gone; returns those that could not
/// be removed, with why.
pub(crate) fn remove_all(
    storage: &dyn Storage,
    paths: impl IntoIterator<Item = PathBuf>,
) -> Vec<(PathBuf, io::Error)> {
    paths
        .into_iter()
        .filter_map(|path| storage.remove(&path).err().map(|err| (path, err)))
        .collect()
}
