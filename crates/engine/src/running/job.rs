//! One work item run by a worker: its records converted into temporary parts, then the
//! job it belongs to finished, failed or abandoned, and its dataset published once whole.

use crate::error::Error;
use crate::manifest::Manifest;
use crate::naming::names::Format;
use crate::options::Options;
use crate::progress::{DatasetStatus, Event, ProgressFn};
use crate::recode::{ImagePolicy, Recoder};
use crate::records::output;
use crate::running::chunk::ChunkOutput;
use crate::running::publish::Target;
use crate::running::resume;
use crate::running::summary::{slash_path, DatasetSummary, Resumed};
use crate::running::uploads::{Slots, Upload};
use crate::storage::transfer::transfers_in_flight;
use crate::storage::{Opened, Storage};
use ofconvert_bridge::Transcoder;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Records between progress reports from a worker (bytes are reported as they are read).
pub(crate) const REPORT_EVERY: u64 = 4096;

/// A dataset being converted by work items that may run at the same time.
pub(crate) struct Job<'p> {
    pub(crate) target: Target<'p>,
    /// Whether the dataset is a split of a TFDS dataset given back to a folder with others:
    /// published with them and the folder's metadata, all at once, once they are all done.
    pub(crate) grouped: bool,
    /// Set when one work item failed, so that the others stop early.
    pub(crate) failed: AtomicBool,
    pub(crate) state: Mutex<JobState>,
}

#[derive(Default)]
pub(crate) struct JobState {
    /// Each work item's output, by its index, once it is done.
    pub(crate) outputs: Vec<Option<ChunkOutput>>,
    /// Work items not done yet.
    pub(crate) left: usize,
    error: Option<Error>,
    /// Set when a work item stopped because the run was interrupted.
    interrupted: bool,
    /// Finished work items an earlier run of the same conversion left (`--resume`), by
    /// number, with how many work items that run had: those the run does not do again.
    pub(crate) kept: std::collections::BTreeMap<usize, (usize, ChunkOutput)>,
    /// Where finished work items are noted for a resumed run.
    journal: Box<resume::Journal>,
    /// Files this run wrote that could not be removed when their work item or dataset
    /// failed, with why.
    left_behind: Vec<(PathBuf, std::io::Error)>,
    /// A grouped dataset's outputs, once its work items are all done, until its folder is
    /// published.
    pub(crate) parked: Option<Vec<ChunkOutput>>,
    /// What the work items an earlier run finished, which this one keeps, were made of:
    /// their input bytes, and the inputs they read whole, by index.
    pub(crate) kept_input: (u64, Vec<usize>),
    /// A grouped dataset's [`kept_parts`], from when it is made ready until published.
    pub(crate) kept_flags: Vec<bool>,
    pub(crate) summary: Option<DatasetSummary>,
}

impl JobState {
    /// The state of a dataset about to be converted as `key` says ([`resume::run_key`]),
    /// `kept` what an earlier run of it finished.
    pub(crate) fn keeping(
        key: String,
        kept: std::collections::BTreeMap<usize, (usize, ChunkOutput)>,
    ) -> Self {
        JobState {
            kept,
            journal: Box::new(resume::Journal::new(key)),
            ..JobState::default()
        }
    }
}

impl Job<'_> {
    /// Removes files this run wrote for the dataset, noting those that cannot be.
    pub(crate) fn remove_all(
        &self,
        storage: &dyn Storage,
        paths: impl IntoIterator<Item = PathBuf>,
    ) {
        let failed = output::remove_all(storage, paths);
        if !failed.is_empty() {
            lock(&self.state).left_behind.extend(failed);
        }
    }
}

/// A dataset of the run: settled before converting (kept from an earlier run, or failed
/// while planning), or being converted.
pub(crate) enum DatasetRun<'p> {
    Settled(Box<DatasetSummary>),
    Converting(Box<Job<'p>>),
}

