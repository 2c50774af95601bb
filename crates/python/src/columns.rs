//! Many records as the columns of a batch: decoded into flat buffers without the GIL, and
//! made into one numpy array per numeric feature (or per shaped feature, see
//! [`crate::shapes`]) once the batch is whole.

use numpy::ndarray::Array2;
use numpy::{Element, PyArray2};
use ofconvert_bridge::{FeatureKind, ValueList};
use ofconvert_engine::Format;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::decode::{array, Selection};
use crate::shapes::{self, Shape};
use crate::values::{self, Names};

/// One record's value in one column.
#[derive(Clone, Copy, Debug)]
enum Cell {
    /// The record lacks the feature.
    Missing,
    /// The feature has no kind set.
    NoKind,
    /// Values `start..start + len` of the column's buffer of `kind`.
    Values {
        kind: FeatureKind,
        start: usize,
        len: usize,
    },
    /// The `index`th Python object of the batch (a SequenceExample's feature list).
    Object(usize),
}

/// The values of one feature over the records of a batch so far.
#[derive(Default)]
struct Column {
    name: Vec<u8>,
    cells: Vec<Cell>,
    i64s: Vec<i64>,
    i32s: Vec<i32>,
    f32s: Vec<f32>,
    f64s: Vec<f64>,
    /// Bytes values made into Python objects, then those not yet made: back to back, and
    /// where each ends. They are made a few megabytes at a time, while still in the cache.
    made: Vec<Py<PyAny>>,
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// The kind of the values last set, kept from batch to batch: a shaped feature that no
    /// record of a batch has is of that kind (float32 before any).
    kind: Option<FeatureKind>,
}

impl Column {
    fn named(name: &[u8], rows: usize) -> Column {
        Column {
            name: name.to_vec(),
            cells: vec![Cell::Missing; rows],
            ..Column::default()
        }
    }

    fn clear(&mut self) {
        self.cells.clear();
        self.i64s.clear();
        self.i32s.clear();
        self.f32s.clear();
        self.f64s.clear();
        self.made.clear();
        self.bytes.clear();
        self.ends.clear();
    }

    /// Makes the bytes values read so far into Python objects.
    fn make_bytes(&mut self, py: Python<'_>) {
        let mut from = 0;
        for &end in &self.ends {
            self.made
                .push(PyBytes::new(py, &self.bytes[from..end]).into_any().unbind());
            from = end;
        }
        self.bytes.clear();
        self.ends.clear();
    }

    /// Sets row `row` (the last row, or the one after it) to `list`.
    /// With `py`, bytes values are made into Python objects at once (the caller holds the
    /// GIL); without, they are copied and made later.
    fn set(
        &mut self,
        row: usize,
        list: Option<ValueList<'_>>,
        py: Option<Python<'_>>,
    ) -> Result<(), ofconvert_bridge::Error> {
        if self.cells.len() > row {
            // The name came twice in one record: the last one counts, the first's values go.
            if let Some(Cell::Values { kind, start, .. }) = self.cells.pop() {
                self.truncate(kind, start);
            }
        }
        while self.cells.len() < row {
            self.cells.push(Cell::Missing);
        }
        let Some(list) = list else {
            self.cells.push(Cell::NoKind);
            return Ok(());
        };
        let kind = list.kind();
        let start = self.len_of(kind);
        let appended = match kind {
            FeatureKind::Int64 => list.append_i64(&mut self.i64s),
            FeatureKind::Int32 => list.append_i32(&mut self.i32s),
            FeatureKind::Float => list.append_f32(&mut self.f32s),
            FeatureKind::Double => list.append_f64(&mut self.f64s),
            FeatureKind::Bytes => match py {
                Some(py) if self.ends.is_empty() => {
                    let made = &mut self.made;
                    list.for_each_bytes(|value| {
                        made.push(PyBytes::new(py, value).into_any().unbind())
                    })
                }
                _ => {
                    let (bytes, ends) = (&mut self.bytes, &mut self.ends);
                    list.for_each_bytes(|value| {
                        bytes.extend_from_slice(value);
                        ends.push(bytes.len());
                    })
                }
            },
        };
        match appended {
            Ok(len) => {
                self.kind = Some(kind);
                self.cells.push(Cell::Values { kind, start, len });
                Ok(())
            }
            Err(err) => {
                self.truncate(kind, start);
                Err(err)
            }
        }
    }

