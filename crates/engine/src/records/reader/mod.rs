//! One reader for every record file, with positions in the file and the policies for
//! damaged records: OFRecord, and TensorFlow's three (TFRecord, plain or compressed,
//! ArrayRecord and TFDS's Parquet, told from TFRecord by their first bytes; all hold
//! `tf.train.Example`s).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use ofconvert_arrayrecord as arrayrecord;
use ofconvert_ofrecord as ofrecord;
use ofconvert_parquet as parquet;
use ofconvert_tfrecord::{self as tfrecord, Compression, ReaderOptions};

use crate::error::{Error, ErrorKind};
use crate::naming::names::Format;
use crate::options::{Checksums, OnCorrupt};
use crate::progress::{Event, ProgressFn};
use crate::records::array::PastDamage;
use crate::records::detect;
use crate::storage::{Opened, Storage};

mod salvage;

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
    /// A Parquet file of serialized records (TFDS's layout), read in [`Format::Tf`]: held
    /// whole, its row groups decoded one at a time through its footer.
    Parquet(Box<parquet::Reader>),
}

/// Reads the records of one TFRecord, ArrayRecord, Parquet or OFRecord file.
///
/// In [`Format::Tf`], an ArrayRecord file is told by its signature, a Parquet file by its
/// magic, and TFRecord compression is sniffed, from the first bytes. Positions are those of
/// the file, also when reading started from a known record further in (an ArrayRecord
/// position is the offset of the chunk that holds the record, a Parquet one that of its row
/// group's column).
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
                // The first bytes tell an ArrayRecord file (a Riegeli signature) or a
                // Parquet file (`PAR1`) from a TFRecord stream; they are read again by the
                // reader that follows, and counted then.
                let mut input = input;
                let file = std::mem::replace(&mut input.file, Box::new(io::empty()));
                let (head, file) = detect::sniff_head(file).map_err(|err| Error::io(path, err))?;
                input.file = Box::new(file);
                match head {
                    detect::Head::ArrayRecord => (
                        Framed::Array(arrayrecord::Reader::new(input)),
                        Compression::None,
                    ),
                    detect::Head::Parquet => {
                        (parquet_framed(input, path, stream_len)?, Compression::None)
                    }
                    detect::Head::Stream => tf_framed(input, path, verify, start, stream_len)?,
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
            Framed::Tf(_) | Framed::Array(_) | Framed::PastDamage(_) | Framed::Parquet(_) => {
                Format::Tf
            }
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
    /// file, `array_record` for an ArrayRecord file, `parquet` for a Parquet file.
    pub fn stored_as(&self) -> &'static str {
        match self.framed {
            Framed::Array(_) | Framed::PastDamage(_) => "array_record",
            Framed::Parquet(_) => "parquet",
            Framed::Tf(_) | Framed::Of(_) => self.compression.name(),
        }
    }

    /// Whether the file is an ArrayRecord file.
    pub fn is_array_record(&self) -> bool {
        matches!(self.framed, Framed::Array(_) | Framed::PastDamage(_))
    }

    /// Whether the file's records are found through its footer (an ArrayRecord or Parquet
    /// file), which no index file stands for.
    pub fn indexed_by_footer(&self) -> bool {
        matches!(
            self.framed,
            Framed::Array(_) | Framed::PastDamage(_) | Framed::Parquet(_)
        )
    }

    /// Whether reading can start at a record further in, at the position an earlier pass
    /// found it at: in an uncompressed TFRecord or an OFRecord file. (An ArrayRecord file is
    /// read from its start, its records coming in chunks.)
    pub fn seekable(&self) -> bool {
        match self.framed {
            Framed::Tf(_) => self.compression == Compression::None,
            Framed::Of(_) => true,
            Framed::Array(_) | Framed::PastDamage(_) | Framed::Parquet(_) => false,
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
            Framed::Parquet(reader) => {
                let at = reader.position();
                RecordAt {
                    offset: at.offset,
                    index: at.index,
                }
            }
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
            Framed::Parquet(reader) => reader
                .read_record(buf)
                .map_err(|err| Error::parquet(&self.path, err))?,
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
            Framed::Parquet(reader) => reader
                .read_record(buf)
                .map_err(|err| Error::parquet(&self.path, err))?,
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
            Framed::Array(_) | Framed::PastDamage(_) | Framed::Parquet(_) => buf,
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
            // A row group is decoded whole: the record is read.
            Framed::Parquet(reader) => reader
                .read_record(&mut self.scratch)
                .map_err(|err| Error::parquet(&self.path, err))?
                .then_some(()),
        };
        Ok(found.map(|_| at))
    }
}

/// The Parquet reader over `input`, a Parquet file (`stream_len` bytes long, when known)
/// read whole into memory: its footer, at its end, says where its row groups are.
fn parquet_framed<'a>(
    mut input: Counted<'a>,
    path: &Path,
    stream_len: Option<u64>,
) -> Result<Framed<'a>, Error> {
    let mut bytes = Vec::with_capacity(stream_len.unwrap_or(0).min(1 << 30) as usize);
    input
        .read_to_end(&mut bytes)
        .map_err(|err| Error::io(path, err))?;
    let reader = parquet::Reader::new(bytes.into()).map_err(|err| Error::parquet(path, err))?;
    Ok(Framed::Parquet(Box::new(reader)))
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
