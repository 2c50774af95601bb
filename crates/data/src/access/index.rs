//! Each file's index of record offsets, in the `index` command's format (one line per record,
//! `OFFSET LENGTH`, as DALI and the Python `tfrecord` package read it), for TFRecord and
//! OFRecord files alike: read from beside the file where it is, else from the cache, else
//! built in one streaming pass (memory: the offsets alone) and kept beside a local file, or
//! in the cache for a bucket or a place that cannot be written. A compressed TFRecord, and
//! an ArrayRecord file (its records come in compressed chunks), are copied into the cache
//! once as an uncompressed TFRecord, and the copy indexed.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use ofconvert_tfrecord::{frame, Compression};

use crate::access::cache::{self, cache_dir, cache_name};
use ofconvert_engine::layout::INDEX_SUFFIX;
use ofconvert_engine::Checksums;
use ofconvert_engine::Format;
use ofconvert_engine::RecordReader;
use ofconvert_engine::{Error, ErrorKind};
use ofconvert_storage::object::{is_url, storage_for};
use ofconvert_storage::Storage;

/// Where each record of one file starts, and where the last ends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordIndex {
    /// The start of each record, then the end of the last: one more than there are records.
    bounds: Vec<u64>,
}

impl RecordIndex {
    /// An index of records that start at `starts` and end where the next one starts, the
    /// last at `end`.
    pub fn new(mut starts: Vec<u64>, end: u64) -> RecordIndex {
        starts.push(end);
        RecordIndex { bounds: starts }
    }

    /// How many records.
    pub fn len(&self) -> u64 {
        self.bounds.len().saturating_sub(1) as u64
    }

    /// Whether there is no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes record `index` takes, framing included. Panics past the last record.
    pub fn range(&self, index: u64) -> Range<u64> {
        let index = index as usize;
        self.bounds[index]..self.bounds[index + 1]
    }

    /// Asks the processor for record `index`'s entry ahead of [`range`](RecordIndex::range):
    /// a reader of records far apart asks for all of theirs first, then reads them.
    pub fn prefetch(&self, index: u64) {
        crate::memory::prefetch(self.bounds.get(index as usize));
    }

    /// The bytes the records `records` take, from the first's start to the last's end.
    pub fn span(&self, records: Range<u64>) -> Range<u64> {
        self.bounds[records.start as usize]..self.bounds[records.end as usize]
    }

    /// Reads an index in the `index` command's format; `None` unless it covers a file of
    /// `size` bytes record after record from its start (an index of another file, or of
    /// this one before it changed).
    pub fn parse(text: &[u8], size: u64) -> Option<RecordIndex> {
        let mut bounds = vec![0];
        for line in text.split(|&byte| byte == b'\n') {
            if line.is_empty() {
                continue;
            }
            let line = std::str::from_utf8(line).ok()?;
            let (offset, length) = line.trim().split_once(' ')?;
            let (offset, length): (u64, u64) = (offset.parse().ok()?, length.trim().parse().ok()?);
            if bounds.last() != Some(&offset) || length == 0 {
                return None;
            }
            bounds.push(offset.checked_add(length)?);
        }
        (bounds.last() == Some(&size)).then_some(RecordIndex { bounds })
    }

    /// The index in the `index` command's format.
    pub fn to_text(&self) -> Vec<u8> {
        let mut text = Vec::with_capacity(self.bounds.len() * 16);
        for pair in self.bounds.windows(2) {
            // Writing into a Vec cannot fail.
            let _ = writeln!(text, "{} {}", pair[0], pair[1] - pair[0]);
        }
        text
    }
}

/// What a file with no random access of its own was, that [`open_indexed`] copied into the
/// cache as an uncompressed TFRecord.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Copied {
    /// A GZIP or ZLIB TFRecord.
    Compressed(Compression),
    /// An ArrayRecord file.
    ArrayRecord,
}

impl Copied {
    /// `GZIP`, `ZLIB` or `ArrayRecord`.
    pub fn name(self) -> &'static str {
        match self {
            Copied::Compressed(compression) => compression.tf_name(),
            Copied::ArrayRecord => "ArrayRecord",
        }
    }
}

/// How [`open_indexed`] finds or makes an index.
#[derive(Clone, Debug)]
pub struct IndexOptions {
    /// Where indexes and decompressed copies go when not beside the data; `None` for the
    /// default ([`cache_dir`](crate::access::cache::cache_dir)).
    pub cache_dir: Option<PathBuf>,
    /// Whether the streaming pass checks TFRecord length checksums (data checksums are
    /// checked when a record is read).
    pub checksums: Checksums,
    /// Whether a compressed TFRecord (or an ArrayRecord file) is copied into the cache (else
    /// it is an error that says what to do).
    pub decompress: bool,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            cache_dir: None,
            checksums: Checksums::Verify,
            decompress: true,
        }
    }
}

