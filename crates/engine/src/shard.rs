//! One conversion spread over many machines: worker K of N converts its share of the parts
//! of a plan that every worker derives alike and the first one stores in
//! `OUT/.ofconvert/plan.json`; each finished part gets a receipt beside the plan, and
//! [`commit`](crate::commit()) writes the manifests once every part has one.
//!
//! The plan is what a single-machine run would do, work item for work item, so the parts
//! are the same bytes. Part numbers are global: work item `i` of a dataset is part `i`.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ofconvert_bridge::Transcoder;
use serde::{Deserialize, Serialize};

use crate::chunk::{plan_chunks, Chunk, ChunkOutput, Segment};
use crate::convert::{run_chunk, Context, Job, Stop, Worker};
use crate::detect::Format;
use crate::error::{error_chain, Error, ErrorKind};
use crate::options::{Direction, Options, Settings};
use crate::output::stage;
use crate::plan::{tf_file_stem, DatasetPlan, Plan};
use crate::progress::{Event, ProgressFn};
use crate::publish::Target;
use crate::receipt::{Checksummed, Checksums, Receipt};
use crate::records::RecordAt;
use crate::storage::{LockError, OutputLock, Storage};
use crate::summary::slash_path;

/// The hidden directory of a sharded run in its output root: the plan, the receipts, the
/// workers' locks. `commit` removes it.
pub const CONTROL_DIR: &str = ".ofconvert";

const PLAN_NAME: &str = "plan.json";
const RECEIPTS_DIR: &str = "receipts";
const PLAN_FORMAT: u32 = 1;

