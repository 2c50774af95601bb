//! Reading records by their index: record files opened for random access (the engine's
//! indexes), the records of a batch read in as few requests as their places allow (one read
//! per run of neighbours; in a store, every file's ranges at once, files side by side), and
//! each one's framing checked.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use ofconvert_engine::storage::Storage;
use ofconvert_engine::{Checksums, Error, IndexedFile, RecordAt};

/// Where a run's bytes are: in the mapped file itself, or in a buffer.
const MAPPED: usize = usize::MAX;
/// Runs of this many bytes or more have their pages mapped in one call.
#[cfg(target_os = "linux")]
const POPULATE_FROM: u64 = 64 << 10;
/// Files of one batch fetched from a store side by side.
const FILES_IN_FLIGHT: usize = 16;

/// Record files of a dataset, in order, with their indexes.
#[derive(Debug)]
pub struct Files {
    pub files: Vec<IndexedFile>,
    /// Where each file's records start among all, then the total.
    starts: Vec<u64>,
}

/// A stretch of neighbouring records of one file, and where its bytes are: in the buffer
/// `buffer` from `at`, or ([`MAPPED`]) in the mapped file.
#[derive(Clone, Debug)]
struct Run {
    file: usize,
    records: Range<u64>,
    buffer: usize,
    at: usize,
}

/// What reading a batch keeps from one to the next: local files mapped, buffers for the
/// bytes of files in a store.
///
/// A mapped file that another program truncates while it is read makes the process fail
/// (`SIGBUS`), as with any reader that maps its files; record files are written whole and
/// renamed into place by the tools that write them, which leaves a mapping intact.
#[derive(Default)]
pub struct Scratch {
    maps: HashMap<usize, memmap2::Mmap>,
    buffers: Vec<Vec<u8>>,
    runs: Vec<Run>,
}

impl Files {
    pub fn new(files: Vec<IndexedFile>) -> Files {
        let mut starts = Vec::with_capacity(files.len() + 1);
        let mut total = 0;
        for file in &files {
            starts.push(total);
            total += file.index.len();
        }
        starts.push(total);
        Files { files, starts }
    }

    /// Whether some file is read from a store.
    pub fn any_remote(&self) -> bool {
        self.files
            .iter()
            .any(|file| ofconvert_engine::is_url(&file.data))
    }

    pub fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    /// The file of record `index` (below [`len`](Files::len)) and its place in it.
    pub fn locate(&self, index: u64) -> (usize, u64) {
        let file = self.starts.partition_point(|&start| start <= index) - 1;
        (file, index - self.starts[file])
    }

    /// Reads the records `indices` (below [`len`](Files::len)) into `scratch`, for
    /// [`each`](Files::each) to hand out.
    pub fn fetch(&self, indices: &[u64], scratch: &mut Scratch) -> Result<(), Error> {
        scratch.runs.clear();
        for &index in indices {
            let (file, record) = self.locate(index);
            match scratch.runs.last_mut() {
                Some(run) if run.file == file && run.records.end == record => run.records.end += 1,
                _ => scratch.runs.push(Run {
                    file,
                    records: record..record + 1,
                    buffer: 0,
                    at: 0,
                }),
            }
        }
        self.read_runs(scratch)
    }

