//! Reading ahead for a stream over files in a store, where each read waits a round trip.
//! In a global shuffle a few threads fetch the worker's next units side by side while the
//! current one is decoded, and hand them over in order. In the records' own order and in a
//! block shuffle, whole spans are fetched instead (chunks of neighbouring records), each
//! once, in one request per file it lies in; the worker's units are cut from them in memory.
//! A chunk is held while the group that reads it (the window a block shuffle spreads over, or
//! a few chunks in a row) is read, and the next chunks are fetched while it is, up to a
//! group's worth ([`chunks_ahead`]), [`SPANS_IN_FLIGHT`] at once.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use crate::stream::ahead::{Ahead, SPANS_IN_FLIGHT};
use crate::stream::fetch::{Files, Scratch, Span};
use crate::stream::order::Order;
use crate::stream::share::Share;
use ofconvert_engine::Error;

/// Units fetched side by side.
const LANES: u64 = 4;

/// The worker's units from one on, fetched ahead: unit `j` of the worker's (counted from
/// where it started) by lane `j % LANES`, each lane one unit ahead at most.
pub struct Prefetch {
    lanes: Vec<Mutex<Receiver<Result<Scratch, Error>>>>,
    taken: usize,
}

impl Prefetch {
    /// Starts fetching the worker's units from its unit `first` on.
    ///
    /// The first unit is fetched alone, the other lanes starting once it is in: sharing the
    /// network with three others, it would come about four times later (a resumed stream's
    /// first batch, or any epoch's).
    pub fn start(files: Arc<Files>, share: Share, first: u64) -> Prefetch {
        let gate = Arc::new(Gate::default());
        let lanes = (0..LANES)
            .map(|lane| {
                let (sender, receiver) = sync_channel(1);
                let files = Arc::clone(&files);
                let gate = Arc::clone(&gate);
                let share = share.clone();
                std::thread::Builder::new()
                    .name("ofconvert-prefetch".into())
                    .spawn(move || {
                        // Lane 0 opens the gate once its first unit is in, or when it stops.
                        let mut opens = (lane == 0).then(|| Opens(&gate));
                        if lane > 0 {
                            gate.wait();
                        }
                        let mut indices = Vec::new();
                        let mut next = Scratch::default();
                        let mut unit = first + lane;
                        while unit < share.units() {
                            share.unit_records(unit, &mut indices);
                            let mut scratch = std::mem::take(&mut next);
                            let fetched = files.fetch(&indices, &mut scratch);
                            drop(opens.take());
                            // The lane's next unit reads out of the cache's pieces this one
                            // mapped; this one goes to the reader with its records.
                            next = scratch.take_pieces();
                            let fetched = fetched.map(|()| scratch);
                            // The stream is gone, or this lane's unit could not be read.
                            let failed = fetched.is_err();
                            if sender.send(fetched).is_err() || failed {
                                return;
                            }
                            unit += LANES;
                        }
                    })
                    .expect("a thread to read ahead");
                Mutex::new(receiver)
            })
            .collect();
        Prefetch { lanes, taken: 0 }
    }

