//! How a batch holds a numeric feature whose length varies from record to record, when the
//! caller names it: as its values back to back and each record's length (`lengths=`), or
//! padded with zeros to a stated length (`pad=`), with the lengths beside. Either is one
//! array a feature a batch (two with the lengths), which a data loader's worker sends through
//! shared memory in one transfer, where a list of one small array a record takes one each.

use std::collections::HashMap;

use numpy::ndarray::Array2;
use numpy::{Element, PyArray1, PyArray2};
use pyo3::prelude::*;

/// The shape a named feature takes in a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A 1-D array of every record's values in turn, and `NAME/lengths`.
    Lengths,
    /// A `(rows, width)` array, each record's values then zeros, and `NAME/lengths`.
    Pad(usize),
}

/// The features a caller gave a shape, by name.
#[derive(Clone, Debug, Default)]
pub struct Shapes(HashMap<Vec<u8>, Shape>);

impl Shapes {
    /// `lengths` as [`Shape::Lengths`], `pad` as [`Shape::Pad`] (the caller checked that no
    /// name is in both, and that widths are at least 1).
    pub fn new(lengths: Vec<String>, pad: HashMap<String, usize>) -> Shapes {
        let mut shapes: HashMap<Vec<u8>, Shape> = lengths
            .into_iter()
            .map(|name| (name.into_bytes(), Shape::Lengths))
            .collect();
        shapes.extend(
            pad.into_iter()
                .map(|(name, width)| (name.into_bytes(), Shape::Pad(width))),
        );
        Shapes(shapes)
    }

    pub fn of(&self, name: &[u8]) -> Option<Shape> {
        self.0.get(name).copied()
    }

    /// The names given a shape, in name order.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .0
            .keys()
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .collect();
        names.sort();
        names
    }
}

/// The key of a shaped feature's lengths.
pub fn lengths_key(name: &str) -> String {
    format!("{name}/lengths")
}

/// A shaped feature's arrays: its values (as `shape` says) and its lengths (int64, one a
/// row), of the rows whose values are `values[start..start + len]` for each `(start, len)`
/// of `rows` (a record without the feature: `(0, 0)`).
///
/// # Errors
///
/// A usage error when a record holds more values than `pad=` gives room for: values are
/// never cut.
pub fn shaped<'py, T: Element + Copy + Default>(
    py: Python<'py>,
    name: &str,
    shape: Shape,
    rows: &[(usize, usize)],
    values: &[T],
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let lengths: Vec<i64> = rows.iter().map(|&(_, len)| len as i64).collect();
    let lengths = PyArray1::from_vec(py, lengths).into_any();
    let shaped = match shape {
        Shape::Lengths => {
            let mut flat = Vec::with_capacity(rows.iter().map(|&(_, len)| len).sum());
            for &(start, len) in rows {
                flat.extend_from_slice(&values[start..start + len]);
            }
            PyArray1::from_vec(py, flat).into_any()
        }
        Shape::Pad(width) => {
            if let Some(&(_, len)) = rows.iter().find(|&&(_, len)| len > width) {
                return Err(crate::errors::usage(
                    py,
                    &format!(
                        "feature {name:?}: a record holds {len} values, more than pad={width} \
                         gives room for (values are never cut): give a larger pad= for it"
                    ),
                ));
            }
            let mut padded = vec![T::default(); rows.len() * width];
            for (row, &(start, len)) in rows.iter().enumerate() {
                padded[row * width..row * width + len].copy_from_slice(&values[start..start + len]);
            }
            let array = Array2::from_shape_vec((rows.len(), width), padded)
                .map_err(|err| pyo3::exceptions::PyRuntimeError::new_err(err.to_string()))?;
            PyArray2::from_owned_array(py, array).into_any()
        }
    };
    Ok((shaped, lengths))
}
