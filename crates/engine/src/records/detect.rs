//! What a file is: a TFRecord, ArrayRecord or Parquet file by name or by content, an OFRecord
//! file, a shard of a family, or none of these.
//!
//! A file's first bytes tell most record files, and cost one small read. A record file
//! damaged there is still one: a OneFlow part by its name, a TFRecord file by the records
//! whose checksums agree further on ([`holds_tfrecord_in`], which may read the whole file and
//! so comes last, for files that nothing else told).

use std::io::{self, Read};
use std::path::Path;

use ofconvert_tfrecord::{ErrorKind as TfErrorKind, Reader, ReaderOptions};

use crate::naming::layout::DEFAULT_PART_PREFIX;
use crate::naming::names::{has_record_name, part_number, Format};
use crate::storage::object::storage_for;
use crate::storage::Storage;

/// Whether the content of `path` in `storage` is TensorFlow's records: an ArrayRecord file
/// (it begins with a Riegeli signature), a Parquet file (`PAR1`), or a TFRecord stream, whose
/// first record's length checksum holds after sniffing GZIP or ZLIB. An empty file, or a compressed stream that
/// decodes to nothing, is not (there is no record to tell by).
pub(crate) fn looks_like_tfrecord_in(storage: &dyn Storage, path: &Path) -> io::Result<bool> {
    is_tfrecord_stream(storage.open(path, 0)?.reader)
}

/// A stream whose first bytes, read to look at them, are put back before the rest.
pub(crate) type Rewound<R> = io::Chain<io::Cursor<Vec<u8>>, R>;

/// What a file of TensorFlow's records is, by its first bytes: an ArrayRecord file (a
/// Riegeli signature), a Parquet file (`PAR1`), or else a TFRecord stream, plain or
/// compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Head {
    ArrayRecord,
    Parquet,
    Stream,
}

/// What `stream`, read from its start, begins as; and the stream whole again.
pub(crate) fn sniff_head<R: Read>(mut stream: R) -> io::Result<(Head, Rewound<R>)> {
    let signature = &ofconvert_arrayrecord::SIGNATURE;
    let mut head = Vec::with_capacity(signature.len());
    (&mut stream)
        .take(signature.len() as u64)
        .read_to_end(&mut head)?;
    let kind = if head == signature {
        Head::ArrayRecord
    } else if ofconvert_parquet::is_parquet(&head) {
        Head::Parquet
    } else {
        Head::Stream
    };
    Ok((kind, io::Cursor::new(head).chain(stream)))
}

/// [`looks_like_tfrecord_in`] of a stream read from its start.
fn is_tfrecord_stream(stream: impl Read) -> io::Result<bool> {
    let (head, stream) = sniff_head(stream)?;
    if head != Head::Stream {
        return Ok(true);
    }
    let (mut reader, _) = Reader::sniffed(stream, ReaderOptions::default())?;
    Ok(match reader.skip_record() {
        Ok(found) => found.is_some(),
        // The header checked out; only the rest of the record is missing.
        Err(err) => matches!(err.kind(), TfErrorKind::Truncated { .. }),
    })
}

/// Whether the content of `path` in `storage` holds a TFRecord record anywhere: its first
/// record's length checksum holds ([`looks_like_tfrecord_in`]), or past damage, a record
/// follows whose checksums agree, found as `--on-corrupt skip` finds where to resume (a
/// record too big to be checked whole by its data's checksum counts by its length's, if its
/// length is plausible). Reads up to the whole file: a file that holds none is read to its
/// end.
pub(crate) fn holds_tfrecord_in(storage: &dyn Storage, path: &Path) -> io::Result<bool> {
    holds_tfrecord(storage.open(path, 0)?.reader)
}

/// [`holds_tfrecord_in`] of a stream read from its start.
fn holds_tfrecord(stream: impl Read) -> io::Result<bool> {
    let (head, stream) = sniff_head(stream)?;
    if head != Head::Stream {
        return Ok(true);
    }
    let (mut reader, _) = Reader::sniffed(stream, ReaderOptions::default())?;
    let mut recovered = Vec::new();
    loop {
        let damage = match reader.skip_record() {
            Ok(found) => return Ok(found.is_some()),
            Err(err) => err,
        };
        match damage.kind() {
            // A header that checks out, whatever follows it.
            TfErrorKind::Truncated { .. } => return Ok(true),
            TfErrorKind::LengthCrcMismatch { .. } | TfErrorKind::TruncatedHeader { .. } => {}
            // A stream that does not decompress, or cannot be read, holds nothing to tell by.
            _ => return Ok(false),
        }
        match reader.resync(&mut recovered) {
            // The damaged record itself, its data vouched for by its checksum.
            Ok(Some(resync)) if resync.recovered => return Ok(true),
            // A record whose checksums agree, or the end.
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return Ok(false),
        }
    }
}

/// Whether the content of `path` in `storage` looks like an OFRecord stream: a positive
/// first length that fits the file, followed by a payload that parses as an OFRecord.
pub(crate) fn looks_like_ofrecord_in(storage: &dyn Storage, path: &Path) -> io::Result<bool> {
    /// Enough to judge a first record; bigger ones are judged by their length alone.
    const PROBE: u64 = 1 << 20;
    let opened = storage.open(path, 0)?;
    let size = opened.size.unwrap_or(u64::MAX);
    let mut file = opened.reader;
    let mut header = [0u8; 8];
    if size < 9 || file.read_exact(&mut header).is_err() {
        return Ok(false);
    }
    let length = i64::from_le_bytes(header);
    let Ok(length) = u64::try_from(length) else {
        return Ok(false);
    };
    if length == 0 || length > size - 8 {
        return Ok(false);
    }
    if length > PROBE {
        return Ok(true);
    }
    let mut payload = Vec::new();
    file.take(length).read_to_end(&mut payload)?;
    Ok(ofconvert_bridge::visit_ofrecord(&payload, |_, _, _| {}).is_ok())
}

/// Tells the format of a record file (a local path or a URL): TensorFlow's ([`Format::Tf`])
/// when its name says so ([`has_record_name`]), it begins with an ArrayRecord (Riegeli)
/// signature or Parquet's magic, or its first length checksum holds (after GZIP/ZLIB
/// sniffing), else OFRecord when its first record looks like one or its name is a OneFlow part's (`part-N`: a part
/// damaged from its first byte), else TensorFlow's when a TFRecord record whose checksums
/// agree lies further in (a file damaged at its start). An empty file counts as TFRecord
/// with no records.
pub fn detect_format(path: &Path) -> io::Result<Option<Format>> {
    let (storage, path) = storage_for(path)?;
    let size = match storage.size(&path)? {
        Some(size) => size,
        // Opening says why there is no file to size, in the system's or the store's words.
        None => {
            storage.open(&path, 0)?;
            return Err(io::Error::other("not a file"));
        }
    };
    detect_format_in(&*storage, &path, size)
}

/// [`detect_format`] of a file of `size` bytes in `storage`.
pub(crate) fn detect_format_in(
    storage: &dyn Storage,
    path: &Path,
    size: u64,
) -> io::Result<Option<Format>> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default();
    if has_record_name(&name) || size == 0 || looks_like_tfrecord_in(storage, path)? {
        return Ok(Some(Format::Tf));
    }
    if looks_like_ofrecord_in(storage, path)? || part_number(&name, DEFAULT_PART_PREFIX).is_some() {
        return Ok(Some(Format::Of));
    }
    if holds_tfrecord_in(storage, path)? {
        return Ok(Some(Format::Tf));
    }
    Ok(None)
}
