//! Rust errors as the Python package's exceptions (`ofconvert/_errors.py`), which carry the
//! file, byte offset and record index as attributes.

use std::path::{Path, PathBuf};

use ofconvert_engine::{Error, ErrorKind, RecordAt};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The exception classes of `ofconvert._errors`, by name.
#[derive(Clone, Copy, Debug)]
pub enum Class {
    /// A bad argument, a missing input, an output in the way.
    Usage,
    /// A file that cannot be read or written.
    File,
    /// Damaged framing: a checksum mismatch, a truncated or zero-length record.
    Corrupt,
    /// A payload that does not parse, or a value a mapping cannot carry.
    Mapping,
    /// A file that is neither TFRecord nor OFRecord.
    Format,
    /// A conversion that finished with failed datasets.
    Conversion,
    /// Anything else.
    Other,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::Usage => "UsageError",
            Class::File => "FileError",
            Class::Corrupt => "CorruptRecordError",
            Class::Mapping => "MappingError",
            Class::Format => "FormatError",
            Class::Conversion => "ConversionError",
            Class::Other => "Error",
        }
    }
}

/// Where an error is, each part when known.
#[derive(Clone, Debug, Default)]
pub struct Place<'a> {
    pub path: Option<&'a Path>,
    pub offset: Option<u64>,
    pub record: Option<u64>,
}

/// A `UsageError` with `message`: a value the caller gave that cannot be taken.
pub fn usage(py: Python<'_>, message: &str) -> PyErr {
    raise(py, Class::Usage, message, Place::default(), None)
}

/// An exception of `class` with `message` and its place; `extra` keyword arguments go to
/// the constructor too.
pub fn raise(
    py: Python<'_>,
    class: Class,
    message: &str,
    place: Place<'_>,
    extra: Option<&Bound<'_, PyDict>>,
) -> PyErr {
    let made = py
        .import("ofconvert._errors")
        .and_then(|module| module.getattr(class.name()))
        .and_then(|class| {
            let path = place.path.map(|path| path.to_string_lossy().into_owned());
            class.call((message, path, place.offset, place.record), extra)
        });
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(err) => err,
    }
}

/// The exception class for an engine error.
pub fn class_of(err: &Error) -> Class {
    match err.kind() {
        ErrorKind::InputMissing | ErrorKind::Io(_) => Class::File,
        ErrorKind::TfRecord(ofconvert_tfrecord::ErrorKind::Io(io))
        | ErrorKind::OfRecord(ofconvert_ofrecord::ErrorKind::Io(io))
        | ErrorKind::ArrayRecord(ofconvert_arrayrecord::ErrorKind::Io(io)) => {
            // A damaged or cut-short compressed stream surfaces as these.
            match io.kind() {
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
                    Class::Corrupt
                }
                _ => Class::File,
            }
        }
        ErrorKind::Parquet(ofconvert_parquet::ErrorKind::Io(_)) => Class::File,
        // A table of columns: not a file of records.
        ErrorKind::Parquet(ofconvert_parquet::ErrorKind::NotRecords { .. }) => Class::Format,
        ErrorKind::TfRecord(_)
        | ErrorKind::OfRecord(_)
        | ErrorKind::ArrayRecord(_)
        | ErrorKind::Parquet(_) => Class::Corrupt,
        ErrorKind::Mapping(_) => Class::Mapping,
        ErrorKind::UnknownFormat
        | ErrorKind::NoRecordFramed { .. }
        | ErrorKind::NotTfRecord
        | ErrorKind::OnlyOfRecords { .. } => Class::Format,
        ErrorKind::NoRecordFiles { .. } => Class::File,
        ErrorKind::PartsMissing { .. } | ErrorKind::ReceiptMismatch { .. } => Class::Conversion,
        _ if err.is_usage() => Class::Usage,
        _ => Class::Other,
    }
}

/// An engine error as an exception, with its whole cause chain as the message.
pub fn engine_error(py: Python<'_>, err: &Error) -> PyErr {
    let place = Place {
        path: err.path(),
        offset: err.offset(),
        record: err.record(),
    };
    let message = ofconvert_engine::error_chain(err);
    raise(py, class_of(err), &message, place, None)
}

/// An error while reading: the engine's (file, framing) or a payload that does not parse.
pub enum Failure {
    Engine(ofconvert_engine::Error),
    Payload {
        path: PathBuf,
        at: RecordAt,
        err: ofconvert_bridge::Error,
    },
    Python(PyErr),
}

impl From<ofconvert_engine::Error> for Failure {
    fn from(err: ofconvert_engine::Error) -> Self {
        Failure::Engine(err)
    }
}

impl From<PyErr> for Failure {
    fn from(err: PyErr) -> Self {
        Failure::Python(err)
    }
}

impl Failure {
    pub fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Engine(err) => engine_error(py, &err),
            Failure::Python(err) => err,
            Failure::Payload { path, at, err } => payload_error(py, &path, at, &err),
        }
    }
}

/// A payload that does not parse, as `read()` reports it.
pub fn payload_error(
    py: Python<'_>,
    path: &std::path::Path,
    at: RecordAt,
    err: &ofconvert_bridge::Error,
) -> PyErr {
    let place = Place {
        path: Some(path),
        offset: Some(at.offset),
        record: Some(at.index),
    };
    let message = format!(
        "{}: offset {} (record #{}): {err} (raw=True reads the bytes as they are)",
        path.display(),
        at.offset,
        at.index
    );
    raise(py, Class::Mapping, &message, place, None)
}
