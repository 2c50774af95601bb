//! Running a plan: work items in parallel, parts renamed into place when a dataset is
//! complete, its manifest last.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use ofconvert_bridge::{ErrorKind as MappingErrorKind, Transcoder};
use ofconvert_ofrecord as ofrecord;
use ofconvert_tfrecord::{self as tfrecord, Compression};
use rayon::prelude::*;
use serde::Serialize;

use crate::detect::Format;
use crate::error::{Error, ErrorKind};
use crate::manifest::{
    Manifest, ManifestInput, ManifestPart, OneflowReader, SkippedRecords, TensorflowReader,
};
use crate::options::{
    compression_name, Direction, ExistingOutput, OnCorrupt, OnEmpty, Options, Settings,
};
use crate::output::{self, clear_dataset, sync_dir, temp_part_path};
use crate::plan::{tf_file_stem, DatasetPlan, Plan, SkippedFile};
use crate::progress::{DatasetStatus, Event, ProgressFn};
use crate::records::{is_damage, RecordAt, RecordReader};
use crate::schema::SchemaBuilder;

/// A position is remembered every this many records while counting, so that a work item
/// starting deep inside an uncompressed file can seek there instead of reading up to it.
const CHECKPOINT_EVERY: u64 = 4096;

/// Records between progress reports from a worker (bytes are reported as they are read).
const REPORT_EVERY: u64 = 4096;

/// What a conversion did.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Which way it converted.
    pub direction: Direction,
    /// The input root.
    pub input: String,
    /// The output root.
    pub output: String,
    /// Every dataset found, in walk order.
    pub datasets: Vec<DatasetSummary>,
    /// Files of the input that were not converted, and why.
    pub skipped_files: Vec<SkippedFile>,
    /// Files and directories of the input that could not be read: what they hold is
    /// missing from the output.
    pub unreadable: Vec<SkippedFile>,
    /// Records in the datasets converted or kept.
    pub records: u64,
    /// Size of the input files converted by this run.
    pub input_bytes: u64,
    /// Size of the parts written by this run.
    pub output_bytes: u64,
    /// How many datasets failed.
    pub failed: usize,
    /// Wall time of the conversion.
    pub seconds: f64,
}

/// What happened to one dataset.
#[derive(Debug, Serialize)]
pub struct DatasetSummary {
    /// The output directory relative to the output root (`.` for the root).
    pub name: String,
    /// The input directory relative to the input root.
    pub source: String,
    /// The output directory.
    pub output_dir: String,
    /// How it ended.
    pub status: DatasetStatus,
    /// Why it failed: `path: offset N (record #I): what`, with the causes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The manifest written (or found, when kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Manifest>,
}

/// The message of an error followed by those of its causes, `: `-separated.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// One run of records to convert into parts: a contiguous stretch of a dataset's input.
struct Chunk {
    job: usize,
    index: usize,
    segments: Vec<Segment>,
}

/// The records `[first, end)` of one input file (`end` `None`: to the end of the file).
struct Segment {
    input: usize,
    first: u64,
    end: Option<u64>,
    /// A known record boundary at or before `first` to seek to.
    start: Option<RecordAt>,
}

/// A part written under its temporary name.
struct TempPart {
    path: PathBuf,
    records: u64,
    bytes: u64,
}

/// What a work item produced.
#[derive(Default)]
struct ChunkOutput {
    parts: Vec<TempPart>,
    skipped: SkippedRecords,
    schema: SchemaBuilder,
    /// The compression of each input read, by input index.
    compressions: Vec<(usize, Compression)>,
}

/// A dataset being converted.
struct Job<'p> {
    plan: &'p DatasetPlan,
    /// The name of the TFRecord files written by of2tf.
    tf_stem: String,
    failed: AtomicBool,
    state: Mutex<JobState>,
}

#[derive(Default)]
struct JobState {
    outputs: Vec<Option<ChunkOutput>>,
    left: usize,
    error: Option<Error>,
    summary: Option<DatasetSummary>,
}