/// A record file ready for random access.
#[derive(Debug)]
pub struct IndexedFile {
    /// The file as it was named (a path or a URL): what errors name.
    pub path: PathBuf,
    /// Where its records' bytes are read: the file itself, or the uncompressed copy of a
    /// compressed TFRecord or of an ArrayRecord file (a local file in the cache).
    pub data: PathBuf,
    /// Its format.
    pub format: Format,
    /// Its records.
    pub index: RecordIndex,
    /// Where the index is kept (`None` when it could be kept nowhere).
    pub stored: Option<PathBuf>,
    /// What the file was copied from, for a compressed TFRecord or an ArrayRecord file.
    pub decompressed: Option<Copied>,
    /// Whether this call made the index (and the decompressed copy) rather than finding it.
    pub made: bool,
    /// The file's size in bytes when it was opened.
    pub size: u64,
    /// Its version (a store's ETag) when it was opened, where there is one.
    pub version: Option<String>,
}

/// Opens `path` (a local path or a URL, a record file of `format`) for random access: finds
/// its index, or makes one and keeps it (see the module's documentation).
///
/// # Errors
///
/// When the file cannot be read, is damaged before its end (the streaming pass stops at the
/// damage), or is compressed while `options.decompress` is off.
pub fn open_indexed(
    path: &Path,
    format: Format,
    options: &IndexOptions,
) -> Result<IndexedFile, Error> {
    let io_error = |err| Error::io(path, err);
    let (storage, at) = storage_for(path).map_err(io_error)?;
    // One request to a store for both.
    let (size, version) = storage
        .stat(&at)
        .map_err(io_error)?
        .ok_or_else(|| Error::new(ErrorKind::InputMissing).in_file(path))?;
    let remote = is_url(path);
    let source = if remote {
        path.to_string_lossy().into_owned()
    } else {
        fs::canonicalize(&at)
            .map_err(io_error)?
            .to_string_lossy()
            .into_owned()
    };
    let cache = cache_dir(options.cache_dir.as_deref());
    let copied = match format {
        Format::Tf => sniff(&*storage, &at, size).map_err(io_error)?,
        Format::Of => None,
    };
    let mut file = IndexedFile {
        path: path.to_path_buf(),
        data: at.clone(),
        format,
        index: RecordIndex::default(),
        stored: None,
        decompressed: None,
        made: false,
        size,
        version: version.clone(),
    };
    if let Some(copied) = copied {
        if !options.decompress {
            let what = match copied {
                Copied::Compressed(compression) => format!("a {} TFRecord", compression.tf_name()),
                Copied::ArrayRecord => "an ArrayRecord file".to_owned(),
            };
            return Err(Error::new(ErrorKind::Usage(format!(
                "{} is {what}, which this reader has no random access to: let it be copied \
                 into the cache once, or store the data uncompressed (`ofconvert tf2of` writes \
                 OFRecords, which have it)",
                path.display(),
            )))
            .in_file(path));
        }
        file.decompressed = Some(copied);
        file.data = cache.join(cache_name(&source, size, version.as_deref(), ""));
        let stored = file.data.with_file_name(format!(
            "{}{INDEX_SUFFIX}",
            file.data.file_name().unwrap_or_default().to_string_lossy()
        ));
        let copied = fs::metadata(&file.data).ok().map(|meta| meta.len());
        if let (Some(copied), Ok(text)) = (copied, fs::read(&stored)) {
            if let Some(index) = RecordIndex::parse(&text, copied) {
                file.index = index;
                file.stored = Some(stored);
                return Ok(file);
            }
        }
        file.index = decompress(&*storage, &at, &file.data, options.checksums)?;
        file.made = true;
        cache::write_whole(&stored, &file.index.to_text())
            .map_err(|err| Error::io(&stored, err))?;
        file.stored = Some(stored);
        return Ok(file);
    }

    let beside = PathBuf::from(format!("{}{INDEX_SUFFIX}", at.display()));
    let cached = cache.join(cache_name(&source, size, version.as_deref(), INDEX_SUFFIX));
    // An index beside a local file is looked for first. In a store, the cache's comes first:
    // it is of this very version of the object (its ETag) and costs no request.
    let candidates = if remote {
        [&cached, &beside]
    } else {
        [&beside, &cached]
    };
    let found = candidates.into_iter().find_map(|candidate| {
        let text = if remote && candidate == &beside {
            storage.read(candidate).ok().flatten()?
        } else {
            fs::read(candidate).ok()?
        };
        Some((RecordIndex::parse(&text, size)?, candidate.clone()))
    });
    if let Some((index, stored)) = found {
        file.index = index;
        file.stored = Some(stored);
        return Ok(file);
    }
    file.index = build(&*storage, &at, format, options.checksums)?;
    file.made = true;
    let text = file.index.to_text();
    // Beside a local file when its directory can be written; else in the cache; else
    // nowhere, which only costs the next reader the same pass.
    let places = if remote {
        vec![cached]
    } else {
        vec![beside, cached]
    };
    file.stored = places
        .into_iter()
        .find(|place| cache::write_whole(place, &text).is_ok());
    Ok(file)
}