    fn len_of(&self, kind: FeatureKind) -> usize {
        match kind {
            FeatureKind::Int64 => self.i64s.len(),
            FeatureKind::Int32 => self.i32s.len(),
            FeatureKind::Float => self.f32s.len(),
            FeatureKind::Double => self.f64s.len(),
            FeatureKind::Bytes => self.made.len() + self.ends.len(),
        }
    }

    fn truncate(&mut self, kind: FeatureKind, start: usize) {
        match kind {
            FeatureKind::Int64 => self.i64s.truncate(start),
            FeatureKind::Int32 => self.i32s.truncate(start),
            FeatureKind::Float => self.f32s.truncate(start),
            FeatureKind::Double => self.f64s.truncate(start),
            FeatureKind::Bytes => {
                // Values not yet made come after those made.
                if start <= self.made.len() {
                    self.made.truncate(start);
                    self.ends.clear();
                } else {
                    self.ends.truncate(start - self.made.len());
                }
                self.bytes.truncate(self.ends.last().copied().unwrap_or(0));
            }
        }
    }

    /// The kind and length every row shares, when every row holds numbers of one kind and
    /// one length: the column is then one 2-D array.
    fn stackable(&self) -> Option<(FeatureKind, usize)> {
        let Some(&Cell::Values { kind, len, .. }) = self.cells.first() else {
            return None;
        };
        if kind == FeatureKind::Bytes {
            return None;
        }
        self.cells
            .iter()
            .all(|cell| matches!(cell, Cell::Values { kind: k, len: l, .. } if *k == kind && *l == len))
            .then_some((kind, len))
    }

