//! A record's payload as Python values, straight from its bytes: one record as a dict (what
//! `read()` and `ds[i]` give), and which features a caller asked for; the columns of a batch
//! are the columns module's.

use std::collections::HashSet;

use numpy::{Element, PyArray1};
use ofconvert_bridge::{FeatureKind, TfRecordType, ValueList};
use ofconvert_engine::Format;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// Bytes read before the values among them are made into Python objects: little enough to
/// stay in a core's cache from the read to the copy.
pub const MAKE_BYTES_EVERY: usize = 512 << 10;

use crate::shapes::Shapes;
use crate::values::{self, Names};

/// The features a caller asked for; `None` takes them all.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub(crate) names: Option<HashSet<Vec<u8>>>,
    /// In the order asked.
    pub(crate) ordered: Vec<String>,
    /// With every feature taken: those every batch holds as keys, whether its records have
    /// them or not (the dataset's, as far as a look at some of its records tells).
    pub(crate) keys: Vec<String>,
    /// Numeric features given a shape of their own (`lengths=`, `pad=`).
    pub(crate) shapes: Shapes,
}

impl Selection {
    pub fn new(features: Option<Vec<String>>) -> Selection {
        match features {
            None => Selection::default(),
            Some(ordered) => Selection {
                names: Some(
                    ordered
                        .iter()
                        .map(|name| name.as_bytes().to_vec())
                        .collect(),
                ),
                ordered,
                keys: Vec::new(),
                shapes: Shapes::default(),
            },
        }
    }

    /// The selection, with `shapes` for the features they name (which are then keys of every
    /// batch).
    pub fn with_shapes(mut self, shapes: Shapes) -> Selection {
        self.shapes = shapes;
        self
    }

    /// The selection, with `keys` in every batch when it takes every feature (one that
    /// names its features has those in every batch already).
    pub fn with_keys(&self, keys: &[String]) -> Selection {
        let mut selection = self.clone();
        if selection.names.is_none() {
            selection.keys = keys.to_vec();
            for name in selection.shapes.names() {
                if !selection.keys.contains(&name) {
                    selection.keys.push(name);
                }
            }
        }
        selection
    }

    /// Whether it takes every feature.
    pub fn takes_all(&self) -> bool {
        self.names.is_none()
    }

    pub(crate) fn wants(&self, name: &[u8]) -> bool {
        self.names.as_ref().is_none_or(|names| names.contains(name))
    }
}

/// Whether a TFRecord payload is a `SequenceExample`, whose feature lists the prost path
/// decodes (rare in training data, and nested one level deeper).
fn is_sequence(payload: &[u8], format: Format) -> bool {
    format == Format::Tf
        && matches!(
            ofconvert_bridge::classify_tf_record(payload),
            Ok(TfRecordType::SequenceExample)
        )
}

pub(crate) fn array<'py, T: Element>(py: Python<'py>, values: &[T]) -> Bound<'py, PyAny> {
    PyArray1::from_slice(py, values).into_any()
}

/// A value list as `read()` gives it: a 1-D array of its kind, or `list[bytes]`.
fn list_value<'py>(
    py: Python<'py>,
    list: &ValueList<'_>,
) -> PyResult<Result<Bound<'py, PyAny>, ofconvert_bridge::Error>> {
    Ok(Ok(match list.kind() {
        FeatureKind::Bytes => {
            let out = PyList::empty(py);
            let mut failed = None;
            if let Err(err) = list.for_each_bytes(|value| {
                if failed.is_none() {
                    if let Err(err) = out.append(PyBytes::new(py, value)) {
                        failed = Some(err);
                    }
                }
            }) {
                return Ok(Err(err));
            }
            if let Some(err) = failed {
                return Err(err);
            }
            out.into_any()
        }
        FeatureKind::Int64 => {
            let mut values = Vec::new();
            if let Err(err) = list.append_i64(&mut values) {
                return Ok(Err(err));
            }
            array(py, &values)
        }
        FeatureKind::Int32 => {
            let mut values = Vec::new();
            if let Err(err) = list.append_i32(&mut values) {
                return Ok(Err(err));
            }
            array(py, &values)
        }
        FeatureKind::Float => {
            let mut values = Vec::new();
            if let Err(err) = list.append_f32(&mut values) {
                return Ok(Err(err));
            }
            array(py, &values)
        }
        FeatureKind::Double => {
            let mut values = Vec::new();
            if let Err(err) = list.append_f64(&mut values) {
                return Ok(Err(err));
            }
            array(py, &values)
        }
    }))
}

/// One record as a dict, its features in name order (as `read()` has always given them);
/// the outer error is Python's, the inner one the payload's.
pub fn record_dict<'py>(
    py: Python<'py>,
    names: &mut Names,
    payload: &[u8],
    format: Format,
    selection: &Selection,
) -> PyResult<Result<Bound<'py, PyDict>, ofconvert_bridge::Error>> {
    if is_sequence(payload, format) {
        let sequence = match ofconvert_bridge::decode_sequence_example(payload) {
            Ok(sequence) => sequence,
            Err(err) => return Ok(Err(err)),
        };
        let dict = values::sequence_dict(py, names, &sequence)?;
        if selection.names.is_some() {
            for key in dict.keys() {
                let key: String = key.extract()?;
                if !selection.wants(key.as_bytes()) {
                    dict.del_item(key)?;
                }
            }
        }
        return Ok(Ok(dict));
    }
    let mut entries: Vec<(&[u8], Option<ValueList<'_>>)> = Vec::with_capacity(16);
    let walked = ofconvert_bridge::visit_lists(payload, format == Format::Tf, |name, list| {
        if selection.wants(name) {
            entries.push((name, list));
        }
        Ok::<(), ofconvert_bridge::Error>(())
    })
    .map(drop);
    if let Err(err) = walked {
        return Ok(Err(err));
    }
    // Name order; of a name given twice, the last (as protobuf parsers keep it).
    entries.reverse();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries.dedup_by(|later, kept| later.0 == kept.0);
    let dict = PyDict::new(py);
    for (name, list) in &entries {
        let value = match list {
            None => py.None().into_bound(py),
            Some(list) => match list_value(py, list)? {
                Ok(value) => value,
                Err(err) => return Ok(Err(err)),
            },
        };
        dict.set_item(names.get(py, &String::from_utf8_lossy(name)), value)?;
    }
    Ok(Ok(dict))
}
