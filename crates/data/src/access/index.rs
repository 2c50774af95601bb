//! Each file's index of record offsets, in the `index` command's format (one line per record,
//! `OFFSET LENGTH`, as DALI and the Python `tfrecord` package read it), for TFRecord and
//! OFRecord files alike: read from beside the file where it is, else from the cache, else
//! built in one streaming pass (memory: the offsets alone) and kept in the cache: nothing is
//! written into the data's folders unless asked ([`IndexOptions::beside`]), and then beside
//! a local file whose folder can be written. A compressed TFRecord is
//! copied into the cache once as an uncompressed TFRecord, and the copy indexed. An
//! ArrayRecord file's own footer is its index: an entry a chunk of records, read whole and
//! decoded when one of its records is.
//!
//! What is made of a whole read of an object in a store (its index, or its decompressed
//! copy) is made once between the processes of a machine that share the cache directory:
//! the first takes its lock ([`EntryLock`]) and makes it, the others wait for the lock and
//! find it made. With a cache of spans, the pass keeps the bytes it streams there, which the
//! epoch's reads of the object's spans are then served from: a cold start reads the object
//! from its store once.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use ofconvert_arrayrecord::IndexedReader;

use ofconvert_tfrecord::{frame, Compression};

use crate::access::cache::{self, cache_dir, cache_name};
use crate::access::locks::EntryLock;
use crate::access::record_index::RecordIndex;
use crate::access::spans::{Object, SpanCache};
use ofconvert_engine::layout::INDEX_SUFFIX;
use ofconvert_engine::Checksums;
use ofconvert_engine::Format;
use ofconvert_engine::RecordReader;
use ofconvert_engine::StoredFile;
use ofconvert_engine::{Error, ErrorKind};
use ofconvert_storage::object::{is_url, storage_for};
use ofconvert_storage::{Opened, Storage};

/// How [`open_indexed`] finds or makes an index.
#[derive(Clone, Debug)]
pub struct IndexOptions {
    /// Where indexes and decompressed copies go when not beside the data; `None` for the
    /// default ([`cache_dir`](crate::access::cache::cache_dir)).
    pub cache_dir: Option<PathBuf>,
    /// Whether the streaming pass checks TFRecord length checksums (data checksums are
    /// checked when a record is read).
    pub checksums: Checksums,
    /// Whether a compressed TFRecord is copied into the cache (else it is an error that says
    /// what to do).
    pub decompress: bool,
    /// Where the streaming pass over a file in a store keeps the bytes it reads, for reads
    /// of its spans to find them there (a cache as large as the dataset: a cold start reads
    /// it once); `None` to keep nothing.
    pub spans: Option<SpanCache>,
    /// Whether an index built for a local file is kept beside it (`FILE.idx`, as `ofconvert
    /// index` writes it) rather than in the cache. Off by default: a reader does not write
    /// into a dataset's folders, which may be shared, unless asked to.
    pub beside: bool,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            cache_dir: None,
            checksums: Checksums::Verify,
            decompress: true,
            spans: None,
            beside: false,
        }
    }
}

/// A record file ready for random access.
#[derive(Debug)]
pub struct IndexedFile {
    /// The file as it was named (a path or a URL): what errors name.
    pub path: PathBuf,
    /// Where its records' bytes are read: the file itself, or the uncompressed copy of a
    /// compressed TFRecord (a local file in the cache).
    pub data: PathBuf,
    /// Its format.
    pub format: Format,
    /// Its records: for an ArrayRecord file, its chunks, as its footer lists them.
    pub index: RecordIndex,
    /// Whether it is an ArrayRecord file: its index's entries are chunks, each checked and
    /// decoded when read.
    pub array_record: bool,
    /// Where the index is kept (`None` when it could be kept nowhere, or, for an ArrayRecord
    /// file, is its footer).
    pub stored: Option<PathBuf>,
    /// How the file was compressed, for a compressed TFRecord copied into the cache.
    pub decompressed: Option<Compression>,
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
    open_listed(path, format, options, None, false)
}

