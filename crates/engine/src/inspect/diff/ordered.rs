//! Two datasets compared record by record, in order, streaming: each side's files are read
//! by a few threads (several files at a time, each into a short queue of batches, taken in
//! file order), the main thread pairs record `i` of one side with record `i` of the other
//! in windows, and workers compare the windows. Memory is the queues': flat in the size of
//! the datasets. Nothing is compared past the first difference found.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use ofconvert_bridge::Transcoder;

use super::canonical::Canon;
use super::sides::Dataset;
use super::{Difference, Place};
use crate::error::Error;
use crate::naming::names::Format;
use crate::options::Checksums;
use crate::progress::{Event, ProgressFn};
use crate::records::{RecordAt, RecordReader};
use crate::storage::Storage;

/// A batch is sent once it holds this many bytes or records.
const BATCH_BYTES: usize = 1 << 20;
const BATCH_RECORDS: usize = 1024;

/// Batches queued per reading thread.
const QUEUED_BATCHES: usize = 2;

/// Records compared by a worker at a time.
const WINDOW_RECORDS: usize = 512;

/// One side of a comparison.
#[derive(Clone, Copy)]
pub(crate) struct Input<'a> {
    pub(crate) storage: &'a dyn Storage,
    pub(crate) format: Format,
    pub(crate) dataset: &'a Dataset,
    /// The mapping its records go through before they are compared (side A's, when one is
    /// given).
    pub(crate) mapped: Option<&'a Transcoder>,
}

/// Records of one file, in order, each in its own buffer, read in place. The buffers go
/// back to the side's [`Spare`] when the batch is dropped, so that after the first batches
/// no memory is allocated (nor touched for the first time) again.
struct Batch {
    file: usize,
    records: Vec<Vec<u8>>,
    /// How many of `records` hold records of this batch.
    len: usize,
    at: Vec<RecordAt>,
    spare: Arc<Spare>,
}

/// The buffers of a batch: its records' and their places.
type Buffers = (Vec<Vec<u8>>, Vec<RecordAt>);

/// The buffers of batches done with, for the next ones.
#[derive(Default)]
struct Spare(Mutex<Vec<Buffers>>);

impl Batch {
    fn new(file: usize, spare: &Arc<Spare>) -> Batch {
        let (records, mut at) = spare
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop()
            .unwrap_or_default();
        at.clear();
        Batch {
            file,
            records,
            len: 0,
            at,
            spare: Arc::clone(spare),
        }
    }

    fn record(&self, index: usize) -> &[u8] {
        &self.records[index]
    }

    /// The buffer the next record is read into.
    fn next_buffer(&mut self) -> &mut Vec<u8> {
        if self.len == self.records.len() {
            self.records.push(Vec::new());
        }
        &mut self.records[self.len]
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        let records = std::mem::take(&mut self.records);
        let at = std::mem::take(&mut self.at);
        let mut spare = self
            .spare
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // More than the batches that can be alive at once is never needed.
        if spare.len() < 16 {
            spare.push((records, at));
        }
    }
}

/// What a reading thread sends.
enum Piece {
    Records(Arc<Batch>),
    /// The file is read to its end.
    End,
    Failed(Error),
}

/// Reads `input`'s files on `readers` threads: thread `t` reads files `t`, `t + readers`,
/// ... into its own queue, so that the queues, taken in turn, give the files in order.
fn start_reading<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    input: Input<'scope>,
    readers: usize,
    stop: &'scope AtomicU64,
    progress: ProgressFn<'scope>,
) -> Vec<Receiver<Piece>> {
    let files = input.dataset.files.len();
    let readers = readers.clamp(1, files.max(1));
    let spare = Arc::new(Spare::default());
    (0..readers)
        .map(|first| {
            let (sender, receiver) = sync_channel(QUEUED_BATCHES);
            let spare = Arc::clone(&spare);
            scope.spawn(move || {
                for file in (first..files).step_by(readers) {
                    if !read_file(input, file, &sender, &spare, stop, progress) {
                        return;
                    }
                }
            });
            receiver
        })
        .collect()
}

