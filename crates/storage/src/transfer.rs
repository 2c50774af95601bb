//! Moving one object's bytes: reading it in ranged requests, a few in flight, each of the
//! version the reading started on and tried again by the store within its bounds (or, from
//! a server that does not answer ranges, as one streamed body, started again when it
//! breaks); writing it in one request, or as a multipart upload once it outgrows a part, so
//! that it appears whole or not at all.

use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use tokio::runtime::Runtime;

use crate::kind::StoreInfo;
use crate::store_error::store_error;
use crate::OutputFile;

/// Bytes asked for in one ranged read at most.
const RANGE_BYTES: u64 = 8 << 20;
/// Bytes asked for in one ranged read at least, when an object is cut in as many ranges as
/// may be in flight.
const RANGE_MIN_BYTES: u64 = 1 << 20;

/// Transfers a job keeps in flight at once unless told otherwise: rclone's default.
pub const DEFAULT_TRANSFERS: usize = 4;

static TRANSFERS: AtomicUsize = AtomicUsize::new(DEFAULT_TRANSFERS);

/// Sets how many transfers a job keeps in flight (at least 1): ranges of an object read
/// ahead of the reading, and parts of an output uploaded while the next are written. Each
/// range holds at most 8 MiB and each upload at most 16 MiB (48 MiB for a multipart one:
/// the part being filled and two in flight), so `n` bounds a job's memory for transfers to
/// about `2n × 8 MiB` of ranges (the object being read and the next) and `n + 1` uploads.
pub fn set_transfers_in_flight(n: usize) {
    TRANSFERS.store(n.max(1), Ordering::Relaxed);
}

/// How many transfers a job keeps in flight.
pub fn transfers_in_flight() -> usize {
    TRANSFERS.load(Ordering::Relaxed)
}

/// The ranges `offset..size` is read in: as many as may be in flight at once, each
/// between [`RANGE_MIN_BYTES`] and [`RANGE_BYTES`].
fn ranges(offset: u64, size: u64, in_flight: usize) -> Vec<Range<u64>> {
    let len = size.saturating_sub(offset);
    let step = len
        .div_ceil(in_flight.max(1) as u64)
        .clamp(RANGE_MIN_BYTES, RANGE_BYTES);
    (offset..size)
        .step_by(step as usize)
        .map(|start| start..(start + step).min(size))
        .collect()
}
/// Size of a multipart upload's parts (S3's minimum is 5 MiB); an object no bigger goes up
/// in one request.
const UPLOAD_PART_BYTES: usize = 16 << 20;
/// Parts of one upload in flight.
const UPLOADS_IN_FLIGHT: usize = 2;

/// An object written through `Write`: held in memory until it outgrows one upload part,
/// then a multipart upload, aborted unless finished. An object that never outgrows a part
/// goes up in one request when finished. Either way it appears whole or not at all.
pub struct Upload {
    store: Arc<dyn ObjectStore>,
    info: Arc<StoreInfo>,
    key: ObjectPath,
    runtime: Arc<Runtime>,
    /// The bytes written so far, while they fit in one part.
    first: Option<Vec<u8>>,
    upload: Option<WriteMultipart>,
    written: u64,
    /// The ETag of the object already at `key` when the multipart upload began, if any.
    before: Option<String>,
}

impl Upload {
    /// An upload of `key` to `store`, nothing sent until there is a part's worth or it is
    /// finished.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        info: Arc<StoreInfo>,
        key: ObjectPath,
        runtime: Arc<Runtime>,
    ) -> Upload {
        Upload {
            store,
            info,
            key,
            runtime,
            first: Some(Vec::new()),
            upload: None,
            written: 0,
            before: None,
        }
    }

    /// Starts the multipart upload with the bytes held so far.
    fn start_multipart(&mut self) -> io::Result<()> {
        let held = self.first.take().unwrap_or_default();
        self.before = match self.runtime.block_on(self.store.head(&self.key)) {
            Ok(meta) => meta.e_tag,
            Err(object_store::Error::NotFound { .. }) => None,
            Err(err) => return Err(store_error(&self.info, err)),
        };
        let upload = self
            .runtime
            .block_on(self.store.put_multipart(&self.key))
            .map_err(|err| store_error(&self.info, err))?;
        let mut upload = WriteMultipart::new_with_chunk_size(upload, UPLOAD_PART_BYTES);
        let _runtime = self.runtime.enter();
        upload.write(&held);
        self.upload = Some(upload);
        Ok(())
    }
}