/// What every worker shares.
pub(crate) struct Context<'a> {
    pub(crate) options: &'a Options,
    /// Where the inputs are read.
    pub(crate) input_storage: &'a dyn Storage,
    /// Where the output is written.
    pub(crate) storage: &'a dyn Storage,
    pub(crate) progress: ProgressFn<'a>,
    pub(crate) input_format: Format,
}

/// Per-worker buffers, reused for every record.
pub(crate) struct Worker {
    pub(crate) transcoder: Transcoder,
    pub(crate) recoder: Recoder,
    /// Whether images are written as they are: records then go straight into the part's
    /// buffer.
    pub(crate) keeps_images: bool,
    /// A record read that did not lie whole in the reader's buffer.
    pub(crate) record: Vec<u8>,
    /// A record converted on its own: the first of a part, or one the images policy rewrites.
    pub(crate) converted: Vec<u8>,
    /// Room for the parts this worker has uploading at once.
    pub(crate) uploads: Arc<Slots>,
    /// The input of the next work item, opened ahead ([`prefetch`]): its path, the offset
    /// it was opened at, and the object.
    ///
    /// [`prefetch`]: crate::running::prefetch
    pub(crate) prefetched: Option<(PathBuf, u64, Opened)>,
}

impl Worker {
    /// Buffers for a worker converting from `input_format`.
    pub(crate) fn new(context: &Context<'_>, transcoder: &Transcoder) -> Worker {
        let images = match context.input_format {
            Format::Tf => context.options.images,
            Format::Of => ImagePolicy::Keep,
        };
        Worker {
            transcoder: transcoder.clone(),
            recoder: Recoder::new(images),
            keeps_images: images == ImagePolicy::Keep,
            record: Vec::new(),
            converted: Vec::new(),
            uploads: Slots::new(transfers_in_flight()),
            prefetched: None,
        }
    }
}

/// Why a work item stopped early.
pub(crate) enum Stop {
    Failed(Error),
    /// Another work item of the same dataset failed.
    Cancelled,
    /// The run was interrupted.
    Interrupted,
}

