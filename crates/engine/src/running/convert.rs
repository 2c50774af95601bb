//! Running a plan: work items in parallel, parts renamed into place when a dataset is
//! complete, its manifest last.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use ofconvert_bridge::Transcoder;

use crate::error::{Error, ErrorKind};
use crate::naming::names::Format;
use crate::running::chunk::{plan_chunks, Chunk};
use crate::running::folders::publish_folders;
use crate::running::item::run_chunk;
use crate::running::job::{
    chunk_done, done_job, fail_job, lock, report_done, Context, DatasetRun, Job, JobState, Stop,
    Worker,
};

use crate::front_end::FrontEnd;
use crate::options::{Direction, Options};
use crate::planning::group::tf_file_stem;
use crate::planning::plan::Plan;
use crate::progress::{Event, ProgressFn};
use crate::running::existing::Prepared;
use crate::running::prefetch::Prefetch;
use crate::running::publish::Target;
use crate::running::summary::{DatasetSummary, Summary};
use crate::running::workers::Pool;
use crate::storage::lock::{self, LockError, OutputLock};
use crate::storage::Storage;

/// Converts every dataset of `plan` as `options` say, reporting to `progress`.
///
/// Datasets fail one by one: a damaged input fails its dataset, whose parts are removed,
/// and the others go on. Each part is written under a hidden temporary name, synced, and
/// renamed once all parts of its dataset are written; the manifest comes last.
///
/// # Errors
///
/// Only for what stops the whole run: an invalid mapping, an output root that cannot be
/// created, a thread pool that cannot start. Everything else is in the [`Summary`].
pub fn convert(plan: Plan, options: &Options, progress: ProgressFn<'_>) -> Result<Summary, Error> {
    let started = Instant::now();
    let transcoder = Transcoder::new(options.mapping.clone())
        .map_err(|err| Error::new(ErrorKind::InvalidMapping(err)))?;
    let Plan {
        direction,
        input,
        output,
        mut datasets,
        skipped,
        unreadable,
        input_storage,
        output_storage,
    } = plan;
    let storage = &*output_storage;
    storage
        .create_dir_all(&output)
        .map_err(|err| Error::io(&output, err))?;
    // Held until the run ends: a second run on the same output would remove this one's
    // temporary files as leftovers of a killed run. An output root nobody can write into
    // needs no lock (and each dataset then fails for what it cannot write).
    let _lock = match take_lock(storage, &output, options.break_lock, options.front_end) {
        Ok(lock) => Some(lock),
        Err(LockFailed::Refused(err)) => return Err(err),
        Err(LockFailed::Io(err))
            if matches!(
                err.kind(),
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
            ) =>
        {
            None
        }
        Err(LockFailed::Io(err)) => return Err(Error::io(&output, err)),
    };
    let settings = options.settings();
    let context = Context {
        options,
        input_storage: &*input_storage,
        storage,
        progress,
        input_format: match direction {
            Direction::TfToOf => Format::Tf,
            Direction::OfToTf => Format::Of,
        },
    };

    let problems: Vec<Option<Error>> = datasets
        .iter_mut()
        .map(|dataset| dataset.problem.take())
        .collect();
    let runs: Vec<DatasetRun> = datasets
        .iter()
        .zip(problems)
        .map(|(dataset, problem)| {
            let target = Target {
                storage,
                input_storage: &*input_storage,
                options,
                settings: &settings,
                dataset,
                tf_stem: tf_file_stem(&input, dataset),
            };
            let prepared = match problem {
                Some(err) => Err(err),
                None => target.prepare(),
            };
            match prepared {
                Ok(Prepared::Complete(kept)) => DatasetRun::Settled(kept),
                Ok(Prepared::Convert { key, kept }) => DatasetRun::Converting(Box::new(Job {
                    state: Mutex::new(JobState::keeping(key, kept)),
                    grouped: target.in_folder_group(),
                    target,
                    failed: AtomicBool::new(false),
                })),
                Err(err) => DatasetRun::Settled(Box::new(DatasetSummary::failed(dataset, &err))),
            }
        })
        .collect();
    let jobs = || {
        runs.iter().filter_map(|run| match run {
            DatasetRun::Converting(job) => Some(job),
            DatasetRun::Settled(_) => None,
        })
    };
    for run in &runs {
        if let DatasetRun::Settled(summary) = run {
            report_done(&context, summary);
        }
    }
    progress(Event::Started {
        datasets: jobs()
            .filter(|job| !job.target.dataset.files_only())
            .count(),
        files: jobs().map(|job| job.target.dataset.inputs.len()).sum(),
        bytes: jobs()
            .flat_map(|job| &job.target.dataset.inputs)
            .map(|input| input.size)
            .sum(),
    });

    thread_pool(options)?.install(|| run_jobs(&context, &runs, &transcoder));
    publish_folders(&context, &runs);

    let mut datasets: Vec<DatasetSummary> = runs
        .into_iter()
        .map(|run| match run {
            DatasetRun::Settled(summary) => *summary,
            DatasetRun::Converting(job) => {
                let dataset = job.target.dataset;
                job.state
                    .into_inner()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .summary
                    .unwrap_or_else(|| {
                        let err = Error::new(ErrorKind::Io(std::io::Error::other(
                            "the dataset was not finished",
                        )));
                        DatasetSummary::failed(dataset, &err)
                    })
            }
        })
        .collect();
    let tfds_metadata =
        crate::running::tfds_info::write_metadata(direction, storage, &mut datasets);
    Ok(Summary {
        interrupted: options.interrupt.is_set(),
        skipped_files: skipped,
        unreadable,
        tfds_metadata,
        ..Summary::new(
            direction,
            input.display().to_string(),
            output.display().to_string(),
            datasets,
            started,
        )
    })
}

