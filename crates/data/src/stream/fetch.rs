//! Reading records by their index: record files opened for random access (the engine's
//! indexes), the records of a batch read in as few requests as their places allow (one read
//! per run of neighbours; in a store, every file's ranges at once, files side by side), and
//! each one's framing checked.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use crate::access::framed::Payloads;
use crate::access::held::Held;
use crate::access::index::IndexedFile;
use crate::access::spans::SpanCache;
use crate::memory::prefetch;
use ofconvert_engine::Checksums;
use ofconvert_engine::Error;
use ofconvert_engine::RecordAt;
use ofconvert_storage::object::{is_url, read_each_anywhere, storage_for};
use ofconvert_storage::transfer::is_replaced;
use ofconvert_storage::{RangeRead, Storage};

/// Where a run's bytes are: in the mapped file itself, or in a buffer.
const MAPPED: usize = usize::MAX;
/// Where a run's bytes are: from here on, in a piece of a chunk the batch holds
/// (`buffer - HELD`), not in a buffer.
const HELD: usize = 1 << 48;
/// Runs of this many bytes or more have their pages mapped in one call.
#[cfg(target_os = "linux")]
const POPULATE_FROM: u64 = 64 << 10;
/// Local files a reader keeps mapped between batches at most: a shuffled epoch over many
/// files would otherwise keep every one mapped, toward the kernel's limit of mappings.
const MAPS_KEPT: usize = 32;
/// Pieces of the cache of spans a reader keeps mapped between batches at most (about 4 MB
/// each): a batch of a global shuffle reads a record here and there in many of them.
const PIECES_MAPPED: usize = 64;
/// Ranges of one batch fetched from a store side by side (a connection each).
const RANGES_IN_FLIGHT: usize = 64;
/// The largest gap between two records of a batch in one object read in one request.
const MERGE_GAP: u64 = 256 << 10;

/// Record files of a dataset, in order, with their indexes.
#[derive(Debug)]
pub struct Files {
    /// The files, in the dataset's order.
    pub files: Vec<IndexedFile>,
    /// Where each file's records start among all, then the total.
    starts: Vec<u64>,
    /// Whether each file is in a store (else on a local disk): asked for each run read.
    pub(crate) remote: Vec<bool>,
    /// Where spans read from a store are kept for the next reader, if anywhere.
    cache: Option<SpanCache>,
    /// Records of the chunks whose pieces a batch is read out of through the cache.
    cache_chunk: u64,
    /// Whether some file was opened by its stated count, its index made when first read:
    /// else nothing is to be made before a read, and nothing is looked up for it.
    stated: bool,
}

/// A stretch of neighbouring records of one file, and where its bytes are: in the buffer
/// `buffer` from `at`, ([`MAPPED`]) in the mapped file, or (from [`HELD`] on) in a piece of a
/// chunk from `at`.
#[derive(Clone, Debug)]
struct Run {
    file: usize,
    records: Range<u64>,
    buffer: usize,
    at: usize,
}

/// Adds record `record` of file `file` to the runs: to the last one when it follows it in
/// its file and its bytes, else as a run of its own whose bytes start at `at` of `buffer`.
fn add_record(runs: &mut Vec<Run>, file: usize, record: u64, buffer: usize, at: usize) {
    match runs.last_mut() {
        Some(run) if run.file == file && run.records.end == record && run.buffer == buffer => {
            run.records.end += 1
        }
        _ => runs.push(Run {
            file,
            records: record..record + 1,
            buffer,
            at,
        }),
    }
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
    /// Pieces of the cache of spans (file, first byte), mapped.
    pieces: HashMap<(usize, u64), Arc<Held>>,
    buffers: Vec<Vec<u8>>,
    /// Pieces of chunks (of spans, or of the cache) the batch's records are read out of,
    /// where they lie.
    held: Vec<Arc<Held>>,
    runs: Vec<Run>,
}

impl Scratch {
    /// A scratch for the next batch holding the pieces of the cache this one mapped (this one
    /// keeps its records, and its mapped files, which they may be read from).
    pub(crate) fn take_pieces(&mut self) -> Scratch {
        Scratch {
            pieces: std::mem::take(&mut self.pieces),
            ..Scratch::default()
        }
    }
}

/// Files whose indexes are made side by side, at most (each a pass over an object).
const READY_AT_ONCE: usize = 8;