/// What every worker shares.
struct Context<'a> {
    options: &'a Options,
    settings: Settings,
    progress: ProgressFn<'a>,
    input_format: Format,
}

/// Per-worker buffers, reused for every record.
struct Worker {
    transcoder: Transcoder,
    record: Vec<u8>,
    converted: Vec<u8>,
}

/// Why a work item stopped early.
enum Stop {
    Failed(Error),
    /// Another work item of the same dataset failed.
    Cancelled,
}

impl From<Error> for Stop {
    fn from(err: Error) -> Stop {
        Stop::Failed(err)
    }
}

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
    } = plan;
    fs::create_dir_all(&output).map_err(|err| Error::io(&output, err))?;
    let context = Context {
        options,
        settings: options.settings(),
        progress,
        input_format: match direction {
            Direction::TfToOf => Format::Tf,
            Direction::OfToTf => Format::Of,
        },
    };

    let mut summaries: Vec<Option<DatasetSummary>> = Vec::new();
    let mut jobs = Vec::new();
    let mut job_of_dataset = Vec::new();
    for dataset in &mut datasets {
        let problem = dataset.problem.take();
        summaries.push(None);
        job_of_dataset.push(None);
        let index = summaries.len() - 1;
        let outcome = match problem {
            Some(err) => Err(err),
            None => prepare(&context, &input, dataset),
        };
        match outcome {
            Ok(Some(kept)) => summaries[index] = Some(kept),
            Ok(None) => {}
            Err(err) => summaries[index] = Some(failed_summary(dataset, &err)),
        }
    }
    for (index, dataset) in datasets.iter().enumerate() {
        if summaries[index].is_none() {
            job_of_dataset[index] = Some(jobs.len());
            jobs.push(Job {
                plan: dataset,
                tf_stem: tf_file_stem(&input, dataset),
                failed: AtomicBool::new(false),
                state: Mutex::new(JobState::default()),
            });
        }
    }
    for summary in summaries.iter().flatten() {
        report_done(&context, summary);
    }
    progress(Event::Started {
        datasets: jobs.len(),
        files: jobs.iter().map(|job| job.plan.inputs.len()).sum(),
        bytes: jobs
            .iter()
            .flat_map(|job| &job.plan.inputs)
            .map(|input| input.size)
            .sum(),
    });

    let threads = match options.jobs {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|err| Error::new(ErrorKind::Io(std::io::Error::other(err))))?;
    pool.install(|| {
        let planned: Vec<Result<Vec<Chunk>, Error>> = jobs
            .par_iter()
            .enumerate()
            .map(|(index, job)| plan_chunks(&context, index, job))
            .collect();
        let mut chunks = Vec::new();
        for (job, planned) in jobs.iter().zip(planned) {
            match planned {
                Ok(job_chunks) if job_chunks.is_empty() => finish_job(&context, job, Vec::new()),
                Ok(job_chunks) => {
                    let mut state = lock(&job.state);
                    state.left = job_chunks.len();
                    state.outputs = job_chunks.iter().map(|_| None).collect();
                    drop(state);
                    chunks.extend(job_chunks);
                }
                Err(err) => fail_job(&context, job, err, Vec::new()),
            }
        }
        chunks.par_iter().with_max_len(1).for_each_init(
            || Worker {
                transcoder: transcoder.clone(),
                record: Vec::new(),
                converted: Vec::new(),
            },
            |worker, chunk| {
                let job = &jobs[chunk.job];
                let result = if job.failed.load(Ordering::Relaxed) {
                    Err(Stop::Cancelled)
                } else {
                    run_chunk(&context, job, chunk, worker)
                };
                chunk_done(&context, job, chunk.index, result);
            },
        );
    });

    let mut jobs: Vec<Option<Job>> = jobs.into_iter().map(Some).collect();
    let datasets: Vec<DatasetSummary> = summaries
        .into_iter()
        .zip(job_of_dataset)
        .zip(&datasets)
        .map(|((summary, job), dataset)| {
            summary
                .or_else(|| {
                    let job = jobs.get_mut(job?)?.take()?;
                    job.state
                        .into_inner()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .summary
                })
                .unwrap_or_else(|| {
                    let err = Error::new(ErrorKind::Io(std::io::Error::other(
                        "the dataset was not finished",
                    )));
                    failed_summary(dataset, &err)
                })
        })
        .collect();
    let converted = || {
        datasets
            .iter()
            .filter(|d| d.status == DatasetStatus::Converted)
            .filter_map(|d| d.manifest.as_ref())
    };
    Ok(Summary {
        direction,
        input: input.display().to_string(),
        output: output.display().to_string(),
        records: datasets
            .iter()
            .filter_map(|d| d.manifest.as_ref())
            .map(|m| m.records)
            .sum(),
        input_bytes: converted()
            .flat_map(|m| &m.inputs)
            .map(|input| input.bytes)
            .sum(),
        output_bytes: converted()
            .flat_map(|m| &m.parts)
            .map(|part| part.bytes)
            .sum(),
        failed: datasets
            .iter()
            .filter(|d| d.status == DatasetStatus::Failed)
            .count(),
        skipped_files: skipped,
        unreadable,
        datasets,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A worker that panicked cannot have left the state half-updated in a way that matters
    // more than reporting what is known.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The inputs as a manifest lists them; `compressions` holds what reading found, by input
/// index (inputs never opened, being empty, are uncompressed).
fn manifest_inputs(
    dataset: &DatasetPlan,
    compressions: &[Option<Compression>],
) -> Vec<ManifestInput> {
    dataset
        .inputs
        .iter()
        .enumerate()
        .map(|(index, input)| ManifestInput {
            path: slash_path(&input.relative),
            bytes: input.size,
            compression: compression_name(
                compressions
                    .get(index)
                    .copied()
                    .flatten()
                    .unwrap_or_default(),
            )
            .to_owned(),
        })
        .collect()
}

/// Whether a manifest lists the very inputs of `dataset`: same paths, same sizes.
fn same_inputs(manifest: &Manifest, dataset: &DatasetPlan) -> bool {
    manifest.inputs.len() == dataset.inputs.len()
        && manifest
            .inputs
            .iter()
            .zip(&dataset.inputs)
            .all(|(listed, input)| {
                listed.path == slash_path(&input.relative) && listed.bytes == input.size
            })
}

fn slash_path(path: &Path) -> String {
    path.components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Gets a dataset's output directory ready. `Ok(Some(_))` when resuming finds it complete.
fn prepare(
    context: &Context<'_>,
    input: &Path,
    dataset: &DatasetPlan,
) -> Result<Option<DatasetSummary>, Error> {
    let dir = &dataset.output_dir;
    let options = context.options;
    if options.existing == ExistingOutput::Resume {
        if let Ok(Some(manifest)) = Manifest::read(dir) {
            if manifest.settings == context.settings
                && same_inputs(&manifest, dataset)
                && manifest.parts_complete(dir)
            {
                output::remove_temps(dir).map_err(|err| Error::io(dir, err))?;
                return Ok(Some(DatasetSummary {
                    status: DatasetStatus::Kept,
                    error: None,
                    manifest: Some(manifest),
                    ..summary_of(dataset)
                }));
            }
        }
    }
    fs::create_dir_all(dir).map_err(|err| Error::io(dir, err))?;
    if options.existing != ExistingOutput::Refuse {
        clear_dataset(
            dir,
            context.settings.direction,
            &options.part_prefix,
            &tf_file_stem(input, dataset),
        )
        .map_err(|err| Error::io(dir, err))?;
    }
    Ok(None)
}

fn summary_of(dataset: &DatasetPlan) -> DatasetSummary {
    DatasetSummary {
        name: dataset.name.clone(),
        source: slash_path(&dataset.source),
        output_dir: dataset.output_dir.display().to_string(),
        status: DatasetStatus::Converted,
        error: None,
        manifest: None,
    }
}

fn failed_summary(dataset: &DatasetPlan, err: &Error) -> DatasetSummary {
    DatasetSummary {
        status: DatasetStatus::Failed,
        error: Some(error_chain(err)),
        ..summary_of(dataset)
    }
}

fn report_done(context: &Context<'_>, summary: &DatasetSummary) {
    (context.progress)(Event::DatasetDone {
        name: summary.name.clone(),
        status: summary.status,
        records: summary.manifest.as_ref().map_or(0, |m| m.records),
        parts: summary.manifest.as_ref().map_or(0, |m| m.parts.len()),
        error: summary.error.clone(),
    });
}

/// Cuts a dataset into work items: one per non-empty input file, or, when resharding,
/// runs of records found by counting them first.
fn plan_chunks(
    context: &Context<'_>,
    job_index: usize,
    job: &Job<'_>,
) -> Result<Vec<Chunk>, Error> {
    let sizing = context.options.sizing;
    let inputs = &job.plan.inputs;
    if !sizing.reshards() {
        return Ok(inputs
            .iter()
            .enumerate()
            .filter(|(_, input)| input.size > 0)
            .enumerate()
            .map(|(index, (input, _))| Chunk {
                job: job_index,
                index,
                segments: vec![Segment {
                    input,
                    first: 0,
                    end: None,
                    start: None,
                }],
            })
            .collect());
    }
    let counts = inputs
        .iter()
        .map(|input| count_input(context, &input.path))
        .collect::<Result<Vec<_>, _>>()?;
    let total: u64 = counts.iter().map(|count| count.records).sum();
    let bounds = part_bounds(total, sizing.parts, sizing.records_per_part);
    let mut chunks = Vec::new();
    for (index, range) in bounds.windows(2).enumerate() {
        let (from, to) = (range[0], range[1]);
        let mut segments = Vec::new();
        let mut input_start = 0u64;
        for (input, count) in counts.iter().enumerate() {
            let input_end = input_start + count.records;
            let first = from.max(input_start);
            let last = to.min(input_end);
            if first < last {
                let first_local = first - input_start;
                let end_local = last - input_start;
                segments.push(Segment {
                    input,
                    first: first_local,
                    // The last records of a file read on to its real end, so that damage
                    // after them is found and reported.
                    end: (end_local < count.records).then_some(end_local),
                    start: count.checkpoint_before(first_local),
                });
            }
            input_start = input_end;
        }
        chunks.push(Chunk {
            job: job_index,
            index,
            segments,
        });
    }
    Ok(chunks)
}

/// Record boundaries `0 = b0 < b1 < ... < bn = total` of the parts: `parts` balanced parts,
/// or cuts every `per_part` records, or balanced parts no bigger than `per_part` when both
/// are given. Never an empty part.
fn part_bounds(total: u64, parts: Option<u64>, per_part: Option<u64>) -> Vec<u64> {
    if total == 0 {
        return vec![0];
    }
    match (parts, per_part) {
        (None, Some(per_part)) => {
            let per_part = per_part.max(1);
            let mut bounds: Vec<u64> = (0..total).step_by(per_part as usize).collect();
            bounds.push(total);
            bounds
        }
        (parts, per_part) => {
            let by_size = per_part.map_or(1, |per_part| total.div_ceil(per_part.max(1)));
            let count = parts.unwrap_or(1).max(by_size).clamp(1, total);
            (0..=count)
                .map(|i| (u128::from(total) * u128::from(i) / u128::from(count)) as u64)
                .collect()
        }
    }
}

/// The records of one input, with seek points when it is uncompressed.
struct InputCount {
    records: u64,
    checkpoints: Vec<RecordAt>,
}

impl InputCount {
    fn checkpoint_before(&self, record: u64) -> Option<RecordAt> {
        let slot = usize::try_from(record / CHECKPOINT_EVERY).ok()?;
        slot.checked_sub(1)
            .and_then(|slot| self.checkpoints.get(slot))
            .copied()
    }
}

/// Counts records without reading their data. Damage fails the count unless salvaging,
/// where the count stops at damage that ends the framing (conversion reports it).
fn count_input(context: &Context<'_>, path: &Path) -> Result<InputCount, Error> {
    let mut reader = RecordReader::open_at(
        path,
        context.input_format,
        context.options.verify_checksums,
        None,
        None,
    )?;
    let seekable = reader.compression() == Compression::None;
    let mut count = InputCount {
        records: 0,
        checkpoints: Vec::new(),
    };
    loop {
        let at = reader.position();
        if seekable && at.index > 0 && at.index % CHECKPOINT_EVERY == 0 {
            count.checkpoints.push(at);
        }
        match reader.skip() {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(err) if context.options.on_corrupt == OnCorrupt::Skip && is_damage(&err) => {
                if !reader.step_past(&err) {
                    break;
                }
            }
            Err(err) => return Err(err),
        }
        count.records = reader.position().index;
    }
    Ok(count)
}

/// Converts one work item into one or more parts under temporary names.
fn run_chunk(
    context: &Context<'_>,
    job: &Job<'_>,
    chunk: &Chunk,
    worker: &mut Worker,
) -> Result<ChunkOutput, Stop> {
    let mut output = ChunkOutput::default();
    let mut writer: Option<PartWriter> = None;
    let result = convert_chunk(context, job, chunk, worker, &mut output, &mut writer);
    let result = result.and_then(|()| match writer.take() {
        Some(writer) => {
            output.parts.push(writer.finish()?);
            Ok(())
        }
        None => Ok(()),
    });
    match result {
        Ok(()) => Ok(output),
        Err(stop) => {
            if let Some(writer) = writer {
                output::remove_all([writer.path]);
            }
            output::remove_all(output.parts.into_iter().map(|part| part.path));
            Err(stop)
        }
    }
}

fn convert_chunk(
    context: &Context<'_>,
    job: &Job<'_>,
    chunk: &Chunk,
    worker: &mut Worker,
    output: &mut ChunkOutput,
    writer: &mut Option<PartWriter>,
) -> Result<(), Stop> {
    let options = context.options;
    let dir = &job.plan.output_dir;
    let mut unreported = 0u64;
    let mut next_sub = 0usize;
    for segment in &chunk.segments {
        let input = &job.plan.inputs[segment.input];
        let mut reader = RecordReader::open_at(
            &input.path,
            context.input_format,
            options.verify_checksums,
            segment.start,
            Some(context.progress),
        )?;
        if segment.start.is_none() {
            output
                .compressions
                .push((segment.input, reader.compression()));
        }
        while reader.position().index < segment.first {
            match reader.skip() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                // Damage here belongs to the previous work item, which reports it.
                Err(err) if reader.step_past(&err) => {}
                Err(err) => return Err(err.into()),
            }
        }
        while let Some(at) = reader.read_salvaging(
            &mut worker.record,
            options.on_corrupt,
            &mut output.skipped,
            segment.end,
        )? {
            unreported += 1;
            if unreported == REPORT_EVERY {
                (context.progress)(Event::Progress {
                    bytes: 0,
                    records: unreported,
                });
                unreported = 0;
                if job.failed.load(Ordering::Relaxed) {
                    return Err(Stop::Cancelled);
                }
            }
            let converted = match context.input_format {
                Format::Tf => worker
                    .transcoder
                    .tf_to_of(&worker.record, &mut worker.converted),
                Format::Of => worker
                    .transcoder
                    .of_to_tf(&worker.record, &mut worker.converted),
            };
            if let Err(err) = converted {
                match skippable(err.kind(), options) {
                    Some(Skip::Empty) => output.skipped.empty += 1,
                    Some(Skip::Corrupt) => output
                        .skipped
                        .note_corrupt(Error::mapping(&input.path, at, err).to_string()),
                    None => return Err(Error::mapping(&input.path, at, err).into()),
                }
                continue;
            }
            let first_of_chunk = output.schema.records() == 0;
            output
                .schema
                .add_transcoded(&worker.transcoder, &worker.converted);
            if first_of_chunk {
                match context.input_format {
                    Format::Tf => output.schema.sample_ofrecord(&worker.converted),
                    Format::Of => output.schema.sample_example(&worker.converted),
                }
            }
            let framed = frame_len(context.input_format, worker.converted.len());
            if let (Some(current), Some(max)) = (writer.as_ref(), options.sizing.max_part_bytes) {
                if current.records > 0 && current.bytes + framed > max {
                    if let Some(full) = writer.take() {
                        output.parts.push(full.finish()?);
                    }
                }
            }
            if writer.is_none() {
                *writer = Some(PartWriter::create(
                    temp_part_path(dir, chunk.index, next_sub),
                    context.input_format,
                    options.compression,
                    options.sync,
                )?);
                next_sub += 1;
            }
            if let Some(current) = writer.as_mut() {
                current.write(&worker.converted)?;
            }
        }
    }
    if unreported > 0 {
        (context.progress)(Event::Progress {
            bytes: 0,
            records: unreported,
        });
    }
    Ok(())
}

enum Skip {
    Empty,
    Corrupt,
}

/// Which mapping errors the options say to skip: records without features under
/// `--empty skip`, payloads that do not parse under `--on-corrupt skip`. Mapping failures
/// proper (an inexact double, a cast out of range) always fail.
fn skippable(kind: &MappingErrorKind, options: &Options) -> Option<Skip> {
    match kind {
        MappingErrorKind::EmptyRecord if options.on_empty == OnEmpty::Skip => Some(Skip::Empty),
        MappingErrorKind::Malformed { .. }
        | MappingErrorKind::UnknownFeatureKind { .. }
        | MappingErrorKind::AmbiguousFeature
        | MappingErrorKind::NotAnExample
            if options.on_corrupt == OnCorrupt::Skip =>
        {
            Some(Skip::Corrupt)
        }
        _ => None,
    }
}

/// Bytes a payload takes in the output, framing included (before compression).
fn frame_len(input_format: Format, payload: usize) -> u64 {
    let overhead = match input_format {
        // Written as OFRecord: the 8-byte length.
        Format::Tf => 8,
        // Written as TFRecord: length, its CRC, the data CRC.
        Format::Of => 16,
    };
    payload as u64 + overhead
}

/// A part being written under its temporary name.
struct PartWriter {
    sink: Sink,
    sync: bool,
    path: PathBuf,
    records: u64,
    bytes: u64,
}

enum Sink {
    Of(ofrecord::Writer<File>),
    Tf(tfrecord::Writer<File>),
}

impl PartWriter {
    fn create(
        path: PathBuf,
        input_format: Format,
        compression: Compression,
        sync: bool,
    ) -> Result<Self, Error> {
        let file = File::create(&path).map_err(|err| Error::io(&path, err))?;
        let sink = match input_format {
            Format::Tf => Sink::Of(ofrecord::Writer::new(file)),
            Format::Of => Sink::Tf(tfrecord::Writer::with_compression(file, compression)),
        };
        Ok(PartWriter {
            sink,
            sync,
            path,
            records: 0,
            bytes: 0,
        })
    }

    fn write(&mut self, payload: &[u8]) -> Result<(), Error> {
        match &mut self.sink {
            Sink::Of(writer) => writer
                .write_record(payload)
                .map_err(|err| write_error(&self.path, err.into_kind()))?,
            Sink::Tf(writer) => writer
                .write_record(payload)
                .map_err(|err| write_error(&self.path, err.into_kind()))?,
        }
        self.records += 1;
        self.bytes += match self.sink {
            Sink::Of(_) => payload.len() as u64 + 8,
            Sink::Tf(_) => payload.len() as u64 + 16,
        };
        Ok(())
    }

    /// Flushes, syncs and closes the file; the part keeps its temporary name.
    fn finish(self) -> Result<TempPart, Error> {
        let path = self.path;
        let file = match self.sink {
            Sink::Of(writer) => writer
                .finish()
                .map_err(|err| write_error(&path, err.into_kind())),
            Sink::Tf(writer) => writer
                .finish()
                .map_err(|err| write_error(&path, err.into_kind())),
        };
        let file = match file {
            Ok(file) => file,
            Err(err) => {
                output::remove_all([path]);
                return Err(err);
            }
        };
        let synced = if self.sync { file.sync_all() } else { Ok(()) };
        let size = synced.and_then(|()| file.metadata()).map(|meta| meta.len());
        match size {
            Ok(bytes) => Ok(TempPart {
                path,
                records: self.records,
                bytes,
            }),
            Err(err) => {
                let err = Error::io(&path, err);
                output::remove_all([path]);
                Err(err)
            }
        }
    }
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

impl IntoWriteError for tfrecord::ErrorKind {
    fn into_write_error(self, path: &Path) -> Error {
        match self {
            tfrecord::ErrorKind::Io(err) => Error::io(path, err),
            other => Error::new(ErrorKind::TfRecord(other)).in_file(path),
        }
    }
}

/// Records a finished work item; the last one of a dataset finishes or cleans up the
/// dataset.
fn chunk_done(
    context: &Context<'_>,
    job: &Job<'_>,
    index: usize,
    result: Result<ChunkOutput, Stop>,
) {
    let mut state = lock(&job.state);
    match result {
        Ok(output) => {
            if let Some(slot) = state.outputs.get_mut(index) {
                *slot = Some(output);
            }
        }
        Err(Stop::Failed(err)) => {
            job.failed.store(true, Ordering::Relaxed);
            if state.error.is_none() {
                state.error = Some(err);
            }
        }
        Err(Stop::Cancelled) => {}
    }
    state.left = state.left.saturating_sub(1);
    if state.left > 0 {
        return;
    }
    let outputs: Vec<ChunkOutput> = state.outputs.drain(..).flatten().collect();
    let error = state.error.take();
    drop(state);
    match error {
        Some(err) => fail_job(context, job, err, outputs),
        None => finish_job(context, job, outputs),
    }
}

fn fail_job(context: &Context<'_>, job: &Job<'_>, err: Error, outputs: Vec<ChunkOutput>) {
    job.failed.store(true, Ordering::Relaxed);
    output::remove_all(outputs.into_iter().flat_map(|o| o.parts).map(|p| p.path));
    let dir = &job.plan.output_dir;
    let _ = clear_dataset(
        dir,
        context.settings.direction,
        &context.options.part_prefix,
        &job.tf_stem,
    );
    // Only succeeds when nothing else is in it: a directory this run created for nothing.
    let _ = fs::remove_dir(dir);
    let summary = failed_summary(job.plan, &err);
    report_done(context, &summary);
    lock(&job.state).summary = Some(summary);
}

fn finish_job(context: &Context<'_>, job: &Job<'_>, outputs: Vec<ChunkOutput>) {
    let temps: Vec<PathBuf> = outputs
        .iter()
        .flat_map(|o| &o.parts)
        .map(|p| p.path.clone())
        .collect();
    match publish(context, job, outputs) {
        Ok(manifest) => {
            let summary = DatasetSummary {
                manifest: Some(manifest),
                ..summary_of(job.plan)
            };
            report_done(context, &summary);
            lock(&job.state).summary = Some(summary);
        }
        Err(err) => {
            output::remove_all(temps);
            fail_job(context, job, err, Vec::new());
        }
    }
}

/// Renames a dataset's parts to their final names, in order, and writes its manifest.
fn publish(
    context: &Context<'_>,
    job: &Job<'_>,
    outputs: Vec<ChunkOutput>,
) -> Result<Manifest, Error> {
    let dir = &job.plan.output_dir;
    let options = context.options;
    let mut schema = SchemaBuilder::new();
    let mut skipped = SkippedRecords::default();
    let mut temps = Vec::new();
    let mut compressions = vec![None; job.plan.inputs.len()];
    for output in outputs {
        schema.merge(output.schema);
        skipped.add(output.skipped);
        temps.extend(output.parts);
        for (input, compression) in output.compressions {
            if let Some(slot) = compressions.get_mut(input) {
                *slot = Some(compression);
            }
        }
    }
    let count = temps.len();
    let parts: Vec<ManifestPart> = temps
        .iter()
        .enumerate()
        .map(|(index, temp)| ManifestPart {
            name: match context.settings.direction {
                Direction::TfToOf => format!(
                    "{}{:0width$}",
                    options.part_prefix,
                    index,
                    width = options.part_digits
                ),
                Direction::OfToTf => format!(
                    "{}-{index:05}-of-{count:05}.tfrecord{}",
                    job.tf_stem,
                    options.compression.file_suffix()
                ),
            },
            records: temp.records,
            bytes: temp.bytes,
        })
        .collect();

    let schema = schema.finish();
    let mut manifest = Manifest::new(context.settings.clone());
    manifest.inputs = manifest_inputs(job.plan, &compressions);
    manifest.records = parts.iter().map(|part| part.records).sum();
    manifest.warnings = job.plan.warnings.clone();
    manifest.warnings.extend(schema.warnings());
    if manifest.records == 0 {
        manifest
            .warnings
            .push("no records: there is nothing to open".to_owned());
    }
    // The reader lines must work from wherever the user runs Python.
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
    match context.settings.direction {
        Direction::TfToOf if count > 0 => {
            manifest.oneflow = Some(OneflowReader::new(
                &absolute,
                count as u64,
                &options.part_prefix,
                options.part_digits,
            ));
        }
        Direction::OfToTf if count > 0 => {
            let names: Vec<String> = parts.iter().map(|part| part.name.clone()).collect();
            let compression_type = match options.compression {
                Compression::None => "",
                Compression::Gzip => "GZIP",
                Compression::Zlib => "ZLIB",
            };
            manifest.tensorflow = Some(TensorflowReader::new(&absolute, &names, compression_type));
        }
        _ => {}
    }
    manifest.parts = parts;
    manifest.skipped = skipped;
    manifest.schema = schema;

    // The manifest is complete and synced before the first part takes its final name: a
    // run killed while renaming leaves it staged beside the parts, and it appears last.
    let staged = manifest.stage(dir).map_err(|err| Error::io(dir, err))?;
    let renamed = temps
        .iter()
        .zip(&manifest.parts)
        .try_for_each(|(temp, part)| {
            fs::rename(&temp.path, dir.join(&part.name)).map_err(|err| Error::io(&temp.path, err))
        })
        .and_then(|()| sync_dir(dir).map_err(|err| Error::io(dir, err)));
    if let Err(err) = renamed {
        staged.discard();
        return Err(err);
    }
    staged.commit().map_err(|err| Error::io(dir, err))?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::part_bounds;

    #[test]
    fn balanced_parts_never_empty() {
        assert_eq!(part_bounds(10, Some(3), None), vec![0, 3, 6, 10]);
        assert_eq!(part_bounds(2, Some(5), None), vec![0, 1, 2]);
        assert_eq!(part_bounds(0, Some(5), None), vec![0]);
    }

    #[test]
    fn records_per_part_cuts_across_inputs() {
        assert_eq!(part_bounds(10, None, Some(4)), vec![0, 4, 8, 10]);
        assert_eq!(part_bounds(8, None, Some(4)), vec![0, 4, 8]);
    }

    #[test]
    fn both_give_balanced_parts_within_the_cap() {
        assert_eq!(part_bounds(10, Some(2), Some(3)), vec![0, 2, 5, 7, 10]);
        assert_eq!(part_bounds(10, Some(4), Some(9)), vec![0, 2, 5, 7, 10]);
    }
}
