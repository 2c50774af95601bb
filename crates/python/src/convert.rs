//! `tf2of`, `of2tf` and `commit`: keyword arguments parsed into the engine's configuration
//! (which checks them, in Python's words), the conversion on a thread of its own with the
//! GIL released, and Ctrl-C turned into a clean stop.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use ofconvert_engine::config::{
    choice, parse_size, Cast, ConvertConfig, MappingRules, Offset, Ran, Rename,
};
use ofconvert_engine::{Direction, FrontEnd, Interrupt, NetworkBounds, ShardSummary, Summary};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{self, usage, Class, Place};

/// How often a running conversion looks for a pending signal (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// A byte size as Python gives it: an int, or a string such as `"256M"`.
#[derive(Debug, FromPyObject)]
pub enum Size {
    /// A number of bytes.
    Bytes(u64),
    /// A size with a suffix.
    Text(String),
}

/// Every keyword argument of `tf2of` and `of2tf`, as the Python wrappers normalize them
/// (dicts to lists of pairs); those of the other direction keep their defaults.
#[derive(Debug, FromPyObject)]
#[pyo3(from_item_all)]
pub struct Settings {
    parts: Option<u64>,
    records_per_part: Option<u64>,
    max_part_bytes: Option<Size>,
    part_prefix: String,
    part_digits: usize,
    preset: Option<String>,
    rename: Vec<(String, String)>,
    cast: Vec<(String, String)>,
    offset: Vec<(String, i64)>,
    keep: Vec<String>,
    drop: Vec<String>,
    rename_if_present: Vec<(String, String)>,
    cast_if_present: Vec<(String, String)>,
    offset_if_present: Vec<(String, i64)>,
    keep_if_present: Vec<String>,
    drop_if_present: Vec<String>,
    sequence: String,
    raw_feature: Option<String>,
    empty: String,
    images: String,
    jpeg_quality: u8,
    compression: String,
    to: String,
    array_record_options: Option<String>,
    lossy: bool,
    on_corrupt: String,
    overwrite: bool,
    resume: bool,
    break_lock: bool,
    shard: Option<(i64, i64)>,
    jobs: Option<usize>,
    sync: bool,
    verify: bool,
    side_files: bool,
    dry_run: bool,
    network: Network,
}

/// The most transfers in flight a job may keep, as the command line's `--in-flight` allows.
const MAX_IN_FLIGHT: usize = 256;

/// The network bounds every function that may reach an object store takes.
#[derive(Debug, FromPyObject)]
#[pyo3(from_item_all)]
pub struct Network {
    retries: usize,
    retry_timeout: f64,
    request_timeout: f64,
    anonymous: bool,
    in_flight: usize,
}

impl Network {
    /// Sets the bounds of the stores opened from now on, whether they send requests
    /// unsigned (public buckets), and how many transfers each job keeps going.
    pub fn apply(&self) -> Result<(), String> {
        for (name, secs) in [
            ("retry_timeout", self.retry_timeout),
            ("request_timeout", self.request_timeout),
        ] {
            if !(secs > 0.0 && secs.is_finite() && secs < 1e9) {
                return Err(format!(
                    "{name}={secs}: expected a positive number of seconds"
                ));
            }
        }
        if !(1..=MAX_IN_FLIGHT).contains(&self.in_flight) {
            return Err(format!(
                "in_flight={}: expected 1 to {MAX_IN_FLIGHT} transfers",
                self.in_flight
            ));
        }
        // Nothing is set before every value is known good: a refused call changes nothing.
        ofconvert_engine::set_network_bounds(NetworkBounds {
            retries: self.retries,
            retry_timeout: Duration::from_secs_f64(self.retry_timeout),
            request_timeout: Duration::from_secs_f64(self.request_timeout),
        });
        ofconvert_engine::set_anonymous(self.anonymous);
        ofconvert_engine::set_transfers_in_flight(self.in_flight);
        Ok(())
    }

    /// [`Network::apply`], a refused value raised as a `UsageError`.
    pub fn set(&self, py: Python<'_>) -> PyResult<()> {
        self.apply().map_err(|message| errors::usage(py, &message))
    }
}

