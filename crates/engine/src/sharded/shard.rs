//! One conversion spread over many machines: worker K of N converts its share of the parts
//! of a plan that every worker derives alike and the first one stores in
//! `OUT/.ofconvert/plan.json`; each finished part gets a receipt beside the plan, and
//! [`commit`](crate::sharded::commit()) writes the manifests once every part has one.
//!
//! The plan is what a single-machine run would do, work item for work item, so the parts
//! are the same bytes. Part numbers are global: work item `i` of a dataset is part `i`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ofconvert_bridge::Transcoder;
use serde::Serialize;

use crate::error::{error_chain, Error, ErrorKind};
use crate::front_end::FrontEnd;
use crate::naming::layout::CONTROL_DIR;
use crate::naming::names::Format;
use crate::options::{Direction, Options};
use crate::planning::group::tf_file_stem;
use crate::planning::plan::Plan;
use crate::progress::{Event, ProgressFn};
use crate::records::output::stage;
use crate::running::chunk::{Chunk, ChunkOutput};
use crate::running::item::run_chunk;
use crate::running::job::{settled, Context, Job, Stop, Worker};
use crate::running::publish::Target;
use crate::running::workers::Pool;
use crate::sharded::receipt::{Checksummed, Checksums, Receipt};
pub use crate::sharded::share::Shard;
use crate::sharded::stored::{describe, StoredDataset, StoredPlan};
use crate::storage::{LockError, OutputLock, Storage};

const RECEIPTS_DIR: &str = "receipts";

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
    let _lock = lock_worker(&*storage, &worker_dir, &output, options.front_end)?;

    let settings = options.settings();
    let found: Vec<StoredDataset> = plan
        .datasets
        .iter()
        .map(|dataset| describe(&plan, options, dataset))
        .collect();
    let (stored, planned) = match StoredPlan::read(&*storage, &output)? {
        Some(stored) => (stored, false),
        None => {
            let built = StoredPlan::build(&plan, options, shard.count, &found);
            built.store(&*storage, &output)?
        }
    };
    stored
        .check(
            (&settings, options.replacing),
            shard,
            &found,
            options.front_end,
        )
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
            grouped: false,
            target: Target {
                storage: &checksummed,
                input_storage: &*plan.input_storage,
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

    let workers = Pool::new(|| Worker::new(context, transcoder));
    crate::running::convert::thread_pool(options)?.install(|| {
        todo.par_iter().with_max_len(1).for_each_init(
            || workers.take(),
            |worker, chunk| {
                let job = &jobs[chunk.dataset];
                let result = if options.interrupt.is_set() {
                    Err(Stop::Interrupted)
                } else if job.failed.load(Ordering::Relaxed) {
                    Err(Stop::Cancelled)
                } else {
                    settled(context, job, run_chunk(context, job, chunk, worker))
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

/// On a file system, takes this worker's own lock (two runs of one worker would write the
/// same parts), then makes sure no `commit` (or single run) holds the output's lock.
/// Workers never take the output's lock, so that they do not block each other; `commit`
/// takes it, then checks that no worker's lock is held, so one of the two always sees the
/// other. In an object store a lock is an object that outlives a killed holder, and
/// rerunning a killed worker (as a Kubernetes Job does by itself) must not wait for someone
/// to delete it: workers there take none.
fn lock_worker(
    storage: &dyn Storage,
    worker_dir: &Path,
    output: &Path,
    front_end: FrontEnd,
) -> Result<Option<Box<dyn OutputLock>>, Error> {
    if !storage.renames_cheaply() || crate::storage::object::is_url(output) {
        return Ok(None);
    }
    // A worker's lock is a file lock: it ends with its process, and is never broken.
    let lock = match storage.lock(worker_dir) {
        Ok(lock) => lock,
        Err(LockError::Busy(holder)) => {
            return Err(Error::locked(worker_dir, holder, false, front_end))
        }
        Err(LockError::Io(err)) => return Err(Error::io(worker_dir, err)),
    };
    if let Ok(Some(holder)) = storage.lock_holder(output) {
        return Err(Error::locked(output, Box::new(holder), false, front_end));
    }
    Ok(Some(lock))
}

#[cfg(test)]
mod tests {
    use super::Shard;

    #[test]
    fn shards_parse_as_k_of_n_counted_from_zero() {
        assert_eq!("2/3".parse(), Ok(Shard { index: 2, count: 3 }));
        assert_eq!("0/1".parse::<Shard>().unwrap().to_string(), "0/1");
        for bad in ["3/3", "0/0", "a/b", "1", "-1/3", "1/3/4", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_wrong_worker_number_is_explained_with_the_workers_of_its_run() {
        let err = "3/3".parse::<Shard>().unwrap_err();
        assert!(err.contains("numbered from 0 to 2"), "{err}");
        assert!(err.ends_with("(0/3, 1/3, 2/3)"), "{err}");
        let err = "12/12".parse::<Shard>().unwrap_err();
        assert!(err.ends_with("(0/12, 1/12, ..., 11/12)"), "{err}");
        // No run size to go by: a run of four.
        let err = "1".parse::<Shard>().unwrap_err();
        assert!(err.ends_with("(0/4, 1/4, 2/4, 3/4)"), "{err}");
        let err = "1/0".parse::<Shard>().unwrap_err();
        assert!(err.ends_with("(0/4, 1/4, 2/4, 3/4)"), "{err}");
    }
}