    fn stacked<'py, T: Element + Copy>(
        py: Python<'py>,
        values: &[T],
        rows: usize,
        len: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let array = Array2::from_shape_vec((rows, len), values.to_vec())
            .map_err(|err| pyo3::exceptions::PyRuntimeError::new_err(err.to_string()))?;
        Ok(PyArray2::from_owned_array(py, array).into_any())
    }

    fn cell<'py>(
        &self,
        py: Python<'py>,
        cell: Cell,
        objects: &[Py<PyAny>],
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(match cell {
            Cell::Missing | Cell::NoKind => py.None().into_bound(py),
            Cell::Object(index) => objects[index].bind(py).clone(),
            Cell::Values { kind, start, len } => match kind {
                FeatureKind::Int64 => array(py, &self.i64s[start..start + len]),
                FeatureKind::Int32 => array(py, &self.i32s[start..start + len]),
                FeatureKind::Float => array(py, &self.f32s[start..start + len]),
                FeatureKind::Double => array(py, &self.f64s[start..start + len]),
                FeatureKind::Bytes => {
                    PyList::new(py, self.made[start..start + len].iter().map(|v| v.bind(py)))?
                        .into_any()
                }
            },
        })
    }

    /// The column in `shape`: its values and its lengths (see [`shapes::shaped`]).
    ///
    /// # Errors
    ///
    /// A usage error naming the feature when its values are bytes, of two kinds, or a
    /// SequenceExample's feature list, or when a record's do not fit `pad=`.
    fn shaped<'py>(
        &self,
        py: Python<'py>,
        rows: usize,
        shape: Shape,
        name: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let refused = |what: &str| {
            Err(crate::errors::usage(
                py,
                &format!("feature {name:?} {what}: lengths= and pad= shape numeric features only"),
            ))
        };
        let mut spans = Vec::with_capacity(rows);
        let mut of_kind = None;
        for row in 0..rows {
            match self.cells.get(row).copied().unwrap_or(Cell::Missing) {
                Cell::Missing | Cell::NoKind => spans.push((0, 0)),
                Cell::Object(_) => return refused("is a SequenceExample's feature list"),
                Cell::Values { kind, start, len } => {
                    if kind == FeatureKind::Bytes {
                        return refused("holds bytes");
                    }
                    if of_kind.is_some_and(|seen| seen != kind) {
                        return refused("holds values of two kinds in one batch");
                    }
                    of_kind = Some(kind);
                    spans.push((start, len));
                }
            }
        }
        match of_kind.or(self.kind).unwrap_or(FeatureKind::Float) {
            FeatureKind::Int64 => shapes::shaped(py, name, shape, &spans, &self.i64s),
            FeatureKind::Int32 => shapes::shaped(py, name, shape, &spans, &self.i32s),
            FeatureKind::Float => shapes::shaped(py, name, shape, &spans, &self.f32s),
            FeatureKind::Double => shapes::shaped(py, name, shape, &spans, &self.f64s),
            FeatureKind::Bytes => refused("holds bytes"),
        }
    }

    /// The column as a batch holds it: one 2-D array when every row agrees in kind and
    /// length, else a list with one entry per row.
    fn value<'py>(
        &self,
        py: Python<'py>,
        rows: usize,
        objects: &[Py<PyAny>],
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some((kind, len)) = self.stackable().filter(|_| self.cells.len() == rows) {
            return match kind {
                FeatureKind::Int64 => Column::stacked(py, &self.i64s, rows, len),
                FeatureKind::Int32 => Column::stacked(py, &self.i32s, rows, len),
                FeatureKind::Float => Column::stacked(py, &self.f32s, rows, len),
                FeatureKind::Double => Column::stacked(py, &self.f64s, rows, len),
                FeatureKind::Bytes => unreachable!("bytes columns are lists"),
            };
        }
        let cells = (0..rows).map(|row| {
            self.cell(
                py,
                self.cells.get(row).copied().unwrap_or(Cell::Missing),
                objects,
            )
        });
        Ok(PyList::new(py, cells.collect::<PyResult<Vec<_>>>()?)?.into_any())
    }
}

/// Records decoded into columns, one batch at a time. Buffers are kept from batch to batch.
#[derive(Default)]
pub struct Columns {
    columns: Vec<Column>,
    rows: usize,
    /// The column the next feature most likely goes to: records of a dataset list their
    /// features in the same order.
    hint: usize,
    /// SequenceExample payloads and their rows, decoded once the GIL is held.
    sequences: Vec<(usize, Vec<u8>)>,
    selection: Selection,
}

impl Columns {
    pub fn new(selection: Selection) -> Columns {
        let mut columns = Columns {
            selection,
            ..Columns::default()
        };
        columns.reset();
        columns
    }

