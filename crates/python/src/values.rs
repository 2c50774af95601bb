//! Records as Python values and back: a feature becomes a 1-D numpy array (int64, int32,
//! float32, float64) or a `list[bytes]`; a feature with no kind set becomes `None`.

use std::collections::{BTreeMap, HashMap};

use numpy::{PyArray1, PyReadonlyArray1};
use ofconvert_bridge::proto::{oneflow as of_pb, tensorflow as tf_pb};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

/// Feature names seen before, as Python strings: a dataset repeats the same few names in
/// every record, and a string made once also keeps its hash for the dict.
#[derive(Default)]
pub struct Names {
    known: HashMap<String, Py<PyString>>,
}

/// Past this many distinct names, new ones are not remembered (records with ever-new names
/// would otherwise grow the table without end).
const NAMES_MAX: usize = 4096;

impl Names {
    pub fn get<'py>(&mut self, py: Python<'py>, name: &str) -> Bound<'py, PyString> {
        if let Some(known) = self.known.get(name) {
            return known.bind(py).clone();
        }
        let made = PyString::intern(py, name);
        if self.known.len() < NAMES_MAX {
            self.known.insert(name.to_owned(), made.clone().unbind());
        }
        made
    }
}

fn bytes_list<'py>(py: Python<'py>, values: &[Vec<u8>]) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyList::new(py, values.iter().map(|value| PyBytes::new(py, value)))?.into_any())
}

fn tf_value<'py>(py: Python<'py>, feature: &tf_pb::Feature) -> PyResult<Bound<'py, PyAny>> {
    use tf_pb::feature::Kind;
    Ok(match &feature.kind {
        None => py.None().into_bound(py),
        Some(Kind::BytesList(list)) => bytes_list(py, &list.value)?,
        Some(Kind::FloatList(list)) => PyArray1::from_slice(py, &list.value).into_any(),
        Some(Kind::Int64List(list)) => PyArray1::from_slice(py, &list.value).into_any(),
    })
}

/// An Example's features as a dict.
pub fn example_dict<'py>(
    py: Python<'py>,
    names: &mut Names,
    features: &BTreeMap<String, tf_pb::Feature>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, feature) in features {
        dict.set_item(names.get(py, name), tf_value(py, feature)?)?;
    }
    Ok(dict)
}

/// A SequenceExample as a dict: its context features, and each feature list as a list of
/// its steps' values.
pub fn sequence_dict<'py>(
    py: Python<'py>,
    names: &mut Names,
    sequence: &tf_pb::SequenceExample,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = match &sequence.context {
        Some(context) => example_dict(py, names, &context.feature)?,
        None => PyDict::new(py),
    };
    if let Some(lists) = &sequence.feature_lists {
        for (name, list) in &lists.feature_list {
            let steps = list
                .feature
                .iter()
                .map(|step| tf_value(py, step))
                .collect::<PyResult<Vec<_>>>()?;
            dict.set_item(names.get(py, name), PyList::new(py, steps)?)?;
        }
    }
    Ok(dict)
}

/// A dict the Python side has normalized (each value a `list[bytes]` or a contiguous 1-D
/// array of int64, int32, float32 or float64) as an OFRecord, which holds every kind.
pub fn ofrecord_from_dict(dict: &Bound<'_, PyDict>) -> PyResult<of_pb::OfRecord> {
    use of_pb::feature::Kind;
    let mut feature = BTreeMap::new();
    for (name, value) in dict.iter() {
        let name: String = name.extract()?;
        let kind = if let Ok(list) = value.cast::<PyList>() {
            let values = list
                .iter()
                .map(|item| Ok(item.cast::<PyBytes>()?.as_bytes().to_vec()))
                .collect::<PyResult<Vec<Vec<u8>>>>()?;
            Kind::BytesList(of_pb::BytesList { value: values })
        } else if let Ok(array) = value.extract::<PyReadonlyArray1<'_, i64>>() {
            Kind::Int64List(of_pb::Int64List {
                value: array.as_slice()?.to_vec(),
            })
        } else if let Ok(array) = value.extract::<PyReadonlyArray1<'_, i32>>() {
            Kind::Int32List(of_pb::Int32List {
                value: array.as_slice()?.to_vec(),
            })
        } else if let Ok(array) = value.extract::<PyReadonlyArray1<'_, f32>>() {
            Kind::FloatList(of_pb::FloatList {
                value: array.as_slice()?.to_vec(),
            })
        } else if let Ok(array) = value.extract::<PyReadonlyArray1<'_, f64>>() {
            Kind::DoubleList(of_pb::DoubleList {
                value: array.as_slice()?.to_vec(),
            })
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "feature {name:?}: expected list[bytes] or a 1-D int64, int32, float32 or \
                 float64 array"
            )));
        };
        feature.insert(name, of_pb::Feature { kind: Some(kind) });
    }
    Ok(of_pb::OfRecord { feature })
}
