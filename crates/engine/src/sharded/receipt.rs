//! What a worker of a sharded run leaves for `commit` beside each part it finished: the
//! part's name, records, bytes and CRC32C, the inputs it read, and the facts a manifest is
//! made of (schema, skipped records, compressions, image conversions). And the storage
//! wrapper that computes the CRC32C of every part as it is written, so that no part is
//! read twice.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::holder::LockHolder;
use crate::recode::ImageConversion;
use crate::records::output::TempPart;
use crate::records::SkippedRecords;
use crate::running::chunk::ChunkOutput;
use crate::schema::SchemaBuilder;
use crate::storage::{Durability, Listing, LockError, Opened, OutputFile, OutputLock, Storage};

/// A finished work item of a sharded run.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Receipt {
    /// The worker that wrote it.
    pub(crate) worker: usize,
    /// The dataset's name (its output directory relative to the output root).
    pub(crate) dataset: String,
    /// The work item's number in its dataset.
    pub(crate) chunk: usize,
    /// The inputs it read, relative to the input root.
    pub(crate) inputs: Vec<String>,
    /// The part written; none when every record was skipped.
    pub(crate) part: Option<ReceiptPart>,
    pub(crate) skipped: SkippedRecords,
    /// How each input read from its start stores its records, by input index.
    pub(crate) compressions: Vec<(usize, String)>,
    pub(crate) images: ImageConversion,
    pub(crate) schema: SchemaBuilder,
    /// Values the mapping rounded to the nearest float (`--lossy`).
    #[serde(default)]
    pub(crate) rounded: u64,
}

/// The part a work item wrote.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ReceiptPart {
    /// Its file name in the dataset's output directory, where `commit` finds it.
    pub(crate) name: String,
    pub(crate) records: u64,
    pub(crate) bytes: u64,
    /// CRC32C (Castagnoli) of its bytes, as 8 hex digits.
    pub(crate) crc32c: String,
}

impl Receipt {
    /// What work item `chunk` of `dataset`, done by `worker`, produced; `crcs` holds the
    /// checksums of the parts written.
    pub(crate) fn new(
        worker: usize,
        dataset: &str,
        chunk: usize,
        inputs: Vec<String>,
        output: ChunkOutput,
        crcs: &Checksums,
    ) -> Receipt {
        let part = output.parts.into_iter().next().map(|part| ReceiptPart {
            name: part
                .path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            records: part.records,
            bytes: part.bytes,
            crc32c: format!("{:08x}", crcs.take(&part.path).unwrap_or_default()),
        });
        Receipt {
            worker,
            dataset: dataset.to_owned(),
            chunk,
            inputs,
            part,
            skipped: output.skipped,
            compressions: output.compressions,
            images: output.images,
            schema: output.schema,
            rounded: output.rounded,
        }
    }

    /// The work item's output again, its part in the dataset directory `dir`.
    pub(crate) fn into_output(self, dir: &Path) -> ChunkOutput {
        ChunkOutput {
            parts: self
                .part
                .into_iter()
                .map(|part| TempPart {
                    path: dir.join(&part.name),
                    records: part.records,
                    bytes: part.bytes,
                    crc32c: u32::from_str_radix(&part.crc32c, 16).ok(),
                })
                .collect(),
            uploads: Vec::new(),
            skipped: self.skipped,
            schema: self.schema,
            compressions: self.compressions,
            images: self.images,
            rounded: self.rounded,
            noted: false,
            kept: false,
        }
    }

    /// Whether its part is in `dir` with the size it says; `Ok(())` or what differs.
    pub(crate) fn check_part(&self, storage: &dyn Storage, dir: &Path) -> Result<(), String> {
        let Some(part) = &self.part else {
            return Ok(());
        };
        let path = dir.join(&part.name);
        match storage.size(&path) {
            Ok(Some(size)) if size == part.bytes => Ok(()),
            Ok(Some(size)) => Err(format!(
                "{}: {size} bytes where its receipt says {}",
                path.display(),
                part.bytes
            )),
            Ok(None) => Err(format!(
                "{}: missing, yet its receipt is there",
                path.display()
            )),
            Err(err) => Err(format!("{}: {err}", path.display())),
        }
    }

