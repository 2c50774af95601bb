//! Reading a `Records`' records: as dicts one by one, as a batch of columns, or out of what
//! a stream's prefetching read, each checked and decoded.

use ofconvert_data::Scratch;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use super::Records;
use crate::decode::{self, MAKE_BYTES_EVERY};
use crate::errors::{self, Failure};
use crate::values::Names;

impl Records {
    /// The records `indices` as a list of dicts (or of bytes, `raw`).
    pub(super) fn dicts<'py>(
        &self,
        py: Python<'py>,
        indices: &[u64],
        raw: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut guard = self.state()?;
        let state = &mut *guard;
        py.detach(|| self.files.fetch(indices, &mut state.scratch))
            .map_err(|err| errors::engine_error(py, &err))?;
        self.tell_cache_failure(py)?;
        self.dicts_from(py, &state.scratch, &mut state.names, raw)
    }

    /// The records [`Files::fetch`] read into `scratch`, as a list of dicts (or of bytes).
    pub(super) fn dicts_from<'py>(
        &self,
        py: Python<'py>,
        scratch: &Scratch,
        names: &mut Names,
        raw: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let walked = self
            .files
            .each(scratch, self.checksums, |file, at, payload| {
                if raw {
                    out.append(PyBytes::new(py, payload))?;
                    return Ok(());
                }
                match decode::record_dict(py, names, payload, file.format, &self.selection)? {
                    Ok(dict) => Ok(out.append(dict)?),
                    Err(err) => Err(Failure::Payload {
                        path: file.path.clone(),
                        at,
                        err,
                    }),
                }
            });
        walked.map_err(|failure| failure.into_py(py))?;
        Ok(out)
    }

    /// Warns, once, that the cache of spans could not keep what was read (reading goes on,
    /// from the store).
    pub(super) fn tell_cache_failure(&self, py: Python<'_>) -> PyResult<()> {
        let told = self
            .files
            .cache()
            .and_then(|cache| cache.failure_to_report());
        match told {
            Some(message) => {
                let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
                PyErr::warn(py, &category, &std::ffi::CString::new(message)?, 1)
            }
            None => Ok(()),
        }
    }

    /// The records [`Files::fetch`] read into `scratch` (a stream's prefetching), as one
    /// batch or as the dict of its one record.
    pub fn decode_fetched<'py>(
        &self,
        py: Python<'py>,
        scratch: &Scratch,
        batched: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.tell_cache_failure(py)?;
        let mut guard = self.state()?;
        let state = &mut *guard;
        if !batched {
            return self
                .dicts_from(py, scratch, &mut state.names, false)?
                .get_item(0);
        }
        let columns = self.columns(py, &mut state.columns);
        let read = self
            .files
            .each(scratch, self.checksums, |file, at, payload| {
                columns
                    .push(payload, file.format, Some(py))
                    .map_err(|err| Failure::Payload {
                        path: file.path.clone(),
                        at,
                        err,
                    })
            });
        if let Err(failure) = read {
            let _ = columns.take(py, &mut state.names);
            return Err(failure.into_py(py));
        }
        Ok(columns.take(py, &mut state.names)?.into_any())
    }

    /// The records `indices` as one batch: numeric features of one kind and length stacked.
    pub fn batch_of<'py>(&self, py: Python<'py>, indices: &[u64]) -> PyResult<Bound<'py, PyDict>> {
        let mut guard = self.state()?;
        let state = &mut *guard;
        let (scratch, names) = (&mut state.scratch, &mut state.names);
        let columns = self.columns(py, &mut state.columns);
        // Local files half a megabyte at a time: read, checked, decoded and made into Python
        // objects while in the processor's cache. Files in a store all at once: a request
        // costs a round trip.
        let chunk_bytes = if self.files.any_remote() {
            u64::MAX
        } else {
            MAKE_BYTES_EVERY as u64
        };
        // The indexes of the files read, where they are not made yet (stated counts).
        py.detach(|| self.files.ready_records(indices))
            .map_err(|err| errors::engine_error(py, &err))?;
        self.files.prefetch_index(indices);
        let mut rest = indices;
        while !rest.is_empty() {
            let mut take = 0;
            let mut bytes = 0;
            while take < rest.len() && (take == 0 || bytes < chunk_bytes) {
                let (file, record) = self.files.locate(rest[take]);
                let range = self.files.files[file].index.range(record);
                bytes += range.end - range.start;
                take += 1;
            }
            let (chunk, after) = rest.split_at(take);
            rest = after;
            // Reading may wait (a bucket): without the GIL. Decoding makes the bytes values
            // into Python objects straight from the buffer read: with it.
            let read = py
                .detach(|| self.files.fetch(chunk, scratch))
                .map_err(Failure::from)
                .and_then(|()| {
                    self.files
                        .each(scratch, self.checksums, |file, at, payload| {
                            columns.push(payload, file.format, Some(py)).map_err(|err| {
                                Failure::Payload {
                                    path: file.path.clone(),
                                    at,
                                    err,
                                }
                            })
                        })
                });
            if let Err(failure) = read {
                // The rows read before the damage are not a batch.
                let _ = columns.take(py, names);
                return Err(failure.into_py(py));
            }
            columns.make_bytes(py);
        }
        self.tell_cache_failure(py)?;
        columns.take(py, names)
    }
}
