//! `count`, `verify`, `schema`, `index` and `diff`: the engine's reports, in the shapes the command
//! line's `--json` prints, as JSON text for the Python wrappers to load, with the warnings
//! about the paths given for them to issue.

use std::path::PathBuf;

use ofconvert_engine::config::choice;
use ofconvert_engine::reports::{self, Found};
use ofconvert_engine::{Checksums, Format, FrontEnd};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{self, usage, Class, Place};
use crate::keywords::{Network, Rules};

/// What an inspection returns: its report as JSON text, and its warnings.
type Report = (String, Vec<String>);

/// The record files under `paths`, or the first error about them as an exception.
fn find(
    py: Python<'_>,
    paths: &[PathBuf],
    format: Option<&str>,
    network: &Network,
) -> PyResult<Found> {
    network.set(py)?;
    let format: Option<Format> = format
        .map(|name| choice(FrontEnd::Python, name))
        .transpose()
        .map_err(|message| usage(py, &message))?;
    let found = py.detach(|| reports::find(paths, format, FrontEnd::Python));
    match found.errors.first() {
        Some(err) => Err(errors::engine_error(py, err)),
        None => Ok(found),
    }
}

/// A file to open, its format, its size and version where the listing learned them, and
/// whether it is known to hold its records framed as they are (a listing never knows: only a
/// dataset handing its files to its copy does).
/// And the record count its dataset's metadata states, where it does (a manifest's part, a
/// TFDS shard's length).
pub(crate) type ToOpen = (PathBuf, Format, Option<(u64, String)>, bool, Option<u64>);

/// The record files of `paths` (files, directories, URLs), as [`ToOpen`]s, and the bytes
/// they hold as listed.
pub(crate) fn listed(py: Python<'_>, paths: &[PathBuf]) -> PyResult<(Vec<ToOpen>, u64)> {
    let expanded = py.detach(|| ofconvert_engine::expand_paths(paths, None));
    if let Some(err) = expanded.errors.first() {
        return Err(errors::engine_error(py, err));
    }
    let bytes = expanded.sizes.iter().sum();
    let stats = expanded.sizes.into_iter().zip(expanded.versions);
    let files = expanded.files.into_iter().zip(stats).zip(expanded.stated);
    let found = files
        .map(|(((path, format), (size, version)), stated)| {
            (path, format, version.map(|v| (size, v)), false, stated)
        })
        .collect();
    Ok((found, bytes))
}

fn json<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value)
        .map_err(|err| pyo3::exceptions::PyRuntimeError::new_err(err.to_string()))
}

/// `ofconvert count --json`.
#[pyfunction]
pub fn count(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    format: Option<&str>,
    verify: bool,
    jobs: usize,
    network: Network,
) -> PyResult<Report> {
    let found = find(py, &paths, format, &network)?;
    let checksums = if verify {
        Checksums::Verify
    } else {
        Checksums::Ignore
    };
    let (report, errors) = py.detach(|| reports::count(&found, checksums, jobs, &|_event| {}));
    if let Some(err) = errors.first() {
        return Err(errors::engine_error(py, err));
    }
    Ok((json(&report)?, found.warnings))
}

/// `ofconvert verify --json`: problems are in the report, not raised.
#[pyfunction]
pub fn verify(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    format: Option<&str>,
    jobs: usize,
    network: Network,
) -> PyResult<Report> {
    let found = find(py, &paths, format, &network)?;
    let report = py.detach(|| reports::verify(&found, jobs, &|_event| {}));
    Ok((json(&report)?, found.warnings))
}

/// `ofconvert schema --json`, or with `code` = `"oneflow"` or `"tf"` the code `--oneflow`
/// or `--tf` prints.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn schema(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    format: Option<&str>,
    sample: Option<u64>,
    code: Option<&str>,
    jobs: usize,
    network: Network,
) -> PyResult<Report> {
    if sample == Some(0) {
        return Err(usage(py, "sample must be at least 1"));
    }
    if let Some(other) = code.filter(|code| !matches!(*code, "oneflow" | "tf")) {
        return Err(usage(py, &format!("unknown code {other:?}")));
    }
    let found = find(py, &paths, format, &network)?;
    let (text, errors) = py.detach(|| match code {
        None => {
            let (schema, errors) = reports::schema(&found, jobs, sample, &|_event| {});
            (reports::schema_json(&schema).to_string(), errors)
        }
        // A section and a reader per dataset, as the command line prints them.
        Some(code) => {
            let (datasets, errors) = reports::schemas(&found, jobs, sample, &|_event| {});
            (reports::schema_code(&datasets, code == "oneflow"), errors)
        }
    });
    if let Some(err) = errors.first() {
        return Err(errors::engine_error(py, err));
    }
    Ok((text, found.warnings))
}

/// `ofconvert index --json`.
#[pyfunction]
pub fn index(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    output_dir: Option<PathBuf>,
    format: Option<&str>,
    jobs: usize,
    network: Network,
) -> PyResult<Report> {
    network.set(py)?;
    let format: Option<Format> = format
        .map(|name| choice(FrontEnd::Python, name))
        .transpose()
        .map_err(|message| usage(py, &message))?;
    let found = py.detach(|| reports::find_tfrecords(&paths, format));
    if let Some(err) = found.errors.first() {
        return Err(errors::engine_error(py, err));
    }
    let (report, failures) =
        py.detach(|| reports::index(&found, output_dir.as_deref(), jobs, &|_event| {}));
    if let Some(message) = failures.first() {
        return Err(errors::raise(
            py,
            Class::File,
            message,
            Place::default(),
            None,
        ));
    }
    Ok((json(&report)?, found.warnings))
}

/// `ofconvert diff --json`: two datasets compared record by record, A's first mapped by
/// `mapping`; a difference is in the report, not raised, and what cannot be compared raises.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn diff(
    py: Python<'_>,
    a: PathBuf,
    b: PathBuf,
    format_a: Option<&str>,
    format_b: Option<&str>,
    unordered: bool,
    jobs: usize,
    mapping: &Bound<'_, PyDict>,
    network: Network,
) -> PyResult<String> {
    let mapping = Rules::from_keywords(mapping)?;
    network.set(py)?;
    let mapping = mapping.parse().map_err(|message| usage(py, &message))?;
    let format = |name: Option<&str>| -> PyResult<Option<Format>> {
        name.map(|name| choice(FrontEnd::Python, name))
            .transpose()
            .map_err(|message| usage(py, &message))
    };
    let options = ofconvert_engine::DiffOptions {
        format_a: format(format_a)?,
        format_b: format(format_b)?,
        unordered,
        jobs,
        mapping: mapping.spec(),
    };
    let report = py
        .detach(|| ofconvert_engine::diff(&a, &b, &options, &|_event| {}))
        .map_err(|err| errors::engine_error(py, &err))?;
    Ok(report.to_json().to_string())
}
