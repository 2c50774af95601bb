//! Pieces of chunks read through a cache of spans: a chunk's records in one file of a store
//! (the pieces a span is made of) read whole, mapped from the cache when it holds them, else
//! fetched and kept; and a batch's records (a global shuffle, `ds[i]`) read out of the pieces
//! they lie in, so that with a cache as large as the dataset each piece is fetched once.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use crate::access::held::Held;
use crate::access::spans::{Object, SpanCache};
use crate::stream::fetch::{fetch_remote, Files, Kept, Span};
use ofconvert_engine::Error;

/// Runs of a batch read side by side.
const RUNS_IN_FLIGHT: usize = 32;

impl Files {
    /// Bytes of the records `records` (of the dataset, neighbours), framing included; in a
    /// file whose index is not made yet (its count stated), as many as its mean record takes.
    pub fn span_bytes(&self, records: Range<u64>) -> u64 {
        let mut bytes = 0;
        let mut at = records.start;
        while at < records.end {
            let (file, first) = self.locate(at);
            let index = &self.files[file].index;
            let end = (first + (records.end - at)).min(index.len());
            bytes += index.estimated_span_bytes(first..end);
            at += end - first;
        }
        bytes
    }

    /// Reads the records `records` (of the dataset, neighbours) whole, a request per file
    /// they lie in; a piece that fails or comes short is asked for again, whole, within the
    /// store's retries. With a cache, a piece of a file in a store is taken from it when it
    /// holds it (mapped, not read into memory), and kept in it once read.
    pub fn read_span(&self, records: Range<u64>) -> Result<Span, Error> {
        if !records.is_empty() {
            let (first, _) = self.locate(records.start);
            let (last, _) = self.locate(records.end - 1);
            self.ready_files(&(first..=last).collect::<Vec<_>>())?;
        }
        let mut pieces = Vec::new();
        let mut at = records.start;
        while at < records.end {
            let (file, first) = self.locate(at);
            let indexed = &self.files[file];
            let end = (first + (records.end - at)).min(indexed.index.len());
            let bytes = indexed.index.span(first..end);
            pieces.push((file, first, Arc::new(self.hold_piece(file, &bytes)?)));
            at += end - first;
        }
        Ok(Span { records, pieces })
    }

    /// The cache and file `file` as its entries name it, if the file is in a store and there
    /// is a cache.
    fn object(&self, file: usize) -> Option<(&SpanCache, Object<'_>)> {
        let indexed = &self.files[file];
        let cache = self.cache().filter(|_| self.remote[file])?;
        Some((
            cache,
            Object {
                url: indexed.path.to_str()?,
                size: indexed.size,
                version: indexed.version.as_deref(),
            },
        ))
    }

