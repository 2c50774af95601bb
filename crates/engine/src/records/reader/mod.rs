//! One reader for every record file, with positions in the file and the policies for
//! damaged records: OFRecord, and TensorFlow's two (TFRecord, plain or compressed, and
//! ArrayRecord, told from TFRecord by its first bytes; both hold `tf.train.Example`s).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use ofconvert_arrayrecord as arrayrecord;
use ofconvert_ofrecord::{self as ofrecord, ErrorKind as OfErrorKind};
use ofconvert_tfrecord::{self as tfrecord, Compression, ErrorKind as TfErrorKind, ReaderOptions};

use crate::error::{Error, ErrorKind};
use crate::naming::names::Format;
use crate::options::{Checksums, OnCorrupt};
use crate::progress::{Event, ProgressFn};
use crate::records::array::PastDamage;
use crate::records::damage::{is_damage, is_framing_damage, records, resumed};
use crate::records::detect;
use crate::records::SkippedRecords;
use crate::storage::{Opened, Storage};

/// Where a record is: the byte offset of its start in the file (in the decompressed stream
/// for compressed TFRecords) and its 0-based index. The one position type of both framing
/// crates.
pub type RecordAt = tfrecord::Position;

/// Bytes read between two progress reports. A report per read call would wake the thread
/// that draws progress once per large record, which cost a fifth of a conversion's CPU time.
const REPORT_BYTES: u64 = 1 << 20;

/// A raw file that reports the bytes read from it as progress, a mebibyte at a time (and
/// what is left when it is dropped).
pub(crate) struct Counted<'a> {
    file: Box<dyn Read + Send>,
    progress: Option<ProgressFn<'a>>,
    unreported: u64,
}

impl Counted<'_> {
    fn report(&mut self) {
        if let (Some(progress), bytes @ 1..) = (self.progress, self.unreported) {
            progress(Event::Progress { bytes, records: 0 });
        }
        self.unreported = 0;
    }
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.file.read(buf)?;
        self.unreported += read as u64;
        if self.unreported >= REPORT_BYTES {
            self.report();
        }
        Ok(read)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.report();
    }
}

enum Framed<'a> {
    Tf(tfrecord::Reader<Counted<'a>>),
    Of(ofrecord::Reader<Counted<'a>>),
    /// An ArrayRecord file, read in [`Format::Tf`]: its records are TensorFlow's as a
    /// TFRecord file's are.
    Array(arrayrecord::Reader<Counted<'a>>),
    /// An ArrayRecord file past a damaged chunk, read through its footer (salvaging).
    PastDamage(Box<PastDamage>),
}

/// Reads the records of one TFRecord, ArrayRecord or OFRecord file.
///
/// In [`Format::Tf`], an ArrayRecord file is told by its signature and TFRecord compression
/// is sniffed, from the first bytes. Positions are those of the file, also when reading
/// started from a known record further in (an ArrayRecord position is the offset of the chunk
/// that holds the record).
pub struct RecordReader<'a> {
    framed: Framed<'a>,
    path: PathBuf,
    base: RecordAt,
    compression: Compression,
    /// Where a record recovered while counting lands; it is not kept.
    scratch: Vec<u8>,
}

impl std::fmt::Debug for RecordReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordReader")
            .field("path", &self.path)
            .field("format", &self.format())
            .field("compression", &self.compression)
            .finish_non_exhaustive()
    }
}

impl RecordReader<'static> {
    /// Opens `path`, in `format` or, when `None`, in the format its content shows, checking
    /// TFRecord checksums or not.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened, or its format cannot be told
    /// ([`ErrorKind::UnknownFormat`]).
    pub fn open(path: &Path, format: Option<Format>, checksums: Checksums) -> Result<Self, Error> {
        let format = match format {
            Some(format) => format,
            None => detect::detect_format(path)
                .map_err(|err| Error::io(path, err))?
                .ok_or_else(|| Error::new(ErrorKind::UnknownFormat).in_file(path))?,
        };
        let (storage, at) =
            crate::storage::object::storage_for(path).map_err(|err| Error::io(path, err))?;
        RecordReader::open_at(&*storage, &at, format, checksums, None, None)
    }
}