/// Sends the records of file `file` in batches, then [`Piece::End`]; false when reading
/// stops (damage, or nobody waits for the records any more).
fn read_file(
    input: Input<'_>,
    file: usize,
    sender: &SyncSender<Piece>,
    spare: &Arc<Spare>,
    stop: &AtomicU64,
    progress: ProgressFn<'_>,
) -> bool {
    let path = &input.dataset.files[file].0;
    let opened = RecordReader::open_at(
        input.storage,
        path,
        input.format,
        Checksums::Verify,
        None,
        Some(progress),
    );
    let mut reader = match opened {
        Ok(reader) => reader,
        Err(err) => {
            let _ = sender.send(Piece::Failed(err));
            return false;
        }
    };
    let mut batch = Batch::new(file, spare);
    let mut bytes = 0;
    loop {
        match reader.read(batch.next_buffer()) {
            Ok(Some(at)) => {
                bytes += batch.records[batch.len].len();
                batch.len += 1;
                batch.at.push(at);
                if bytes >= BATCH_BYTES || batch.len >= BATCH_RECORDS {
                    if stop.load(Ordering::Relaxed) != u64::MAX {
                        return false;
                    }
                    let full = std::mem::replace(&mut batch, Batch::new(file, spare));
                    bytes = 0;
                    if sender.send(Piece::Records(Arc::new(full))).is_err() {
                        return false;
                    }
                }
            }
            Ok(None) => break,
            Err(err) => {
                let _ = sender.send(Piece::Failed(err));
                return false;
            }
        }
    }
    let sent = batch.len == 0 || sender.send(Piece::Records(Arc::new(batch))).is_ok();
    sent && sender.send(Piece::End).is_ok()
}

/// The records of one side in order, as the reading threads deliver them.
struct Cursor<'a> {
    queues: Vec<Receiver<Piece>>,
    files: &'a [(PathBuf, u64)],
    file: usize,
    batch: Option<Arc<Batch>>,
    next: usize,
}

impl Cursor<'_> {
    /// Whether a record is at hand; false at the end of the side.
    fn ready(&mut self) -> Result<bool, Error> {
        loop {
            if self.batch.as_ref().is_some_and(|b| self.next < b.len) {
                return Ok(true);
            }
            self.batch = None;
            if self.file >= self.files.len() {
                return Ok(false);
            }
            let queue = &self.queues[self.file % self.queues.len()];
            match queue.recv() {
                Ok(Piece::Records(batch)) => {
                    self.batch = Some(batch);
                    self.next = 0;
                }
                Ok(Piece::End) => self.file += 1,
                Ok(Piece::Failed(err)) => return Err(err),
                Err(_) => {
                    let path = &self.files[self.file].0;
                    let err = std::io::Error::other("its reader stopped before its end");
                    return Err(Error::io(path, err));
                }
            }
        }
    }

    /// Up to `most` records from the batch at hand.
    fn take(&mut self, most: usize) -> (Arc<Batch>, Range<usize>) {
        let batch = Arc::clone(self.batch.as_ref().expect("ready was called"));
        let end = batch.len.min(self.next + most);
        let range = self.next..end;
        self.next = end;
        (batch, range)
    }

    /// Where the record at hand is.
    fn place(&self) -> Option<Place> {
        let batch = self.batch.as_ref()?;
        Some(place(self.files, batch, self.next))
    }
}

fn place(files: &[(PathBuf, u64)], batch: &Batch, index: usize) -> Place {
    let at = batch.at[index];
    Place {
        path: files[batch.file].0.display().to_string(),
        offset: at.offset,
        record: at.index,
        byte: None,
    }
}

/// Records `first..` of both sides, side by side.
struct Window {
    first: u64,
    a: (Arc<Batch>, Range<usize>),
    b: (Arc<Batch>, Range<usize>),
}