    /// Calls `each(file, at, payload)` for each record [`fetch`](Files::fetch) read, in
    /// order, its framing checked. Errors of `each` end the walk and are returned.
    pub fn each<E: From<Error>>(
        &self,
        scratch: &Scratch,
        checksums: Checksums,
        mut each: impl FnMut(&IndexedFile, RecordAt, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        for run in &scratch.runs {
            let file = &self.files[run.file];
            let base = file.index.range(run.records.start).start;
            let (buffer, at): (&[u8], usize) = match run.buffer {
                MAPPED => (&scratch.maps[&run.file], base as usize),
                buffer => (&scratch.buffers[buffer], run.at),
            };
            for record in run.records.clone() {
                let range = file.index.range(record);
                let from = at + (range.start - base) as usize;
                let framed = &buffer[from..from + (range.end - range.start) as usize];
                let at = RecordAt {
                    offset: range.start,
                    index: record,
                };
                let payload = ofconvert_engine::record_payload(
                    framed,
                    file.format,
                    checksums,
                    &file.path,
                    at,
                )?;
                each(file, at, payload)?;
            }
        }
        Ok(())
    }

    /// Reads the bytes of every run into the buffers: local files with one positioned read
    /// per run, files in a store with one call per file for all its runs, files side by side.
    fn read_runs(&self, scratch: &mut Scratch) -> Result<(), Error> {
        let mut remote: Vec<usize> = Vec::new();
        for (number, run) in scratch.runs.iter_mut().enumerate() {
            let file = &self.files[run.file];
            if ofconvert_engine::is_url(&file.data) {
                remote.push(number);
                continue;
            }
            let span = file.index.span(run.records.clone());
            run.buffer = MAPPED;
            let map = match scratch.maps.entry(run.file) {
                std::collections::hash_map::Entry::Occupied(map) => map.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => slot.insert(map(&file.data)?),
            };
            if (map.len() as u64) < span.end {
                let shorter = std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "the file is {} bytes, its index says {}: it changed after it was indexed",
                        map.len(),
                        file.index.span(0..file.index.len()).end
                    ),
                );
                return Err(Error::io(&file.path, shorter));
            }
            #[cfg(target_os = "linux")]
            if span.end - span.start >= POPULATE_FROM {
                // One call maps the run's pages, instead of a fault for each of them on first
                // touch; a kernel without MADV_POPULATE_READ (before 5.14) faults them as ever.
                let _ = map.advise_range(
                    memmap2::Advice::PopulateRead,
                    span.start as usize,
                    (span.end - span.start) as usize,
                );
            }
        }
        if remote.is_empty() {
            return Ok(());
        }
        // The runs of each remote file, that file's ranges asked for in one call.
        let mut by_file: Vec<(usize, Vec<usize>)> = Vec::new();
        for number in remote {
            let file = scratch.runs[number].file;
            match by_file.iter_mut().find(|(f, _)| *f == file) {
                Some((_, runs)) => runs.push(number),
                None => by_file.push((file, vec![number])),
            }
        }
        while scratch.buffers.len() < by_file.len() {
            scratch.buffers.push(Vec::new());
        }
        let requests: Vec<(&PathBuf, Vec<Range<u64>>)> = by_file
            .iter()
            .map(|(file, numbers)| {
                let file = &self.files[*file];
                let ranges = numbers
                    .iter()
                    .map(|&n| file.index.span(scratch.runs[n].records.clone()))
                    .collect();
                (&file.data, ranges)
            })
            .collect();
        let buffers = &mut scratch.buffers[..by_file.len()];
        let mut results = Vec::with_capacity(requests.len());
        std::thread::scope(|scope| {
            for (requests, buffers) in requests
                .chunks(FILES_IN_FLIGHT)
                .zip(buffers.chunks_mut(FILES_IN_FLIGHT))
            {
                let handles: Vec<_> = requests
                    .iter()
                    .zip(buffers.iter_mut())
                    .map(|((data, ranges), buffer)| {
                        let fetched = scope.spawn(move || fetch_remote(data, ranges, buffer));
                        (*data, fetched)
                    })
                    .collect();
                for (data, fetched) in handles {
                    results.push(fetched.join().unwrap_or_else(|_| {
                        Err(Error::io(
                            data,
                            std::io::Error::other("reading it panicked"),
                        ))
                    }));
                }
            }
        });
        for result in results {
            result?;
        }
        for (slot, (file, numbers)) in by_file.iter().enumerate() {
            let mut at = 0;
            for &number in numbers {
                let span = self.files[*file]
                    .index
                    .span(scratch.runs[number].records.clone());
                scratch.runs[number].buffer = slot;
                scratch.runs[number].at = at;
                at += (span.end - span.start) as usize;
            }
        }
        Ok(())
    }
}

fn fetch_remote(data: &Path, ranges: &[Range<u64>], buffer: &mut Vec<u8>) -> Result<(), Error> {
    buffer.clear();
    // Looked up for each batch: a forked worker gets stores of its own.
    let (storage, at) = ofconvert_engine::storage_for(data).map_err(|err| Error::io(data, err))?;
    let storage: &dyn Storage = &*storage;
    storage
        .read_ranges(&at, ranges, buffer)
        .map_err(|err| Error::io(data, err))
}

/// Maps the local file `path` for reading.
fn map(path: &Path) -> Result<memmap2::Mmap, Error> {
    let file = File::open(path).map_err(|err| Error::io(path, err))?;
    // SAFETY: the mapping is only read; see `Scratch` for a file truncated under it.
    unsafe { memmap2::Mmap::map(&file) }.map_err(|err| Error::io(path, err))
}
