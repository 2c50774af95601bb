//! `Stream`: one worker's share of an epoch of a [`Records`], unit by unit (a batch, or a
//! record), read through it; files in a store are read ahead by threads.

use std::sync::Arc;

use ofconvert_data::{Layout, Pass, Prefetch, Share};
use pyo3::prelude::*;

use super::Records;
use crate::errors;

/// One worker's share of an epoch of a `Records`, unit by unit: a batch (a dict of columns)
/// or a record (a dict).
#[pyclass(module = "ofconvert._native")]
pub struct Stream {
    records: Py<Records>,
    share: Share,
    batched: bool,
    /// The next of the worker's units, counted in its lane.
    next: u64,
    /// Records this worker yielded.
    yielded: u64,
    /// For files in a store: the worker's next units, read ahead by threads.
    prefetch: Option<Prefetch>,
    /// Records a chunk holds where files in a store are read by whole spans (the records'
    /// own order, a block shuffle); `None` where each record is asked for (a global one).
    chunk: Option<u64>,
    indices: Vec<u64>,
}

/// A stopped pass as Python holds it in a state: `(world, workers, unit, drop_last, steps)`.
pub(crate) type PassTuple = (u64, u64, u64, bool, u64);

/// A stopped pass of a state's tuple.
pub(crate) fn pass_of((world, workers, unit, drop_last, steps): PassTuple) -> Pass {
    Pass {
        layout: Layout {
            world,
            workers,
            unit,
            drop_last,
        },
        steps,
        lanes: None,
    }
}

/// A stopped pass as a state holds it: [`pass_of`] undone.
pub(crate) fn tuple_of(pass: &Pass) -> PassTuple {
    let layout = pass.layout;
    (
        layout.world,
        layout.workers,
        layout.unit,
        layout.drop_last,
        pass.steps,
    )
}

#[pymethods]
impl Stream {
    #[new]
    #[pyo3(signature = (records, shuffle, block, seed, epoch, before, rank, world, worker, workers, unit, batched, drop_last))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        records: Py<Records>,
        shuffle: &str,
        block: Option<u64>,
        seed: u64,
        epoch: u64,
        before: Vec<PassTuple>,
        rank: u64,
        world: u64,
        worker: u64,
        workers: u64,
        unit: u64,
        batched: bool,
        drop_last: bool,
    ) -> PyResult<Stream> {
        let order = records.get().order(shuffle, block, seed, epoch)?;
        let chunk = records.get().chunk(shuffle, block);
        let before: Vec<Pass> = before.into_iter().map(pass_of).collect();
        let layout = Layout {
            world,
            workers,
            unit,
            drop_last,
        };
        let share = Share::new(order, &before, layout, rank, worker);
        Ok(Stream::of_share(records, share, chunk, batched))
    }

    /// This pass, stopped once each rank consumed `records` records of it (ranks in step),
    /// as a state holds it, and the positions of the epoch it consumed, all ranks together.
    fn stopped_after(&self, records: u64) -> (PassTuple, u64) {
        let pass = self.share.stopped_after(records);
        (tuple_of(&pass), self.share.consumed(&pass))
    }

    /// Units the rank yields in this pass, all workers together.
    #[getter]
    fn units(&self) -> u64 {
        self.share.rank_units()
    }

    /// Units this worker yields in this pass.
    #[getter]
    fn lane_units(&self) -> u64 {
        self.share.units()
    }

    /// Positions of the epoch this pass deals, all ranks together: what the passes before it
    /// left.
    #[getter]
    fn left(&self) -> u64 {
        self.share.len()
    }

    /// Whether no rank has a unit to read in this pass (see `Share::is_spent`).
    #[getter]
    fn spent(&self) -> bool {
        self.share.is_spent()
    }

    /// Records this worker yielded so far.
    #[getter]
    fn yielded(&self) -> u64 {
        self.yielded
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.next_item(py)
    }
}

impl Stream {
    /// The stream of `share` of `records`, read by spans of `chunk` records from a store
    /// (`None`: a request a record), its items batches (`batched`) or records.
    pub(crate) fn of_share(
        records: Py<Records>,
        share: Share,
        chunk: Option<u64>,
        batched: bool,
    ) -> Stream {
        Stream {
            records,
            next: 0,
            yielded: 0,
            prefetch: None,
            chunk,
            share,
            batched,
            indices: Vec::new(),
        }
    }

    /// The next unit: a batch or a record; `None` at the end of the share.
    pub(crate) fn next_item<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.next >= self.share.units() {
            return Ok(None);
        }
        self.share.unit_records(self.next, &mut self.indices);
        let records = self.records.get();
        if records.record_files().any_remote() {
            let (share, next, chunk) = (self.share.clone(), self.next, self.chunk);
            let prefetch = self.prefetch.get_or_insert_with(|| {
                let files = Arc::clone(records.record_files());
                match chunk {
                    Some(chunk) => Prefetch::spans(files, share, next, chunk),
                    None => Prefetch::start(files, share, next),
                }
            });
            // Waits for the units read ahead without the GIL.
            let fetched = py
                .detach(|| prefetch.next_unit())
                .map_err(|err| errors::engine_error(py, &err))?;
            self.next += 1;
            self.yielded += self.indices.len() as u64;
            return records.decode_fetched(py, &fetched, self.batched).map(Some);
        }
        self.next += 1;
        self.yielded += self.indices.len() as u64;
        if self.batched {
            return Ok(Some(records.batch_of(py, &self.indices)?.into_any()));
        }
        Ok(Some(records.dicts(py, &self.indices, false)?.get_item(0)?))
    }
}