/// A worker's share as Python gives it, `(k, n)`: worker `k` of `n`, counted from 0.
fn shard(value: (i64, i64)) -> Result<ofconvert_engine::Shard, String> {
    let (index, count) = value;
    if count < 1 {
        return Err(format!(
            "shard=({index}, {count}): there must be at least one worker"
        ));
    }
    if index < 0 || index >= count {
        return Err(format!(
            "shard=({index}, {count}): workers are numbered from 0 to {}",
            count - 1
        ));
    }
    Ok(ofconvert_engine::Shard {
        index: index as usize,
        count: count as usize,
    })
}

fn renames(pairs: &[(String, String)]) -> Result<Vec<Rename>, String> {
    pairs
        .iter()
        .map(|(old, new)| Rename::new(old, new))
        .collect()
}

fn casts(pairs: &[(String, String)]) -> Result<Vec<Cast>, String> {
    pairs.iter().map(|(name, to)| Cast::new(name, to)).collect()
}

fn offsets(pairs: &[(String, i64)]) -> Result<Vec<Offset>, String> {
    pairs
        .iter()
        .map(|(name, delta)| Offset::new(name, *delta))
        .collect()
}

/// The mapping keywords of `diff`, those of `tf2of` and `of2tf` normalized alike, for the
/// records of its side A.
#[derive(Debug, FromPyObject)]
#[pyo3(from_item_all)]
pub struct Rules {
    preset: Option<String>,
    rename: Vec<(String, String)>,
    cast: Vec<(String, String)>,
    offset: Vec<(String, i64)>,
    keep: Vec<String>,
    drop: Vec<String>,
    rename_if_present: Vec<(String, String)>,
    cast_if_present: Vec<(String, String)>,
    offset_if_present: Vec<(String, i64)>,
    keep_if_present: Vec<String>,
    drop_if_present: Vec<String>,
    lossy: bool,
}

impl Rules {
    /// The rules, each value parsed as the conversions parse it.
    pub fn parse(self) -> Result<MappingRules, String> {
        Ok(MappingRules {
            preset: self
                .preset
                .map(|name| choice(FrontEnd::Python, &name))
                .transpose()?,
            rename: renames(&self.rename)?,
            cast: casts(&self.cast)?,
            offset: offsets(&self.offset)?,
            keep: self.keep,
            drop: self.drop,
            rename_if_present: renames(&self.rename_if_present)?,
            cast_if_present: casts(&self.cast_if_present)?,
            offset_if_present: offsets(&self.offset_if_present)?,
            keep_if_present: self.keep_if_present,
            drop_if_present: self.drop_if_present,
            lossy: self.lossy,
        })
    }
}

/// The configuration the keyword arguments ask for.
fn configure(
    direction: Direction,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    settings: Settings,
) -> Result<ConvertConfig, String> {
    let python = FrontEnd::Python;
    let mut config = ConvertConfig::new(direction, python, inputs, output);
    config.parts = settings.parts;
    config.records_per_part = settings.records_per_part;
    config.max_part_bytes = match settings.max_part_bytes {
        None => None,
        Some(Size::Bytes(bytes)) => Some(bytes),
        Some(Size::Text(text)) => {
            Some(parse_size(&text).map_err(|err| format!("max_part_bytes={text:?}: {err}"))?)
        }
    };
    config.part_prefix = settings.part_prefix;
    config.part_digits = settings.part_digits;
    config.preset = settings
        .preset
        .map(|name| choice(python, &name))
        .transpose()?;
    config.rename = renames(&settings.rename)?;
    config.cast = casts(&settings.cast)?;
    config.offset = offsets(&settings.offset)?;
    config.keep = settings.keep;
    config.drop = settings.drop;
    config.rename_if_present = renames(&settings.rename_if_present)?;
    config.cast_if_present = casts(&settings.cast_if_present)?;
    config.offset_if_present = offsets(&settings.offset_if_present)?;
    config.keep_if_present = settings.keep_if_present;
    config.drop_if_present = settings.drop_if_present;
    config.sequence = choice(python, &settings.sequence)?;
    config.raw_feature = settings.raw_feature;
    config.empty = choice(python, &settings.empty)?;
    config.images = choice(python, &settings.images)?;
    config.jpeg_quality = settings.jpeg_quality;
    config.compression = choice(python, &settings.compression)?;
    config.to = choice(python, &settings.to)?;
    config.array_record_options = settings.array_record_options;
    config.lossy = settings.lossy;
    config.on_corrupt = choice(python, &settings.on_corrupt)?;
    config.overwrite = settings.overwrite;
    config.resume = settings.resume;
    config.break_lock = settings.break_lock;
    config.shard = settings.shard.map(shard).transpose()?;
    config.jobs = settings.jobs;
    config.sync = settings.sync;
    config.side_files = settings.side_files;
    config.dry_run = settings.dry_run;
    config.verify = settings.verify;
    settings.network.apply()?;
    Ok(config)
}