    /// Empties the batch; the features asked for by name are there in every batch, in the
    /// order asked, and so are the selection's keys.
    fn reset(&mut self) {
        self.rows = 0;
        self.sequences.clear();
        if self.columns.is_empty() {
            for name in self.selection.ordered.iter().chain(&self.selection.keys) {
                self.columns.push(Column::named(name.as_bytes(), 0));
            }
        }
        for column in &mut self.columns {
            column.clear();
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes values read and not yet made into Python objects.
    pub fn pending_bytes(&self) -> usize {
        self.columns.iter().map(|column| column.bytes.len()).sum()
    }

    /// Makes the bytes values read so far into Python objects: called every few megabytes,
    /// so that each value is copied while it is still in the processor's cache.
    pub fn make_bytes(&mut self, py: Python<'_>) {
        for column in &mut self.columns {
            column.make_bytes(py);
        }
    }

    fn column(&mut self, name: &[u8]) -> &mut Column {
        let found = match self.columns.get(self.hint) {
            Some(column) if column.name == name => Some(self.hint),
            _ => self.columns.iter().position(|column| column.name == name),
        };
        let at = match found {
            Some(at) => at,
            None => {
                self.columns.push(Column::named(name, self.rows));
                self.columns.len() - 1
            }
        };
        self.hint = at + 1;
        &mut self.columns[at]
    }

    /// Adds one record as the batch's next row. A payload that does not parse adds nothing.
    /// With `py` (the GIL held), bytes values are made into Python objects at once, which
    /// spares copying them twice.
    pub fn push(
        &mut self,
        payload: &[u8],
        format: Format,
        py: Option<Python<'_>>,
    ) -> Result<(), ofconvert_bridge::Error> {
        let row = self.rows;
        self.hint = 0;
        let selection = std::mem::take(&mut self.selection);
        let walked = ofconvert_bridge::visit_lists(payload, format == Format::Tf, |name, list| {
            if selection.wants(name) {
                self.column(name).set(row, list, py)?;
            }
            Ok::<(), ofconvert_bridge::Error>(())
        });
        self.selection = selection;
        if !matches!(walked, Ok(false)) {
            // Whatever the record put in goes: it is damaged, or a SequenceExample, whose
            // feature lists are decoded with the GIL, when the batch is taken.
            for column in &mut self.columns {
                if column.cells.len() > row {
                    if let Some(Cell::Values { kind, start, .. }) = column.cells.pop() {
                        column.truncate(kind, start);
                    }
                }
            }
            walked?;
            self.sequences.push((row, payload.to_vec()));
        }
        self.rows += 1;
        Ok(())
    }

    /// The batch's columns as a dict, each feature as its shape says.
    fn dict<'py>(
        &self,
        py: Python<'py>,
        names: &mut Names,
        objects: &[Py<PyAny>],
    ) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for column in &self.columns {
            let name = String::from_utf8_lossy(&column.name);
            if let Some(shape) = self.selection.shapes.of(&column.name) {
                let (values, lengths) = column.shaped(py, self.rows, shape, &name)?;
                dict.set_item(names.get(py, &name), values)?;
                dict.set_item(names.get(py, &shapes::lengths_key(&name)), lengths)?;
                continue;
            }
            let value = column.value(py, self.rows, objects)?;
            dict.set_item(names.get(py, &name), value)?;
        }
        Ok(dict)
    }

    /// The batch as a dict (features in name order, or in the order asked), and empties it.
    /// Its keys are the selection's and every feature an earlier batch of these columns had.
    pub fn take<'py>(
        &mut self,
        py: Python<'py>,
        names: &mut Names,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut objects = Vec::new();
        for (row, payload) in std::mem::take(&mut self.sequences) {
            let sequence = ofconvert_bridge::decode_sequence_example(&payload)
                .map_err(|err| pyo3::exceptions::PyValueError::new_err(err.to_string()))?;
            let dict = values::sequence_dict(py, names, &sequence)?;
            for (name, value) in dict.iter() {
                let name: String = name.extract()?;
                if !self.selection.wants(name.as_bytes()) {
                    continue;
                }
                objects.push(value.unbind());
                let column = self.column(name.as_bytes());
                while column.cells.len() <= row {
                    column.cells.push(Cell::Missing);
                }
                column.cells[row] = Cell::Object(objects.len() - 1);
            }
        }
        if self.selection.names.is_none() {
            self.columns.sort_by(|a, b| a.name.cmp(&b.name));
        }
        // Every column is a key of the batch: those asked for or looked for, and those a
        // batch before it met, `None` in the rows of records that lack them. Keys do not come
        // and go from batch to batch, which a training loop would meet as a `KeyError`.
        let made = self.dict(py, names, &objects);
        // Emptied whether or not it could be made (a record too long for its pad=).
        self.reset();
        made
    }
}
