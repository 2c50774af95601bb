//! Reading ahead for a stream over files in a store, where each read waits a round trip.
//! In a global shuffle a few threads fetch the worker's next units side by side while the
//! current one is decoded, and hand them over in order. In the records' own order and in a
//! block shuffle, whole spans are fetched instead (a group of chunks of neighbouring records:
//! the window a block shuffle spreads over, or a few chunks in a row), [`SPANS_IN_FLIGHT`] at
//! once, and the worker's units cut from them in memory: each chunk read once, in one request
//! per file it lies in.

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};

use crate::error::Error;
use crate::stream::fetch::{side_by_side, Files, Scratch, Span};
use crate::stream::order::Order;
use crate::stream::share::Share;

/// Units fetched side by side.
const LANES: u64 = 4;

/// The worker's units from one on, fetched ahead: unit `j` of the worker's (counted from
/// where it started) by lane `j % LANES`, each lane one unit ahead at most.
pub struct Prefetch {
    lanes: Vec<Mutex<Receiver<Result<Scratch, Error>>>>,
    taken: usize,
}

impl Prefetch {
    /// Starts fetching the worker's units from unit `first` of the rank on, every
    /// `share.workers`th.
    pub fn start(files: Arc<Files>, share: Share, first: u64) -> Prefetch {
        let lanes = (0..LANES)
            .map(|lane| {
                let (sender, receiver) = sync_channel(1);
                let files = Arc::clone(&files);
                std::thread::Builder::new()
                    .name("ofconvert-prefetch".into())
                    .spawn(move || {
                        let mut indices = Vec::new();
                        let mut next = Scratch::default();
                        let mut unit = first + lane * share.workers;
                        while unit < share.units() {
                            share.unit_records(unit, &mut indices);
                            let mut scratch = std::mem::take(&mut next);
                            let fetched = files.fetch(&indices, &mut scratch);
                            // The lane's next unit reads out of the cache's pieces this one
                            // mapped; this one goes to the reader with its records.
                            next = scratch.take_pieces();
                            let fetched = fetched.map(|()| scratch);
                            // The stream is gone, or this lane's unit could not be read.
                            let failed = fetched.is_err();
                            if sender.send(fetched).is_err() || failed {
                                return;
                            }
                            unit += LANES * share.workers;
                        }
                    })
                    .expect("a thread to read ahead");
                Mutex::new(receiver)
            })
            .collect();
        Prefetch { lanes, taken: 0 }
    }