    /// Fetches the worker's units from its unit `first` on by whole spans: the records of
    /// each chunk of `chunk` records (of the dataset) that the worker's lane reads, fetched
    /// ahead of the unit cut from them (within a group's worth of chunks, `chunks_ahead`) and
    /// held while the group that needs them (the window of a block shuffle, or 8 chunks in the
    /// records' own order) is read.
    pub fn spans(files: Arc<Files>, share: Share, first: u64, chunk: u64) -> Prefetch {
        let (sender, receiver) = sync_channel(UNITS_AHEAD);
        std::thread::Builder::new()
            .name("ofconvert-spans".into())
            .spawn(move || {
                let chunk = chunk.max(1);
                let budget = chunks_ahead(&files, &share.order, chunk) as usize;
                let mut ahead = Ahead::new(Arc::clone(&files), budget);
                let starts = files.caches_spans().then(|| files.starts());
                let mut plan = Plan::new(share.clone(), first, chunk, starts);
                let mut steps = VecDeque::new();
                let mut held: HashMap<u64, Span> = HashMap::new();
                let mut indices = Vec::new();
                if share.is_resumed() && share.order.window_len().is_some() && !files.caches_spans()
                {
                    // A resumed pass's first unit reads from nearly every chunk of a window,
                    // part of whose records were read before the stop: it is fetched record by
                    // record, alone, as a global shuffle's, and the window's chunks after it.
                    // Its batch comes at once instead of after the whole window (a unit's bytes
                    // fetched twice, once a resumed stream). Through a cache, its records'
                    // chunks would be fetched whole: the window's, all the same.
                    let Some(mut step) = plan.next() else { return };
                    share.unit_records(step.unit, &mut indices);
                    let mut scratch = Scratch::default();
                    let fetched = files.fetch(&indices, &mut scratch).map(|()| scratch);
                    let failed = fetched.is_err();
                    if sender.send(fetched).is_err() || failed {
                        return;
                    }
                    for &number in &step.wanted {
                        ahead.plan(number, plan.records_of(number));
                    }
                    step.sent = true;
                    steps.push_back(step);
                }
                loop {
                    while ahead.pending() < budget && steps.len() < STEPS_AHEAD {
                        let Some(step) = plan.next() else { break };
                        for &number in &step.wanted {
                            ahead.plan(number, plan.records_of(number));
                        }
                        steps.push_back(step);
                    }
                    let Some(step) = steps.pop_front() else {
                        return;
                    };
                    if let Some(group) = &step.group {
                        held.retain(|number, _| group.binary_search(number).is_ok());
                    }
                    let taken = step.wanted.iter().try_for_each(|&number| {
                        held.insert(number, ahead.take(number)?);
                        Ok(())
                    });
                    if step.sent && taken.is_ok() {
                        continue;
                    }
                    let result = taken.map(|()| {
                        share.unit_records(step.unit, &mut indices);
                        let mut scratch = Scratch::default();
                        files.cut(&indices, |record| &held[&(record / chunk)], &mut scratch);
                        scratch
                    });
                    let failed = result.is_err();
                    if sender.send(result).is_err() || failed {
                        return;
                    }
                }
            })
            .expect("a thread to read ahead");
        Prefetch {
            lanes: vec![Mutex::new(receiver)],
            taken: 0,
        }
    }

    /// The next unit's records, read; waits for them.
    pub fn next_unit(&mut self) -> Result<Scratch, Error> {
        let lane = &self.lanes[self.taken % self.lanes.len()];
        self.taken += 1;
        lane.lock()
            .ok()
            .and_then(|lane| lane.recv().ok())
            .unwrap_or_else(|| {
                Err(Error::io(
                    std::path::Path::new(""),
                    std::io::Error::other("reading ahead stopped"),
                ))
            })
    }
}

/// Where the read-ahead lanes of a global shuffle wait for the first unit to be in.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        while !*open {
            open = self
                .opened
                .wait(open)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Opens its gate when dropped: after the first unit, or when the lane stops for any reason.
struct Opens<'a>(&'a Gate);

impl Drop for Opens<'_> {
    fn drop(&mut self) {
        *self.0.open.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.0.opened.notify_all();
    }
}

/// Chunks a group holds in the records' own order.
const CHUNKS_IN_ORDER: u64 = 8;
/// Units cut and waiting for the reader at most.
const UNITS_AHEAD: usize = 16;
/// Units planned ahead of the one cut at most (a unit planned is a few integers).
const STEPS_AHEAD: usize = 1 << 16;
/// Bytes of chunks fetched ahead of the one a stream cuts from at most, unless
/// [`SPANS_IN_FLIGHT`] chunks are more.
const AHEAD_BYTES: u64 = 64 << 20;

