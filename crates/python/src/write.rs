//! The writers behind `ofconvert.TFRecordWriter`, `ofconvert.ArrayRecordWriter` and
//! `ofconvert.OFRecordWriter`. A file is
//! written under a hidden temporary name beside its own and takes its name only when it is
//! closed holding at least one record: a writer whose first record was refused, or that is
//! abandoned (an exception out of its `with` block), publishes nothing. One dropped unclosed
//! keeps what it was given, as Python's own files and TensorFlow's writer do.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::{Mutex, TryLockError};

use ofconvert_bridge::{ErrorKind as MappingErrorKind, MappingSpec};
use ofconvert_tfrecord::Compression;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors::{self, Class, Place};
use crate::values;

enum Sink {
    Tf(ofconvert_tfrecord::Writer<BufWriter<File>>),
    /// ArrayRecord, of `tf.train.Example`s as a TFRecord file holds them.
    Array(ofconvert_arrayrecord::Writer<BufWriter<File>>),
    Of(ofconvert_ofrecord::Writer<BufWriter<File>>),
}

/// A record file being written: TFRecord (`"tf"`, optionally compressed), ArrayRecord
/// (`"array_record"`) or OFRecord (`"of"`). Records are dicts the Python side normalized, or
/// serialized payloads.
#[pyclass(module = "ofconvert._native")]
pub struct Writer {
    state: Mutex<State>,
    /// The name the file takes once closed.
    path: PathBuf,
    /// Where it is written until then.
    temporary: PathBuf,
    spec: MappingSpec,
}

/// The hidden name a file is written under until it is closed: ofconvert's own temporary
/// prefix, which every command passes over.
fn temporary_name(path: &std::path::Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(
        "{}writer-{}-{name}",
        ofconvert_engine::layout::TEMP_PREFIX,
        std::process::id()
    ))
}

struct State {
    /// `None` once closed.
    sink: Option<Sink>,
    /// The serialized record, reused.
    payload: Vec<u8>,
    /// Records written, kept past closing.
    written: u64,
}

/// The writer is used from another thread right now (it would deadlock to wait for it while
/// holding the GIL), or a panic left it in an unknown state.
fn busy<T>(err: TryLockError<T>) -> PyErr {
    PyRuntimeError::new_err(match err {
        TryLockError::WouldBlock => "the writer is in use by another thread",
        TryLockError::Poisoned(_) => "the writer failed in another thread",
    })
}

/// Ends the file's stream (a compressed one's trailer) and flushes its buffer.
fn finish(sink: Sink) -> Result<(), Box<dyn std::error::Error>> {
    let buffered = match sink {
        Sink::Tf(writer) => writer.finish()?,
        Sink::Array(writer) => writer.finish()?,
        Sink::Of(writer) => writer.finish()?,
    };
    buffered.into_inner().map_err(|err| err.into_error())?;
    Ok(())
}

impl Writer {
    /// Ends the file's stream, flushes it and gives it its name, or removes it when it
    /// holds no record or cannot be finished.
    fn publish(&self, sink: Sink, written: u64) -> Result<(), Box<dyn std::error::Error>> {
        let finished = finish(sink);
        if finished.is_err() || written == 0 {
            let _ = std::fs::remove_file(&self.temporary);
            return finished;
        }
        std::fs::rename(&self.temporary, &self.path).map_err(|err| {
            let _ = std::fs::remove_file(&self.temporary);
            err.into()
        })
    }

    fn file_error(&self, py: Python<'_>, err: &dyn std::error::Error) -> PyErr {
        let message = format!(
            "{}: {}",
            self.path.display(),
            ofconvert_engine::error_chain(err)
        );
        let place = Place {
            path: Some(&self.path),
            ..Place::default()
        };
        errors::raise(py, Class::File, &message, place, None)
    }

    fn mapping_error(&self, py: Python<'_>, record: u64, err: &ofconvert_bridge::Error) -> PyErr {
        let hint = match err.kind() {
            MappingErrorKind::InexactDouble { .. } => {
                "; lossy=True rounds it to the nearest float32, as tf.train.FloatList does \
                 (TFRecordWriter(path, lossy=True)), or give float32 values"
            }
            _ => "",
        };
        let message = format!("{}: record #{record}: {err}{hint}", self.path.display());
        let place = Place {
            path: Some(&self.path),
            offset: None,
            record: Some(record),
        };
        errors::raise(py, Class::Mapping, &message, place, None)
    }
}