impl<'a> RecordReader<'a> {
    /// Opens `path` with the reading starting at `start` (a record boundary found by an
    /// earlier pass; only for uncompressed files), reporting bytes read to `progress`.
    pub fn open_at(
        storage: &dyn Storage,
        path: &Path,
        format: Format,
        checksums: Checksums,
        start: Option<RecordAt>,
        progress: Option<ProgressFn<'a>>,
    ) -> Result<Self, Error> {
        let base = start.unwrap_or_default();
        let opened = storage
            .open(path, base.offset)
            .map_err(|err| Error::io(path, err))?;
        RecordReader::from_opened(opened, path, format, checksums, start, progress)
    }

    /// [`open_at`](RecordReader::open_at) of a file already opened at `start` (or at its
    /// beginning), as a run opens the next object ahead of its worker, or as a reader that
    /// keeps the bytes it streams wraps what the storage opened.
    ///
    /// # Errors
    ///
    /// As [`open_at`](RecordReader::open_at)'s, but for opening the file.
    pub fn from_opened(
        opened: Opened,
        path: &Path,
        format: Format,
        checksums: Checksums,
        start: Option<RecordAt>,
        progress: Option<ProgressFn<'a>>,
    ) -> Result<Self, Error> {
        let base = start.unwrap_or_default();
        let verify = checksums == Checksums::Verify;
        // What follows the start, when the file has a size (a pipe has none): a length that
        // runs past it is damage, found before any of it is read.
        let stream_len = opened.size.map(|size| size.saturating_sub(base.offset));
        let input = Counted {
            file: opened.reader,
            progress,
            unreported: 0,
        };
        let (framed, compression) = match format {
            Format::Of => (
                Framed::Of(match stream_len {
                    Some(len) => ofrecord::Reader::new(input).with_stream_len(len),
                    None => ofrecord::Reader::new(input),
                }),
                Compression::None,
            ),
            Format::Tf if start.is_some() => tf_framed(input, path, verify, start, stream_len)?,
            Format::Tf => {
                // The first bytes tell an ArrayRecord file (a Riegeli signature) from a
                // TFRecord stream; they are read again by the reader that follows, and
                // counted then.
                let mut input = input;
                let file = std::mem::replace(&mut input.file, Box::new(io::empty()));
                let (is_array, file) =
                    detect::sniff_array_record(file).map_err(|err| Error::io(path, err))?;
                input.file = Box::new(file);
                if is_array {
                    (
                        Framed::Array(arrayrecord::Reader::new(input)),
                        Compression::None,
                    )
                } else {
                    tf_framed(input, path, verify, start, stream_len)?
                }
            }
        };
        Ok(RecordReader {
            framed,
            path: path.to_path_buf(),
            base,
            compression,
            scratch: Vec::new(),
        })
    }

    /// The file's format.
    pub fn format(&self) -> Format {
        match self.framed {
            Framed::Tf(_) | Framed::Array(_) | Framed::PastDamage(_) => Format::Tf,
            Framed::Of(_) => Format::Of,
        }
    }