/// [`open_indexed`], for a file whose size and version (`Storage::stat`'s) a listing gave
/// just before: a file in a store is not asked for them again. `framed`: the file is known
/// to hold its records framed as they are (a TFRecord neither compressed nor an ArrayRecord
/// file, as the dataset a loader's worker was handed found it), so the first bytes of an
/// object listed at a version are not read to tell.
///
/// # Errors
///
/// As [`open_indexed`]'s.
pub fn open_listed(
    path: &Path,
    format: Format,
    options: &IndexOptions,
    listed: Option<(u64, String)>,
    framed: bool,
) -> Result<IndexedFile, Error> {
    let io_error = |err| Error::io(path, err);
    let (storage, at) = storage_for(path).map_err(io_error)?;
    let remote = is_url(path);
    // Known framed: an object of the version handed, whose kind came with it.
    let framed = framed && remote && listed.is_some();
    let (size, version) = match listed.filter(|_| remote) {
        Some((size, version)) => (size, Some(version)),
        // One request to a store for both.
        None => storage
            .stat(&at)
            .map_err(io_error)?
            .ok_or_else(|| Error::new(ErrorKind::InputMissing).in_file(path))?,
    };
    let source = if remote {
        path.to_string_lossy().into_owned()
    } else {
        fs::canonicalize(&at)
            .map_err(io_error)?
            .to_string_lossy()
            .into_owned()
    };
    let cache = cache_dir(options.cache_dir.as_deref());
    // The object as the cache of spans names its bytes: its first bytes are read from there
    // when it holds them, and an index pass over it keeps what it reads there.
    let object = Object {
        url: &source,
        size,
        version: version.as_deref(),
    };
    let spans = options.spans.as_ref().filter(|_| remote);
    let index_name = cache_name(&source, size, version.as_deref(), INDEX_SUFFIX);
    let cached = cache.join(&index_name);
    let mut file = IndexedFile {
        path: path.to_path_buf(),
        data: at.clone(),
        format,
        index: RecordIndex::default(),
        array_record: false,
        stored: None,
        decompressed: None,
        made: false,
        size,
        version: version.clone(),
    };
    // An object in a store whose index was made before, and whose first bytes (that tell
    // its kind) the cache holds or whose kind came with it: no lock, no request.
    let known = match format {
        Format::Tf if !framed => spans.and_then(|spans| sniff_kept(spans, object)),
        _ => Some((Kind::Framed, Vec::new())),
    };
    // The index kept in the cache, if one is there and fits the object.
    let kept_index = || {
        fs::read(&cached)
            .ok()
            .and_then(|text| RecordIndex::parse(&text, size))
    };
    if remote && matches!(known, Some((Kind::Framed, _))) {
        if let Some(index) = kept_index() {
            file.index = index;
            file.stored = Some(cached);
            return Ok(file);
        }
    }
    // What is made of a whole read of a file (an object's index, a compressed file's copy) is
    // made once between the processes of the machine: the first takes the lock of its index,
    // reads the file and makes it, while the others wait for the lock, then find what it
    // made. (Without the lock, a cache that cannot be written to, each makes its own.) With a
    // cache of spans, the lock of an object in a store comes first, so that the first bytes
    // the others read to tell its kind come from the cache, kept by the first one's pass;
    // else it is taken only where something is to be made, and nothing else is written.
    let made_once = || EntryLock::take(&cache, &index_name).ok();
    let mut making = spans.and_then(|_| made_once());
    let (kind, first_bytes) = match known {
        Some(known) => known,
        None => match spans.and_then(|spans| sniff_kept(spans, object)) {
            Some(kept) => kept,
            None => sniff(&*storage, &at, size, version.as_deref()).map_err(io_error)?,
        },
    };
    if let Kind::ArrayRecord = kind {
        let source = StoredFile::new(storage, at, size)
            .of_version(version.clone().filter(|_| remote))
            .holding(0, first_bytes);
        file.index = by_footer(source).map_err(|err| Error::arrayrecord(path, err))?;
        file.array_record = true;
        return Ok(file);
    }
    if let Kind::Compressed(copied) = kind {
        if !options.decompress {
            return Err(Error::new(ErrorKind::Usage(format!(
                "{} is a {} TFRecord, which this reader has no random access to: let it be \
                 copied into the cache once, or store the data uncompressed (`ofconvert tf2of` \
                 writes OFRecords, which have it)",
                path.display(),
                copied.tf_name(),
            )))
            .in_file(path));
        }
        let _copying = making.is_none().then(made_once).flatten();
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
    if remote && making.is_none() {
        making = made_once();
        // Made meanwhile by the process the lock was waited for.
        if let Some(index) = kept_index() {
            file.index = index;
            file.stored = Some(cached);
            return Ok(file);
        }
    }
    let keep = spans.map(|spans| (spans, object));
    file.index = build(&*storage, &at, format, options.checksums, keep)?;
    file.made = true;
    let text = file.index.to_text();
    // In the cache, or beside a local file when asked and its directory can be written;
    // else nowhere, which only costs the next reader the same pass.
    let places = if remote || !options.beside {
        vec![cached]
    } else {
        vec![beside, cached]
    };
    file.stored = places
        .into_iter()
        .find(|place| cache::write_whole(place, &text).is_ok());
    drop(making);
    Ok(file)
}

/// What a TensorFlow record file is, as far as reading it at random goes.
enum Kind {
    /// Records framed one after the other (a TFRecord, an OFRecord): indexed as they are.
    Framed,
    /// A GZIP or ZLIB TFRecord: copied into the cache uncompressed, and the copy indexed.
    Compressed(Compression),
    /// An ArrayRecord file: its footer is its index.
    ArrayRecord,
}

/// Bytes [`sniff`] reads from a file's start: an ArrayRecord file's first chunk, which
/// opening it by its footer reads, is in them.
const SNIFFED: u64 = 4 << 10;

/// What the TensorFlow record file `path` (of version `version`) is, from its first bytes;
/// and those bytes.
fn sniff(
    storage: &dyn Storage,
    path: &Path,
    size: u64,
    version: Option<&str>,
) -> io::Result<(Kind, Vec<u8>)> {
    let mut prefix = Vec::new();
    let first = 0..size.min(SNIFFED);
    storage.read_ranges(path, version, std::slice::from_ref(&first), &mut prefix)?;
    Ok((kind_of(&prefix), prefix))
}

/// What the object `object` is and its first bytes, if the cache of spans holds them (an
/// index pass kept them).
fn sniff_kept(spans: &SpanCache, object: Object<'_>) -> Option<(Kind, Vec<u8>)> {
    let prefix = spans.get(object, &(0..object.size.min(SNIFFED)))?;
    Some((kind_of(&prefix), prefix))
}

/// What a file whose first bytes are `prefix` is.
fn kind_of(prefix: &[u8]) -> Kind {
    if prefix.starts_with(&ofconvert_arrayrecord::SIGNATURE) {
        return Kind::ArrayRecord;
    }
    match Compression::sniff(&prefix[..prefix.len().min(16)]) {
        Compression::None => Kind::Framed,
        compression => Kind::Compressed(compression),
    }
}

/// The chunks of the ArrayRecord file `source`, as its footer lists them: its first chunk
/// (in the bytes [`sniff`] read), its postscript and its footer read (a ranged read of 4 KiB
/// or more each), no chunk of records.
fn by_footer(source: StoredFile) -> Result<RecordIndex, ofconvert_arrayrecord::Error> {
    let reader = IndexedReader::open(source)?;
    let (mut starts, mut firsts) = (Vec::new(), Vec::new());
    for chunk in 0..reader.num_chunks() {
        let (records, begin) = reader.chunk(chunk);
        starts.push(begin);
        firsts.push(records.start);
    }
    Ok(RecordIndex::of_chunks(
        starts,
        firsts,
        reader.num_records(),
        reader.footer_offset(),
    ))
}

/// Indexes `at` in one pass over its records, stepping over their data; with `keep`, the
/// bytes read are kept in that cache of spans as the object's, for the epoch to read there.
fn build(
    storage: &dyn Storage,
    at: &Path,
    format: Format,
    checksums: Checksums,
    keep: Option<(&SpanCache, Object<'_>)>,
) -> Result<RecordIndex, Error> {
    let mut reader = match keep {
        Some((spans, object)) => {
            let opened = storage.open(at, 0).map_err(|err| Error::io(at, err))?;
            let kept = Opened {
                reader: Box::new(spans.keeping(object, opened.reader)),
                size: opened.size,
            };
            RecordReader::from_opened(kept, at, format, checksums, None, None)?
        }
        None => RecordReader::open_at(storage, at, format, checksums, None, None)?,
    };
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
    fn an_index_is_built_once_kept_in_the_cache_and_found_there_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tfrecord");
        tfrecord(&path, &[b"one", b"three", b""], Compression::None);
        let cache = dir.path().join("cache");
        let opened = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
        assert_eq!(opened.index, RecordIndex::new(vec![0, 19, 40], 56));
        assert!(opened.made);
        let stored = opened.stored.clone().unwrap();
        assert!(stored.starts_with(&cache), "{stored:?}");
        assert_eq!(fs::read(&stored).unwrap(), b"0 19\n19 21\n40 16\n");
        // Nothing is written into the data's folder.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        let again = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
        assert_eq!((again.index, again.made), (opened.index, false));
    }

    #[test]
    fn an_index_is_kept_beside_the_file_when_asked_and_found_there_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tfrecord");
        tfrecord(&path, &[b"one", b"three", b""], Compression::None);
        let cache = dir.path().join("cache");
        let beside_asked = IndexOptions {
            beside: true,
            ..options(&cache)
        };
        let opened = open_indexed(&path, Format::Tf, &beside_asked).unwrap();
        assert_eq!(opened.index, RecordIndex::new(vec![0, 19, 40], 56));
        let beside = dir.path().join("a.tfrecord.idx");
        assert_eq!(opened.stored.as_deref(), Some(beside.as_path()));
        assert_eq!(fs::read(&beside).unwrap(), b"0 19\n19 21\n40 16\n");
        assert!(!cache.exists());

        // Found again, asked or not; one that no longer fits the file is made anew.
        fs::write(&beside, b"0 56\n").unwrap();
        let found = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
        assert_eq!((found.index.len(), found.made), (1, false));
        fs::write(&beside, b"0 19\n").unwrap();
        let opened = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
        assert_eq!((opened.index.len(), opened.made), (3, true));
        // Not asked, the stale one is left as it was, and the one made is in the cache.
        assert_eq!(fs::read(&beside).unwrap(), b"0 19\n");
        assert!(opened.stored.unwrap().starts_with(&cache));
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
        let asked = IndexOptions {
            beside: true,
            ..options(&cache)
        };
        let opened = open_indexed(&path, Format::Of, &asked);
        fs::set_permissions(&data, fs::Permissions::from_mode(0o755)).unwrap();
        let opened = opened.unwrap();
        assert_eq!(opened.index, RecordIndex::new(vec![0, 10], 21));
        // Running as root writes anyway; either way the index is kept somewhere.
        let stored = opened.stored.unwrap();
        assert!(
            stored.starts_with(&cache) || stored.starts_with(&data),
            "{stored:?}"
        );
        let again = open_indexed(&path, Format::Of, &asked).unwrap();
        assert_eq!(again.index, opened.index);
    }

    #[test]
    fn a_compressed_file_is_decompressed_into_the_cache_once_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tfrecord.gz");
        tfrecord(&path, &[b"one", b"three"], Compression::Gzip);
        let cache = dir.path().join("cache");
        let opened = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
        assert_eq!(opened.decompressed, Some(Compression::Gzip));
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
    fn processes_opening_a_compressed_file_at_once_copy_it_once_between_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tfrecord.gz");
        let records: Vec<Vec<u8>> = (0..20_000u32).map(|i| i.to_le_bytes().repeat(8)).collect();
        let records: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        tfrecord(&path, &records, Compression::Gzip);
        let cache = dir.path().join("cache");
        let start = std::sync::Barrier::new(4);
        // Threads stand for processes: each takes the lock through a file of its own.
        let made: Vec<bool> = std::thread::scope(|scope| {
            let opening: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        let opened = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
                        assert_eq!(opened.index.len(), 20_000);
                        opened.made
                    })
                })
                .collect();
            opening.into_iter().map(|one| one.join().unwrap()).collect()
        });
        assert_eq!(made.iter().filter(|&&made| made).count(), 1, "{made:?}");
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
