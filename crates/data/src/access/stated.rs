//! A file's index made when it is first read, for an object in a store whose record count
//! its dataset's metadata states (a manifest's part, a TFDS shard's length): records are
//! dealt by that count, and a process reads (to index it) only an object its lanes read, so
//! that the nodes of a job fetch each byte about once between them, not once a node.
//!
//! Such a file is opened with a ranged read of its first bytes, which tell its kind (a
//! compressed TFRecord or an ArrayRecord file is opened as ever) and hold its first record's
//! framing: its first record, which the checks of features and batches' keys read, is read
//! without its index. The index is made (found beside the object or in the cache, or built
//! in a pass that keeps what it reads in the cache of spans) when a record past the first is
//! read, once between the threads and, through the entry's lock, the processes of a machine;
//! it must count what was stated, and end where the object does, or reading fails, naming
//! the file and both counts.

use std::io;
use std::ops::Range;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use ofconvert_engine::{Error, Format, SkippedRecords};
use ofconvert_storage::object::{is_url, storage_for};

use crate::access::index::{open_listed, sniff, sniff_kept, IndexOptions, IndexedFile, Kind};
use crate::access::record_index::RecordIndex;
use crate::access::spans::Object;

/// Bytes read from the start of a file whose count was stated, when it is opened: enough to
/// tell its kind and frame its first record, which is then read again only if it is longer
/// (every process of a job opens every object so; an ArrayRecord file, told by them, is
/// opened as ever, its first chunk read then).
const HEAD_BYTES: u64 = 1 << 10;

/// A file's index: made when it was opened, or (a stated count's file) when first needed.
#[derive(Debug, Default)]
pub struct FileIndex {
    made: OnceLock<RecordIndex>,
    stated: Option<Stated>,
}

/// What a file whose count was stated knows before its index is made, and how to make it.
#[derive(Debug)]
struct Stated {
    records: u64,
    /// Where its last record ends: the object's size.
    end: u64,
    /// Its first record's bytes in the object, framing included.
    head: Range<u64>,
    /// Those bytes, read with the first ones (or after them, where it is longer).
    head_bytes: Vec<u8>,
    options: IndexOptions,
    /// Held while the index is made: the threads that need it meanwhile wait for it.
    making: Mutex<()>,
}

impl PartialEq for FileIndex {
    fn eq(&self, other: &FileIndex) -> bool {
        (self.made.get(), self.len()) == (other.made.get(), other.len())
    }
}

impl PartialEq<RecordIndex> for FileIndex {
    fn eq(&self, other: &RecordIndex) -> bool {
        self.made.get() == Some(other)
    }
}

impl From<RecordIndex> for FileIndex {
    fn from(index: RecordIndex) -> FileIndex {
        FileIndex {
            made: OnceLock::from(index),
            stated: None,
        }
    }
}

/// "Its index was not made", where a caller forgot [`IndexedFile::ready`].
const NOT_MADE: &str = "a stated file's index is made (IndexedFile::ready) before its records past the first are located";

impl FileIndex {
    /// The record count its dataset's metadata stated, where the file was opened by it.
    pub fn stated(&self) -> Option<u64> {
        self.stated.as_ref().map(|stated| stated.records)
    }

    /// The index, if it is made.
    pub fn get(&self) -> Option<&RecordIndex> {
        self.made.get()
    }

    /// The index; made already (a caller made the file [`ready`](IndexedFile::ready)).
    ///
    /// # Panics
    ///
    /// When it is not made.
    pub fn made(&self) -> &RecordIndex {
        self.made.get().expect(NOT_MADE)
    }

    /// Records in the file: as stated, or as its index counts them.
    pub fn len(&self) -> u64 {
        match (self.made.get(), &self.stated) {
            (Some(index), _) => index.len(),
            (None, Some(stated)) => stated.records,
            (None, None) => 0,
        }
    }

    /// Whether the file holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of record `record`, framing included (see [`RecordIndex::range`]); before
    /// the index is made, the first record's alone.
    ///
    /// # Panics
    ///
    /// Before the index is made, for a record past the first.
    pub fn range(&self, record: u64) -> Range<u64> {
        match (self.made.get(), &self.stated) {
            (Some(index), _) => index.range(record),
            (None, Some(stated)) if record == 0 => stated.head.clone(),
            _ => panic!("{NOT_MADE}"),
        }
    }

    /// The bytes of the records `records` (see [`RecordIndex::span`]); before the index is
    /// made, of all of them alone (from the start to the object's end).
    ///
    /// # Panics
    ///
    /// Before the index is made, for any other records.
    pub fn span(&self, records: Range<u64>) -> Range<u64> {
        match (self.made.get(), &self.stated) {
            (Some(index), _) => index.span(records),
            (None, Some(stated)) if records == (0..stated.records) => 0..stated.end,
            (None, Some(_)) if records.is_empty() => 0..0,
            _ => panic!("{NOT_MADE}"),
        }
    }

    /// The bytes of the records `records`, from the index where it is made, else as many
    /// as the file's mean record takes: an estimate, for sizing what is read ahead.
    pub fn estimated_span_bytes(&self, records: Range<u64>) -> u64 {
        match (self.made.get(), &self.stated) {
            (Some(index), _) => {
                let span = index.span(records);
                span.end - span.start
            }
            (None, Some(stated)) => {
                let count = records.end.saturating_sub(records.start);
                (u128::from(stated.end) * u128::from(count) / u128::from(stated.records.max(1)))
                    as u64
            }
            (None, None) => 0,
        }
    }

