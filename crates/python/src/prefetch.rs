//! Reading ahead for a stream over files in a store, where each read waits a round trip:
//! a few threads fetch the worker's next units side by side while the current one is
//! decoded, and hand them over in order.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};

use ofconvert_engine::Error;
use pyo3::prelude::*;

use crate::fetch::{Files, Scratch};
use crate::order::Share;

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
                        let mut unit = first + lane * share.workers;
                        while unit < share.units() {
                            share.unit_records(unit, &mut indices);
                            let mut scratch = Scratch::default();
                            let fetched = files.fetch(&indices, &mut scratch).map(|()| scratch);
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

    /// The next unit's records, read; waits for them without the GIL.
    pub fn next(&mut self, py: Python<'_>) -> Result<Scratch, Error> {
        let lane = &self.lanes[self.taken % self.lanes.len()];
        self.taken += 1;
        py.detach(|| lane.lock().ok().and_then(|lane| lane.recv().ok()))
            .unwrap_or_else(|| {
                Err(Error::io(
                    std::path::Path::new(""),
                    std::io::Error::other("reading ahead stopped"),
                ))
            })
    }
}