/// Compares `a` and `b` record by record on `jobs` threads (and as many more reading);
/// `Ok(None)` when they hold the same records in the same order. Also returns the records
/// compared.
///
/// # Errors
///
/// When a file cannot be read or its framing is damaged: then they cannot be compared.
pub(crate) fn compare(
    a: Input<'_>,
    b: Input<'_>,
    jobs: usize,
    progress: ProgressFn<'_>,
) -> Result<(Option<Difference>, u64), Error> {
    // The record number of the first difference found so far (none: u64::MAX). Readers
    // stop once there is one, workers skip windows past it.
    let first_found = AtomicU64::new(u64::MAX);
    let found: Mutex<Option<Difference>> = Mutex::new(None);
    let readers = (jobs / 2).max(1);
    let (outcome, compared) = std::thread::scope(|scope| {
        let (work, windows) = sync_channel::<Window>(jobs);
        let windows = Arc::new(Mutex::new(windows));
        let (done, compared) = channel::<u64>();
        for _ in 0..jobs {
            let windows = Arc::clone(&windows);
            let done = done.clone();
            let (first_found, found) = (&first_found, &found);
            scope.spawn(move || {
                let mut canon = Canon::new(a.mapped);
                loop {
                    let next = windows
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .recv();
                    let Ok(window) = next else {
                        return;
                    };
                    if window.first >= first_found.load(Ordering::Relaxed) {
                        continue;
                    }
                    let count = compare_window(&mut canon, a, b, &window, first_found, found);
                    let _ = done.send(count);
                    progress(Event::Progress {
                        bytes: 0,
                        records: count,
                    });
                }
            });
        }
        drop(done);
        let mut left = Cursor {
            queues: start_reading(scope, a, readers, &first_found, progress),
            files: &a.dataset.files,
            file: 0,
            batch: None,
            next: 0,
        };
        let mut right = Cursor {
            queues: start_reading(scope, b, readers, &first_found, progress),
            files: &b.dataset.files,
            file: 0,
            batch: None,
            next: 0,
        };
        let mut record = 0u64;
        let outcome = loop {
            if record >= first_found.load(Ordering::Relaxed) {
                break Ok(None);
            }
            let (more_a, more_b) = match (left.ready(), right.ready()) {
                (Ok(more_a), Ok(more_b)) => (more_a, more_b),
                // Readers stop once a difference is found, which comes first then.
                (Err(err), _) | (_, Err(err)) => break Err(err),
            };
            if !more_a || !more_b {
                if more_a || more_b {
                    break Ok(Some(ends_first(record, more_b, &left, &right)));
                }
                break Ok(None);
            }
            let remaining =
                |cursor: &Cursor<'_>| cursor.batch.as_ref().map_or(0, |b| b.len - cursor.next);
            let most = remaining(&left).min(remaining(&right)).min(WINDOW_RECORDS);
            let window = Window {
                first: record,
                a: left.take(most),
                b: right.take(most),
            };
            record += most as u64;
            if work.send(window).is_err() {
                break Ok(None);
            }
        };
        // Readers blocked on a full queue see it closed; workers finish what is queued.
        first_found.fetch_min(record, Ordering::Relaxed);
        drop(work);
        drop((left, right));
        (outcome, compared.iter().sum::<u64>())
    });
    let worker_found = found
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // Every record before the place where reading failed was compared: a difference found
    // among them comes first.
    let outcome = match (outcome, worker_found.is_some()) {
        (Err(_), true) => Ok(None),
        (outcome, _) => outcome,
    };
    match outcome? {
        // A record found different comes before the end of the shorter side.
        Some(ended) => match worker_found {
            Some(found) if found.record < ended.record => Ok((Some(found), compared)),
            _ => Ok((Some(ended), compared)),
        },
        None => Ok((worker_found, compared)),
    }
}

/// The difference of two sides of which one ended at record `record`, `b_longer` saying
/// which goes on.
fn ends_first(record: u64, b_longer: bool, a: &Cursor<'_>, b: &Cursor<'_>) -> Difference {
    let (ended, longer) = if b_longer { ("A", "B") } else { ("B", "A") };
    let (a_place, b_place) = (a.place(), b.place());
    Difference {
        dataset: String::new(),
        record: Some(record),
        feature: None,
        what: format!("{ended} ends after {record} records; {longer} has more"),
        a: None,
        b: None,
        a_place,
        b_place,
    }
}

/// Compares the records of one window; notes the first difference if it comes before any
/// found so far. Returns the records compared.
fn compare_window(
    canon: &mut Canon,
    a: Input<'_>,
    b: Input<'_>,
    window: &Window,
    first_found: &AtomicU64,
    found: &Mutex<Option<Difference>>,
) -> u64 {
    let (a_batch, a_range) = &window.a;
    let (b_batch, b_range) = &window.b;
    for (offset, (i, j)) in a_range.clone().zip(b_range.clone()).enumerate() {
        let differs = canon.compare(a_batch.record(i), a.format, b_batch.record(j), b.format);
        let Some(differs) = differs else {
            continue;
        };
        let record = window.first + offset as u64;
        let mut found = found
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if found
            .as_ref()
            .is_none_or(|earlier| Some(record) < earlier.record)
        {
            let (a_place, b_place) = (
                place(&a.dataset.files, a_batch, i),
                place(&b.dataset.files, b_batch, j),
            );
            *found = Some(differs.into_difference(record, a_place, b_place));
        }
        first_found.fetch_min(record, Ordering::Relaxed);
        return offset as u64 + 1;
    }
    a_range.len() as u64
}