    /// Fetches the worker's units from unit `first` of the rank on by whole spans: chunks of
    /// `chunk` records (of the dataset), a group of them at a time (the window of a block
    /// shuffle, or 8 chunks in the records' own order).
    pub fn spans(files: Arc<Files>, share: Share, first: u64, chunk: u64) -> Prefetch {
        let (sender, receiver) = sync_channel(UNITS_AHEAD);
        std::thread::Builder::new()
            .name("ofconvert-spans".into())
            .spawn(move || {
                let chunk = chunk.max(1);
                let total = files.len();
                let mut held: HashMap<u64, Span> = HashMap::new();
                let mut group_end = 0;
                let mut indices = Vec::new();
                let mut unit = first;
                while unit < share.units() {
                    let positions = share.positions(unit);
                    share.unit_records(unit, &mut indices);
                    let mut wanted: Vec<u64> = Vec::new();
                    if positions.start >= group_end {
                        // A new group: what the last one held is done with, but for the
                        // chunks of this one a unit across the boundary brought in.
                        group_end = share
                            .order
                            .group_end(positions.start, chunk * CHUNKS_IN_ORDER)
                            .max(positions.end);
                        wanted.extend(
                            (positions.start..group_end).map(|at| share.order.record(at) / chunk),
                        );
                        wanted.sort_unstable();
                        wanted.dedup();
                        held.retain(|number, _| wanted.binary_search(number).is_ok());
                    }
                    wanted.extend(indices.iter().map(|record| record / chunk));
                    wanted.sort_unstable();
                    wanted.dedup();
                    wanted.retain(|number| !held.contains_key(number));
                    let fetched = fetch_chunks(&files, &wanted, chunk, total);
                    let result = fetched.map(|spans| {
                        held.extend(wanted.iter().copied().zip(spans));
                        let mut scratch = Scratch::default();
                        files.cut(&indices, |record| &held[&(record / chunk)], &mut scratch);
                        scratch
                    });
                    let failed = result.is_err();
                    if sender.send(result).is_err() || failed {
                        return;
                    }
                    unit += share.workers;
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

/// Chunks a group holds in the records' own order.
const CHUNKS_IN_ORDER: u64 = 8;
/// Units cut and waiting for the reader at most.
const UNITS_AHEAD: usize = 16;
/// Spans fetched side by side.
pub const SPANS_IN_FLIGHT: usize = 8;

/// Bytes a cache of spans must hold for a stream of `order` reading chunks of `chunk`
/// records of `files` by spans: the chunks of a group (a window of a block shuffle, or
/// 8 chunks in the records' own order), which the workers of a rank read
/// at once, and the spans in flight, each at the largest chunk's size.
pub fn cache_needed(files: &Files, order: &Order, chunk: u64) -> u64 {
    let chunk = chunk.max(1);
    let total = files.len();
    let chunks = total.div_ceil(chunk);
    let largest = (0..chunks)
        .map(|number| files.span_bytes(number * chunk..((number + 1) * chunk).min(total)))
        .max()
        .unwrap_or(0);
    let group = order.group_end(0, chunk * CHUNKS_IN_ORDER).div_ceil(chunk);
    (group + SPANS_IN_FLIGHT as u64).min(chunks) * largest
}

/// The chunks `numbers` (of `chunk` records, of a dataset of `total`) read whole,
/// [`SPANS_IN_FLIGHT`] at once, in order.
fn fetch_chunks(
    files: &Files,
    numbers: &[u64],
    chunk: u64,
    total: u64,
) -> Result<Vec<Span>, Error> {
    let mut spans = Vec::with_capacity(numbers.len());
    for group in numbers.chunks(SPANS_IN_FLIGHT) {
        let results = side_by_side(group, "reading a span", |&number| {
            files.read_span(number * chunk..((number + 1) * chunk).min(total))
        });
        for result in results {
            spans.push(result?);
        }
    }
    Ok(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::index::{open_indexed, IndexOptions};
    use crate::naming::names::Format;
    use crate::stream::order::Shuffle;
    use ofconvert_tfrecord::{Compression, Writer};

    #[test]
    fn a_cache_must_hold_a_group_of_chunks_and_the_spans_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tfrecord");
        let mut writer =
            Writer::with_compression(std::fs::File::create(&path).unwrap(), Compression::None);
        for record in 0..40 {
            // 3 bytes, 19 framed.
            writer
                .write_record(format!("r{record:02}").as_bytes())
                .unwrap();
        }
        writer.finish().unwrap();
        let options = IndexOptions {
            cache_dir: Some(dir.path().join("cache")),
            ..IndexOptions::default()
        };
        let files = Files::new(vec![open_indexed(&path, Format::Tf, &options).unwrap()]);
        let chunk = 2 * 19;
        // In order: 8 chunks a group, 8 in flight.
        let order = Order::new(40, Shuffle::None, 0, 0);
        assert_eq!(cache_needed(&files, &order, 2), 16 * chunk);
        // A window of 4 chunks, 8 in flight.
        let block = Shuffle::Block {
            chunk: 2,
            window: 4,
        };
        assert_eq!(
            cache_needed(&files, &Order::new(40, block, 0, 0), 2),
            12 * chunk
        );
        // Never more than the dataset.
        assert_eq!(cache_needed(&files, &order, 4), 40 * 19);
    }
}
