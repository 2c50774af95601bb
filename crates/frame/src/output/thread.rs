//! Whole buffers written on a thread of their own: a [`RecordBuffer`](super::RecordBuffer)
//! hands each one over as it is and takes an empty one back, so that no byte is copied on
//! the way and the caller fills the next buffer while the last is written.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Buffers in existence at most: the one being filled and those handed over.
const DEPTH: usize = 3;

enum Message {
    Write(Vec<u8>),
    Flush,
}

enum Reply {
    /// A buffer written, emptied for reuse.
    Written(Vec<u8>),
    /// What flushing the writer gave.
    Flushed(io::Result<()>),
    /// A write failed; the thread writes nothing more.
    Failed(io::Error),
}

/// The caller's side of the thread writing whole buffers to a `W`.
pub(super) struct Behind<W> {
    to_thread: Option<SyncSender<Message>>,
    replies: Receiver<Reply>,
    /// Emptied buffers back from the thread.
    spare: Vec<Vec<u8>>,
    /// Buffers made so far, the one being filled included.
    made: usize,
    thread: Option<JoinHandle<Option<W>>>,
}

impl<W> std::fmt::Debug for Behind<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Behind")
            .field("made", &self.made)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send + 'static> Behind<W> {
    /// Starts the thread writing to `inner`; `inner` back when no thread can be had.
    pub(super) fn start(inner: W) -> Result<Self, W> {
        let (to_thread, messages) = mpsc::sync_channel::<Message>(DEPTH);
        let (replies_tx, replies) = mpsc::channel::<Reply>();
        // The writer goes to the thread through a slot it can be taken back from if the
        // thread does not start.
        let slot = Arc::new(Mutex::new(Some(inner)));
        let theirs = Arc::clone(&slot);
        let started = std::thread::Builder::new()
            .name("ofconvert-writer".into())
            .spawn(move || {
                let inner = theirs.lock().ok().and_then(|mut inner| inner.take());
                write_all_sent(inner, &messages, &replies_tx)
            });
        match started {
            Ok(thread) => Ok(Behind {
                to_thread: Some(to_thread),
                replies,
                spare: Vec::new(),
                made: 1,
                thread: Some(thread),
            }),
            Err(_) => match slot.lock().ok().and_then(|mut inner| inner.take()) {
                Some(inner) => Err(inner),
                // Not reached: a thread that did not start took nothing.
                None => Ok(Behind {
                    to_thread: None,
                    replies,
                    spare: Vec::new(),
                    made: DEPTH,
                    thread: None,
                }),
            },
        }
    }
}

/// The thread's loop: writes each buffer sent, in order, and gives it back; after a failed
/// write only gives them back. Returns the writer when the caller is done (`None` only if
/// the thread started without it, which cannot happen).
fn write_all_sent<W: Write>(
    inner: Option<W>,
    messages: &Receiver<Message>,
    replies: &Sender<Reply>,
) -> Option<W> {
    let mut inner = inner?;
    let mut failed = false;
    while let Ok(message) = messages.recv() {
        let reply = match message {
            Message::Write(mut buf) => {
                if !failed {
                    if let Err(err) = inner.write_all(&buf) {
                        failed = true;
                        let _ = replies.send(Reply::Failed(err));
                    }
                }
                buf.clear();
                Reply::Written(buf)
            }
            Message::Flush if failed => {
                Reply::Flushed(Err(io::Error::other("an earlier write failed")))
            }
            Message::Flush => Reply::Flushed(inner.flush()),
        };
        let _ = replies.send(reply);
    }
    Some(inner)
}

impl<W> Behind<W> {
    /// Hands the first `whole` bytes of `buf` to the thread; `buf` keeps the rest, in an
    /// emptied buffer of at least `capacity` bytes.
    pub(super) fn hand_over(
        &mut self,
        buf: &mut Vec<u8>,
        whole: usize,
        capacity: usize,
    ) -> io::Result<()> {
        let mut next = self.empty_buffer(capacity)?;
        next.extend_from_slice(&buf[whole..]);
        buf.truncate(whole);
        let full = std::mem::replace(buf, next);
        self.send(Message::Write(full))
    }

    /// Hands all of `buf` over, then flushes the writer and waits for it.
    pub(super) fn flush(&mut self, buf: &mut Vec<u8>, capacity: usize) -> io::Result<()> {
        if !buf.is_empty() {
            let len = buf.len();
            self.hand_over(buf, len, capacity)?;
        }
        self.send(Message::Flush)?;
        loop {
            match self.replies.recv() {
                Ok(Reply::Written(empty)) => self.spare.push(empty),
                Ok(Reply::Flushed(result)) => return result,
                Ok(Reply::Failed(err)) => return Err(err),
                Err(_) => return Err(stopped()),
            }
        }
    }

    /// Hands `buf` over, waits for everything to be written and gives the writer back.
    pub(super) fn finish(mut self, buf: Vec<u8>) -> io::Result<W> {
        if !buf.is_empty() {
            self.send(Message::Write(buf))?;
        }
        let inner = self.join().ok_or_else(stopped)?;
        while let Ok(reply) = self.replies.try_recv() {
            if let Reply::Failed(err) = reply {
                return Err(err);
            }
        }
        Ok(inner)
    }

    /// An emptied buffer: one the thread gave back, a new one while fewer than [`DEPTH`]
    /// exist, else the next the thread gives back. A failure the thread reported comes out
    /// here.
    fn empty_buffer(&mut self, capacity: usize) -> io::Result<Vec<u8>> {
        while let Ok(reply) = self.replies.try_recv() {
            self.take(reply)?;
        }
        if let Some(empty) = self.spare.pop() {
            return Ok(empty);
        }
        if self.made < DEPTH {
            self.made += 1;
            return Ok(Vec::with_capacity(capacity));
        }
        loop {
            let reply = self.replies.recv().map_err(|_| stopped())?;
            self.take(reply)?;
            if let Some(empty) = self.spare.pop() {
                return Ok(empty);
            }
        }
    }

    fn take(&mut self, reply: Reply) -> io::Result<()> {
        match reply {
            Reply::Written(empty) => {
                self.spare.push(empty);
                Ok(())
            }
            Reply::Failed(err) => Err(err),
            Reply::Flushed(_) => Ok(()),
        }
    }

    fn send(&mut self, message: Message) -> io::Result<()> {
        let sent = self
            .to_thread
            .as_ref()
            .map(|to_thread| to_thread.send(message));
        match sent {
            Some(Ok(())) => Ok(()),
            _ => Err(stopped()),
        }
    }

    /// Lets the thread finish what it was sent and waits for it; its writer, unless it
    /// panicked.
    fn join(&mut self) -> Option<W> {
        self.to_thread = None;
        self.thread
            .take()
            .and_then(|thread| thread.join().ok())
            .flatten()
    }
}

impl<W> Drop for Behind<W> {
    fn drop(&mut self) {
        // The writer is dropped on the thread once what was sent is written; waiting for it
        // means it is closed by the time the caller goes on (to remove a file given up, say).
        drop(self.join());
    }
}

fn stopped() -> io::Error {
    io::Error::other("the thread writing the output stopped")
}
