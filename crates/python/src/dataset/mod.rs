//! The native side of `ofconvert.data`: `Records` (here), the record files of some paths
//! opened for random access (record `i` as a dict, many as a batch), and [`Stream`]
//! (`stream`), one worker's share of an epoch read through a `Records` unit by unit. They use
//! the decoders ([`crate::decode`], [`crate::values`]), the exceptions ([`crate::errors`]) and
//! the network keywords ([`crate::keywords`]); none of those names them.

mod mixture;
mod reading;
mod stream;

pub use mixture::{shares, MixedLane, Mixture};
pub use stream::Stream;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ofconvert_data::{Files, IndexOptions, IndexedFile, Order, Scratch, Shuffle, SpanCache};
use ofconvert_engine::{each_at_once, Checksums, Format, REQUESTS_AT_ONCE};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::columns::Columns;
use crate::decode::Selection;
use crate::errors;
use crate::keywords::Network;
use crate::shapes::Shapes;
use crate::values::Names;

/// What reading keeps from one call to the next.
struct State {
    scratch: Scratch,
    names: Names,
    /// Made at the first batch, with the dataset's keys.
    columns: Option<Columns>,
}

/// Record files opened for random access.
#[pyclass(module = "ofconvert._native", frozen)]
pub struct Records {
    files: Arc<Files>,
    checksums: Checksums,
    selection: Selection,
    /// The features every batch holds, looked for at the first batch (see
    /// [`ofconvert_data::feature_keys`]) or when a stream is made, or handed with the files.
    keys: std::sync::OnceLock<Vec<String>>,
    /// Where the keys looked for are kept.
    cache_dir: Option<PathBuf>,
    /// States not in use: each call takes one (or makes one), so that threads reading the
    /// same dataset at once each have their own.
    states: Mutex<Vec<State>>,
}

/// A state taken from a `Records` for one call, given back when dropped.
struct Lease<'a> {
    records: &'a Records,
    state: Option<State>,
}

impl std::ops::Deref for Lease<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.state
            .as_ref()
            .expect("a lease holds its state until dropped")
    }
}

impl std::ops::DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.state
            .as_mut()
            .expect("a lease holds its state until dropped")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let (Some(state), Ok(mut states)) = (self.state.take(), self.records.states.lock()) {
            states.push(state);
        }
    }
}

impl Records {
    fn state(&self) -> PyResult<Lease<'_>> {
        let kept = self
            .states
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the dataset failed in another thread"))?
            .pop();
        let state = kept.unwrap_or_else(|| State {
            scratch: Scratch::default(),
            names: Names::default(),
            columns: None,
        });
        Ok(Lease {
            records: self,
            state: Some(state),
        })
    }

    /// The features every batch holds as keys (none beside those asked for by name, when
    /// they are).
    fn keys(&self, py: Python<'_>) -> &[String] {
        if !self.selection.takes_all() {
            return &[];
        }
        if let Some(keys) = self.keys.get() {
            return keys;
        }
        // Looked for without the GIL (it may read a store); two threads may both look,
        // and find the same.
        let found = py.detach(|| {
            ofconvert_data::feature_keys(&self.files, self.checksums, self.cache_dir.as_deref())
        });
        let _ = self.keys.set(found);
        self.keys.get().map_or(&[], Vec::as_slice)
    }

    /// The state's columns, made with the dataset's keys at its first batch.
    fn columns<'s>(&self, py: Python<'_>, columns: &'s mut Option<Columns>) -> &'s mut Columns {
        columns.get_or_insert_with(|| Columns::new(self.selection.with_keys(self.keys(py))))
    }

    fn check(&self, index: i64) -> PyResult<u64> {
        let len = self.files.len();
        let at = if index < 0 { index + len as i64 } else { index };
        if at < 0 || at as u64 >= len {
            return Err(PyIndexError::new_err(format!(
                "record {index} of a dataset of {len} records"
            )));
        }
        Ok(at as u64)
    }

    /// Records in the dataset.
    pub fn len(&self) -> u64 {
        self.files.len()
    }

    /// Epoch `epoch`'s order of the records: `shuffle` is "none", "global" or "block" (with
    /// windows of `block` records, else the default for the dataset's record size).
    pub fn order(
        &self,
        shuffle: &str,
        block: Option<u64>,
        seed: u64,
        epoch: u64,
    ) -> PyResult<Order> {
        let len = self.files.len();
        let shuffle = match shuffle {
            "none" => Shuffle::None,
            "global" => Shuffle::Global,
            "block" => Shuffle::block(len, self.files.bytes(), block),
            other => return Err(PyValueError::new_err(format!("no shuffle {other:?}"))),
        };
        Ok(Order::new(len, shuffle, seed, epoch))
    }

    /// Records a chunk read whole holds in the orders that read by spans: a block shuffle's
    /// chunk, or the same size for the records' own order; `None` for a global shuffle.
    pub fn chunk(&self, shuffle: &str, block: Option<u64>) -> Option<u64> {
        if shuffle == "global" {
            return None;
        }
        match Shuffle::block(self.files.len(), self.files.bytes(), block) {
            Shuffle::Block { chunk, .. } => Some(chunk),
            _ => None,
        }
    }

    /// The files, for a stream's prefetching threads.
    pub fn record_files(&self) -> &Arc<Files> {
        &self.files
    }
}

