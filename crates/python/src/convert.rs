//! `tf2of` and `of2tf`: the engine's options from keyword arguments, the conversion on a
//! thread of its own with the GIL released, and Ctrl-C turned into a clean stop.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use ofconvert_bridge::{MappingSpec, NumericType, SequencePolicy};
use ofconvert_engine::{
    Direction, ExistingOutput, Interrupt, NamedRule, Needs, OnCorrupt, OnEmpty, Options, Sizing,
    Summary,
};
use ofconvert_tfrecord::Compression;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{self, Class, Place};

/// How often a running conversion looks for a pending signal (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Everything `tf2of` and `of2tf` accept; the Python wrappers pass only those of their
/// direction.
#[derive(Debug, FromPyObject)]
#[pyo3(from_item_all)]
pub struct Settings {
    parts: Option<u64>,
    records_per_part: Option<u64>,
    max_part_bytes: Option<u64>,
    part_prefix: String,
    part_digits: usize,
    preset: Option<String>,
    rename: Vec<(String, String)>,
    cast: Vec<(String, String)>,
    offset: Vec<(String, i64)>,
    keep: Vec<String>,
    drop: Vec<String>,
    sequence: String,
    raw_feature: Option<String>,
    on_corrupt: String,
    empty: String,
    compression: String,
    lossy: bool,
    overwrite: bool,
    resume: bool,
    jobs: Option<usize>,
    sync: bool,
    verify: bool,
}

fn choice<T: Copy>(what: &str, value: &str, choices: &[(&str, T)]) -> Result<T, String> {
    choices
        .iter()
        .find(|(name, _)| *name == value)
        .map(|(_, choice)| *choice)
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
            format!("{what}={value:?}: expected one of {}", names.join(", "))
        })
}

fn positive(what: &str, value: Option<u64>) -> Result<Option<u64>, String> {
    match value {
        Some(0) => Err(format!("{what} must be at least 1")),
        other => Ok(other),
    }
}

/// The engine options for `direction`, with the mapping described in the command line's
/// words so that a run resumed by the other front end sees the same mapping.
fn options(direction: Direction, settings: &Settings) -> Result<Options, String> {
    if settings.part_prefix.contains(['/', '\\']) || settings.part_prefix.starts_with('.') {
        return Err(format!(
            "part_prefix={:?}: a part name prefix cannot hold a path separator or start with \
             a dot",
            settings.part_prefix
        ));
    }
    if settings.overwrite && settings.resume {
        return Err("overwrite and resume exclude each other".to_owned());
    }
    if settings.part_digits > 20 {
        return Err("part_digits must be between 0 and 20".to_owned());
    }
    if settings.jobs == Some(0) {
        return Err("jobs must be at least 1".to_owned());
    }
    let mut options = Options::new(direction);
    options.part_prefix = settings.part_prefix.clone();
    options.sizing = Sizing {
        parts: positive("parts", settings.parts)?,
        records_per_part: positive("records_per_part", settings.records_per_part)?,
        max_part_bytes: positive("max_part_bytes", settings.max_part_bytes)?,
    };
    options.verify_checksums = settings.verify;
    options.sync = settings.sync;
    options.on_corrupt = choice(
        "on_corrupt",
        &settings.on_corrupt,
        &[("fail", OnCorrupt::Fail), ("skip", OnCorrupt::Skip)],
    )?;
    options.existing = if settings.resume {
        ExistingOutput::Resume
    } else if settings.overwrite {
        ExistingOutput::Overwrite
    } else {
        ExistingOutput::Refuse
    };
    options.jobs = settings.jobs.unwrap_or(0);

    let mut description = Vec::new();
    let mut spec = match settings.preset.as_deref() {
        None => MappingSpec::new(),
        Some("imagenet") => {
            description.push("--preset=imagenet".to_owned());
            MappingSpec::imagenet()
        }
        Some(other) => return Err(format!("preset={other:?}: expected \"imagenet\"")),
    };
    for (old, new) in &settings.rename {
        if old.is_empty() || new.is_empty() {
            return Err(format!("rename: empty feature name in {old:?} -> {new:?}"));
        }
        spec = spec.rename(old, new);
        description.push(format!("--rename={old}={new}"));
    }
    for (name, kind) in &settings.cast {
        let kind: NumericType = kind
            .parse()
            .map_err(|err| format!("cast {name:?}: {err}"))?;
        spec = spec.cast(name, kind);
        description.push(format!("--cast={name}={kind}"));
    }
    for (name, delta) in &settings.offset {
        spec = spec.offset(name, *delta);
        description.push(format!("--offset={name}={delta}"));
    }
    if !settings.keep.is_empty() {
        spec = spec.keep(settings.keep.iter().cloned());
        description.extend(settings.keep.iter().map(|name| format!("--keep={name}")));
    }
    for name in &settings.drop {
        spec = spec.drop_feature(name);
        description.push(format!("--drop={name}"));
    }
    match direction {
        Direction::TfToOf => {
            options.part_digits = settings.part_digits;
            let sequence = choice(
                "sequence",
                &settings.sequence,
                &[
                    ("refuse", SequencePolicy::Refuse),
                    ("flatten", SequencePolicy::Flatten),
                ],
            )?;
            if sequence == SequencePolicy::Flatten {
                spec = spec.sequence(SequencePolicy::Flatten);
                description.push("--sequence=flatten".to_owned());
            }
            if let Some(name) = &settings.raw_feature {
                spec = spec.raw_feature(name);
                description.push(format!("--raw-feature={name}"));
            }
            options.on_empty = choice(
                "empty",
                &settings.empty,
                &[("error", OnEmpty::Error), ("skip", OnEmpty::Skip)],
            )?;
        }
        Direction::OfToTf => {
            if settings.lossy {
                spec = spec.lossy(true);
                description.push("--lossy".to_owned());
            }
            options.compression = choice(
                "compression",
                &settings.compression,
                &[
                    ("none", Compression::None),
                    ("gzip", Compression::Gzip),
                    ("zlib", Compression::Zlib),
                ],
            )?;
        }
    }
    options.mapping = spec;
    options.mapping_description = description;
    Ok(options)
}