impl Files {
    /// The dataset of `files`, in this order.
    pub fn new(files: Vec<IndexedFile>) -> Files {
        let mut starts = Vec::with_capacity(files.len() + 1);
        let mut total = 0;
        for file in &files {
            starts.push(total);
            total += file.index.len();
        }
        starts.push(total);
        let remote = files.iter().map(|file| is_url(&file.data)).collect();
        let stated = files.iter().any(|file| file.index.get().is_none());
        Files {
            files,
            starts,
            remote,
            cache: None,
            cache_chunk: 0,
            stated,
        }
    }

    /// The same files, their spans read from a store kept in `cache`, and a batch's records
    /// read out of the pieces of the chunks of `chunk` records they lie in, through it.
    pub fn with_cache(self, cache: SpanCache, chunk: u64) -> Files {
        Files {
            cache: Some(cache),
            cache_chunk: chunk.max(1),
            ..self
        }
    }

    /// The first record of file `file` among all.
    pub(crate) fn first_record(&self, file: usize) -> u64 {
        self.starts[file]
    }

    /// The first record of each file among all, then the number of records.
    pub(crate) fn starts(&self) -> &[u64] {
        &self.starts
    }

    /// Where spans read from a store are kept, if anywhere.
    pub fn cache(&self) -> Option<&SpanCache> {
        self.cache.as_ref()
    }

    /// Whether some file is read from a store.
    pub fn any_remote(&self) -> bool {
        self.remote.iter().any(|&remote| remote)
    }