impl From<Error> for Stop {
    fn from(err: Error) -> Stop {
        Stop::Failed(err)
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A worker that panicked cannot have left the state half-updated in a way that matters
    // more than reporting what is known.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn report_done(context: &Context<'_>, summary: &DatasetSummary) {
    (context.progress)(Event::DatasetDone {
        name: summary.name.clone(),
        status: summary.status,
        records: summary.manifest.as_ref().map_or(0, |m| m.records),
        parts: summary.manifest.as_ref().map_or(0, |m| m.parts.len()),
        error: summary.error.clone(),
        files_only: summary.files_only,
    });
}

/// `result` of [`run_chunk`] once its parts are all uploaded: a part that failed to is
/// removed with the others, and fails the work item.
pub(crate) fn settled(
    context: &Context<'_>,
    job: &Job<'_>,
    result: Result<ChunkOutput, Stop>,
) -> Result<ChunkOutput, Stop> {
    let mut output = result?;
    match output.settle_uploads() {
        Ok(()) => Ok(output),
        Err((err, failed)) => {
            job.remove_all(context.storage, failed);
            job.remove_all(
                context.storage,
                output.parts.into_iter().map(|part| part.path),
            );
            Err(Stop::Failed(err))
        }
    }
}

/// Records a finished work item; the last one of a dataset finishes or cleans up the
/// dataset.
pub(crate) fn chunk_done(
    context: &Context<'_>,
    job: &Job<'_>,
    (index, of): (usize, usize),
    result: Result<ChunkOutput, Stop>,
) {
    let mut state = lock(&job.state);
    match result {
        Ok(mut output) => {
            // Parts still uploading cannot be vouched for yet: only a work item whose parts
            // are all finished goes in the journal.
            if output.uploads.is_empty() {
                let target = &job.target;
                output.noted = state.journal.note(
                    context.storage,
                    (&target.dataset.output_dir, &target.temp_tag()),
                    (index, of),
                    &output,
                );
            }
            if let Some(slot) = state.outputs.get_mut(index) {
                *slot = Some(output);
            }
            note_uploaded(context, job, &mut state);
        }
        Err(Stop::Failed(err)) => {
            job.failed.store(true, Ordering::Relaxed);
            if state.error.is_none() {
                state.error = Some(err);
            }
        }
        Err(Stop::Interrupted) => {
            job.failed.store(true, Ordering::Relaxed);
            state.interrupted = true;
        }
        Err(Stop::Cancelled) => {}
    }
    state.left = state.left.saturating_sub(1);
    if state.left > 0 {
        return;
    }
    let mut outputs: Vec<ChunkOutput> = state.outputs.drain(..).flatten().collect();
    let mut error = state.error.take();
    let interrupted = state.interrupted;
    // Closed before what comes next removes it (or leaves it for --resume).
    *state.journal = resume::Journal::default();
    drop(state);
    for output in &mut outputs {
        if let Err((err, failed)) = output.settle_uploads() {
            job.remove_all(context.storage, failed);
            error.get_or_insert(err);
        }
    }
    match error {
        Some(err) => fail_job(context, job, err, outputs),
        None if interrupted => abandon_job(context, job, outputs),
        None => done_job(context, job, outputs),
    }
}

/// A dataset whose work items are all done: published now, or, for a split of a TFDS
/// folder, parked until the folder's other splits are done too
/// ([`publish_folder`](crate::running::folders::publish_folder)).
pub(crate) fn done_job(context: &Context<'_>, job: &Job<'_>, outputs: Vec<ChunkOutput>) {
    match job.grouped {
        true => lock(&job.state).parked = Some(outputs),
        false => finish_job(context, job, outputs),
    }
}

/// Notes in the journal the work items of `job` whose parts were uploading when they ended
/// and have all been uploaded since, so that a dataset bound for an object store resumes at
/// the part too; once more work items than the transfers a worker keeps in flight wait on
/// their uploads, the oldest are waited for. A part that failed to upload fails the
/// dataset.
fn note_uploaded(context: &Context<'_>, job: &Job<'_>, state: &mut JobState) {
    let target = &job.target;
    let of = state.outputs.len();
    let JobState {
        outputs,
        journal,
        error,
        left_behind,
        ..
    } = state;
    let waiting = outputs
        .iter()
        .flatten()
        .filter(|output| !output.uploads.is_empty())
        .count();
    let mut to_wait_for = waiting.saturating_sub(transfers_in_flight());
    for (index, slot) in outputs.iter_mut().enumerate() {
        let Some(output) = slot else {
            continue;
        };
        if output.noted || output.uploads.is_empty() {
            continue;
        }
        if !output.uploads.iter().all(Upload::is_finished) {
            if to_wait_for == 0 {
                continue;
            }
            to_wait_for -= 1;
        }
        match output.settle_uploads() {
            Ok(()) => {
                output.noted = journal.note(
                    context.storage,
                    (&target.dataset.output_dir, &target.temp_tag()),
                    (index, of),
                    output,
                );
            }
            Err((err, failed)) => {
                left_behind.extend(output::remove_all(context.storage, failed));
                job.failed.store(true, Ordering::Relaxed);
                error.get_or_insert(err);
            }
        }
    }
}

pub(crate) fn temp_paths(outputs: &[ChunkOutput]) -> Vec<PathBuf> {
    outputs
        .iter()
        .flat_map(|o| &o.parts)
        .map(|p| p.path.clone())
        .collect()
}

pub(crate) fn fail_job(
    context: &Context<'_>,
    job: &Job<'_>,
    err: Error,
    outputs: Vec<ChunkOutput>,
) {
    fail_leaving(context, job, err, outputs, None);
}

/// [`fail_job`], where publishing the dataset could be neither done nor undone when `left`
/// says what is left (then nothing is removed: the next run puts it right).
pub(crate) fn fail_leaving(
    context: &Context<'_>,
    job: &Job<'_>,
    err: Error,
    outputs: Vec<ChunkOutput>,
    left: Option<String>,
) {
    job.failed.store(true, Ordering::Relaxed);
    let mut left = left;
    let previous_kept = match left {
        Some(_) => false,
        None => {
            // What this run wrote goes; a dataset there before (with or without a manifest)
            // is left as it was.
            job.remove_all(context.storage, temp_paths(&outputs));
            let swept = job.target.remove_own_temps();
            let left_behind = std::mem::take(&mut lock(&job.state).left_behind);
            left = left_behind_words(&left_behind, swept.err());
            // Only succeeds when nothing else is in it: a directory this run created for
            // nothing.
            context
                .storage
                .remove_dir_if_empty(&job.target.dataset.output_dir);
            job.target.holds_published()
        }
    };
    let summary = DatasetSummary {
        previous_kept,
        left,
        ..DatasetSummary::failed(job.target.dataset, &err)
    };
    report_done(context, &summary);
    lock(&job.state).summary = Some(summary);
}

/// Which of the parts of `outputs`, in order, an earlier run made (`--resume` keeps them).
pub(crate) fn kept_parts(outputs: &[ChunkOutput]) -> Vec<bool> {
    outputs
        .iter()
        .flat_map(|output| output.parts.iter().map(|_| output.kept))
        .collect()
}

/// The summary of `job`'s dataset, converted into `manifest`, the parts of which `kept`
/// ([`kept_parts`]) says an earlier run made.
pub(crate) fn converted(job: &Job<'_>, manifest: Manifest, kept: &[bool]) -> DatasetSummary {
    let (input_bytes, inputs) = lock(&job.state).kept_input.clone();
    let dataset = job.target.dataset;
    let inputs = inputs
        .iter()
        .filter_map(|&index| dataset.inputs.get(index))
        .map(|input| slash_path(&input.relative))
        .collect();
    DatasetSummary {
        resumed: Resumed::of(&manifest, kept, input_bytes, inputs),
        ..DatasetSummary::done(dataset, DatasetStatus::Converted, manifest)
    }
}

/// What a failed dataset's run left because it could not remove it, in words: the files,
/// and the temporary files of the directory when they could not be swept (`swept`).
fn left_behind_words(
    left_behind: &[(PathBuf, std::io::Error)],
    swept: Option<std::io::Error>,
) -> Option<String> {
    let mut words = Vec::new();
    match left_behind {
        [] => {}
        [(path, err)] => words.push(format!(
            "removing what it wrote failed: {} ({err})",
            path.display()
        )),
        [(path, err), rest @ ..] => words.push(format!(
            "removing what it wrote failed: {} ({err}) and {} more",
            path.display(),
            rest.len()
        )),
    }
    if let Some(err) = swept {
        words.push(format!("its temporary files could not be swept ({err})"));
    }
    if words.is_empty() {
        return None;
    }
    Some(format!(
        "{}; a run with --resume or --overwrite removes them first",
        words.join("; ")
    ))
}

/// Removes the temporary files of a dataset the run was interrupted in, but for the
/// finished work items its journal names for `--resume`: nothing of it was published.
pub(crate) fn abandon_job(context: &Context<'_>, job: &Job<'_>, outputs: Vec<ChunkOutput>) {
    let (noted, unnoted): (Vec<ChunkOutput>, Vec<ChunkOutput>) =
        outputs.into_iter().partition(|output| output.noted);
    job.remove_all(context.storage, temp_paths(&unnoted));
    context
        .storage
        .remove_dir_if_empty(&job.target.dataset.output_dir);
    let summary = DatasetSummary::interrupted(job.target.dataset, &noted);
    report_done(context, &summary);
    lock(&job.state).summary = Some(summary);
}

pub(crate) fn finish_job(context: &Context<'_>, job: &Job<'_>, outputs: Vec<ChunkOutput>) {
    let temps = temp_paths(&outputs);
    let kept = kept_parts(&outputs);
    match job.target.publish(outputs) {
        Ok(manifest) => {
            let summary = converted(job, manifest, &kept);
            report_done(context, &summary);
            lock(&job.state).summary = Some(summary);
        }
        Err(failed) => {
            if failed.left.is_none() {
                job.remove_all(context.storage, temps);
            }
            fail_leaving(context, job, failed.err, Vec::new(), failed.left);
        }
    }
}
