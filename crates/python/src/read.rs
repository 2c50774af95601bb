//! The reader behind `ofconvert.read`: the record files of some paths, one record at a time,
//! as dicts or as the serialized bytes.

use std::path::PathBuf;
use std::sync::{Mutex, TryLockError};

use ofconvert_bridge::TfRecordType;
use ofconvert_engine::{Checksums, Format, RecordAt, RecordReader};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{self, Class, Place};
use crate::values::{self, Names};

struct State {
    files: std::vec::IntoIter<(PathBuf, Format)>,
    current: Option<RecordReader<'static>>,
    buf: Vec<u8>,
    names: Names,
    /// Set after an error that ends reading (framing damage, an unreadable file).
    done: bool,
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

impl Reader {
    /// The next record's bytes and where it is, opening files as needed; `None` at the end.
    fn next_record(
        py: Python<'_>,
        state: &mut State,
        verify: bool,
    ) -> PyResult<Option<(RecordAt, Format, PathBuf)>> {
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
                            return Err(errors::engine_error(py, &err));
                        }
                    }
                }
            };
            match reader.read(&mut state.buf) {
                Ok(Some(at)) => {
                    return Ok(Some((at, reader.format(), reader.path().to_path_buf())));
                }
                Ok(None) => state.current = None,
                Err(err) => {
                    state.done = true;
                    return Err(errors::engine_error(py, &err));
                }
            }
        }
    }
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (paths, raw=false, verify=true))]
    fn new(py: Python<'_>, paths: Vec<PathBuf>, raw: bool, verify: bool) -> PyResult<Reader> {
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
                done: false,
            }),
            raw,
            verify,
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut guard = self.state.try_lock().map_err(busy)?;
        let state = &mut *guard;
        let Some((at, format, path)) = Reader::next_record(py, state, self.verify)? else {
            return Ok(None);
        };
        if self.raw {
            return Ok(Some(PyBytes::new(py, &state.buf).into_any()));
        }
        let decoded = match format {
            Format::Of => ofconvert_bridge::decode_ofrecord(&state.buf)
                .map(|record| values::ofrecord_dict(py, &mut state.names, &record)),
            Format::Tf => match ofconvert_bridge::classify_tf_record(&state.buf) {
                Ok(TfRecordType::SequenceExample) => {
                    ofconvert_bridge::decode_sequence_example(&state.buf)
                        .map(|seq| values::sequence_dict(py, &mut state.names, &seq))
                }
                Ok(_) => ofconvert_bridge::decode_example(&state.buf).map(|example| {
                    let features = example.features.unwrap_or_default();
                    values::example_dict(py, &mut state.names, &features.feature)
                }),
                Err(err) => Err(err),
            },
        };
        match decoded {
            Ok(dict) => Ok(Some(dict?.into_any())),
            Err(err) => {
                let place = Place {
                    path: Some(&path),
                    offset: Some(at.offset),
                    record: Some(at.index),
                };
                let message = format!(
                    "{}: offset {} (record #{}): {err} (raw=True reads the bytes as they are)",
                    path.display(),
                    at.offset,
                    at.index
                );
                Err(errors::raise(py, Class::Mapping, &message, place, None))
            }
        }
    }
}