/// Worker `index` of `count` (counted from 0), as `--shard K/N` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This worker's number, below `count`.
    pub index: usize,
    /// How many workers share the run.
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let usage = "expected K/N: worker K of N, counted from 0 (0/4, 1/4, 2/4, 3/4)";
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?}: {usage}"))?;
        let number = |part: &str| {
            part.trim()
                .parse::<usize>()
                .map_err(|_| format!("{text:?}: {part:?} is not a number; {usage}"))
        };
        let (index, count) = (number(index)?, number(count)?);
        if count == 0 {
            return Err(format!(
                "{text:?}: there must be at least one worker; {usage}"
            ));
        }
        if index >= count {
            return Err(format!(
                "{text:?}: workers are numbered from 0 to {}; {usage}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The plan every worker of a sharded run follows.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StoredPlan {
    pub(crate) format: u32,
    pub(crate) workers: usize,
    /// The input root, as the first worker named it.
    pub(crate) input: String,
    pub(crate) settings: Settings,
    pub(crate) datasets: Vec<StoredDataset>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StoredDataset {
    pub(crate) name: String,
    pub(crate) source: String,
    /// The output directory relative to the output root (empty: the root).
    pub(crate) output: String,
    pub(crate) tf_stem: String,
    pub(crate) inputs: Vec<StoredInput>,
    pub(crate) warnings: Vec<String>,
    /// Why it cannot be converted, found while planning.
    pub(crate) problem: Option<String>,
    pub(crate) chunks: Vec<StoredChunk>,
}

/// An input file as the plan saw it: a changed size or modification time is a changed
/// input.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredInput {
    pub(crate) path: String,
    pub(crate) bytes: u64,
    /// Nanoseconds since the epoch, for local files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) modified: Option<u128>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StoredChunk {
    pub(crate) worker: usize,
    pub(crate) bytes: u64,
    pub(crate) segments: Vec<StoredSegment>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StoredSegment {
    input: usize,
    first: u64,
    end: Option<u64>,
    /// Offset and index of a record boundary at or before `first`.
    start: Option<(u64, u64)>,
}

impl StoredPlan {
    /// The plan of a run of `workers` workers: `plan`'s datasets cut into work items as a
    /// single run cuts them, each work item given to a worker so that their input bytes are
    /// balanced.
    fn build(plan: &Plan, options: &Options, workers: usize) -> StoredPlan {
        use rayon::prelude::*;

        let input_format = match plan.direction {
            Direction::TfToOf => Format::Tf,
            Direction::OfToTf => Format::Of,
        };
        let cut: Vec<Result<Vec<Chunk>, String>> = plan
            .datasets
            .par_iter()
            .enumerate()
            .map(|(index, dataset)| match &dataset.problem {
                Some(err) => Err(error_chain(err)),
                None => plan_chunks(&*plan.input_storage, options, input_format, index, dataset)
                    .map_err(|err| error_chain(&err)),
            })
            .collect();
        let mut datasets: Vec<StoredDataset> = plan
            .datasets
            .iter()
            .zip(cut)
            .map(|(dataset, chunks)| {
                let mut stored = describe(plan, dataset);
                match chunks {
                    Ok(chunks) => stored.chunks = chunks.iter().map(StoredChunk::from).collect(),
                    Err(problem) => stored.problem = Some(problem),
                }
                stored
            })
            .collect();
        assign(&mut datasets, workers);
        StoredPlan {
            format: PLAN_FORMAT,
            workers,
            input: plan.input.display().to_string(),
            settings: options.settings(),
            datasets,
        }
    }

    /// Whether a worker with these `settings`, of `workers`, that found `datasets` belongs
    /// to this plan.
    fn check(
        &self,
        settings: &Settings,
        workers: usize,
        datasets: &[StoredDataset],
    ) -> Result<(), ErrorKind> {
        if self.workers != workers {
            return Err(ErrorKind::ShardFlags {
                differs: format!(
                    "it was planned for {} workers, this one is told there are {workers}",
                    self.workers
                ),
            });
        }
        if &self.settings != settings {
            let show = |settings: &Settings| serde_json::to_value(settings).unwrap_or_default();
            let (stored, given) = (show(&self.settings), show(settings));
            let differs: Vec<String> = stored
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(key, value)| given.get(key.as_str()) != Some(value))
                .map(|(key, value)| {
                    let given = given.get(key.as_str()).cloned().unwrap_or_default();
                    format!("{key} was {value}, is {given}")
                })
                .collect();
            return Err(ErrorKind::ShardFlags {
                differs: format!("its flags differ ({})", differs.join("; ")),
            });
        }
        let names = |list: &[StoredDataset]| list.iter().map(|d| d.name.clone()).collect();
        let (stored_names, found_names): (Vec<String>, Vec<String>) =
            (names(&self.datasets), names(datasets));
        if stored_names != found_names {
            return Err(ErrorKind::InputChanged {
                what: format!("datasets were {stored_names:?}, are {found_names:?}"),
            });
        }
        for (stored, found) in self.datasets.iter().zip(datasets) {
            if let Some(what) = input_change(&stored.inputs, &found.inputs) {
                return Err(ErrorKind::InputChanged {
                    what: format!("dataset {}: {what}", stored.name),
                });
            }
        }
        Ok(())
    }

    /// Work item `index` of dataset `dataset` as [`run_chunk`] takes it.
    fn chunk(&self, dataset: usize, index: usize) -> Chunk {
        let chunks = &self.datasets[dataset].chunks;
        let stored = &chunks[index];
        Chunk {
            dataset,
            index,
            of: chunks.len(),
            segments: stored
                .segments
                .iter()
                .map(|segment| Segment {
                    input: segment.input,
                    first: segment.first,
                    end: segment.end,
                    start: segment
                        .start
                        .map(|(offset, index)| RecordAt { offset, index }),
                })
                .collect(),
            bytes: stored.bytes,
        }
    }

    /// Reads the plan stored in `output`, if there is one.
    pub(crate) fn read(storage: &dyn Storage, output: &Path) -> Result<Option<StoredPlan>, Error> {
        let path = output.join(CONTROL_DIR).join(PLAN_NAME);
        let Some(bytes) = storage.read(&path).map_err(|err| Error::io(&path, err))? else {
            return Ok(None);
        };
        let plan: StoredPlan = serde_json::from_slice(&bytes)
            .map_err(|err| Error::io(&path, io::Error::new(io::ErrorKind::InvalidData, err)))?;
        if plan.format != PLAN_FORMAT {
            let err = io::Error::new(
                io::ErrorKind::InvalidData,
                format!("plan format {} is not {PLAN_FORMAT}", plan.format),
            );
            return Err(Error::io(&path, err));
        }
        Ok(Some(plan))
    }

    /// Stores the plan in `output` unless one is there already; returns the one stored.
    fn store(self, storage: &dyn Storage, output: &Path) -> Result<StoredPlan, Error> {
        let control = output.join(CONTROL_DIR);
        let path = control.join(PLAN_NAME);
        let mut bytes = serde_json::to_vec_pretty(&self).map_err(io::Error::other);
        if let Ok(bytes) = &mut bytes {
            bytes.push(b'\n');
        }
        let written = bytes.and_then(|bytes| put_if_absent(storage, &control, &bytes));
        match written {
            Ok(()) => Ok(self),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                StoredPlan::read(storage, output)?
                    .ok_or_else(|| Error::io(&path, io::Error::from(io::ErrorKind::NotFound)))
            }
            Err(err) => Err(Error::io(&path, err)),
        }
    }
}

/// Writes the plan whole where none is: through a hard link on a file system (a reader
/// never sees half a plan), with the store's create-if-absent write elsewhere.
fn put_if_absent(storage: &dyn Storage, control: &Path, bytes: &[u8]) -> io::Result<()> {
    let path = control.join(PLAN_NAME);
    if !storage.renames_cheaply() {
        return storage.put_new(&path, bytes);
    }
    let temp = control.join(crate::layout::staged_name(PLAN_NAME));
    std::fs::write(&temp, bytes)?;
    let linked = std::fs::File::open(&temp)
        .and_then(|file| file.sync_all())
        .and_then(|()| std::fs::hard_link(&temp, &path));
    let _ = std::fs::remove_file(&temp);
    linked?;
    storage.sync_dir(control)
}

impl From<&Chunk> for StoredChunk {
    fn from(chunk: &Chunk) -> StoredChunk {
        StoredChunk {
            worker: 0,
            bytes: chunk.bytes,
            segments: chunk
                .segments
                .iter()
                .map(|segment| StoredSegment {
                    input: segment.input,
                    first: segment.first,
                    end: segment.end,
                    start: segment.start.map(|at| (at.offset, at.index)),
                })
                .collect(),
        }
    }
}

/// A dataset as the plan stores it, without its work items.
fn describe(plan: &Plan, dataset: &DatasetPlan) -> StoredDataset {
    let output = dataset
        .output_dir
        .strip_prefix(&plan.output)
        .map(slash_path)
        .unwrap_or_default();
    StoredDataset {
        name: dataset.name.clone(),
        source: slash_path(&dataset.source),
        output,
        tf_stem: tf_file_stem(&plan.input, dataset),
        inputs: dataset
            .inputs
            .iter()
            .map(|input| StoredInput {
                path: slash_path(&input.relative),
                bytes: input.size,
                modified: modified(&input.path),
            })
            .collect(),
        warnings: dataset.warnings.clone(),
        problem: None,
        chunks: Vec::new(),
    }
}

/// When a local file was last modified; object stores are judged by size alone.
fn modified(path: &Path) -> Option<u128> {
    if crate::object::is_url(path) {
        return None;
    }
    let time = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(time.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos())
}

/// The first difference between the inputs a plan saw and those found now.
fn input_change(stored: &[StoredInput], found: &[StoredInput]) -> Option<String> {
    for (was, is) in stored.iter().zip(found) {
        if was.path != is.path {
            return Some(format!("{} is now {}", was.path, is.path));
        }
        if was.bytes != is.bytes {
            return Some(format!(
                "{} was {} bytes, is {}",
                was.path, was.bytes, is.bytes
            ));
        }
        if was.modified != is.modified {
            return Some(format!("{} was modified", was.path));
        }
    }
    match stored.len().cmp(&found.len()) {
        std::cmp::Ordering::Less => Some(format!("{} is new", found[stored.len()].path)),
        std::cmp::Ordering::Greater => Some(format!("{} is gone", stored[found.len()].path)),
        std::cmp::Ordering::Equal => None,
    }
}

/// Gives every work item to a worker: the biggest first, each to the worker with the fewest
/// bytes so far (the lowest number on a tie), so that every worker derives the same split.
fn assign(datasets: &mut [StoredDataset], workers: usize) {
    let mut items: Vec<(u64, usize, usize)> = datasets
        .iter()
        .enumerate()
        .flat_map(|(d, dataset)| {
            dataset
                .chunks
                .iter()
                .enumerate()
                .map(move |(c, chunk)| (chunk.bytes, d, c))
        })
        .collect();
    items.sort_by(|a, b| b.0.cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let mut loads = vec![(0u64, 0usize); workers.max(1)];
    for (worker, load) in loads.iter_mut().enumerate() {
        load.1 = worker;
    }
    for (bytes, d, c) in items {
        let least = loads.iter_mut().min().map(|load| {
            load.0 += bytes.max(1);
            load.1
        });
        datasets[d].chunks[c].worker = least.unwrap_or(0);
    }
}

/// Where work item `chunk` of dataset `dataset` leaves its receipt.
pub(crate) fn receipt_path(output: &Path, dataset: usize, chunk: usize) -> PathBuf {
    output
        .join(CONTROL_DIR)
        .join(RECEIPTS_DIR)
        .join(format!("{dataset:05}-{chunk:06}.json"))
}

/// The receipt at `path`, if there is one.
pub(crate) fn read_receipt(storage: &dyn Storage, path: &Path) -> Result<Option<Receipt>, Error> {
    let Some(bytes) = storage.read(path).map_err(|err| Error::io(path, err))? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|err| Error::io(path, io::Error::new(io::ErrorKind::InvalidData, err)))
}

/// The directory whose lock a worker holds while it runs.
pub(crate) fn worker_dir(output: &Path, worker: usize) -> PathBuf {
    output.join(CONTROL_DIR).join(format!("worker-{worker}"))
}

/// What one worker of a sharded run did.
#[derive(Clone, Debug, Serialize)]
pub struct ShardSummary {
    /// This worker's number.
    pub worker: usize,
    /// How many workers share the run.
    pub workers: usize,
    /// The output root.
    pub output: String,
    /// Whether this worker stored the plan (it was the first).
    pub planned: bool,
    /// Parts (work items) this worker converted in this run.
    pub converted: usize,
    /// Parts it found finished by an earlier run of it, with their receipts.
    pub kept: usize,
    /// Records converted in this run.
    pub records: u64,
    /// Bytes written in this run.
    pub output_bytes: u64,
    /// Datasets whose share failed, with why: `name: error`.
    pub failed: Vec<String>,
    /// Whether the run was interrupted before its share was done.
    pub interrupted: bool,
    /// Wall time in seconds.
    pub seconds: f64,
}

/// Converts worker `shard`'s share of a sharded run of `plan`, storing the run's plan first
/// if this worker is the first.
///
/// # Errors
///
/// What stops the worker: a stored plan made with other flags or for another number of
/// workers ([`Error::is_usage`]), an input changed since the plan was stored, a `commit`
/// running, an output that cannot be written. A failed work item is in the summary.
pub fn convert_shard(
    plan: Plan,
    options: &Options,
    shard: Shard,
    progress: ProgressFn<'_>,
) -> Result<ShardSummary, Error> {
    let started = Instant::now();
    let transcoder = Transcoder::new(options.mapping.clone())
        .map_err(|err| Error::new(ErrorKind::InvalidMapping(err)))?;
    let output = plan.output.clone();
    let storage = Arc::clone(&plan.output_storage);
    let receipts = output.join(CONTROL_DIR).join(RECEIPTS_DIR);
    let worker_dir = worker_dir(&output, shard.index);
    for dir in [&receipts, &worker_dir] {
        storage
            .create_dir_all(dir)
            .map_err(|err| Error::io(dir, err))?;
    }
    let _lock = lock_worker(&*storage, &worker_dir, &output)?;

    let settings = options.settings();
    let found: Vec<StoredDataset> = plan
        .datasets
        .iter()
        .map(|dataset| describe(&plan, dataset))
        .collect();
    let (stored, planned) = match StoredPlan::read(&*storage, &output)? {
        Some(stored) => (stored, false),
        None => {
            let built = StoredPlan::build(&plan, options, shard.count);
            (built.store(&*storage, &output)?, true)
        }
    };
    stored
        .check(&settings, shard.count, &found)
        .map_err(|kind| Error::new(kind).in_file(&output))?;

    let crcs = Arc::new(Checksums::default());
    let checksummed = Checksummed {
        inner: Arc::clone(&storage),
        crcs: Arc::clone(&crcs),
    };
    let context = Context {
        options,
        input_storage: &*plan.input_storage,
        storage: &checksummed,
        progress,
        input_format: match plan.direction {
            Direction::TfToOf => Format::Tf,
            Direction::OfToTf => Format::Of,
        },
    };
    let mut summary = ShardSummary {
        worker: shard.index,
        workers: shard.count,
        output: output.display().to_string(),
        planned,
        converted: 0,
        kept: 0,
        records: 0,
        output_bytes: 0,
        failed: Vec::new(),
        interrupted: false,
        seconds: 0.0,
    };
    let jobs: Vec<Job> = plan
        .datasets
        .iter()
        .map(|dataset| Job {
            target: Target {
                storage: &checksummed,
                options,
                settings: &settings,
                dataset,
                tf_stem: tf_file_stem(&plan.input, dataset),
            },
            failed: AtomicBool::new(false),
            state: Mutex::default(),
        })
        .collect();
    let mut todo = Vec::new();
    for (d, dataset) in stored.datasets.iter().enumerate() {
        if let Some(problem) = &dataset.problem {
            // Every worker finds it; one says it.
            if shard.index == 0 {
                summary.failed.push(format!("{}: {problem}", dataset.name));
            }
            continue;
        }
        for (c, chunk) in dataset.chunks.iter().enumerate() {
            if chunk.worker != shard.index {
                continue;
            }
            let receipt = receipt_path(&output, d, c);
            let done = read_receipt(&*storage, &receipt)
                .ok()
                .flatten()
                .is_some_and(|found| {
                    found
                        .check_part(&*storage, &jobs[d].target.dataset.output_dir)
                        .is_ok()
                });
            if done {
                summary.kept += 1;
            } else {
                storage
                    .remove(&receipt)
                    .map_err(|err| Error::io(&receipt, err))?;
                todo.push(stored.chunk(d, c));
            }
        }
    }
    for d in todo.iter().map(|chunk| chunk.dataset) {
        let dir = &jobs[d].target.dataset.output_dir;
        storage
            .create_dir_all(dir)
            .map_err(|err| Error::io(dir, err))?;
    }
    let mut datasets_todo: Vec<usize> = todo.iter().map(|chunk| chunk.dataset).collect();
    datasets_todo.dedup();
    progress(Event::Started {
        datasets: datasets_todo.len(),
        files: todo.iter().map(|chunk| chunk.segments.len()).sum(),
        bytes: todo.iter().map(|chunk| chunk.bytes).sum(),
    });

    let shared = Mutex::new(summary);
    // Each receipt is written as soon as its part is finished: a worker killed later keeps
    // what it finished.
    let done = |chunk: &Chunk, result: Result<ChunkOutput, Stop>| {
        let dataset = &stored.datasets[chunk.dataset];
        let failed = |err: &Error| format!("{}: {}", dataset.name, error_chain(err));
        match result {
            Ok(output_of_chunk) => {
                let inputs = chunk
                    .segments
                    .iter()
                    .map(|segment| dataset.inputs[segment.input].path.clone())
                    .collect();
                let receipt = Receipt::new(
                    shard.index,
                    &dataset.name,
                    chunk.index,
                    inputs,
                    output_of_chunk,
                    &crcs,
                );
                let written = write_receipt(&*storage, &output, chunk, &receipt);
                let mut summary = lock(&shared);
                match written {
                    Ok(()) => {
                        if let Some(part) = &receipt.part {
                            summary.records += part.records;
                            summary.output_bytes += part.bytes;
                        }
                        summary.converted += 1;
                    }
                    Err(err) => summary.failed.push(failed(&err)),
                }
            }
            Err(Stop::Failed(err)) => lock(&shared).failed.push(failed(&err)),
            Err(Stop::Interrupted) => lock(&shared).interrupted = true,
            Err(Stop::Cancelled) => {}
        }
    };
    run_share(&context, &jobs, &todo, &transcoder, options, &done)?;
    let mut summary = shared
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs the work items `todo` on a pool of `options.jobs` threads.
fn run_share(
    context: &Context<'_>,
    jobs: &[Job<'_>],
    todo: &[Chunk],
    transcoder: &Transcoder,
    options: &Options,
    done: &(dyn Fn(&Chunk, Result<ChunkOutput, Stop>) + Sync),
) -> Result<(), Error> {
    use rayon::prelude::*;

    let threads = match options.jobs {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|err| Error::new(ErrorKind::Io(io::Error::other(err))))?;
    pool.install(|| {
        todo.par_iter().with_max_len(1).for_each_init(
            || Worker::new(context, transcoder),
            |worker, chunk| {
                let job = &jobs[chunk.dataset];
                let result = if options.interrupt.is_set() {
                    Err(Stop::Interrupted)
                } else if job.failed.load(Ordering::Relaxed) {
                    Err(Stop::Cancelled)
                } else {
                    run_chunk(context, job, chunk, worker)
                };
                if result.is_err() {
                    job.failed.store(true, Ordering::Relaxed);
                }
                done(chunk, result);
            },
        )
    });
    Ok(())
}

fn write_receipt(
    storage: &dyn Storage,
    output: &Path,
    chunk: &Chunk,
    receipt: &Receipt,
) -> Result<(), Error> {
    let path = receipt_path(output, chunk.dataset, chunk.index);
    let dir = path.parent().unwrap_or(output);
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bytes =
        serde_json::to_vec(receipt).map_err(|err| Error::io(&path, io::Error::other(err)))?;
    stage(storage, dir, &name, &bytes)
        .and_then(|staged| staged.commit())
        .map_err(|err| Error::io(&path, err))
}

/// Takes this worker's own lock (two runs of one worker would write the same parts), then
/// makes sure no `commit` (or single run) holds the output's lock. Workers never take the
/// output's lock, so that they do not block each other; `commit` takes it, then checks
/// that no worker's lock is held, so one of the two always sees the other.
fn lock_worker(
    storage: &dyn Storage,
    worker_dir: &Path,
    output: &Path,
) -> Result<Option<Box<dyn OutputLock>>, Error> {
    let lock = match storage.lock(worker_dir) {
        Ok(lock) => lock,
        Err(LockError::Busy { holder }) => {
            return Err(Error::new(ErrorKind::OutputLocked { holder }).in_file(worker_dir))
        }
        Err(LockError::Io(err)) => return Err(Error::io(worker_dir, err)),
    };
    if storage.renames_cheaply() && !crate::object::is_url(output) {
        let path = output.join(crate::layout::LOCK_NAME);
        if let Ok(file) = std::fs::File::open(&path) {
            if let Err(std::fs::TryLockError::WouldBlock) = file.try_lock_shared() {
                let holder = std::fs::read_to_string(&path)
                    .ok()
                    .map(|text| text.trim().to_owned())
                    .filter(|text| !text.is_empty());
                return Err(Error::new(ErrorKind::OutputLocked { holder }).in_file(output));
            }
        }
    }
    Ok(Some(lock))
}