    /// The bytes `bytes` of file `file` (the records of a piece), whole: from the cache when
    /// it holds them (mapped, not read into memory), else fetched (the store asks again,
    /// whole, when a request fails or its body comes short, as often as its retries allow)
    /// and kept in it, once between the threads and processes of the machine that want them
    /// at once (see [`SpanCache::hold_or_fetch`]).
    pub(crate) fn hold_piece(&self, file: usize, bytes: &Range<u64>) -> Result<Held, Error> {
        let fetch = || {
            let (data, version) = (&self.files[file].data, self.files[file].version.as_deref());
            // The store tries a request as many times as its network settings say
            // (`--retries`, `retries=`), a body cut short included: a failure here is its
            // last word. Asked of the version the dataset opened, the one the cache keeps it
            // as: an object replaced since fails here, never kept.
            let mut buffer = Vec::with_capacity((bytes.end - bytes.start) as usize);
            fetch_remote(data, version, std::slice::from_ref(bytes), &mut buffer)?;
            if buffer.len() as u64 != bytes.end - bytes.start {
                let short = std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "bytes {}..{} came as {} bytes",
                        bytes.start,
                        bytes.end,
                        buffer.len()
                    ),
                );
                return Err(Error::io(data, short));
            }
            Ok(buffer)
        };
        match self.object(file) {
            Some((cache, object)) => cache.hold_or_fetch(object, bytes, fetch),
            None => fetch().map(Held::Fetched),
        }
    }

    /// The pieces of file `file` that its records `records` lie in (chunks of `chunk`
    /// records), each with the bytes of the records in it, counted from its start.
    fn pieces(
        &self,
        file: usize,
        records: Range<u64>,
        chunk: u64,
    ) -> Vec<(Range<u64>, Range<u64>)> {
        let index = &self.files[file].index;
        let first = self.first_record(file);
        let mut pieces = Vec::new();
        let mut at = records.start;
        while at < records.end {
            let number = (first + at) / chunk;
            let start = (number * chunk).max(first) - first;
            let end = ((number + 1) * chunk - first).min(index.len());
            let piece = index.span(start..end);
            let take = index.span(at..end.min(records.end));
            pieces.push((
                piece.clone(),
                take.start - piece.start..take.end - piece.start,
            ));
            at = end.min(records.end);
        }
        pieces
    }

    /// Where the records `records` of file `file` (in a store) are, if the cache holds every
    /// piece of the chunks of `chunk` records they lie in: in one piece, where they are, or
    /// across pieces, copied to the end of `out`. `maps` keeps the pieces mapped from one
    /// batch to the next.
    pub(crate) fn find_kept(
        &self,
        file: usize,
        records: Range<u64>,
        chunk: u64,
        maps: &mut HashMap<(usize, u64), Arc<Held>>,
        out: &mut Vec<u8>,
    ) -> Kept {
        let Some((cache, object)) = self.object(file) else {
            return Kept::Missing;
        };
        let pieces = self.pieces(file, records, chunk);
        let (single, at) = (pieces.len() == 1, out.len());
        for (piece, sub) in pieces {
            let held = match maps.entry((file, piece.start)) {
                Entry::Occupied(entry) => entry.into_mut(),
                Entry::Vacant(slot) => match cache.hold(object, &piece) {
                    Some(held) => slot.insert(Arc::new(held)),
                    None => {
                        out.truncate(at);
                        return Kept::Missing;
                    }
                },
            };
            let Some(bytes) = held.get(sub.start as usize..sub.end as usize) else {
                out.truncate(at);
                return Kept::Missing;
            };
            if single {
                return Kept::In(Arc::clone(held), sub.start as usize);
            }
            out.extend_from_slice(bytes);
        }
        Kept::Copied
    }

    /// The bytes of the records `records` of file `file` (in a store), out of the pieces of
    /// the chunks of `chunk` records they lie in, each read through the cache.
    pub(crate) fn read_through(
        &self,
        file: usize,
        records: Range<u64>,
        chunk: u64,
    ) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        for (piece, sub) in self.pieces(file, records, chunk) {
            let whole = self.hold_piece(file, &piece)?;
            out.extend_from_slice(&whole[sub.start as usize..sub.end as usize]);
        }
        Ok(out)
    }

    /// Reads `runs` (file, records, of files in a store) through the cache, side by side:
    /// what it holds from it, the rest fetched into it.
    pub(crate) fn read_runs_through(
        &self,
        runs: &[(usize, Range<u64>)],
        chunk: u64,
    ) -> Result<Vec<Vec<u8>>, Error> {
        let mut out = Vec::with_capacity(runs.len());
        for group in runs.chunks(RUNS_IN_FLIGHT) {
            let results = side_by_side(group, "reading through the cache", |(file, records)| {
                self.read_through(*file, records.clone(), chunk)
            });
            for result in results {
                out.push(result?);
            }
        }
        Ok(out)
    }
}

/// Runs `work` on each of `items` on a thread of its own, all side by side, and gives their
/// results in order; a thread that panicked gives an error saying `what` panicked.
fn side_by_side<T: Sync, R: Send>(
    items: &[T],
    what: &str,
    work: impl Fn(&T) -> Result<R, Error> + Sync,
) -> Vec<Result<R, Error>> {
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .iter()
            .map(|item| scope.spawn(move || work(item)))
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(Error::io(
                        std::path::Path::new(""),
                        std::io::Error::other(format!("{what} panicked")),
                    ))
                })
            })
            .collect()
    })
}
