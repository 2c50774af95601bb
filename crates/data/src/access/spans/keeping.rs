//! Keeping what an index pass reads: the bytes of an object streamed from its start kept in
//! the cache of spans, a segment at a time, as they go by.

use std::io::{self, Read};

use super::writer::EntryWriter;
use super::{segment, Object, SpanCache};

impl SpanCache {
    /// A reader of `object` from its start, `reader`, that keeps what is read through it.
    pub(crate) fn keeping<R: Read>(&self, object: Object<'_>, reader: R) -> Keeping<R> {
        Keeping {
            inner: reader,
            cache: self.clone(),
            url: object.url.to_string(),
            size: object.size,
            version: object.version.map(str::to_string),
            at: 0,
            skip_to: 0,
            writer: None,
            stopped: false,
        }
    }
}

/// A reader of an object from its start that keeps what is read through it in the cache,
/// a segment at a time, while the cache has room: the index pass over an object in a store
/// fills the cache that the epoch then reads from, so that a cold start reads it once.
/// Keeping never fails the read: what cannot be kept is not.
pub(crate) struct Keeping<R> {
    inner: R,
    cache: SpanCache,
    url: String,
    size: u64,
    version: Option<String>,
    /// Where the next byte read is in the object.
    at: u64,
    /// Where the segment already kept, being read through, ends.
    skip_to: u64,
    writer: Option<EntryWriter>,
    /// Whether keeping stopped (no room, an error): the rest is only read.
    stopped: bool,
}

impl<R: Read> Read for Keeping<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        if !self.stopped {
            self.keep(&buf[..read]);
        }
        self.at += read as u64;
        Ok(read)
    }
}

impl<R> Keeping<R> {
    /// Keeps `bytes`, read from `self.at` on.
    fn keep(&mut self, mut bytes: &[u8]) {
        let mut at = self.at;
        while !bytes.is_empty() {
            let Some(writer) = &mut self.writer else {
                if at < self.skip_to {
                    let take = (self.skip_to - at).min(bytes.len() as u64);
                    bytes = &bytes[take as usize..];
                    at += take;
                    continue;
                }
                let segment = segment(self.size, at);
                // Past the size the object was opened at: it changed; nothing more is kept.
                if segment.start != at || segment.is_empty() {
                    return self.stop();
                }
                let object = Object {
                    url: &self.url,
                    size: self.size,
                    version: self.version.as_deref(),
                };
                if self.cache.holds(object, &segment) {
                    self.skip_to = segment.end;
                    continue;
                }
                match self.cache.begin(object, &segment) {
                    Ok(Some(writer)) => self.writer = Some(writer),
                    Ok(None) => return self.stop(),
                    Err(err) => {
                        self.cache.failed(&err);
                        return self.stop();
                    }
                }
                continue;
            };
            let take = writer.remaining().min(bytes.len() as u64) as usize;
            if let Err(err) = writer.write(&bytes[..take]) {
                self.cache.failed(&err);
                return self.stop();
            }
            bytes = &bytes[take..];
            at += take as u64;
            if writer.remaining() == 0 {
                let published = self.writer.take().map(EntryWriter::publish);
                if let Some(Err(err)) = published {
                    self.cache.failed(&err);
                    return self.stop();
                }
            }
        }
    }

    /// Keeps nothing more; the segment being written is given up.
    fn stop(&mut self) {
        self.stopped = true;
        self.writer = None;
    }
}