#[pymethods]
impl Writer {
    #[new]
    #[pyo3(signature = (path, format, compression="none", lossy=false, options=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        format: &str,
        compression: &str,
        lossy: bool,
        options: Option<&str>,
    ) -> PyResult<Writer> {
        let compression = match compression {
            "none" => Compression::None,
            "gzip" => Compression::Gzip,
            "zlib" => Compression::Zlib,
            other => {
                return Err(PyValueError::new_err(format!(
                    "compression={other:?}: expected None, \"gzip\" or \"zlib\""
                )))
            }
        };
        let array_record = match (format, options) {
            ("array_record", Some(text)) => text
                .parse::<ofconvert_arrayrecord::WriterOptions>()
                .map_err(|err| PyValueError::new_err(format!("options={text:?}: {err}")))?,
            (_, None) => ofconvert_arrayrecord::WriterOptions::default(),
            (_, Some(_)) => {
                return Err(PyValueError::new_err(
                    "options= applies to ArrayRecord files only",
                ))
            }
        };
        let temporary = temporary_name(&path);
        let file = File::create(&temporary).map_err(|err| {
            let place = Place {
                path: Some(&path),
                ..Place::default()
            };
            let message = format!("{}: {err}", path.display());
            errors::raise(py, Class::File, &message, place, None)
        })?;
        let file = BufWriter::with_capacity(1 << 20, file);
        let sink = match format {
            "tf" => Sink::Tf(ofconvert_tfrecord::Writer::with_compression(
                file,
                compression,
            )),
            "of" if compression == Compression::None => {
                Sink::Of(ofconvert_ofrecord::Writer::new(file))
            }
            "of" => {
                return Err(PyValueError::new_err(
                    "OneFlow reads no compressed OFRecord files",
                ))
            }
            "array_record" if compression == Compression::None => Sink::Array(
                ofconvert_arrayrecord::Writer::with_options(file, array_record),
            ),
            "array_record" => {
                return Err(PyValueError::new_err(
                    "an ArrayRecord file compresses each chunk itself (zstd): no compression= \
                     for it",
                ))
            }
            other => return Err(PyValueError::new_err(format!("unknown format {other:?}"))),
        };
        Ok(Writer {
            state: Mutex::new(State {
                sink: Some(sink),
                payload: Vec::new(),
                written: 0,
            }),
            path,
            temporary,
            spec: MappingSpec::new().lossy(lossy),
        })
    }

    /// Writes one record: a normalized dict, or a serialized payload (checked to parse).
    fn write(&self, py: Python<'_>, record: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut state = self.state.try_lock().map_err(busy)?;
        let State {
            sink,
            payload,
            written,
        } = &mut *state;
        let Some(sink) = sink.as_mut() else {
            return Err(PyValueError::new_err("write to a closed writer"));
        };
        payload.clear();
        let index = *written;
        if let Ok(bytes) = record.cast::<PyBytes>() {
            let bytes = bytes.as_bytes();
            let checked = match sink {
                Sink::Tf(_) | Sink::Array(_) => {
                    ofconvert_bridge::classify_tf_record(bytes).map(|_| ())
                }
                Sink::Of(_) if bytes.is_empty() => Err(MappingErrorKind::EmptyRecord.into()),
                Sink::Of(_) => ofconvert_bridge::decode_ofrecord(bytes).map(|_| ()),
            };
            checked.map_err(|err| self.mapping_error(py, index, &err))?;
            payload.extend_from_slice(bytes);
        } else {
            let dict = record.cast::<PyDict>()?;
            let ofrecord = values::ofrecord_from_dict(dict)?;
            match sink {
                Sink::Tf(_) | Sink::Array(_) => {
                    let example = ofconvert_bridge::ofrecord_to_example(&ofrecord, &self.spec)
                        .map_err(|err| self.mapping_error(py, index, &err))?;
                    ofconvert_bridge::encode_example(&example, payload);
                }
                Sink::Of(_) => {
                    if ofrecord.feature.is_empty() {
                        let err: ofconvert_bridge::Error = MappingErrorKind::EmptyRecord.into();
                        return Err(self.mapping_error(py, index, &err));
                    }
                    ofconvert_bridge::encode_ofrecord(&ofrecord, payload);
                }
            }
        }
        match sink {
            Sink::Tf(writer) => writer
                .write_record(payload)
                .map_err(|err| self.file_error(py, &err))?,
            Sink::Array(writer) => writer
                .write_record(payload)
                .map_err(|err| self.file_error(py, &err))?,
            Sink::Of(writer) => writer
                .write_record(payload)
                .map_err(|err| self.file_error(py, &err))?,
        }
        *written += 1;
        Ok(())
    }

    /// Records written so far.
    #[getter]
    fn records_written(&self) -> PyResult<u64> {
        Ok(self.state.try_lock().map_err(busy)?.written)
    }

    /// Finishes the file (the compressed stream's end, the buffer flushed) and gives it its
    /// name; without a record written, removes it instead. Closing twice does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let (sink, written) = {
            let mut state = self.state.try_lock().map_err(busy)?;
            (state.sink.take(), state.written)
        };
        let Some(sink) = sink else {
            return Ok(());
        };
        self.publish(sink, written)
            .map_err(|err| self.file_error(py, &*err))
    }

    /// Whether the writer is closed (or abandoned): it takes no more records.
    #[getter]
    fn closed(&self) -> PyResult<bool> {
        Ok(self.state.try_lock().map_err(busy)?.sink.is_none())
    }

    /// Gives up the file: nothing is published, whatever was written.
    fn abort(&self) -> PyResult<()> {
        let sink = self.state.try_lock().map_err(busy)?.sink.take();
        if sink.is_some() {
            drop(sink);
            let _ = std::fs::remove_file(&self.temporary);
        }
        Ok(())
    }
}

impl Drop for Writer {
    /// A writer dropped unclosed keeps what it was given, as a Python file does: the
    /// Python class closes it when it is collected (with a `ResourceWarning`), and this is
    /// what is left when it could not (the interpreter ending).
    fn drop(&mut self) {
        let state = self.state.get_mut();
        let (sink, written) = match state {
            Ok(state) => (state.sink.take(), state.written),
            // A panic while writing: what the file holds is unknown.
            Err(_) => {
                let _ = std::fs::remove_file(&self.temporary);
                return;
            }
        };
        if let Some(sink) = sink {
            let _ = self.publish(sink, written);
        }
    }
}
