//! `tf2of`, `of2tf` and `commit`: the conversion the keyword arguments configure
//! ([`crate::keywords`]) on a thread of its own with the GIL released ([`crate::watch`]:
//! Ctrl-C turned into a clean stop, events handed to a `progress` callback), and the
//! summary or the exception its failure raises.

use std::path::PathBuf;

use ofconvert_engine::config::{ConvertConfig, Ran};
use ofconvert_engine::{DatasetStatus, Direction, FrontEnd, ShardSummary, Summary};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{self, usage, Class, Place};
use crate::keywords::{Network, Settings};
use crate::watch::interruptible;

/// Runs a conversion (a worker's share of one with `shard`); returns its summary as JSON
/// text, or raises `ConversionError` (carrying the summary) when a dataset or part failed,
/// an input could not be read or there was nothing to convert.
#[pyfunction]
#[pyo3(signature = (direction, inputs, output, settings, progress=None))]
pub fn convert(
    py: Python<'_>,
    direction: &str,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    settings: &Bound<'_, PyDict>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let direction = match direction {
        "tf2of" => Direction::TfToOf,
        "of2tf" => Direction::OfToTf,
        other => return Err(usage(py, &format!("unknown direction {other:?}"))),
    };
    let config = Settings::from_keywords(settings)?
        .configure(direction, inputs, output)
        .map_err(|message| usage(py, &message))?;
    let options = config
        .options()
        .map_err(|err| errors::engine_error(py, &err))?;
    let (outcome, signal) = interruptible(py, &options.interrupt, progress, |report| {
        config
            .plan(&options)
            .and_then(|plan| config.convert(plan, &options, report))
    });
    if let Some(signal) = signal {
        return Err(interrupted(py, signal, outcome.as_ref().ok()));
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
        return Err(PyKeyboardInterrupt::new_err(whole_interrupted(summary)));
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
        return Err(PyKeyboardInterrupt::new_err(share_interrupted(summary)));
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

/// The exception a signal raised during a conversion becomes: Ctrl-C's `KeyboardInterrupt`
/// says, as the command line does, what was kept and how to finish; what another handler
/// raised is left as it is.
fn interrupted(py: Python<'_>, signal: PyErr, ran: Option<&Ran>) -> PyErr {
    if !signal.is_instance_of::<PyKeyboardInterrupt>(py) {
        return signal;
    }
    PyKeyboardInterrupt::new_err(match ran {
        Some(Ran::Whole(summary)) => whole_interrupted(summary),
        Some(Ran::Share(summary)) => share_interrupted(summary),
        // Stopped before a summary was made (while planning).
        _ => "the conversion was interrupted: run it again with resume=True (in place of \
              overwrite=True, if given) to finish: it keeps the finished datasets"
            .to_owned(),
    })
}

/// What an interrupted run finished, and how to finish it.
fn whole_interrupted(summary: &Summary) -> String {
    let done = summary
        .datasets
        .iter()
        .filter(|d| matches!(d.status, DatasetStatus::Converted | DatasetStatus::Kept))
        .count();
    let parts = summary.kept_for_resume().parts;
    format!(
        "the conversion was interrupted: {done} of {} datasets finished and published in {}, \
         and {parts} finished parts of the others kept; run it again with resume=True (in \
         place of overwrite=True, if given) to finish: it keeps the finished datasets and \
         parts",
        summary.datasets.len(),
        summary.output,
    )
}

/// What an interrupted worker of a sharded run does next.
fn share_interrupted(summary: &ShardSummary) -> String {
    format!(
        "worker {} of {} was interrupted: run it again to finish its share (the parts it \
         finished are kept)",
        summary.worker, summary.workers
    )
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