    /// Bytes of every record, framing included.
    pub fn bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|file| match file.index.len() {
                0 => 0,
                len => file.index.span(0..len).end,
            })
            .sum()
    }

    /// Whether the spans read from a store go through a cache on the local disk (whose
    /// records are fetched in whole chunks, never by themselves).
    pub(crate) fn caches_spans(&self) -> bool {
        self.cache.is_some()
    }

    /// Records of every file.
    pub fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    /// Whether no file holds a record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file of record `index` (below [`len`](Files::len)) and its place in it.
    pub fn locate(&self, index: u64) -> (usize, u64) {
        let file = self.starts.partition_point(|&start| start <= index) - 1;
        (file, index - self.starts[file])
    }

    /// Asks the processor for the index entries of the records `indices` before they are
    /// read: a shuffled batch's are far apart, each a wait for memory if read in turn.
    pub fn prefetch_index(&self, indices: &[u64]) {
        for &index in indices {
            let (file, record) = self.locate(index);
            self.files[file].index.prefetch(record);
        }
    }

    /// Makes the index of each file the records `indices` lie in where it is not made (a
    /// file whose count was stated, see [`open_stated`](crate::open_stated)): the files side
    /// by side.
    ///
    /// # Errors
    ///
    /// As [`IndexedFile::ready`]'s, the first file's that fails.
    pub fn ready_records(&self, indices: &[u64]) -> Result<(), Error> {
        if !self.stated {
            return Ok(());
        }
        let mut files: Vec<usize> = indices.iter().map(|&index| self.locate(index).0).collect();
        files.sort_unstable();
        files.dedup();
        self.ready_files(&files)
    }

    /// [`ready_records`](Files::ready_records) for the files `files`.
    pub(crate) fn ready_files(&self, files: &[usize]) -> Result<(), Error> {
        if !self.stated {
            return Ok(());
        }
        let unmade: Vec<usize> = files
            .iter()
            .copied()
            .filter(|&file| self.files[file].index.get().is_none())
            .collect();
        let made = ofconvert_storage::each_at_once(&unmade, READY_AT_ONCE, |&file| {
            self.files[file].ready().map(|_| ())
        });
        made.into_iter().collect()
    }

    /// Reads the records `indices` (below [`len`](Files::len)) into `scratch`, for
    /// [`each`](Files::each) to hand out.
    pub fn fetch(&self, indices: &[u64], scratch: &mut Scratch) -> Result<(), Error> {
        self.fetch_through(indices, scratch, true)
    }

    /// [`fetch`](Files::fetch), through the cache of spans or (`cache` off) past it, as
    /// records looked at alone are read: not in the chunks the cache fetches and keeps.
    pub(crate) fn fetch_through(
        &self,
        indices: &[u64],
        scratch: &mut Scratch,
        cache: bool,
    ) -> Result<(), Error> {
        self.ready_records(indices)?;
        scratch.runs.clear();
        for &index in indices {
            let (file, record) = self.locate(index);
            add_record(&mut scratch.runs, file, record, 0, 0);
        }
        self.read_runs(scratch, cache)
    }

    /// Calls `each(file, at, payload)` for each record [`fetch`](Files::fetch) read, in
    /// order, its framing checked (an ArrayRecord file's chunk: checked and decoded; its data
    /// hash as `checksums` says). Errors of `each` end the walk and are returned.
    pub fn each<E: From<Error>>(
        &self,
        scratch: &Scratch,
        checksums: Checksums,
        mut each: impl FnMut(&IndexedFile, RecordAt, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        // The runs of a shuffled batch are a record each, far apart: each one's index entry
        // and first bytes (a local file's: as it was mapped) are asked for before any is
        // decoded, so that the processor waits for memory once for many, not once a record.
        for run in &scratch.runs {
            self.files[run.file].index.prefetch(run.records.start);
            if run.buffer != MAPPED {
                prefetch(self.run_bytes(scratch, run).get(run.at));
            }
        }
        let mut payloads = Payloads::default();
        for run in &scratch.runs {
            let file = &self.files[run.file];
            let buffer = self.run_bytes(scratch, run);
            // Where the run's first record is in its file, and in `buffer`.
            let mut first = None;
            for record in run.records.clone() {
                let range = file.index.range(record);
                let (base, at) = *first.get_or_insert(match run.buffer {
                    MAPPED => (range.start, range.start as usize),
                    _ => (range.start, run.at),
                });
                let from = at + (range.start - base) as usize;
                let framed = &buffer[from..from + (range.end - range.start) as usize];
                let at = RecordAt {
                    offset: range.start,
                    index: record,
                };
                each(
                    file,
                    at,
                    payloads.of(run.file, file, framed, at, checksums)?,
                )?;
            }
        }
        Ok(())
    }

    /// The bytes run `run` lies in: its mapped file, or the piece or buffer holding it at `at`.
    fn run_bytes<'s>(&self, scratch: &'s Scratch, run: &Run) -> &'s [u8] {
        match run.buffer {
            MAPPED => &scratch.maps[&run.file],
            held @ HELD.. => &scratch.held[held - HELD],
            buffer => &scratch.buffers[buffer],
        }
    }

    /// Reads the bytes of every run into the buffers: local files with one positioned read
    /// per run, files in a store with one call per file for all its runs, files side by side.
    fn read_runs(&self, scratch: &mut Scratch, through_cache: bool) -> Result<(), Error> {
        scratch.held.clear();
        if scratch.maps.len() >= MAPS_KEPT {
            // Unmapped, but for the files this batch reads.
            let runs = &scratch.runs;
            scratch
                .maps
                .retain(|file, _| runs.iter().any(|run| run.file == *file));
        }
        let mut remote: Vec<usize> = Vec::new();
        for (number, run) in scratch.runs.iter_mut().enumerate() {
            let file = &self.files[run.file];
            if self.remote[run.file] {
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
            if span.end - span.start < POPULATE_FROM {
                // A shuffled batch's record: asked for now, as `each` says.
                prefetch(map.get(span.start as usize));
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
        if self.cache.is_some() && through_cache {
            // A run the cache holds is read where it is, in the piece it lies in (kept mapped),
            // or, across pieces, copied into buffer 0; one buffer each the runs fetched into
            // it; those of the last batch go.
            if scratch.pieces.len() >= PIECES_MAPPED {
                scratch.pieces.clear();
            }
            scratch.buffers.truncate(1);
            if scratch.buffers.is_empty() {
                scratch.buffers.push(Vec::new());
            }
            scratch.buffers[0].clear();
            let mut missing = Vec::new();
            for &number in &remote {
                let run = &mut scratch.runs[number];
                let kept = &mut scratch.buffers[0];
                let at = kept.len();
                let records = run.records.clone();
                let chunk = self.cache_chunk;
                match self.find_kept(run.file, records, chunk, &mut scratch.pieces, kept) {
                    Kept::In(piece, from) => {
                        run.buffer = HELD + hold(&mut scratch.held, &piece);
                        run.at = from;
                    }
                    Kept::Copied => {
                        run.buffer = 0;
                        run.at = at;
                    }
                    Kept::Missing => missing.push(number),
                }
            }
            let runs: Vec<(usize, Range<u64>)> = missing
                .iter()
                .map(|&number| {
                    let run = &scratch.runs[number];
                    (run.file, run.records.clone())
                })
                .collect();
            let read = self.read_runs_through(&runs, self.cache_chunk)?;
            for (&number, bytes) in missing.iter().zip(read) {
                scratch.runs[number].buffer = scratch.buffers.len();
                scratch.runs[number].at = 0;
                scratch.buffers.push(bytes);
            }
            return Ok(());
        }
        // Each remote file's runs by place, merged where the gap between them is small
        // (what a merge reads stays within twice the records' bytes, and a gap is at most
        // MERGE_GAP), each merged range a request of its own, all side by side.
        let mut by_place: Vec<(usize, Range<u64>, usize)> = remote
            .iter()
            .map(|&number| {
                let run = &scratch.runs[number];
                (
                    run.file,
                    self.files[run.file].index.span(run.records.clone()),
                    number,
                )
            })
            .collect();
        by_place.sort_by_key(|(file, span, _)| (*file, span.start));
        // (file, range read, bytes of records in it)
        let mut merged: Vec<(usize, Range<u64>, u64)> = Vec::new();
        let mut slot_of = Vec::with_capacity(by_place.len());
        for (file, span, _) in &by_place {
            let len = span.end - span.start;
            match merged.last_mut() {
                Some((f, range, useful))
                    if *f == *file
                        && span.start >= range.start
                        && span.start.saturating_sub(range.end) <= MERGE_GAP
                        && span.end.max(range.end) - range.start <= 2 * (*useful + len) =>
                {
                    range.end = range.end.max(span.end);
                    *useful += len;
                }
                _ => merged.push((*file, span.clone(), len)),
            }
            slot_of.push(merged.len() - 1);
        }
        while scratch.buffers.len() < merged.len() {
            scratch.buffers.push(Vec::new());
        }
        // Each of the version the dataset opened.
        let requests: Vec<RangeRead<'_>> = merged
            .iter()
            .map(|(file, range, _)| RangeRead {
                path: self.files[*file].data.as_path(),
                version: self.files[*file].version.as_deref(),
                range: range.clone(),
            })
            .collect();
        let buffers = &mut scratch.buffers[..merged.len()];
        // Sent side by side from this thread, as the store's own requests: not a thread each.
        let read = read_each_anywhere(&requests, RANGES_IN_FLIGHT, buffers);
        for (request, result) in requests.iter().zip(read) {
            result.map_err(|err| read_error(request.path, err))?;
        }
        for ((_, span, number), slot) in by_place.iter().zip(slot_of) {
            scratch.runs[*number].buffer = slot;
            scratch.runs[*number].at = (span.start - merged[slot].1.start) as usize;
        }
        Ok(())
    }
}

/// The bytes of a run of neighbouring records of a dataset read whole from a store: one
/// piece per file the run lies in, fetched, or mapped from the cache when it holds it.
#[derive(Debug)]
pub struct Span {
    /// The records (of the dataset) it holds.
    pub records: Range<u64>,
    /// Each file's piece: the file, its first record in the span, and its bytes.
    pub(crate) pieces: Vec<(usize, u64, Arc<Held>)>,
}

/// Where the cache holds records a batch reads: [`Files::find_kept`].
pub(crate) enum Kept {
    /// A piece they lie in is not in the cache.
    Missing,
    /// In one piece, from this byte of it.
    In(Arc<Held>, usize),
    /// Across pieces: copied out of them.
    Copied,
}

impl Files {
    /// Puts the records `indices` into `scratch` from the spans that hold them (`span_of`
    /// gives the span of a record), for [`each`](Files::each) to hand out: not copied, the
    /// scratch holds the pieces they lie in.
    pub fn cut<'s>(
        &self,
        indices: &[u64],
        span_of: impl Fn(u64) -> &'s Span,
        scratch: &mut Scratch,
    ) {
        scratch.runs.clear();
        scratch.held.clear();
        self.prefetch_index(indices);
        for &index in indices {
            let (file, record) = self.locate(index);
            let span = span_of(index);
            let (_, first, piece) = span
                .pieces
                .iter()
                .find(|(f, first, _)| *f == file && *first <= record)
                .expect("the span of a record holds its file");
            // The records are read where they are: the batch holds the pieces they lie in.
            let held = hold(&mut scratch.held, piece);
            let index_of = &self.files[file].index;
            let at = index_of.range(record).start - index_of.range(*first).start;
            add_record(&mut scratch.runs, file, record, HELD + held, at as usize);
        }
    }
}

/// The place of `piece` among the pieces a batch holds, held now if it was not.
fn hold(held: &mut Vec<Arc<Held>>, piece: &Arc<Held>) -> usize {
    match held.iter().rposition(|one| Arc::ptr_eq(one, piece)) {
        Some(at) => at,
        None => {
            held.push(Arc::clone(piece));
            held.len() - 1
        }
    }
}

/// Reads `ranges` of `data`, a file of the dataset in a store, of its version `version` (the
/// one the dataset opened), into `buffer`.
pub(crate) fn fetch_remote(
    data: &Path,
    version: Option<&str>,
    ranges: &[Range<u64>],
    buffer: &mut Vec<u8>,
) -> Result<(), Error> {
    buffer.clear();
    // Looked up for each batch: a forked worker gets stores of its own.
    let (storage, at) = storage_for(data).map_err(|err| Error::io(data, err))?;
    let storage: &dyn Storage = &*storage;
    storage
        .read_ranges(&at, version, ranges, buffer)
        .map_err(|err| read_error(data, err))
}

/// The error of a read of `data`, a file of the dataset: an object that its store says is
/// no longer the version the dataset opened is said to have changed, and what to do. Its
/// new bytes are not records at the places the dataset's index of it says.
fn read_error(data: &Path, err: std::io::Error) -> Error {
    if !is_replaced(&err) {
        return Error::io(data, err);
    }
    let changed = std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "the object changed since the dataset was opened (its ETag is not the one it was \
         indexed at), and its new bytes are not read against the former index: open the \
         dataset again to read it as it is now",
    );
    Error::io(data, changed)
}

