//! A conversion run on a thread of its own while the calling thread, without the GIL, looks
//! for signals (Ctrl-C) and hands the run's events to the caller's `progress` callback.

use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::thread;
use std::time::Duration;

use ofconvert_engine::{DatasetStatus, Event, Interrupt};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// How often a running conversion looks for a pending signal (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// What the conversion's thread tells the calling thread.
enum Note {
    /// An event for the callback. A step's event (the start, a dataset done) carries
    /// `seen`: the conversion waits on it until the callback has returned, so that what the
    /// callback does (raise, press Ctrl-C) takes effect before the next step is taken.
    Event(Event, Option<mpsc::SyncSender<()>>),
    /// The work has ended.
    Done,
}

/// Runs `work` on a thread of its own, handing it the progress function to report to,
/// while this thread looks for signals and calls `progress` (a Python callable) with each
/// event as a dict. On a signal, or an exception the callback raises, `interrupt` is set;
/// once `work` has ended (the engine removes its temporary files first) that exception is
/// returned beside its result.
pub fn interruptible<T: Send>(
    py: Python<'_>,
    interrupt: &Interrupt,
    progress: Option<Py<PyAny>>,
    work: impl FnOnce(&(dyn Fn(Event) + Sync)) -> T + Send,
) -> (T, Option<PyErr>) {
    let wanted = progress.is_some();
    py.detach(|| {
        let (notes, received) = mpsc::channel::<Note>();
        thread::scope(|scope| {
            let worker = scope.spawn(move || {
                let report = |event: Event| {
                    if !wanted {
                        return;
                    }
                    if matches!(event, Event::Progress { .. }) {
                        let _ = notes.send(Note::Event(event, None));
                        return;
                    }
                    let (seen, handled) = mpsc::sync_channel(1);
                    if notes.send(Note::Event(event, Some(seen))).is_ok() {
                        // An error means the caller has gone: nothing to wait for.
                        let _ = handled.recv();
                    }
                };
                let outcome = work(&report);
                // The receiver outlives this thread: it waits for the join below.
                let _ = notes.send(Note::Done);
                outcome
            });
            let mut raised = None;
            let mut next = None;
            loop {
                let note = match next.take() {
                    Some(note) => Ok(note),
                    None => received.recv_timeout(SIGNAL_POLL),
                };
                match note {
                    Ok(Note::Done) | Err(RecvTimeoutError::Disconnected) => break,
                    Ok(Note::Event(event, seen)) => {
                        let event = match event {
                            Event::Progress { bytes, records } => {
                                let (summed, after) = coalesced(&received, bytes, records);
                                next = after;
                                summed
                            }
                            event => event,
                        };
                        if raised.is_none() {
                            if let Some(callback) = &progress {
                                raised = Python::attach(|py| call(py, callback, &event)).err();
                            }
                        }
                        if raised.is_none() {
                            raised = Python::attach(|py| py.check_signals()).err();
                        }
                        if raised.is_some() {
                            interrupt.set();
                        }
                        drop(seen);
                    }
                    Err(RecvTimeoutError::Timeout) if raised.is_none() => {
                        if let Err(err) = Python::attach(|py| py.check_signals()) {
                            interrupt.set();
                            raised = Some(err);
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                }
            }
            match worker.join() {
                Ok(outcome) => (outcome, raised),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    })
}

/// A progress event summed with the progress events already waiting behind it, so that a
/// slow callback is called once for many; and the note after them, if one came.
fn coalesced(received: &mpsc::Receiver<Note>, bytes: u64, records: u64) -> (Event, Option<Note>) {
    let (mut bytes, mut records) = (bytes, records);
    loop {
        match received.try_recv() {
            Ok(Note::Event(
                Event::Progress {
                    bytes: b,
                    records: r,
                },
                _,
            )) => {
                bytes += b;
                records += r;
            }
            Ok(other) => return (Event::Progress { bytes, records }, Some(other)),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => {
                return (Event::Progress { bytes, records }, None)
            }
        }
    }
}

/// Calls `callback` with `event` as a dict: `{"event": "started", "datasets", "files",
/// "bytes"}`, `{"event": "progress", "bytes", "records"}` (increments) or
/// `{"event": "dataset_done", "name", "status", "records", "parts", "error",
/// "files_only"}`.
fn call(py: Python<'_>, callback: &Py<PyAny>, event: &Event) -> PyResult<()> {
    let dict = PyDict::new(py);
    match event {
        Event::Started {
            datasets,
            files,
            bytes,
        } => {
            dict.set_item("event", "started")?;
            dict.set_item("datasets", datasets)?;
            dict.set_item("files", files)?;
            dict.set_item("bytes", bytes)?;
        }
        Event::Progress { bytes, records } => {
            dict.set_item("event", "progress")?;
            dict.set_item("bytes", bytes)?;
            dict.set_item("records", records)?;
        }
        Event::DatasetDone {
            name,
            status,
            records,
            parts,
            error,
            files_only,
        } => {
            dict.set_item("event", "dataset_done")?;
            dict.set_item("name", name)?;
            dict.set_item("status", status_name(*status))?;
            dict.set_item("records", records)?;
            dict.set_item("parts", parts)?;
            dict.set_item("error", error)?;
            dict.set_item("files_only", files_only)?;
        }
    }
    callback.bind(py).call1((dict,))?;
    Ok(())
}

/// A dataset's status as the summary names it.
fn status_name(status: DatasetStatus) -> &'static str {
    match status {
        DatasetStatus::Converted => "converted",
        DatasetStatus::Kept => "kept",
        DatasetStatus::Failed => "failed",
        DatasetStatus::Interrupted => "interrupted",
    }
}
