//! Spans fetched ahead of the thread that cuts records out of them. The chunks are
//! planned in the order they will be taken, asked for [`SPANS_IN_FLIGHT`] at a time by a few
//! threads, and never more than a budget of them asked for and not yet taken: the fetch of
//! the next chunks overlaps the cutting of the ones before, within a bound on memory.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use crate::stream::fetch::{Files, Span};
use ofconvert_engine::Error;

/// Spans fetched side by side.
pub const SPANS_IN_FLIGHT: usize = 8;

type Fetched = Mutex<HashMap<u64, Result<Span, Error>>>;

/// Chunks of `chunk` records of `files` (or the part of each that a stream reads), fetched by
/// [`SPANS_IN_FLIGHT`] threads in the order they were planned.
pub(crate) struct Ahead {
    /// Where the threads take the next chunk to fetch from; dropped, they end.
    requests: Sender<(u64, Range<u64>)>,
    /// Chunks fetched and not taken yet, and the signal that one came.
    fetched: Arc<(Fetched, Condvar)>,
    /// Chunks planned and not yet asked for, with the records of each to fetch.
    queued: VecDeque<(u64, Range<u64>)>,
    /// Chunks asked for and not yet taken.
    asked: usize,
    budget: usize,
}

impl Ahead {
    /// Starts the threads: at most `budget` chunks (at least [`SPANS_IN_FLIGHT`]) asked for
    /// and not taken at a time.
    pub(crate) fn new(files: Arc<Files>, budget: usize) -> Ahead {
        let (requests, receiver) = channel::<(u64, Range<u64>)>();
        let receiver = Arc::new(Mutex::new(receiver));
        let fetched: Arc<(Fetched, Condvar)> = Arc::default();
        for _ in 0..SPANS_IN_FLIGHT {
            let (files, receiver, fetched) = (
                Arc::clone(&files),
                Arc::clone(&receiver),
                Arc::clone(&fetched),
            );
            std::thread::Builder::new()
                .name("ofconvert-span".into())
                .spawn(move || fetch_asked(&files, &receiver, &fetched))
                .expect("a thread to fetch spans");
        }
        Ahead {
            requests,
            fetched,
            queued: VecDeque::new(),
            asked: 0,
            budget: budget.max(SPANS_IN_FLIGHT),
        }
    }

    /// Plans chunk `number`, its records `records` (within the dataset): it is asked for as
    /// soon as the budget allows, after every chunk planned before it.
    pub(crate) fn plan(&mut self, number: u64, records: Range<u64>) {
        self.queued.push_back((number, records));
        self.ask();
    }

    /// Chunks planned and not taken yet.
    pub(crate) fn pending(&self) -> usize {
        self.queued.len() + self.asked
    }

    /// Chunk `number`, the first one planned and not taken yet: waits for it.
    pub(crate) fn take(&mut self, number: u64) -> Result<Span, Error> {
        let (fetched, came) = &*self.fetched;
        let mut guard = fetched.lock().unwrap_or_else(PoisonError::into_inner);
        let span = loop {
            if let Some(span) = guard.remove(&number) {
                break span;
            }
            guard = came.wait(guard).unwrap_or_else(PoisonError::into_inner);
        };
        drop(guard);
        self.asked -= 1;
        self.ask();
        span
    }

    /// Asks for the chunks planned, within the budget.
    fn ask(&mut self) {
        while self.asked < self.budget {
            let Some(planned) = self.queued.pop_front() else {
                return;
            };
            // The threads end only once this sender is dropped.
            let _ = self.requests.send(planned);
            self.asked += 1;
        }
    }
}

/// A fetching thread: the chunks asked for, one at a time, until no more are.
fn fetch_asked(
    files: &Files,
    asked: &Mutex<Receiver<(u64, Range<u64>)>>,
    fetched: &(Fetched, Condvar),
) {
    let total = files.len();
    loop {
        let next = asked.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok((number, records)) = next else {
            return;
        };
        let records = records.start.min(total)..records.end.min(total);
        // A panic would leave the reader waiting for the chunk: it gets an error instead.
        let span =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| files.read_span(records)))
                .unwrap_or_else(|_| {
                    Err(Error::io(
                        std::path::Path::new(""),
                        std::io::Error::other("reading a span panicked"),
                    ))
                });
        let (map, came) = fetched;
        map.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(number, span);
        came.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::testing::numbered;

    #[test]
    fn chunks_come_whole_in_any_order_they_are_planned_and_never_twice() {
        let dir = tempfile::tempdir().unwrap();
        let files = numbered(dir.path(), 100);
        // 34 chunks of 3 records, the last of one; a budget below the chunks planned.
        let mut ahead = Ahead::new(Arc::clone(&files), 8);
        let order: Vec<u64> = (0..34).map(|n| (n * 7) % 34).collect();
        for &number in &order {
            ahead.plan(number, number * 3..number * 3 + 3);
            assert!(ahead.asked <= 8);
        }
        assert_eq!(ahead.pending(), 34);
        for &number in &order {
            let span = ahead.take(number).unwrap();
            assert_eq!(span.records, number * 3..(number * 3 + 3).min(100));
            assert!(ahead.asked <= 8);
        }
        assert_eq!(ahead.pending(), 0);
        assert!(ahead.fetched.0.lock().unwrap().is_empty());
    }
}