/// Whether a TensorFlow record file must be copied to be read at random, and what it is,
/// from its first bytes: `None` for an uncompressed TFRecord.
fn sniff(storage: &dyn Storage, path: &Path, size: u64) -> io::Result<Option<Copied>> {
    let signature = &ofconvert_arrayrecord::SIGNATURE;
    let mut prefix = Vec::new();
    let first = 0..size.min(signature.len() as u64);
    storage.read_ranges(path, std::slice::from_ref(&first), &mut prefix)?;
    if prefix == signature {
        return Ok(Some(Copied::ArrayRecord));
    }
    Ok(match Compression::sniff(&prefix[..prefix.len().min(16)]) {
        Compression::None => None,
        compression => Some(Copied::Compressed(compression)),
    })
}

/// Indexes `at` in one pass over its records, stepping over their data.
fn build(
    storage: &dyn Storage,
    at: &Path,
    format: Format,
    checksums: Checksums,
) -> Result<RecordIndex, Error> {
    let mut reader = RecordReader::open_at(storage, at, format, checksums, None, None)?;
    let mut starts = Vec::new();
    while let Some(record) = reader.skip()? {
        starts.push(record.offset);
    }
    Ok(RecordIndex::new(starts, reader.position().offset))
}

/// Writes the decompressed records of `at` to the local file `copy` (whole or not at all)
/// and returns their index.
fn decompress(
    storage: &dyn Storage,
    at: &Path,
    copy: &Path,
    checksums: Checksums,
) -> Result<RecordIndex, Error> {
    let mut reader = RecordReader::open_at(storage, at, Format::Tf, checksums, None, None)?;
    let temp = cache::temporary_beside(copy).map_err(|err| Error::io(copy, err))?;
    let written = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, fs::File::create(&temp)?);
        let (mut starts, mut end, mut buf) = (Vec::new(), 0u64, Vec::new());
        let mut header = [0; frame::HEADER_LEN];
        while reader.read(&mut buf).map_err(Failed::Read)?.is_some() {
            starts.push(end);
            frame::encode_header(buf.len() as u64, &mut header);
            out.write_all(&header)?;
            out.write_all(&buf)?;
            out.write_all(&frame::encode_footer(&buf))?;
            end += (frame::HEADER_LEN + buf.len() + frame::FOOTER_LEN) as u64;
        }
        out.into_inner()
            .map_err(|err| err.into_error())?
            .sync_all()?;
        fs::rename(&temp, copy)?;
        Ok(RecordIndex::new(starts, end))
    })();
    written.map_err(|failed| {
        let _ = fs::remove_file(&temp);
        match failed {
            Failed::Read(err) => err,
            Failed::Write(err) => Error::io(copy, err),
        }
    })
}

enum Failed {
    Read(Error),
    Write(io::Error),
}