    /// Reads the part back and compares its CRC32C with the receipt's.
    pub(crate) fn check_checksum(&self, storage: &dyn Storage, dir: &Path) -> Result<(), String> {
        let Some(part) = &self.part else {
            return Ok(());
        };
        let path = dir.join(&part.name);
        let crc = storage
            .open(&path, 0)
            .and_then(|mut opened| {
                let mut sink = CrcWriter(0);
                io::copy(&mut opened.reader, &mut sink)?;
                Ok(sink.0)
            })
            .map_err(|err| format!("{}: {err}", path.display()))?;
        let found = format!("{crc:08x}");
        if found == part.crc32c {
            Ok(())
        } else {
            Err(format!(
                "{}: CRC32C {found} where its receipt says {}",
                path.display(),
                part.crc32c
            ))
        }
    }
}

/// Computes a CRC32C of what is written to it.
struct CrcWriter(u32);

impl Write for CrcWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 = ofconvert_tfrecord::crc::crc32c_append(self.0, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The CRC32C of each finished file, by path.
#[derive(Debug, Default)]
pub(crate) struct Checksums(Mutex<HashMap<PathBuf, u32>>);

impl Checksums {
    fn put(&self, path: PathBuf, crc: u32) {
        self.lock().insert(path, crc);
    }

    fn take(&self, path: &Path) -> Option<u32> {
        self.lock().remove(path)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, u32>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A storage that notes the CRC32C of every file it creates once the file is finished.
#[derive(Debug)]
pub(crate) struct Checksummed {
    pub(crate) inner: Arc<dyn Storage>,
    pub(crate) crcs: Arc<Checksums>,
}

struct ChecksummedFile {
    inner: Box<dyn OutputFile>,
    path: PathBuf,
    crc: u32,
    crcs: Arc<Checksums>,
}

impl Write for ChecksummedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.crc = ofconvert_tfrecord::crc::crc32c_append(self.crc, &buf[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl OutputFile for ChecksummedFile {
    fn finish(self: Box<Self>) -> io::Result<u64> {
        let size = self.inner.finish()?;
        self.crcs.put(self.path, self.crc);
        Ok(size)
    }
}

impl Storage for Checksummed {
    fn list(&self, root: &Path) -> io::Result<Listing> {
        self.inner.list(root)
    }

    fn open(&self, path: &Path, offset: u64) -> io::Result<Opened> {
        self.inner.open(path, offset)
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        self.inner.read(path)
    }

    fn size(&self, path: &Path) -> io::Result<Option<u64>> {
        self.inner.size(path)
    }

    fn version(&self, path: &Path) -> io::Result<Option<String>> {
        self.inner.version(path)
    }

    fn stat(&self, path: &Path) -> io::Result<Option<(u64, Option<String>)>> {
        self.inner.stat(path)
    }

    fn file_names(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.file_names(dir)
    }

    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.entries(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn create(&self, path: &Path, durability: Durability) -> io::Result<Box<dyn OutputFile>> {
        Ok(Box::new(ChecksummedFile {
            inner: self.inner.create(path, durability)?,
            path: path.to_path_buf(),
            crc: 0,
            crcs: Arc::clone(&self.crcs),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn renames_cheaply(&self) -> bool {
        self.inner.renames_cheaply()
    }

    fn put_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.inner.put_new(path, bytes)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }

    fn remove_dir_if_empty(&self, dir: &Path) {
        self.inner.remove_dir_if_empty(dir)
    }

    fn lock(&self, dir: &Path) -> Result<Box<dyn OutputLock>, LockError> {
        self.inner.lock(dir)
    }

    fn lock_holder(&self, dir: &Path) -> io::Result<Option<LockHolder>> {
        self.inner.lock_holder(dir)
    }

    fn break_lock(&self, holder: &LockHolder) -> io::Result<()> {
        self.inner.break_lock(holder)
    }
}
