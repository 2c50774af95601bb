//! Parts uploaded while the next are written. In an object store a part goes up when it is
//! finished (in one request up to 16 MiB); a worker that waited for each upload would keep
//! one transfer in flight, where a copy tool keeps several. So a part bound for a store is
//! finished on a thread of its own, at most [`transfers_in_flight`] of them per worker, and
//! the dataset waits for all of its parts before it is published.
//!
//! [`transfers_in_flight`]: crate::storage::transfer::transfers_in_flight

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::error::Error;
use crate::records::output::{PartWriter, TempPart};

/// How many uploads a worker has going, and how many it may.
pub(crate) struct Slots {
    busy: Mutex<usize>,
    freed: Condvar,
    limit: usize,
}

impl Slots {
    /// Room for `limit` uploads at once (at least one).
    pub(crate) fn new(limit: usize) -> Arc<Slots> {
        Arc::new(Slots {
            busy: Mutex::new(0),
            freed: Condvar::new(),
            limit: limit.max(1),
        })
    }

    /// Waits for a free slot and takes it.
    fn take(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        while *busy >= self.limit {
            busy = self.freed.wait(busy).unwrap_or_else(|p| p.into_inner());
        }
        *busy += 1;
    }

    fn give_back(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        *busy = busy.saturating_sub(1);
        self.freed.notify_all();
    }
}

/// A part being finished (uploaded) on a thread of its own.
pub(crate) struct Upload {
    path: PathBuf,
    state: State,
}

enum State {
    Thread(JoinHandle<Result<TempPart, Error>>),
    /// Finished on the worker's thread, none other to be had.
    Done(Result<TempPart, Error>),
}

impl Upload {
    /// Finishes `writer` on a new thread once one of `slots` is free; the slot is freed when
    /// the part is. Without a thread to be had, the part is finished here.
    pub(crate) fn start(writer: PartWriter, slots: &Arc<Slots>) -> Upload {
        let path = writer.path().to_path_buf();
        slots.take();
        let theirs = Arc::clone(slots);
        // The writer goes to the thread through a slot it can be taken back from if the
        // thread does not start.
        let slot = Arc::new(Mutex::new(Some(writer)));
        let taken = Arc::clone(&slot);
        let lost = path.clone();
        let started = std::thread::Builder::new()
            .name("ofconvert-upload".into())
            .spawn(move || {
                let finished = finish(&taken, &lost);
                theirs.give_back();
                finished
            });
        let state = match started {
            Ok(thread) => State::Thread(thread),
            Err(_) => {
                slots.give_back();
                State::Done(finish(&slot, &path))
            }
        };
        Upload { path, state }
    }

    /// Waits for the part: finished, or why not (the part is then for the caller to
    /// remove, at [`path`](Upload::path)).
    pub(crate) fn wait(self) -> Result<TempPart, Error> {
        match self.state {
            State::Done(finished) => finished,
            State::Thread(thread) => thread.join().unwrap_or_else(|_| Err(stopped(&self.path))),
        }
    }

    /// Whether the part is finished (or failed): [`wait`](Upload::wait) returns at once.
    pub(crate) fn is_finished(&self) -> bool {
        match &self.state {
            State::Done(_) => true,
            State::Thread(thread) => thread.is_finished(),
        }
    }

    /// Where the part is written.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Finishes the writer in `slot`, which holds it until then.
fn finish(slot: &Mutex<Option<PartWriter>>, path: &Path) -> Result<TempPart, Error> {
    match slot.lock().ok().and_then(|mut writer| writer.take()) {
        Some(writer) => writer.finish_keeping(),
        None => Err(stopped(path)),
    }
}

fn stopped(path: &Path) -> Error {
    Error::io(
        path,
        std::io::Error::other("the thread finishing the part stopped"),
    )
}