    /// Asks the processor for record `record`'s entry, where the index is made.
    pub fn prefetch(&self, record: u64) {
        if let Some(index) = self.made.get() {
            index.prefetch(record);
        }
    }

    /// The first record's framed bytes, read when the file was opened, while its index is
    /// not made.
    pub(crate) fn head_bytes(&self) -> Option<&[u8]> {
        match (self.made.get(), &self.stated) {
            (None, Some(stated)) => Some(&stated.head_bytes),
            _ => None,
        }
    }
}

impl IndexedFile {
    /// Makes the file's index if it is not made (a file whose count was stated: see the
    /// module's documentation); once between the threads that ask.
    ///
    /// # Errors
    ///
    /// When the index cannot be made (see [`open_listed`]), or does not count the records
    /// stated, or ends before the object does.
    pub fn ready(&self) -> Result<&RecordIndex, Error> {
        if let Some(index) = self.index.get() {
            return Ok(index);
        }
        let stated = self
            .index
            .stated
            .as_ref()
            .expect("an index not made was stated");
        let _making = stated
            .making
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(index) = self.index.get() {
            return Ok(index);
        }
        let listed = self.version.clone().map(|version| (self.size, version));
        let opened = open_listed(&self.path, self.format, &stated.options, listed, true)?;
        let index = opened
            .index
            .made
            .into_inner()
            .expect("open_listed makes the index");
        let end = index.span(0..index.len()).end;
        if index.len() != stated.records || end != stated.end {
            let message = format!(
                "holds {} records ending at byte {end}, where its dataset's metadata (a manifest's \
                 part, or the shardLengths of dataset_info.json) states {} in {} bytes: the \
                 metadata is not this file's; open the dataset with stated_counts=False to count \
                 the records by reading every file",
                index.len(),
                stated.records,
                stated.end
            );
            return Err(Error::io(&self.path, io::Error::other(message)));
        }
        Ok(self.index.made.get_or_init(|| index))
    }
}

/// [`open_listed`], for a file whose record count `records` its dataset's metadata states:
/// an object in a store whose records are framed as they are is opened with one ranged read
/// of its first bytes, its index made when it is first read (see the module's
/// documentation); any other file is opened as [`open_listed`] opens it.
///
/// # Errors
///
/// As [`open_listed`]'s.
pub fn open_stated(
    path: &Path,
    format: Format,
    options: &IndexOptions,
    listed: Option<(u64, String)>,
    framed: bool,
    records: Option<u64>,
) -> Result<IndexedFile, Error> {
    let stated = records.filter(|_| is_url(path) && !options.salvage);
    let Some(records) = stated else {
        return open_listed(path, format, options, listed, framed);
    };
    let io_error = |err| Error::io(path, err);
    let (storage, at) = storage_for(path).map_err(io_error)?;
    let (size, version) = match listed {
        Some((size, version)) => (size, version),
        None => match storage.stat(&at).map_err(io_error)? {
            Some((size, Some(version))) => (size, version),
            _ => return open_listed(path, format, options, None, framed),
        },
    };
    let object = Object {
        url: &path.to_string_lossy(),
        size,
        version: Some(&version),
    };
    let sniffed = match options.spans.as_ref() {
        Some(spans) => sniff_kept(spans, object, HEAD_BYTES),
        None => None,
    };
    let (kind, prefix) = match sniffed {
        Some(sniffed) => sniffed,
        None => sniff(&*storage, &at, size, Some(&version), HEAD_BYTES).map_err(io_error)?,
    };
    let eagerly = || open_listed(path, format, options, Some((size, version.clone())), framed);
    if format == Format::Tf && !matches!(kind, Kind::Framed) {
        return eagerly();
    }
    let head_len = match format {
        Format::Tf => ofconvert_tfrecord::frame::decode_header(&prefix)
            .ok()
            .and_then(|length| {
                length.checked_add(
                    (ofconvert_tfrecord::frame::HEADER_LEN + ofconvert_tfrecord::frame::FOOTER_LEN)
                        as u64,
                )
            }),
        Format::Of => ofconvert_ofrecord::frame::decode_header(&prefix)
            .ok()
            .and_then(ofconvert_ofrecord::frame::framed_len),
    };
    // A file whose first record cannot be framed (or an empty one) is opened as ever: that
    // says what is wrong with it.
    let Some(head) = head_len
        .filter(|&len| len <= size && records > 0)
        .map(|len| 0..len)
    else {
        return eagerly();
    };
    let head_bytes = match prefix.get(..head.end as usize) {
        Some(bytes) => bytes.to_vec(),
        None => {
            let mut bytes = Vec::new();
            storage
                .read_ranges(&at, Some(&version), std::slice::from_ref(&head), &mut bytes)
                .map_err(io_error)?;
            bytes
        }
    };
    Ok(IndexedFile {
        path: path.to_path_buf(),
        data: at,
        format,
        index: FileIndex {
            made: OnceLock::new(),
            stated: Some(Stated {
                records,
                end: size,
                head,
                head_bytes,
                options: options.clone(),
                making: Mutex::new(()),
            }),
        },
        array_record: false,
        stored: None,
        decompressed: None,
        made: false,
        size,
        version: Some(version),
        skipped: SkippedRecords::default(),
    })
}