/// Runs `work` on a thread of its own while this thread, without the GIL, looks for
/// signals. On one (Ctrl-C), `interrupt` is set, and once `work` has ended (the engine
/// removes its temporary files first) the signal's exception is returned beside its result.
pub fn interruptible<T: Send>(
    py: Python<'_>,
    interrupt: &Interrupt,
    work: impl FnOnce() -> T + Send,
) -> (T, Option<PyErr>) {
    py.detach(|| {
        let (done, finished) = mpsc::channel::<()>();
        thread::scope(|scope| {
            let worker = scope.spawn(move || {
                let outcome = work();
                // The receiver outlives this thread: it waits for the join below.
                let _ = done.send(());
                outcome
            });
            let mut signal = None;
            loop {
                match finished.recv_timeout(SIGNAL_POLL) {
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    Err(RecvTimeoutError::Timeout) if signal.is_none() => {
                        if let Err(err) = Python::attach(|py| py.check_signals()) {
                            interrupt.set();
                            signal = Some(err);
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                }
            }
            match worker.join() {
                Ok(outcome) => (outcome, signal),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    })
}

/// Runs a conversion (a worker's share of one with `shard`); returns its summary as JSON
/// text, or raises `ConversionError` (carrying the summary) when a dataset or part failed,
/// an input could not be read or there was nothing to convert.
#[pyfunction]
pub fn convert(
    py: Python<'_>,
    direction: &str,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    settings: Settings,
) -> PyResult<String> {
    let direction = match direction {
        "tf2of" => Direction::TfToOf,
        "of2tf" => Direction::OfToTf,
        other => return Err(usage(py, &format!("unknown direction {other:?}"))),
    };
    let config =
        configure(direction, inputs, output, settings).map_err(|message| usage(py, &message))?;
    let options = config
        .options()
        .map_err(|err| errors::engine_error(py, &err))?;
    let (outcome, signal) = interruptible(py, &options.interrupt, || {
        config
            .plan(&options)
            .and_then(|plan| config.convert(plan, &options, &|_event| {}))
    });
    if let Some(signal) = signal {
        return Err(signal);
    }
    match outcome.map_err(|err| errors::engine_error(py, &err))? {
        Ran::Whole(summary) => finished(py, &summary, Some(&config)),
        Ran::Share(summary) => finished_share(py, &summary),
        Ran::Dry(preview) => serde_json::to_string(&preview)
            .map_err(|err| pyo3::exceptions::PyRuntimeError::new_err(err.to_string())),
    }
}

/// Publishes a sharded run once every worker is done; returns the summary as JSON text.
#[pyfunction]
pub fn commit(
    py: Python<'_>,
    output: PathBuf,
    verify: bool,
    break_lock: bool,
    network: Network,
) -> PyResult<String> {
    network.set(py)?;
    let how = ofconvert_engine::CommitOptions {
        verify_checksums: verify,
        break_lock,
        front_end: FrontEnd::Python,
    };
    let outcome = py.detach(|| ofconvert_engine::commit(&output, &how));
    let summary = outcome.map_err(|err| errors::engine_error(py, &err))?;
    finished(py, &summary, None)
}

/// The summary of a finished conversion (of `config`, a commit without) as JSON text, or
/// the exception its failure raises.
fn finished(py: Python<'_>, summary: &Summary, config: Option<&ConvertConfig>) -> PyResult<String> {
    let value = summary.to_json();
    if summary.interrupted {
        // Stopped by a signal that Python did not see (SIGTERM through another handler).
        return Err(pyo3::exceptions::PyKeyboardInterrupt::new_err(
            "the conversion was interrupted: finish it with resume=True",
        ));
    }
    if let Some((message, place)) = failure(summary, config) {
        return Err(raise_with_summary(py, &message, place, &value));
    }
    Ok(value.to_string())
}

/// A worker's summary as JSON text, or the exception its failure raises, naming the worker.
fn finished_share(py: Python<'_>, summary: &ShardSummary) -> PyResult<String> {
    let value = serde_json::to_value(summary)
        .map_err(|err| pyo3::exceptions::PyRuntimeError::new_err(err.to_string()))?;
    if summary.interrupted {
        return Err(pyo3::exceptions::PyKeyboardInterrupt::new_err(format!(
            "worker {} of {} was interrupted: run it again to finish its share (the parts it \
             finished are kept)",
            summary.worker, summary.workers
        )));
    }
    if let Some(first) = summary.failed.first() {
        let message = format!(
            "worker {} of {}: {} dataset{} failed; the first, {first}",
            summary.worker,
            summary.workers,
            summary.failed.len(),
            if summary.failed.len() == 1 { "" } else { "s" }
        );
        return Err(raise_with_summary(py, &message, None, &value));
    }
    Ok(value.to_string())
}

fn raise_with_summary(
    py: Python<'_>,
    message: &str,
    place: Option<ofconvert_engine::ErrorPlace>,
    summary: &serde_json::Value,
) -> PyErr {
    let extra = PyDict::new(py);
    let set = py
        .import("json")
        .and_then(|json| json.call_method1("loads", (summary.to_string(),)))
        .and_then(|summary| extra.set_item("summary", summary));
    if let Err(err) = set {
        return err;
    }
    let place = Place {
        path: place.as_ref().and_then(|place| place.path.as_deref()),
        offset: place.as_ref().and_then(|place| place.offset),
        record: place.as_ref().and_then(|place| place.record),
    };
    errors::raise(py, Class::Conversion, message, place, Some(&extra))
}

/// What went wrong in a finished conversion, and where, as the command line's exit status
/// 1 sees it.
fn failure(
    summary: &Summary,
    config: Option<&ConvertConfig>,
) -> Option<(String, Option<ofconvert_engine::ErrorPlace>)> {
    if let Some(dataset) = summary.datasets.iter().find(|d| d.error.is_some()) {
        let mut message = format!(
            "{} of {} datasets failed; the first, {}: {}",
            summary.failed,
            summary.datasets.len(),
            dataset.name,
            dataset.error.as_deref().unwrap_or_default()
        );
        if let Some(hint) = ofconvert_engine::config::failure_hint(summary, FrontEnd::Python) {
            message.push_str(&format!(" ({hint})"));
        }
        return Some((message, dataset.error_at.clone()));
    }
    if let Some(unreadable) = summary.unreadable.first() {
        let message = format!(
            "{} inputs could not be read; the first, {}: {}",
            summary.unreadable.len(),
            unreadable.path,
            unreadable.reason
        );
        let place = ofconvert_engine::ErrorPlace {
            path: Some(PathBuf::from(&unreadable.path)),
            ..Default::default()
        };
        return Some((message, Some(place)));
    }
    if summary.datasets.is_empty() {
        let mut message = format!("nothing to convert in {}", summary.input);
        let hint = config.and_then(|config| {
            ofconvert_engine::config::nothing_found(
                std::path::Path::new(&summary.input),
                config.direction,
                &config.part_prefix,
                FrontEnd::Python,
            )
        });
        if let Some(hint) = hint {
            message.push_str(&format!(": {hint}"));
        }
        return Some((message, None));
    }
    None
}