impl Write for Upload {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(first) = &mut self.first {
            if first.len() + buf.len() <= UPLOAD_PART_BYTES {
                // Reserved once, so that growing never holds twice the bytes.
                first.reserve_exact(UPLOAD_PART_BYTES - first.len());
                first.extend_from_slice(buf);
                self.written += buf.len() as u64;
                return Ok(buf.len());
            }
            self.start_multipart()?;
        }
        let upload = self
            .upload
            .as_mut()
            .ok_or_else(|| io::Error::other("the upload is finished"))?;
        // Bounds memory: at most this many parts buffered or in flight.
        self.runtime
            .block_on(upload.wait_for_capacity(UPLOADS_IN_FLIGHT))
            .map_err(|err| store_error(&self.info, err))?;
        // A full part starts its upload as a task of the runtime.
        let _runtime = self.runtime.enter();
        upload.write(buf);
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl OutputFile for Upload {
    fn finish(mut self: Box<Self>) -> io::Result<u64> {
        if let Some(first) = self.first.take() {
            let payload = PutPayload::from(Bytes::from(first));
            self.runtime
                .block_on(self.store.put(&self.key, payload))
                .map_err(|err| store_error(&self.info, err))?;
            return Ok(self.written);
        }
        let upload = self
            .upload
            .take()
            .ok_or_else(|| io::Error::other("the upload is finished"))?;
        let finished = self.runtime.block_on(upload.finish());
        match finished {
            Ok(_) => Ok(self.written),
            // The completion may have been served with its answer lost, its retry finding
            // the upload gone: the object is this upload's when it appeared (or changed)
            // since the upload began and holds what was written (no other run writes under
            // this run's lock).
            Err(err) => match self.runtime.block_on(self.store.head(&self.key)) {
                Ok(meta) if meta.size == self.written && meta.e_tag != self.before => {
                    Ok(self.written)
                }
                _ => Err(store_error(&self.info, err)),
            },
        }
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Some(upload) = self.upload.take() {
            // Nothing of an unfinished upload may stay behind in the bucket.
            let _ = self.runtime.block_on(upload.abort());
        }
    }
}

/// Reads an object from an offset through ranged requests, a few in flight ahead of the
/// reader; from a server that answers no ranges, as one streamed body.
pub struct RangeReader {
    chunks: tokio::sync::mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
    task: tokio::task::JoinHandle<()>,
}

/// Where an object is read from, and what its messages name.
pub struct Source {
    /// The store that holds it.
    pub store: Arc<dyn ObjectStore>,
    /// What messages name of the store.
    pub info: Arc<StoreInfo>,
    /// Its key in the store.
    pub key: ObjectPath,
    /// The object's URL, for messages.
    pub url: String,
    /// The ETag of the version the reading started on, when the store gave one: every
    /// range is asked for with `If-Match`, so that no range comes from another version.
    pub e_tag: Option<String>,
    /// What ranges are asked for with (`If-Match`): the ETag, unless it is a weak one.
    pub if_match: Option<String>,
    /// Whether the store answers ranged reads; cleared by the first read it refuses, so
    /// that later reads of the store ask for whole bodies at once.
    pub ranges: Arc<AtomicBool>,
    /// How often a whole body that broke is asked for again (`--retries`).
    pub retries: usize,
}

impl RangeReader {
    /// Starts reading `source`, `size` bytes long, from `offset`.
    pub fn start(source: Source, runtime: &Runtime, offset: u64, size: u64) -> RangeReader {
        let (sender, chunks) = tokio::sync::mpsc::channel(1);
        let task = runtime.spawn(async move {
            if source.ranges.load(Ordering::Relaxed) {
                let in_flight = transfers_in_flight();
                let mut fetched = futures::stream::iter(ranges(offset, size, in_flight))
                    .map(|range| fetch_range(&source, range))
                    .buffered(in_flight);
                let mut sent = false;
                loop {
                    match fetched.next().await {
                        None => return,
                        // A server that ignores `Range` answers the whole object.
                        Some(Err(err)) if !sent && err.kind() == io::ErrorKind::Unsupported => {
                            source.ranges.store(false, Ordering::Relaxed);
                            break;
                        }
                        Some(chunk) => {
                            let failed = chunk.is_err();
                            if sender.send(chunk).await.is_err() || failed {
                                return;
                            }
                            sent = true;
                        }
                    }
                }
            }
            stream_whole(&source, offset, size, &sender).await;
        });
        RangeReader {
            chunks,
            current: Bytes::new(),
            task,
        }
    }
}

impl Read for RangeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(chunk) => self.current = chunk?,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

impl Drop for RangeReader {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One range of an object, of the version the reading started on. The store's own retries
/// cover the request, its body included (the client reads a range's answer whole), so a
/// range is asked for once here; a range that comes back short, or from another version of
/// the object (a store that ignores `If-Match`), fails the read.
pub(crate) async fn fetch_range(source: &Source, range: Range<u64>) -> io::Result<Bytes> {
    let want = range.end - range.start;
    let options = GetOptions {
        range: Some(GetRange::Bounded(range.clone())),
        if_match: source.if_match.clone(),
        ..GetOptions::default()
    };
    let result = source
        .store
        .get_opts(&source.key, options)
        .await
        .map_err(|err| read_error(source, err))?;
    if source.e_tag.is_some() && result.meta.e_tag != source.e_tag {
        return Err(replaced(source));
    }
    let mut received = BytesMut::with_capacity(want as usize);
    let mut stream = result.into_stream();
    while let Some(piece) = stream.next().await {
        received.extend_from_slice(&piece.map_err(|err| read_error(source, err))?);
    }
    if (received.len() as u64) < want {
        return Err(cut_short(source, received.len() as u64, want));
    }
    received.truncate(want as usize);
    Ok(received.freeze())
}

/// The error of a read of `source` that failed: a changed object (`If-Match` refused) says
/// so.
fn read_error(source: &Source, err: object_store::Error) -> io::Error {
    match err {
        object_store::Error::Precondition { .. } => replaced(source),
        err => store_error(&source.info, err),
    }
}

/// An object replaced by another while it was read: its bytes would be spliced from both.
fn replaced(source: &Source) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        Replaced {
            url: source.url.clone(),
        },
    )
}