/// The chunks of `chunk` records of `files` a group of `order` holds (a window of a block
/// shuffle, 8 chunks in the records' own order), and the size of the largest chunk.
fn group_and_largest(files: &Files, order: &Order, chunk: u64) -> (u64, u64) {
    let chunk = chunk.max(1);
    let total = files.len();
    let largest = (0..total.div_ceil(chunk))
        .map(|number| files.span_bytes(number * chunk..((number + 1) * chunk).min(total)))
        .max()
        .unwrap_or(0);
    let group = order
        .window_len()
        .unwrap_or(chunk * CHUNKS_IN_ORDER)
        .min(total)
        .div_ceil(chunk);
    (group, largest)
}

/// Chunks a stream fetches ahead of the one it cuts from: as many as a group holds, so that
/// the next group comes while this one is read, within [`AHEAD_BYTES`], and never fewer than
/// [`SPANS_IN_FLIGHT`].
pub(crate) fn chunks_ahead(files: &Files, order: &Order, chunk: u64) -> u64 {
    let (group, largest) = group_and_largest(files, order, chunk);
    group
        .min(AHEAD_BYTES / largest.max(1))
        .max(SPANS_IN_FLIGHT as u64)
}

/// Bytes a cache of spans must hold for a stream of `order` reading chunks of `chunk`
/// records of `files` by spans: the chunks of a group (a window of a block shuffle, or
/// 8 chunks in the records' own order), which the workers of a rank read
/// at once, and the chunks fetched ahead of it, each at the largest chunk's size.
pub fn cache_needed(files: &Files, order: &Order, chunk: u64) -> u64 {
    let (group, largest) = group_and_largest(files, order, chunk);
    let chunks = files.len().div_ceil(chunk.max(1));
    (group + chunks_ahead(files, order, chunk)).min(chunks) * largest
}

/// A unit of a worker's, planned: the chunks it is the first to need, and, when it starts a
/// group, the chunks of the group (what is held before it and is not among them is done with);
/// `sent` once its records went to the reader fetched by themselves.
struct Step {
    unit: u64,
    group: Option<Vec<u64>>,
    wanted: Vec<u64>,
    sent: bool,
}

/// The worker's units in turn, each with the chunks it needs that the ones before it did not
/// bring in and that are still held.
struct Plan {
    share: Share,
    chunk: u64,
    unit: u64,
    group_end: u64,
    held: HashSet<u64>,
    /// The records of each chunk that the lane reads (the whole chunk's but at the lane's
    /// ends): what is fetched of it, where chunks are not fetched whole.
    records: HashMap<u64, Range<u64>>,
    indices: Vec<u64>,
    runs: Vec<Range<u64>>,
}

impl Plan {
    /// The plan of `share`'s units from its `first` on, by chunks of `chunk` records,
    /// fetched whole (`whole`, the first record of each file then the number of records: a
    /// cache keeps them, for any other lane of this or another layout to read) or only the
    /// records of each the lane reads (without a cache: the lanes of a job then fetch the
    /// dataset once between them). A chunk fetched whole is fetched in the files the lane
    /// reads records of in it alone: a file whose index is made when it is first read (its
    /// count stated) is read, to index it, by the processes whose lanes read it alone.
    fn new(share: Share, first: u64, chunk: u64, whole: Option<&[u64]>) -> Plan {
        let chunk = chunk.max(1);
        let mut runs = Vec::new();
        let mut records: HashMap<u64, Range<u64>> = HashMap::new();
        let mut add = |number: u64, part: Range<u64>| {
            records
                .entry(number)
                .and_modify(|held| *held = held.start.min(part.start)..held.end.max(part.end))
                .or_insert(part);
        };
        let mut indices = Vec::new();
        if share.is_resumed() && share.order.window_len().is_some() {
            // A window the stopped pass began stands whole in the runs: its records read
            // before the stop are among them. The lane's records themselves, unit by unit.
            for unit in first..share.units() {
                share.unit_records(unit, &mut indices);
                for &record in &indices {
                    add(record / chunk, record..record + 1);
                }
            }
        } else if share.runs(share.lane(), &mut runs).is_some() {
            for_each_chunk(&runs, chunk, &mut add);
        }
        if let Some(starts) = whole {
            // The files a part lies in, from the first one's start to the last one's end.
            let file_of = |record: u64| starts.partition_point(|&start| start <= record) - 1;
            for (number, part) in records.iter_mut() {
                let (first, last) = (file_of(part.start), file_of(part.end - 1));
                let files = starts[first]..starts[last + 1];
                *part = (number * chunk).max(files.start)..((number + 1) * chunk).min(files.end);
            }
        }
        Plan {
            share,
            chunk,
            unit: first,
            group_end: 0,
            held: HashSet::new(),
            records,
            indices,
            runs,
        }
    }