/// Why the lock of an output was not taken.
pub(crate) enum LockFailed {
    /// Another run holds it ([`ErrorKind::OutputLocked`]).
    Refused(Error),
    /// It could not be taken for another reason.
    Io(std::io::Error),
}

/// Takes the lock of the output `dir`, breaking one whose holder is not known to run when
/// `break_lock` says so; a refusal names the holder in `front_end`'s words.
pub(crate) fn take_lock(
    storage: &dyn Storage,
    dir: &Path,
    break_lock: bool,
    front_end: FrontEnd,
) -> Result<Box<dyn OutputLock>, LockFailed> {
    lock::take(storage, dir, break_lock).map_err(|err| match err {
        LockError::Busy(holder) => {
            LockFailed::Refused(Error::locked(dir, holder, break_lock, front_end))
        }
        LockError::Io(err) => LockFailed::Io(err),
    })
}

/// The pool of `options.jobs` workers (0: one per core).
pub(crate) fn thread_pool(options: &Options) -> Result<rayon::ThreadPool, Error> {
    let threads = match options.jobs {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|err| Error::new(ErrorKind::Io(std::io::Error::other(err))))
}

/// The file a work item reads first, and the offset it starts at.
fn first_input<'r>(
    runs: &'r [DatasetRun<'_>],
    chunk: &Chunk,
) -> Option<(&'r std::path::Path, u64)> {
    let DatasetRun::Converting(job) = runs.get(chunk.dataset)? else {
        return None;
    };
    let segment = chunk.segments.first()?;
    let input = job.target.dataset.inputs.get(segment.input)?;
    Some((&input.path, segment.start.map_or(0, |start| start.offset)))
}

/// Cuts every dataset being converted into work items and runs them on the current pool.
fn run_jobs(context: &Context<'_>, runs: &[DatasetRun<'_>], transcoder: &Transcoder) {
    use rayon::prelude::*;

    let planned: Vec<Option<Result<Vec<Chunk>, Error>>> = runs
        .par_iter()
        .enumerate()
        .map(|(index, run)| match run {
            DatasetRun::Converting(job) => Some(plan_chunks(
                context.input_storage,
                context.options,
                context.input_format,
                index,
                job.target.dataset,
            )),
            DatasetRun::Settled(_) => None,
        })
        .collect();
    let mut chunks = Vec::new();
    for (run, planned) in runs.iter().zip(planned) {
        let (DatasetRun::Converting(job), Some(planned)) = (run, planned) else {
            continue;
        };
        match planned {
            Ok(job_chunks) if job_chunks.is_empty() => done_job(context, job, Vec::new()),
            Ok(job_chunks) => {
                let mut state = lock(&job.state);
                let mut kept = std::mem::take(&mut state.kept);
                state.outputs = job_chunks.iter().map(|_| None).collect();
                let mut to_do = Vec::new();
                for chunk in job_chunks {
                    match kept.remove(&chunk.index) {
                        Some((of, output)) if of == chunk.of => {
                            (context.progress)(Event::Progress {
                                bytes: chunk.bytes,
                                records: output.parts.iter().map(|part| part.records).sum(),
                            });
                            state.kept_input.0 += chunk.bytes;
                            let whole = chunk
                                .segments
                                .iter()
                                .filter(|segment| segment.first == 0 && segment.end.is_none());
                            state
                                .kept_input
                                .1
                                .extend(whole.map(|segment| segment.input));
                            state.outputs[chunk.index] = Some(output);
                        }
                        _ => to_do.push(chunk),
                    }
                }
                state.left = to_do.len();
                if to_do.is_empty() {
                    let outputs = state.outputs.drain(..).flatten().collect();
                    drop(state);
                    done_job(context, job, outputs);
                    continue;
                }
                drop(state);
                chunks.extend(to_do);
            }
            Err(err) => fail_job(context, job, err, Vec::new()),
        }
    }
    let workers = Pool::new(|| Worker::new(context, transcoder));
    // Objects in a store are opened a work item ahead, one for each worker.
    let prefetch = (!context.input_storage.renames_cheaply())
        .then(|| Prefetch::new(rayon::current_num_threads()));
    chunks.par_iter().enumerate().with_max_len(1).for_each_init(
        || workers.take(),
        |worker, (index, chunk)| {
            let DatasetRun::Converting(job) = &runs[chunk.dataset] else {
                return;
            };
            if let Some(prefetch) = &prefetch {
                worker.prefetched = first_input(runs, chunk).and_then(|(path, offset)| {
                    let opened = prefetch.take(path, offset)?;
                    Some((path.to_path_buf(), offset, opened))
                });
                if let Some((path, offset)) = chunks
                    .get(index + 1)
                    .and_then(|next| first_input(runs, next))
                {
                    prefetch.open(context.input_storage, path, offset);
                }
            }
            let result = if context.options.interrupt.is_set() {
                Err(Stop::Interrupted)
            } else if job.failed.load(Ordering::Relaxed) {
                Err(Stop::Cancelled)
            } else {
                run_chunk(context, job, chunk, worker)
            };
            chunk_done(context, job, (chunk.index, chunk.of), result);
        },
    );
}
