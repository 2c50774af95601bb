//! The reader behind `ofconvert.read`: the record files of some paths, one record at a time,
//! as dicts or as the serialized bytes.

use std::path::PathBuf;
use std::sync::{Mutex, TryLockError};

use ofconvert_engine::{Checksums, Format, RecordAt, RecordReader, SkippedRecords};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::columns::Columns;
use crate::decode::{self, Selection, MAKE_BYTES_EVERY};
use crate::errors;
use crate::errors::payload_error;
use crate::keywords::Network;
use crate::values::Names;

struct State {
    files: std::vec::IntoIter<(PathBuf, Format)>,
    current: Option<RecordReader<'static>>,
    buf: Vec<u8>,
    names: Names,
    columns: Columns,
    /// Set after an error that ends reading (framing damage, an unreadable file).
    done: bool,
    /// With `on_corrupt="skip"`: what was stepped over so far, and the buffer records are
    /// read into in place before their data is copied to `buf`.
    skipping: Option<(SkippedRecords, Vec<u8>)>,
}

/// Records of TFRecord (plain, GZIP or ZLIB) and OFRecord files, in the order of the paths
/// given (directories walked in name order).
#[pyclass(module = "ofconvert._native")]
pub struct Reader {
    state: Mutex<State>,
    raw: bool,
    verify: bool,
}

/// The reader is used from another thread right now (it would deadlock to wait for it while
/// holding the GIL), or a panic left it in an unknown state.
fn busy<T>(err: TryLockError<T>) -> PyErr {
    PyRuntimeError::new_err(match err {
        TryLockError::WouldBlock => "the reader is in use by another thread",
        TryLockError::Poisoned(_) => "the reader failed in another thread",
    })
}

/// What ends a batch early.
enum Failure {
    Engine(ofconvert_engine::Error),
    Payload {
        path: PathBuf,
        at: RecordAt,
        err: ofconvert_bridge::Error,
    },
}

impl Reader {
    /// The next record's bytes (in `state.buf`), where it is and its format, opening files
    /// as needed; `None` at the end. An error ends reading.
    fn read_next(
        state: &mut State,
        verify: bool,
    ) -> Result<Option<(RecordAt, Format)>, ofconvert_engine::Error> {
        loop {
            if state.done {
                return Ok(None);
            }
            let reader = match &mut state.current {
                Some(reader) => reader,
                None => {
                    let Some((path, format)) = state.files.next() else {
                        state.done = true;
                        return Ok(None);
                    };
                    let checksums = if verify {
                        Checksums::Verify
                    } else {
                        Checksums::Ignore
                    };
                    match RecordReader::open(&path, Some(format), checksums) {
                        Ok(reader) => state.current.insert(reader),
                        Err(err) => {
                            state.done = true;
                            return Err(err);
                        }
                    }
                }
            };
            let read = match &mut state.skipping {
                None => reader.read(&mut state.buf),
                Some((skipped, scratch)) => {
                    let read = reader.read_skipping(scratch, skipped);
                    if let Ok(Some(_)) = read {
                        state.buf.clear();
                        state.buf.extend_from_slice(reader.record(scratch));
                    }
                    read
                }
            };
            match read {
                Ok(Some(at)) => return Ok(Some((at, reader.format()))),
                Ok(None) => state.current = None,
                Err(err) => {
                    state.done = true;
                    return Err(err);
                }
            }
        }
    }

    /// The file the last record came from.
    fn current_path(state: &State) -> PathBuf {
        state
            .current
            .as_ref()
            .map(|reader| reader.path().to_path_buf())
            .unwrap_or_default()
    }
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (paths, network, raw=false, verify=true, skip_corrupt=false))]
    fn new(
        py: Python<'_>,
        paths: Vec<PathBuf>,
        network: Network,
        raw: bool,
        verify: bool,
        skip_corrupt: bool,
    ) -> PyResult<Reader> {
        network.set(py)?;
        let expanded = py.detach(|| ofconvert_engine::expand_paths(&paths, None));
        if let Some(err) = expanded.errors.first() {
            return Err(errors::engine_error(py, err));
        }
        Ok(Reader {
            state: Mutex::new(State {
                files: expanded.files.into_iter(),
                current: None,
                buf: Vec::new(),
                names: Names::default(),
                columns: Columns::new(Selection::default()),
                done: false,
                skipping: skip_corrupt.then(|| (SkippedRecords::default(), Vec::new())),
            }),
            raw,
            verify,
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// With `on_corrupt="skip"`, what was stepped over so far, as `tf2of`'s summary counts
    /// it: `{"corrupt": N, "recovered": N, "details": [...]}`; `None` without.
    #[getter]
    fn skipped<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let state = self.state.try_lock().map_err(busy)?;
        let Some((skipped, _)) = &state.skipping else {
            return Ok(None);
        };
        let dict = PyDict::new(py);
        dict.set_item("corrupt", skipped.corrupt)?;
        dict.set_item("recovered", skipped.recovered)?;
        dict.set_item("details", &skipped.details)?;
        Ok(Some(dict))
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut guard = self.state.try_lock().map_err(busy)?;
        let state = &mut *guard;
        let Some((at, format)) =
            Reader::read_next(state, self.verify).map_err(|err| errors::engine_error(py, &err))?
        else {
            return Ok(None);
        };
        if self.raw {
            return Ok(Some(PyBytes::new(py, &state.buf).into_any()));
        }
        match decode::record_dict(
            py,
            &mut state.names,
            &state.buf,
            format,
            &Selection::default(),
        )? {
            Ok(dict) => Ok(Some(dict.into_any())),
            Err(err) => Err(payload_error(py, &Reader::current_path(state), at, &err)),
        }
    }

    /// The next (up to) `size` records as one batch, `None` at the end: numeric features
    /// whose rows agree in kind and length stacked into 2-D arrays, others as lists. Records
    /// are read and decoded without the GIL. A record that does not parse raises, and the
    /// batch's records before it are lost; reading goes on after it.
    fn next_batch<'py>(
        &self,
        py: Python<'py>,
        size: usize,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut guard = self.state.try_lock().map_err(busy)?;
        let state = &mut *guard;
        let verify = self.verify;
        let mut failure = None;
        while state.columns.rows() < size && !state.done {
            let step = py.detach(|| -> Option<Result<(), Failure>> {
                while state.columns.rows() < size
                    && state.columns.pending_bytes() < MAKE_BYTES_EVERY
                {
                    match Reader::read_next(state, verify) {
                        Ok(None) => return None,
                        Ok(Some((at, format))) => {
                            if let Err(err) = state.columns.push(&state.buf, format, None) {
                                let path = Reader::current_path(state);
                                return Some(Err(Failure::Payload { path, at, err }));
                            }
                        }
                        Err(err) => return Some(Err(Failure::Engine(err))),
                    }
                }
                Some(Ok(()))
            });
            state.columns.make_bytes(py);
            match step {
                None => break,
                Some(Ok(())) => {}
                Some(Err(err)) => {
                    failure = Some(err);
                    break;
                }
            }
        }
        if let Some(failure) = failure {
            let _ = state.columns.take(py, &mut state.names);
            return Err(match failure {
                Failure::Engine(err) => errors::engine_error(py, &err),
                Failure::Payload { path, at, err } => payload_error(py, &path, at, &err),
            });
        }
        if state.columns.rows() == 0 {
            return Ok(None);
        }
        Ok(Some(state.columns.take(py, &mut state.names)?))
    }
}