/// The error (inside an `io::Error`) of a read that asked for one version of an object (its
/// ETag, with `If-Match`) when the object was another: it was replaced since that version
/// was found. A caller that knows when that was says it in its own words
/// ([`is_replaced`] tells it).
#[derive(Debug)]
pub struct Replaced {
    /// The object's URL.
    pub url: String,
}

impl std::fmt::Display for Replaced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the object was replaced while it was read (its ETag changed): read it again",
            self.url
        )
    }
}

impl std::error::Error for Replaced {}

/// Whether `err` is a read of an object refused because the object was replaced since the
/// version asked for ([`Replaced`]).
pub fn is_replaced(err: &io::Error) -> bool {
    err.get_ref()
        .is_some_and(|inner| inner.downcast_ref::<Replaced>().is_some())
}

fn cut_short(source: &Source, received: u64, want: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("{}: the store sent {received} of {want} bytes", source.key),
    )
}

/// The object from `offset` to `size` as one streamed body, passed on as it arrives, for a
/// server that answers no ranges: a body that breaks is asked for again from its start,
/// the bytes already passed on skipped, as often as `--retries` allows.
async fn stream_whole(
    source: &Source,
    offset: u64,
    size: u64,
    sender: &tokio::sync::mpsc::Sender<io::Result<Bytes>>,
) {
    // Bytes of the object passed on, or skipped before `offset`.
    let mut done = offset;
    let mut attempts = 0;
    loop {
        let options = GetOptions {
            if_match: source.if_match.clone(),
            ..GetOptions::default()
        };
        let broke = match source.store.get_opts(&source.key, options).await {
            Ok(result) => {
                let mut stream = result.into_stream();
                let mut position = 0u64;
                let mut broke = None;
                while let Some(piece) = stream.next().await {
                    let mut piece = match piece {
                        Ok(piece) => piece,
                        Err(err) => {
                            broke = Some(err);
                            break;
                        }
                    };
                    let end = position + piece.len() as u64;
                    if end > done && done < size {
                        piece = piece.slice((done - position) as usize..);
                        piece.truncate((size - done) as usize);
                        done += piece.len() as u64;
                        if sender.send(Ok(piece)).await.is_err() {
                            return;
                        }
                    }
                    position = end;
                }
                broke
            }
            Err(err) => Some(err),
        };
        match broke {
            None if done >= size => return,
            Some(err @ object_store::Error::NotFound { .. })
            | Some(err @ object_store::Error::Precondition { .. }) => {
                let _ = sender.send(Err(read_error(source, err))).await;
                return;
            }
            broke => {
                attempts += 1;
                if attempts > source.retries {
                    let err = match broke {
                        Some(err) => read_error(source, err),
                        None => cut_short(source, done - offset, size - offset),
                    };
                    let _ = sender.send(Err(err)).await;
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_cut_in_as_many_ranges_as_may_be_in_flight_within_the_bounds() {
        const MIB: u64 = 1 << 20;
        let lengths =
            |ranges: &[Range<u64>]| ranges.iter().map(|r| r.end - r.start).collect::<Vec<_>>();
        // 13 MB in four: four ranges that cover it in order.
        let cut = ranges(0, 13_000_000, 4);
        assert_eq!(cut.len(), 4);
        assert_eq!(cut.first().map(|r| r.start), Some(0));
        assert_eq!(cut.last().map(|r| r.end), Some(13_000_000));
        assert!(cut.windows(2).all(|w| w[0].end == w[1].start));
        // Small objects are not cut below a mebibyte, big ones not above eight.
        assert_eq!(lengths(&ranges(0, 3 * MIB, 16)), [MIB; 3]);
        assert_eq!(ranges(0, 100 * MIB, 2).len(), 13);
        assert!(lengths(&ranges(0, 100 * MIB, 2))
            .iter()
            .all(|&n| n <= 8 * MIB));
        // From an offset, and nothing left to read.
        let from_five = ranges(5, 5 + MIB, 1);
        assert_eq!((from_five.len(), from_five[0].clone()), (1, 5..5 + MIB));
        assert!(ranges(7, 7, 4).is_empty());
    }
}