/// The mapping rules as the caller wrote them, each with the input features it names, for
/// the engine to check against the data before converting (a misspelt name fails its
/// dataset rather than doing nothing).
fn named_rules(settings: &Settings) -> Vec<NamedRule> {
    let mut rules = Vec::new();
    for (old, new) in &settings.rename {
        let rule = format!("rename={{{old:?}: {new:?}}}");
        rules.push(NamedRule::one(rule, old, Needs::Each));
    }
    for (name, kind) in &settings.cast {
        let rule = format!("cast={{{name:?}: {kind:?}}}");
        rules.push(NamedRule::one(rule, name, Needs::Each));
    }
    for (name, delta) in &settings.offset {
        let rule = format!("offset={{{name:?}: {delta}}}");
        rules.push(NamedRule::one(rule, name, Needs::Each));
    }
    for name in &settings.keep {
        rules.push(NamedRule::one(
            format!("keep=[{name:?}]"),
            name,
            Needs::Keep,
        ));
    }
    for name in &settings.drop {
        rules.push(NamedRule::one(
            format!("drop=[{name:?}]"),
            name,
            Needs::Each,
        ));
    }
    rules
}

/// Plans and runs a conversion on a thread of its own while this thread, without the GIL,
/// looks for signals. On one (Ctrl-C), the engine is told to stop, and once it has removed
/// its temporary files the signal's exception is returned.
fn run(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    options: Options,
    rules: Vec<NamedRule>,
) -> (Result<Summary, ofconvert_engine::Error>, Option<PyErr>) {
    let interrupt: Interrupt = options.interrupt.clone();
    py.detach(move || {
        let (done, finished) = mpsc::channel::<()>();
        let worker = thread::spawn(move || {
            let outcome = ofconvert_engine::plan(&src, &dst, &options).and_then(|mut plan| {
                ofconvert_engine::check_rules(&mut plan, &rules);
                ofconvert_engine::convert(plan, &options, &|_event| {})
            });
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
}

/// Runs a conversion; returns its summary as JSON text, or raises `ConversionError`
/// (carrying the summary) when a dataset failed, an input could not be read or there was
/// nothing to convert.
#[pyfunction]
pub fn convert(
    py: Python<'_>,
    direction: &str,
    src: PathBuf,
    dst: PathBuf,
    settings: Settings,
) -> PyResult<String> {
    let direction = match direction {
        "tf2of" => Direction::TfToOf,
        "of2tf" => Direction::OfToTf,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown direction {other:?}"
            )))
        }
    };
    let options = options(direction, &settings)
        .map_err(|message| errors::raise(py, Class::Usage, &message, Place::default(), None))?;
    let rules = named_rules(&settings);
    let output_existed = dst.exists();
    let (outcome, signal) = run(py, src, dst.clone(), options, rules);
    if !output_existed {
        // A run that wrote nothing leaves no empty directory behind (one that holds
        // something is not removed).
        let _ = std::fs::remove_dir(&dst);
    }
    if let Some(signal) = signal {
        return Err(signal);
    }
    let summary = outcome.map_err(|err| errors::engine_error(py, &err))?;
    let json = summary_json(&summary)
        .map_err(|err| pyo3::exceptions::PyRuntimeError::new_err(err.to_string()))?;
    if summary.interrupted {
        // Stopped by a signal that Python did not see (SIGTERM through another handler).
        return Err(pyo3::exceptions::PyKeyboardInterrupt::new_err(
            "the conversion was interrupted",
        ));
    }
    if let Some((message, place)) = failure(&summary) {
        let extra = PyDict::new(py);
        extra.set_item(
            "summary",
            py.import("json")?.call_method1("loads", (&json,))?,
        )?;
        let place = Place {
            path: place.as_ref().and_then(|place| place.path.as_deref()),
            offset: place.as_ref().and_then(|place| place.offset),
            record: place.as_ref().and_then(|place| place.record),
        };
        return Err(errors::raise(
            py,
            Class::Conversion,
            &message,
            place,
            Some(&extra),
        ));
    }
    Ok(json)
}

/// The summary as the command line's `--json` prints it: with the datasets' warnings
/// gathered under `warnings`, each prefixed with its dataset's name.
fn summary_json(summary: &Summary) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(summary)?;
    let warnings: Vec<String> = summary
        .datasets
        .iter()
        .filter_map(|dataset| Some((&dataset.name, dataset.manifest.as_ref()?)))
        .flat_map(|(name, manifest)| {
            manifest
                .warnings
                .iter()
                .map(move |warning| format!("{name}: {warning}"))
        })
        .collect();
    value["warnings"] = serde_json::json!(warnings);
    serde_json::to_string(&value)
}

/// What went wrong in a finished conversion, and where, as the command line's exit status
/// 1 sees it.
fn failure(summary: &Summary) -> Option<(String, Option<ofconvert_engine::ErrorPlace>)> {
    if let Some(dataset) = summary.datasets.iter().find(|d| d.error.is_some()) {
        let message = format!(
            "{} of {} datasets failed; the first, {}: {}",
            summary.failed,
            summary.datasets.len(),
            dataset.name,
            dataset.error.as_deref().unwrap_or_default()
        );
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
        return Some((format!("nothing to convert in {}", summary.input), None));
    }
    None
}