/// Maps the local file `path` for reading.
fn map(path: &Path) -> Result<memmap2::Mmap, Error> {
    let file = File::open(path).map_err(|err| Error::io(path, err))?;
    // SAFETY: the mapping is only read; see `Scratch` for a file truncated under it.
    unsafe { memmap2::Mmap::map(&file) }.map_err(|err| Error::io(path, err))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::index::{open_indexed, IndexOptions};
    use ofconvert_engine::Format;
    use ofconvert_tfrecord::{Compression, Writer};

    /// A dataset of two local TFRecords holding `r0`..`r4` (three, then two).
    fn dataset(dir: &Path) -> Files {
        let mut files = Vec::new();
        for (name, records) in [("a.tfrecord", 0..3), ("b.tfrecord", 3..5)] {
            let path = dir.join(name);
            let mut writer =
                Writer::with_compression(File::create(&path).unwrap(), Compression::None);
            for record in records {
                writer
                    .write_record(format!("r{record}").as_bytes())
                    .unwrap();
            }
            writer.finish().unwrap();
            let options = IndexOptions {
                cache_dir: Some(dir.join("cache")),
                ..IndexOptions::default()
            };
            files.push(open_indexed(&path, Format::Tf, &options).unwrap());
        }
        Files::new(files)
    }

    fn payloads(files: &Files, scratch: &Scratch) -> Vec<String> {
        let mut got = Vec::new();
        files
            .each::<Error>(scratch, Checksums::Verify, |_, _, payload| {
                got.push(String::from_utf8(payload.to_vec()).unwrap());
                Ok(())
            })
            .unwrap();
        got
    }

    #[test]
    fn a_batch_reads_its_records_in_its_order_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let files = dataset(dir.path());
        assert_eq!(files.len(), 5);
        assert_eq!(files.locate(3), (1, 0));
        let mut scratch = Scratch::default();
        files.fetch(&[4, 0, 1, 3], &mut scratch).unwrap();
        assert_eq!(payloads(&files, &scratch), ["r4", "r0", "r1", "r3"]);
    }

    #[test]
    fn a_span_across_files_is_read_whole_and_its_records_cut_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let files = dataset(dir.path());
        let span = files.read_span(1..5).unwrap();
        assert_eq!(span.records, 1..5);
        assert_eq!(span.pieces.len(), 2);
        let mut scratch = Scratch::default();
        files.cut(&[3, 1, 4], |_| &span, &mut scratch);
        assert_eq!(payloads(&files, &scratch), ["r3", "r1", "r4"]);
    }
}