    /// The records of chunk `number` to fetch.
    fn records_of(&self, number: u64) -> Range<u64> {
        self.records
            .get(&number)
            .cloned()
            .unwrap_or(number * self.chunk..(number + 1) * self.chunk)
    }

    fn next(&mut self) -> Option<Step> {
        let (share, chunk) = (&self.share, self.chunk);
        if self.unit >= share.units() {
            return None;
        }
        let unit = self.unit;
        self.unit += 1;
        let positions = share.positions(unit);
        let spreads = share.order.window_len().is_some();
        let mut group = None;
        if positions.start >= self.group_end {
            // A new group: what the last one held is done with, but for the chunks of this one
            // a unit across the boundary brought in. A block shuffle's unit reads from all over
            // its window, whose start an earlier unit may have read: the whole window counts.
            let lane = share.lane();
            let window = share.order.window_len().unwrap_or(1).max(1);
            let from = if spreads {
                lane.start + (positions.start - lane.start) / window * window
            } else {
                positions.start
            };
            // A unit longer than what is left of its window reads from all over the next
            // windows it reaches into: they are of the group, whole.
            let last = if spreads {
                positions.end.max(positions.start + 1) - 1
            } else {
                positions.start
            };
            self.group_end = share
                .group_end(last, chunk * CHUNKS_IN_ORDER)
                .max(positions.end);
            let mut numbers = Vec::new();
            if share.runs(from..self.group_end, &mut self.runs).is_some() {
                for_each_chunk(&self.runs, chunk, |number, _| numbers.push(number));
            }
            numbers.sort_unstable();
            numbers.dedup();
            self.held
                .retain(|number| numbers.binary_search(number).is_ok());
            group = Some(numbers);
        }
        let mut wanted = match &group {
            // A block shuffle's window: its first unit reads from nearly every chunk of it;
            // the window's chunks are wanted at once, and the units after it in the window
            // want none that is not held.
            Some(numbers) if spreads => numbers.clone(),
            _ if spreads && positions.end <= self.group_end => Vec::new(),
            _ => {
                share.unit_records(unit, &mut self.indices);
                let mut numbers: Vec<u64> =
                    self.indices.iter().map(|record| record / chunk).collect();
                numbers.sort_unstable();
                numbers.dedup();
                numbers
            }
        };
        // A window the stopped pass began may hold chunks the lane reads nothing of.
        wanted.retain(|number| self.records.contains_key(number) && self.held.insert(*number));
        Some(Step {
            unit,
            group,
            wanted,
            sent: false,
        })
    }
}

/// Each chunk of `chunk` records that `runs` of records cross, with the part of the run in it.
fn for_each_chunk(runs: &[Range<u64>], chunk: u64, mut each: impl FnMut(u64, Range<u64>)) {
    for run in runs {
        let mut at = run.start;
        while at < run.end {
            let number = at / chunk;
            let end = ((number + 1) * chunk).min(run.end);
            each(number, at..end);
            at = end;
        }
    }
}

#[cfg(test)]
mod exhaustive;
#[cfg(test)]
mod tests;
