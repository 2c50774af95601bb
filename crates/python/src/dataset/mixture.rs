//! `Mixture`: a pass of a mixture of several `Records` (the bookkeeping of
//! `ofconvert_data::Mixture`: readings, the passes before, what each lane holds and takes),
//! and `MixedLane`, one lane's items read from its readings in its schedule's turn.

use ofconvert_data::{readings, Layout, Pass, Sources, Turns};
use pyo3::prelude::*;

use super::stream::{pass_of, tuple_of, PassTuple, Stream};
use super::Records;

/// A pass of a mixture of `sources`, as `ofconvert.data.MixedStream` deals it.
#[pyclass(module = "ofconvert._native")]
pub struct Mixture {
    sources: Vec<Py<Records>>,
    /// Each reading's source, and the records a span read whole holds in its order.
    readings: Vec<(usize, Option<u64>)>,
    inner: ofconvert_data::Mixture,
    rank: u64,
    batched: bool,
}

#[pymethods]
impl Mixture {
    /// A pass of rank `rank` of `world` (of `workers` loader workers each, in units of
    /// `unit`) over the epoch `epoch` of the mixture whose sources' shares are `shares`,
    /// after the passes `before` stopped; `weights[i]`, where given, are the weights the
    /// rest of the epoch follows from pass `i` on (`len(before)`: this pass).
    #[new]
    #[pyo3(signature = (sources, shares, shuffle, block, seed, epoch, before, rank, world, workers, unit, batched, drop_last, weights=Vec::new()))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        sources: Vec<Py<Records>>,
        shares: Vec<u64>,
        shuffle: &str,
        block: Option<u64>,
        seed: u64,
        epoch: u64,
        before: Vec<PassTuple>,
        rank: u64,
        world: u64,
        workers: u64,
        unit: u64,
        batched: bool,
        drop_last: bool,
        weights: Vec<Option<Vec<f64>>>,
    ) -> PyResult<Mixture> {
        let lengths: Vec<u64> = sources.iter().map(|s| s.borrow(py).len()).collect();
        let order_of = |reading: &ofconvert_data::Reading| {
            sources[reading.source]
                .get()
                .order(shuffle, block, reading.seed, reading.epoch)
        };
        let mut planned = Vec::new();
        for reading in readings(&lengths, &shares, seed, epoch) {
            planned.push(((order_of(&reading)?, reading.first), reading));
        }
        let before: Vec<Pass> = before.into_iter().map(pass_of).collect();
        let layout = Layout {
            world,
            workers,
            unit,
            drop_last,
        };
        let of = Sources {
            lengths: &lengths,
            seed,
            epoch,
        };
        let shuffled = shuffle != "none";
        let inner = ofconvert_data::Mixture::reweighted(
            planned,
            &of,
            &before,
            &weights,
            layout,
            shuffled,
            (seed, epoch),
            order_of,
        )?;
        let kept = inner
            .planned()
            .iter()
            .map(|reading| {
                let source = sources[reading.source].get();
                (reading.source, source.chunk(shuffle, block))
            })
            .collect();
        Ok(Mixture {
            sources,
            readings: kept,
            inner,
            rank,
            batched,
        })
    }

    /// Units the rank yields in this pass, all its workers together.
    #[getter]
    fn units(&self) -> u64 {
        self.inner.rank_units(self.rank)
    }

    /// Units worker `worker` of the rank yields in this pass.
    fn lane_units(&self, worker: u64) -> u64 {
        self.inner.lane_units(self.rank, worker)
    }

    /// Positions of the epoch this pass deals, all sources together.
    #[getter]
    fn left(&self) -> u64 {
        self.inner.left()
    }

    /// Whether no rank has a unit to read in this pass.
    #[getter]
    fn spent(&self) -> bool {
        self.inner.is_spent()
    }

    /// This pass, stopped once the rank took `steps` units of it, as a state holds it.
    fn stopped_after(&self, steps: u64) -> PassTuple {
        tuple_of(&self.inner.stopped_after(self.rank, steps))
    }

    /// The items of worker `worker`'s lane, in turn.
    fn lane(&self, py: Python<'_>, worker: u64) -> MixedLane {
        let streams = self
            .readings
            .iter()
            .enumerate()
            .map(|(at, &(source, chunk))| {
                let share = self.inner.share(at, self.rank, worker);
                Stream::of_share(
                    self.sources[source].clone_ref(py),
                    share,
                    chunk,
                    self.batched,
                )
            })
            .collect();
        MixedLane {
            streams,
            turns: self.inner.schedule(self.rank, worker).turns(),
        }
    }
}

/// `size` records cut by `weights` into whole numbers that add up to it (a mixture's
/// shares of an epoch, or of the rest of one).
#[pyfunction]
pub fn shares(size: u64, weights: Vec<f64>) -> Vec<u64> {
    ofconvert_data::shares(size, &weights)
}

/// One lane of a mixture's pass: each item from the reading its schedule names.
#[pyclass(module = "ofconvert._native")]
pub struct MixedLane {
    streams: Vec<Stream>,
    turns: Turns,
}

#[pymethods]
impl MixedLane {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.turns.next() {
            Some(reading) => self.streams[reading].next_item(py),
            None => Ok(None),
        }
    }
}