impl From<io::Error> for Failed {
    fn from(err: io::Error) -> Self {
        Failed::Write(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofconvert_tfrecord::Writer;

    fn tfrecord(path: &Path, records: &[&[u8]], compression: Compression) {
        let mut writer = Writer::with_compression(fs::File::create(path).unwrap(), compression);
        for record in records {
            writer.write_record(record).unwrap();
        }
        writer.finish().unwrap();
    }

    fn options(cache: &Path) -> IndexOptions {
        IndexOptions {
            cache_dir: Some(cache.to_path_buf()),
            ..IndexOptions::default()
        }
    }

    #[test]
    fn an_index_reads_back_and_refuses_another_files() {
        let index = RecordIndex::new(vec![0, 16, 40], 57);
        assert_eq!(index.to_text(), b"0 16\n16 24\n40 17\n");
        assert_eq!(
            RecordIndex::parse(&index.to_text(), 57),
            Some(index.clone())
        );
        assert_eq!(index.range(1), 16..40);
        assert_eq!(index.span(1..3), 16..57);
        for (text, size) in [
            (&b"0 16\n16 24\n40 17\n"[..], 58),
            (b"0 16\n17 23\n40 17\n", 57),
            (b"0 16\nsixteen 24\n", 40),
            (b"4 16\n", 20),
        ] {
            assert_eq!(RecordIndex::parse(text, size), None, "{text:?}");
        }
        assert_eq!(
            RecordIndex::parse(b"", 0),
            Some(RecordIndex::new(vec![], 0))
        );
    }

    #[test]
    fn an_index_is_built_once_kept_beside_the_file_and_found_there_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tfrecord");
        tfrecord(&path, &[b"one", b"three", b""], Compression::None);
        let cache = dir.path().join("cache");
        let opened = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
        assert_eq!(opened.index, RecordIndex::new(vec![0, 19, 40], 56));
        let beside = dir.path().join("a.tfrecord.idx");
        assert_eq!(opened.stored.as_deref(), Some(beside.as_path()));
        assert_eq!(fs::read(&beside).unwrap(), b"0 19\n19 21\n40 16\n");
        assert!(!cache.exists());

        // Found again; one that no longer fits the file is made anew.
        fs::write(&beside, b"0 56\n").unwrap();
        assert_eq!(
            open_indexed(&path, Format::Tf, &options(&cache))
                .unwrap()
                .index
                .len(),
            1
        );
        fs::write(&beside, b"0 19\n").unwrap();
        assert_eq!(
            open_indexed(&path, Format::Tf, &options(&cache))
                .unwrap()
                .index
                .len(),
            3
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_read_only_place_keeps_its_index_in_the_cache() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("ro");
        fs::create_dir(&data).unwrap();
        let path = data.join("part-00000");
        let mut bytes = Vec::new();
        for payload in [&b"\x0a\x00"[..], b"\x0a\x01\x0a"] {
            bytes.extend_from_slice(&(payload.len() as i64).to_le_bytes());
            bytes.extend_from_slice(payload);
        }
        fs::write(&path, &bytes).unwrap();
        fs::set_permissions(&data, fs::Permissions::from_mode(0o555)).unwrap();
        let cache = dir.path().join("cache");
        let opened = open_indexed(&path, Format::Of, &options(&cache));
        fs::set_permissions(&data, fs::Permissions::from_mode(0o755)).unwrap();
        let opened = opened.unwrap();
        assert_eq!(opened.index, RecordIndex::new(vec![0, 10], 21));
        // Running as root writes anyway; either way the index is kept somewhere.
        let stored = opened.stored.unwrap();
        assert!(
            stored.starts_with(&cache) || stored.starts_with(&data),
            "{stored:?}"
        );
        let again = open_indexed(&path, Format::Of, &options(&cache)).unwrap();
        assert_eq!(again.index, opened.index);
    }

    #[test]
    fn a_compressed_file_is_decompressed_into_the_cache_once_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tfrecord.gz");
        tfrecord(&path, &[b"one", b"three"], Compression::Gzip);
        let cache = dir.path().join("cache");
        let opened = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
        assert_eq!(
            opened.decompressed,
            Some(Copied::Compressed(Compression::Gzip))
        );
        assert!(opened.made);
        assert!(opened.data.starts_with(&cache));
        let mut plain = Vec::new();
        frame::encode_record(b"one", &mut plain);
        frame::encode_record(b"three", &mut plain);
        assert_eq!(fs::read(&opened.data).unwrap(), plain);
        assert_eq!(opened.index, RecordIndex::new(vec![0, 19], 40));
        assert!(!dir.path().join("a.tfrecord.gz.idx").exists());

        let modified = fs::metadata(&opened.data).unwrap().modified().unwrap();
        let again = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
        assert_eq!(
            fs::metadata(&again.data).unwrap().modified().unwrap(),
            modified
        );

        let refused = IndexOptions {
            decompress: false,
            ..options(&cache)
        };
        let err = open_indexed(&path, Format::Tf, &refused).unwrap_err();
        assert!(err.to_string().contains("GZIP TFRecord"), "{err}");
    }

    #[test]
    fn damage_stops_the_pass_with_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tfrecord");
        tfrecord(&path, &[b"one", b"three"], Compression::None);
        let mut bytes = fs::read(&path).unwrap();
        bytes.truncate(30);
        fs::write(&path, bytes).unwrap();
        let err = open_indexed(&path, Format::Tf, &options(&dir.path().join("c"))).unwrap_err();
        assert_eq!((err.offset(), err.record()), (Some(19), Some(1)), "{err}");
        assert!(!dir.path().join("a.tfrecord.idx").exists());
    }
}