/// A file as a pickled dataset hands it to its copy: its path, its format, the size and
/// version (ETag) it was opened at when it is an object in a store, and whether its records
/// are framed as they are (not compressed, not ArrayRecord).
type Handed = (PathBuf, String, Option<(u64, String)>, bool, Option<u64>);

fn format_name(format: Format) -> &'static str {
    match format {
        Format::Tf => "tfrecord",
        Format::Of => "ofrecord",
    }
}

#[pymethods]
impl Records {
    #[new]
    #[pyo3(signature = (paths, network, features=None, verify=true, cache_dir=None, decompress=true, files=None, cache_limit=None, index_beside=false, keys=None, lengths=None, pad=None, skip_corrupt=false, stated_counts=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        paths: Vec<PathBuf>,
        network: Network,
        features: Option<Vec<String>>,
        verify: bool,
        cache_dir: Option<PathBuf>,
        decompress: bool,
        files: Option<Vec<Handed>>,
        cache_limit: Option<String>,
        index_beside: bool,
        keys: Option<Vec<String>>,
        lengths: Option<Vec<String>>,
        pad: Option<std::collections::HashMap<String, usize>>,
        skip_corrupt: bool,
        stated_counts: bool,
    ) -> PyResult<Records> {
        network.set(py)?;
        let limit = match cache_limit.as_deref().map(ofconvert_data::parse_limit) {
            Some(Err(message)) => return Err(errors::usage(py, &message)),
            Some(Ok(limit)) => Some(limit),
            None => None,
        };
        let spans = limit
            .map(|limit| SpanCache::new(&ofconvert_data::cache_dir(cache_dir.as_deref()), limit));
        // A copy in a loader's worker is handed what its dataset found: the features
        // were checked when that one was opened.
        let handed = files.is_some();
        // The files, and the bytes they hold as listed where the listing says (a copy in a
        // loader's worker is handed its files, whose indexes were made).
        let (found, listed_bytes): (Vec<crate::inspect::ToOpen>, Option<u64>) = match files {
            Some(files) => (
                files
                    .into_iter()
                    .map(|(path, format, listed, framed, stated)| {
                        let of = format == "ofrecord";
                        (
                            path,
                            if of { Format::Of } else { Format::Tf },
                            listed,
                            framed,
                            stated,
                        )
                    })
                    .collect(),
                None,
            ),
            None => {
                let (found, bytes) = crate::inspect::listed(py, &paths)?;
                (found, Some(bytes))
            }
        };
        let checksums = if verify {
            Checksums::Verify
        } else {
            Checksums::Ignore
        };
        // The index pass over each object in a store keeps what it reads in the cache of
        // spans when the whole dataset fits (as listed): the epoch then reads it there, and a
        // cold start reads each object once. A dataset larger than the cache would only evict
        // what the pass kept before the epoch came to it.
        let options = IndexOptions {
            cache_dir: cache_dir.clone(),
            checksums,
            decompress,
            spans: spans
                .clone()
                .filter(|cache| listed_bytes.is_some_and(|bytes| bytes <= cache.limit())),
            beside: index_beside,
            salvage: skip_corrupt,
        };
        // A file in a store is opened in a request or two that wait a round trip: many side
        // by side; a local one may be indexed in a pass over it: a core each.
        let remote = found
            .iter()
            .any(|(path, ..)| ofconvert_engine::is_url(path));
        let at_once = if remote {
            REQUESTS_AT_ONCE
        } else {
            rayon::current_num_threads()
        };
        let opened: Vec<Result<IndexedFile, ofconvert_engine::Error>> = py.detach(|| {
            each_at_once(&found, at_once, |(path, format, listed, framed, stated)| {
                // Records dealt by the counts the metadata states, where it does: each
                // object indexed when first read (by the processes whose lanes read it).
                let stated = stated.filter(|_| stated_counts);
                ofconvert_data::open_stated(
                    path,
                    *format,
                    &options,
                    listed.clone(),
                    *framed,
                    stated,
                )
            })
        });
        let mut files = Vec::with_capacity(opened.len());
        for file in opened {
            files.push(file.map_err(|err| errors::engine_error(py, &err))?);
        }
        let files = Files::new(files);
        if let Some(wanted) = features.as_deref().filter(|_| !handed) {
            // Before the cache is given: the first record of each file is read alone, not
            // in the whole chunk a read through the cache fetches.
            py.detach(|| ofconvert_data::check_features(&files, wanted, checksums))
                .map_err(|err| errors::engine_error(py, &err))?;
        }
        let selection = Selection::new(features).with_shapes(Shapes::new(
            lengths.unwrap_or_default(),
            pad.unwrap_or_default(),
        ));
        let records = Records {
            files: Arc::new(match spans {
                // Batches are read out of the chunks a stream in order reads.
                Some(cache) => match Shuffle::block(files.len(), files.bytes(), None) {
                    Shuffle::Block { chunk, .. } => files.with_cache(cache, chunk),
                    _ => files,
                },
                None => files,
            }),
            checksums,
            states: Mutex::new(Vec::new()),
            selection,
            keys: keys.map(std::sync::OnceLock::from).unwrap_or_default(),
            cache_dir,
        };
        Ok(records)
    }

    fn __len__(&self) -> usize {
        self.len() as usize
    }

    /// The features every batch holds as keys, looked for now if not yet (`look=False`:
    /// `None` then): what a copy of the dataset is handed, so that its batches have the same.
    #[pyo3(name = "keys", signature = (look=true))]
    fn batch_keys(&self, py: Python<'_>, look: bool) -> Option<Vec<String>> {
        if !look && self.selection.takes_all() && self.keys.get().is_none() {
            return None;
        }
        Some(self.keys(py).to_vec())
    }

    /// Every key a batch holds, sorted: the features of [`Records::keys`], and each shaped
    /// feature (`lengths=`, `pad=`) with its lengths (what a mixture's batches hold of
    /// this source's).
    fn keys_of_batches(&self, py: Python<'_>) -> Vec<String> {
        let mut keys = self.keys(py).to_vec();
        for name in self.selection.shapes.names() {
            keys.push(crate::shapes::lengths_key(&name));
            keys.push(name);
        }
        keys.sort();
        keys.dedup();
        keys
    }

    /// Each file: its path, format, records, where its index is kept, where its bytes are
    /// read (itself, or its decompressed copy), the compression it had (`ArrayRecord` for
    /// an ArrayRecord file, read through its footer), whether its index was made now, and
    /// the size and version it was opened at (an object in a store): what a copy in a
    /// loader's worker opens it at, without asking the store again; and the record count
    /// its dataset's metadata stated, where it was opened by it (its index made when first
    /// read).
    #[allow(clippy::type_complexity)]
    fn files(
        &self,
    ) -> Vec<(
        String,
        &'static str,
        u64,
        Option<String>,
        String,
        Option<&'static str>,
        bool,
        Option<(u64, String)>,
        Option<u64>,
    )> {
        self.files
            .files
            .iter()
            .map(|file| {
                (
                    file.path.to_string_lossy().into_owned(),
                    format_name(file.format),
                    file.index.len(),
                    file.stored
                        .as_ref()
                        .map(|p| p.to_string_lossy().into_owned()),
                    file.data.to_string_lossy().into_owned(),
                    file.decompressed
                        .map(|compression| compression.tf_name())
                        .or(file.array_record.then_some("ArrayRecord")),
                    file.made,
                    file.version.clone().map(|version| (file.size, version)),
                    file.index.stated(),
                )
            })
            .collect()
    }

    /// Bytes of every record when some file is read from a store, `None` when every one is
    /// on a local disk: what a cache must hold for a global shuffle to read records out of
    /// the spans it keeps, rather than a request a record.
    fn store_bytes(&self) -> Option<u64> {
        self.files.any_remote().then(|| self.files.bytes())
    }

    /// The damage stepped over when the files were opened with `skip_corrupt`, as
    /// `tf2of`'s summary counts it: `{"corrupt": N, "recovered": N, "details": [...]}`, with
    /// each file's details in turn (the first 1,000).
    fn skipped<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let files = &self.files.files;
        let sum = |count: fn(&IndexedFile) -> u64| files.iter().map(count).sum::<u64>();
        let details: Vec<&String> = files
            .iter()
            .flat_map(|file| &file.skipped.details)
            .take(1000)
            .collect();
        let dict = PyDict::new(py);
        dict.set_item("corrupt", sum(|file| file.skipped.corrupt))?;
        dict.set_item("recovered", sum(|file| file.skipped.recovered))?;
        dict.set_item("details", details)?;
        Ok(dict)
    }

    /// The dataset's fingerprint: what a resumed stream checks.
    fn fingerprint(&self) -> u64 {
        ofconvert_data::fingerprint(&self.files.files)
    }

    /// Refuses a cache too small for a stream of `shuffle` (and `block`) over files in a
    /// store, saying what it needs: a window and the spans in flight, the whole dataset for a
    /// global shuffle.
    fn check_cache(&self, py: Python<'_>, shuffle: &str, block: Option<u64>) -> PyResult<()> {
        let Some(cache) = self.files.cache().filter(|_| self.files.any_remote()) else {
            return Ok(());
        };
        // A global shuffle reads each record out of its chunk, from anywhere in the dataset:
        // the cache must hold all of it, or it would fetch a chunk for every few records.
        let needed = match self.chunk(shuffle, block) {
            Some(chunk) => {
                let order = self.order(shuffle, block, 0, 0)?;
                ofconvert_data::cache_needed(&self.files, &order, chunk)
            }
            None => self.files.bytes(),
        };
        if cache.limit() < needed {
            return Err(errors::usage(
                py,
                &format!(
                    "cache_limit={} bytes is too small for this stream: it needs {needed} \
                     bytes ({:.1} MB) at least, to hold {}; give a larger limit",
                    cache.limit(),
                    needed as f64 / 1e6,
                    if shuffle == "global" {
                        "the whole dataset, which shuffle=True reads from anywhere \
                         (shuffle=\"block\" needs a window only)"
                    } else {
                        "a window of chunks and the spans in flight (or a smaller block_size)"
                    }
                ),
            ));
        }
        Ok(())
    }

    /// Records a window of a block shuffle holds (`block`, else the default for the
    /// dataset's record size) and records a chunk of it holds.
    fn block_geometry(&self, block: Option<u64>) -> (u64, u64) {
        match Shuffle::block(self.files.len(), self.files.bytes(), block) {
            Shuffle::Block { chunk, window } => (chunk * window, chunk),
            _ => (0, 0),
        }
    }

    /// Record `index` as a dict (negative counts from the end).
    fn get<'py>(&self, py: Python<'py>, index: i64) -> PyResult<Bound<'py, PyAny>> {
        let at = self.check(index)?;
        self.dicts(py, &[at], false)?.get_item(0)
    }

    /// Record `index` as its serialized bytes.
    fn get_raw<'py>(&self, py: Python<'py>, index: i64) -> PyResult<Bound<'py, PyAny>> {
        let at = self.check(index)?;
        self.dicts(py, &[at], true)?.get_item(0)
    }

    /// The records `indices` as a list of dicts.
    fn get_many<'py>(&self, py: Python<'py>, indices: Vec<i64>) -> PyResult<Bound<'py, PyList>> {
        let checked = indices
            .iter()
            .map(|&i| self.check(i))
            .collect::<PyResult<Vec<_>>>()?;
        self.dicts(py, &checked, false)
    }

    /// The records `indices` as one batch.
    fn batch<'py>(&self, py: Python<'py>, indices: Vec<i64>) -> PyResult<Bound<'py, PyDict>> {
        let checked = indices
            .iter()
            .map(|&i| self.check(i))
            .collect::<PyResult<Vec<_>>>()?;
        self.batch_of(py, &checked)
    }
}