    /// The compression of a TFRecord file (`None` for OFRecord and ArrayRecord, whose
    /// chunks are compressed each on its own).
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// How the file stores its records, as `count` and manifests name it: `none`, `gzip` or
    /// `zlib` (TensorFlow's `compression_type`, in lower case) for a TFRecord or OFRecord
    /// file, `array_record` for an ArrayRecord file.
    pub fn stored_as(&self) -> &'static str {
        if self.is_array_record() {
            "array_record"
        } else {
            self.compression.name()
        }
    }

    /// Whether the file is an ArrayRecord file.
    pub fn is_array_record(&self) -> bool {
        matches!(self.framed, Framed::Array(_) | Framed::PastDamage(_))
    }

    /// Whether reading can start at a record further in, at the position an earlier pass
    /// found it at: in an uncompressed TFRecord or an OFRecord file. (An ArrayRecord file is
    /// read from its start, its records coming in chunks.)
    pub fn seekable(&self) -> bool {
        match self.framed {
            Framed::Tf(_) => self.compression == Compression::None,
            Framed::Of(_) => true,
            Framed::Array(_) | Framed::PastDamage(_) => false,
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the next record starts.
    pub fn position(&self) -> RecordAt {
        let local = match &self.framed {
            Framed::Tf(reader) => reader.position(),
            Framed::Of(reader) => reader.position(),
            Framed::Array(reader) => reader.position(),
            Framed::PastDamage(past) => past.position(),
        };
        local.after(self.base)
    }

    /// Reads the next record into `buf`. `Ok(None)` at the end.
    ///
    /// # Errors
    ///
    /// Framing errors, with the file and position. After a TFRecord data-checksum mismatch
    /// or an OFRecord zero-length record, [`recover`](RecordReader::recover) lets reading go
    /// on; after any other error the reader is done.
    pub fn read(&mut self, buf: &mut Vec<u8>) -> Result<Option<RecordAt>, Error> {
        let at = self.position();
        let found = match &mut self.framed {
            Framed::Tf(reader) => reader
                .read_record(buf)
                .map_err(|err| Error::tfrecord(&self.path, self.base, err))?,
            Framed::Of(reader) => reader
                .read_record(buf)
                .map_err(|err| Error::ofrecord(&self.path, self.base, err))?,
            Framed::Array(reader) => reader
                .read_record(buf)
                .map_err(|err| Error::arrayrecord(&self.path, err))?,
            Framed::PastDamage(past) => past
                .read(buf)
                .map_err(|err| Error::arrayrecord(&self.path, err))?,
        };
        Ok(found.then_some(at))
    }

    /// Reads the next record as [`read`](RecordReader::read) does, but leaves a record that
    /// lies whole in the reader's buffer where it is rather than copying it into `buf`:
    /// [`record`](RecordReader::record) gives its data, wherever it is.
    ///
    /// # Errors
    ///
    /// As [`read`](RecordReader::read).
    pub fn read_in_place(&mut self, buf: &mut Vec<u8>) -> Result<Option<RecordAt>, Error> {
        let at = self.position();
        let found = match &mut self.framed {
            Framed::Tf(reader) => reader
                .read_record_in_place(buf)
                .map_err(|err| Error::tfrecord(&self.path, self.base, err))?,
            Framed::Of(reader) => reader
                .read_record_in_place(buf)
                .map_err(|err| Error::ofrecord(&self.path, self.base, err))?,
            // Records come out of a decoded chunk: copied into `buf`.
            Framed::Array(reader) => reader
                .read_record(buf)
                .map_err(|err| Error::arrayrecord(&self.path, err))?,
            Framed::PastDamage(past) => past
                .read(buf)
                .map_err(|err| Error::arrayrecord(&self.path, err))?,
        };
        Ok(found.then_some(at))
    }

    /// Hands the records that lie whole and sound in the reader's buffer to `each`, with
    /// their positions, in place and in order, before index `end` (`None`: to the end of the
    /// file), until `each` returns false; returns how many it handed. It reads nothing and
    /// reports nothing: [`read_salvaging`](RecordReader::read_salvaging) reads the next
    /// record, refilling the buffer, or meets the damage that stopped the run. None are
    /// handed where only `read_salvaging` can tell a record is sound: an ArrayRecord file,
    /// and an OFRecord salvaged outside a bounded work item (each record is parsed first,
    /// a wrong length being its only sign of damage).
    pub(crate) fn take_run(
        &mut self,
        end: Option<u64>,
        policy: OnCorrupt,
        mut each: impl FnMut(RecordAt, &[u8]) -> bool,
    ) -> u64 {
        let max = end.map_or(u64::MAX, |end| end.saturating_sub(self.position().index));
        let base = self.base;
        match &mut self.framed {
            Framed::Tf(reader) => reader.take_run(max, |at, data| each(at.after(base), data)),
            Framed::Of(reader) if policy != OnCorrupt::Skip || end.is_some() => {
                reader.take_run(max, |at, data| each(at.after(base), data))
            }
            _ => 0,
        }
    }

    /// The data of the record last read, `buf` being the buffer that read was given: in the
    /// reader's buffer after a [`read_in_place`](RecordReader::read_in_place) that left it
    /// there, else `buf`.
    pub fn record<'s>(&'s self, buf: &'s [u8]) -> &'s [u8] {
        match &self.framed {
            Framed::Tf(reader) => reader.last_record(buf),
            Framed::Of(reader) => reader.last_record(buf),
            Framed::Array(_) | Framed::PastDamage(_) => buf,
        }
    }

    /// Steps over the next record without reading its data (nor checking its data
    /// checksum). Returns where it was, `Ok(None)` at the end.
    ///
    /// # Errors
    ///
    /// As [`read`](RecordReader::read).
    pub fn skip(&mut self) -> Result<Option<RecordAt>, Error> {
        let at = self.position();
        let found = match &mut self.framed {
            Framed::Tf(reader) => reader
                .skip_record()
                .map_err(|err| Error::tfrecord(&self.path, self.base, err))?
                .map(|_| ()),
            Framed::Of(reader) => reader
                .skip_record()
                .map_err(|err| Error::ofrecord(&self.path, self.base, err))?
                .map(|_| ()),
            // A chunk is decoded whole, its hashes checked: the record is read.
            Framed::Array(reader) => reader
                .read_record(&mut self.scratch)
                .map_err(|err| Error::arrayrecord(&self.path, err))?
                .then_some(()),
            Framed::PastDamage(past) => past
                .read(&mut self.scratch)
                .map_err(|err| Error::arrayrecord(&self.path, err))?
                .then_some(()),
        };
        Ok(found.map(|_| at))
    }

    /// Whether reading can go on after `err`, which this reader returned: after a data
    /// checksum mismatch (TFRecord) or a zero-length record (OFRecord) it can, the framing
    /// being intact; after any other error the reader is done.
    pub fn recover(&mut self, err: &Error) -> bool {
        self.recover_in_place(err)
    }

    /// Steps past the damage `err` reports when stepping over records: as
    /// [`recover`](RecordReader::recover), and after damage to the framing by resynchronising
    /// at the next good record (see [`read_salvaging`](RecordReader::read_salvaging)), a
    /// recovered record dropped. The damaged stretch counts as one record, as it does when
    /// converting, so that a pass that counts and one that converts agree on every index.
    /// `false` when the reader is done.
    pub(crate) fn step_past(&mut self, err: &Error) -> bool {
        if self.recover_in_place(err) {
            return true;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let resynced = matches!(self.resync(&mut scratch), Ok(Some(_)));
        self.scratch = scratch;
        resynced
    }

    /// Goes on after an error that leaves the framing intact.
    fn recover_in_place(&mut self, err: &Error) -> bool {
        match (&mut self.framed, err.kind()) {
            (Framed::Tf(reader), ErrorKind::TfRecord(TfErrorKind::DataCrcMismatch { .. })) => {
                reader.recover()
            }
            (Framed::Of(reader), ErrorKind::OfRecord(OfErrorKind::ZeroLength)) => reader.recover(),
            _ => false,
        }
    }

    /// Scans past damage to the framing for the next good record; with positions in the file.
    /// OFRecord payloads are told by whether they parse as an OFRecord: a heuristic, as
    /// OFRecord has no checksum.
    pub(crate) fn resync(&mut self, buf: &mut Vec<u8>) -> Result<Option<tfrecord::Resync>, Error> {
        let resync = match &mut self.framed {
            Framed::Tf(reader) => reader
                .resync(buf)
                .map_err(|err| Error::tfrecord(&self.path, self.base, err))?,
            Framed::Of(reader) => reader
                .resync(buf, is_ofrecord)
                .map_err(|err| Error::ofrecord(&self.path, self.base, err))?,
            // Its reader stops at the first damaged chunk: what follows is read through the
            // footer, from the first chunk after the damaged one.
            Framed::Array(reader) => match PastDamage::after(&self.path, reader.position()) {
                Some((past, resync)) => {
                    self.framed = Framed::PastDamage(Box::new(past));
                    Some(resync)
                }
                None => None,
            },
            Framed::PastDamage(past) => past.skip_chunk(),
        };
        Ok(resync.map(|resync| tfrecord::Resync {
            index: self.base.index + resync.index,
            damaged: self.base.offset + resync.damaged.start..self.base.offset + resync.damaged.end,
            recovered: resync.recovered,
        }))
    }

    /// Reads the next record before index `end` (`None`: to the end of the file) under a
    /// damage policy: with [`OnCorrupt::Skip`], records that can be stepped over are (and
    /// counted in `skipped`). After damage to the framing, reading resumes at the next good
    /// record (TFRecord: where a length and its checksum agree, confirmed by the data
    /// checksum; OFRecord: a heuristic), the bytes passed over are reported by offset and
    /// count as one record, and the damaged record itself comes back when its data checksum
    /// vouches for it. The record is read in place: [`record`](RecordReader::record) gives
    /// its data.
    pub(crate) fn read_salvaging(
        &mut self,
        buf: &mut Vec<u8>,
        policy: OnCorrupt,
        skipped: &mut SkippedRecords,
        end: Option<u64>,
    ) -> Result<Option<RecordAt>, Error> {
        // Set when damage from the file's first byte was passed over: if no record follows,
        // the file holds none.
        let mut damaged_from_start = false;
        loop {
            // Stepping over damage must not run into the records from `end` on: another work
            // item reads (and counts) those.
            if end.is_some_and(|end| self.position().index >= end) {
                return Ok(None);
            }
            // What was wrong, and where: the damaged record's offset and index.
            let (detail, at) = match self.read_in_place(buf) {
                Ok(None) if damaged_from_start => return Err(self.no_record_in_it()),
                // Not within a bounded work item: the pass that cut the file into work items
                // stepped over records without parsing them, and its record boundaries must
                // stay those of the work items that read them.
                Ok(Some(at)) if policy == OnCorrupt::Skip && end.is_none() => {
                    match self.reject_misframed(buf) {
                        Some(err) => {
                            let detail =
                                crate::error::error_chain(&Error::mapping(&self.path, at, err));
                            (detail, at)
                        }
                        None => return Ok(Some(at)),
                    }
                }
                Ok(found) => return Ok(found),
                Err(err) if policy == OnCorrupt::Skip && is_damage(&err) => {
                    let detail = crate::error::error_chain(&err);
                    if self.recover_in_place(&err) {
                        skipped.note_corrupt(detail);
                        continue;
                    }
                    (detail, self.place_of(&err))
                }
                Err(err) if self.starts_file(self.place_of(&err)) && is_framing_damage(&err) => {
                    if self.resync(buf)?.is_some() && self.read_in_place(buf)?.is_none() {
                        return Err(self.no_record_in_it());
                    }
                    return Err(err);
                }
                Err(err) => return Err(err),
            };
            let resync = self.resync(buf)?;
            match &resync {
                Some(resync) if resync.recovered => {
                    skipped.note_recovered(format!("{detail} ({})", resumed(Some(resync))));
                    return Ok(Some(RecordAt {
                        offset: resync.damaged.start,
                        index: resync.index,
                    }));
                }
                // Past an ArrayRecord's damage, the footer says how many records the
                // skipped chunk held: none, when the damage was in padding.
                Some(past) if self.is_array_record() => {
                    let lost = past.index.saturating_sub(at.index);
                    skipped.note_lost(
                        format!("{detail} ({}; {} lost)", resumed(Some(past)), records(lost)),
                        lost,
                    );
                }
                Some(_) => {
                    damaged_from_start = self.starts_file(at);
                    skipped.note_corrupt(format!("{detail} ({})", resumed(resync.as_ref())));
                }
                None => {
                    skipped.note_corrupt(format!("{detail} ({})", resumed(None)));
                    return Ok(None);
                }
            }
        }
    }

    /// Where `err` says the damage is: the record it names (the reader's position when it
    /// names none).
    fn place_of(&self, err: &Error) -> RecordAt {
        let here = self.position();
        RecordAt {
            offset: err.offset().unwrap_or(here.offset),
            index: err.record().unwrap_or(here.index),
        }
    }

    /// Whether damage `at` is at the first byte of an uncompressed TFRecord or OFRecord file,
    /// which may then be no such file at all (a text file named `.tfrecord`): nothing to skip,
    /// nothing to hint.
    fn starts_file(&self, at: RecordAt) -> bool {
        at.offset == 0 && self.compression == Compression::None && !self.is_array_record()
    }

    /// That no record is framed anywhere in the file: it is not of the format it is read as.
    fn no_record_in_it(&self) -> Error {
        let format = match self.format() {
            Format::Tf => "TFRecord",
            Format::Of => "OFRecord",
        };
        Error::new(ErrorKind::NoRecordFramed { format })
            .in_file(&self.path)
            .at(self.base.offset, self.base.index)
    }

    /// When salvaging OFRecords, which have no checksum: whether the record just read in
    /// `buf` fails to parse, and so may carry a wrong length that runs into the records after
    /// it. The reader then steps back to its start, for a resync to find its true end (see
    /// [`ofrecord::Reader::reject`]). `None` for a TFRecord, whose checksums already vouch
    /// for its framing, for a record that parses, and for one too large to step back over
    /// (conversion then reports it as it does any record that does not parse).
    pub(crate) fn reject_misframed(&mut self, buf: &[u8]) -> Option<ofconvert_bridge::Error> {
        let Framed::Of(reader) = &mut self.framed else {
            return None;
        };
        let err = ofconvert_bridge::visit_ofrecord(reader.last_record(buf), |_, _, _| {}).err()?;
        reader.reject().then_some(err)
    }
}

/// The TFRecord reader over `input`: compression sniffed unless reading starts at `start`
/// further in (uncompressed files only), the stream's length known when it is uncompressed.
fn tf_framed<'a>(
    input: Counted<'a>,
    path: &Path,
    verify: bool,
    start: Option<RecordAt>,
    stream_len: Option<u64>,
) -> Result<(Framed<'a>, Compression), Error> {
    let options = ReaderOptions {
        verify_length_crc: verify,
        verify_data_crc: verify,
        compression: Compression::None,
    };
    let (reader, compression) = if start.is_some() {
        (
            tfrecord::Reader::with_options(input, options),
            Compression::None,
        )
    } else {
        tfrecord::Reader::sniffed(input, options).map_err(|err| Error::io(path, err))?
    };
    let reader = match (compression, stream_len) {
        (Compression::None, Some(len)) => reader.with_stream_len(len),
        _ => reader,
    };
    Ok((Framed::Tf(reader), compression))
}

/// Whether `payload` could be a record of an OFRecord file: it parses as an OFRecord, and is
/// not empty (OneFlow aborts on an empty one).
fn is_ofrecord(payload: &[u8]) -> bool {
    !payload.is_empty() && ofconvert_bridge::visit_ofrecord(payload, |_, _, _| {}).is_ok()
}
