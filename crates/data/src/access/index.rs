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
use crate::access::salvaged;
use crate::access::spans::{Object, SpanCache};
use crate::access::stated::FileIndex;
use ofconvert_engine::layout::INDEX_SUFFIX;
use ofconvert_engine::Checksums;
use ofconvert_engine::Format;
use ofconvert_engine::StoredFile;
use ofconvert_engine::{Error, ErrorKind};
use ofconvert_engine::{RecordReader, SkippedRecords};
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
    /// Whether damage is stepped over (`on_corrupt="skip"`): the index holds the sound
    /// records alone, found in a pass that checks every one, and the file says what was
    /// stepped over ([`IndexedFile::skipped`]). The index is kept in the cache under a name
    /// of its own, never beside the data, and a record whose length alone was damaged is left
    /// out (random access reads a record by its framing). Off: a damaged file is an error.
    pub salvage: bool,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            cache_dir: None,
            checksums: Checksums::Verify,
            decompress: true,
            spans: None,
            beside: false,
            salvage: false,
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
    /// Its records: for an ArrayRecord file, its chunks, as its footer lists them. Made
    /// when it is opened, but for an object whose record count was stated
    /// ([`open_stated`](crate::open_stated)): then when it is first read
    /// ([`IndexedFile::ready`]).
    pub index: FileIndex,
    /// Whether it is an ArrayRecord file: its index's entries are chunks, each checked and
    /// decoded when read.
    pub array_record: bool,
    /// Where the index is kept (`None` when it could be kept nowhere, or, for an ArrayRecord
    /// file, is its footer, or is not made yet).
    pub stored: Option<PathBuf>,
    /// How the file was compressed, for a compressed TFRecord copied into the cache.
    pub decompressed: Option<Compression>,
    /// Whether this call made the index (and the decompressed copy) rather than finding it.
    pub made: bool,
    /// The file's size in bytes when it was opened.
    pub size: u64,
    /// Its version (a store's ETag) when it was opened, where there is one.
    pub version: Option<String>,
    /// The damage stepped over, with [`IndexOptions::salvage`]: none without.
    pub skipped: SkippedRecords,
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
        index: FileIndex::default(),
        array_record: false,
        stored: None,
        decompressed: None,
        made: false,
        size,
        version: version.clone(),
        skipped: SkippedRecords::default(),
    };
    // An object in a store whose index was made before, and whose first bytes (that tell
    // its kind) the cache holds or whose kind came with it: no lock, no request.
    let known = match format {
        Format::Tf if !framed => spans.and_then(|spans| sniff_kept(spans, object, SNIFFED)),
        _ => Some((Kind::Framed, Vec::new())),
    };
    // The index kept in the cache, if one is there and fits the object.
    let kept_index = || {
        fs::read(&cached)
            .ok()
            .and_then(|text| RecordIndex::parse(&text, size))
    };
    if remote && !options.salvage && matches!(known, Some((Kind::Framed, _))) {
        if let Some(index) = kept_index() {
            file.index = index.into();
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
        None => match spans.and_then(|spans| sniff_kept(spans, object, SNIFFED)) {
            Some(kept) => kept,
            None => sniff(&*storage, &at, size, version.as_deref(), SNIFFED).map_err(io_error)?,
        },
    };
    if let Kind::ArrayRecord = kind {
        let source = StoredFile::new(storage, at, size)
            .of_version(version.clone().filter(|_| remote))
            .holding(0, first_bytes);
        file.index = by_footer(source)
            .map_err(|err| Error::arrayrecord(path, err))?
            .into();
        file.array_record = true;
        return Ok(file);
    }
    if let Kind::Parquet = kind {
        return Err(Error::new(ErrorKind::Usage(format!(
            "{} is a Parquet file, which this reader has no random access to yet: \
             `ofconvert tf2of` converts it to OFRecords, which it reads (ofconvert.read reads \
             it in order)",
            path.display(),
        )))
        .in_file(path));
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
        // A copy made without checking the data's checksums is framed anew all the same:
        // it is kept apart from one that checked them, which alone a checking reader takes.
        let unchecked = match options.checksums {
            Checksums::Verify => "",
            Checksums::Ignore => ".unchecked",
        };
        file.data = cache.join(cache_name(&source, size, version.as_deref(), unchecked));
        let stored = file.data.with_file_name(format!(
            "{}{INDEX_SUFFIX}",
            file.data.file_name().unwrap_or_default().to_string_lossy()
        ));
        let copied = fs::metadata(&file.data).ok().map(|meta| meta.len());
        if let (Some(copied), Ok(text)) = (copied, fs::read(&stored)) {
            // A copy made without stepping over damage is whole and sound: a reader that
            // skips takes it too.
            let whole = || {
                Some((
                    RecordIndex::parse(&text, copied)?,
                    SkippedRecords::default(),
                ))
            };
            // And a copy made stepping over damage, where there was none, serves one that
            // does not skip.
            let salvaged = || salvaged::parse(&text, copied);
            let found = match options.salvage {
                true => salvaged().or_else(whole),
                false => whole().or_else(|| {
                    salvaged().filter(|(_, skipped)| *skipped == SkippedRecords::default())
                }),
            };
            if let Some((index, skipped)) = found {
                (file.index, file.skipped) = (index.into(), skipped);
                file.stored = Some(stored);
                return Ok(file);
            }
        }
        let (index, skipped) = decompress(
            &*storage,
            &at,
            &file.data,
            options.checksums,
            options.salvage,
        )?;
        file.made = true;
        let text = match options.salvage {
            true => salvaged::to_text(&index, &skipped, index.span(0..index.len()).end),
            false => index.to_text(),
        };
        (file.index, file.skipped) = (index.into(), skipped);
        cache::write_whole(&stored, &text).map_err(|err| Error::io(&stored, err))?;
        file.stored = Some(stored);
        return Ok(file);
    }

    if options.salvage {
        let keep = spans.map(|spans| (spans, object));
        let name = cache_name(
            &source,
            size,
            version.as_deref(),
            salvaged::suffix(options.checksums),
        );
        let place = (cache.as_path(), name.as_str());
        return salvaged_index(file, &*storage, &at, place, options.checksums, making, keep);
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
        file.index = index.into();
        file.stored = Some(stored);
        return Ok(file);
    }
    if remote && making.is_none() {
        making = made_once();
        // Made meanwhile by the process the lock was waited for.
        if let Some(index) = kept_index() {
            file.index = index.into();
            file.stored = Some(cached);
            return Ok(file);
        }
    }
    let keep = spans.map(|spans| (spans, object));
    let index = build(&*storage, &at, format, options.checksums, keep)?;
    file.made = true;
    let text = index.to_text();
    file.index = index.into();
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
pub(crate) enum Kind {
    /// Records framed one after the other (a TFRecord, an OFRecord): indexed as they are.
    Framed,
    /// A GZIP or ZLIB TFRecord: copied into the cache uncompressed, and the copy indexed.
    Compressed(Compression),
    /// An ArrayRecord file: its footer is its index.
    ArrayRecord,
    /// A Parquet file (TFDS's `file_format='parquet'`): not read at random here yet.
    Parquet,
}

/// Bytes [`sniff`] reads from a file's start: an ArrayRecord file's first chunk, which
/// opening it by its footer reads, is in them.
const SNIFFED: u64 = 4 << 10;

/// What the TensorFlow record file `path` (of version `version`) is, from its first
/// `bytes` bytes (or all of a smaller file); and those bytes.
pub(crate) fn sniff(
    storage: &dyn Storage,
    path: &Path,
    size: u64,
    version: Option<&str>,
    bytes: u64,
) -> io::Result<(Kind, Vec<u8>)> {
    let mut prefix = Vec::new();
    let first = 0..size.min(bytes);
    storage.read_ranges(path, version, std::slice::from_ref(&first), &mut prefix)?;
    Ok((kind_of(&prefix), prefix))
}

/// What the object `object` is and its first `bytes` bytes, if the cache of spans holds
/// them (an index pass kept them).
pub(crate) fn sniff_kept(
    spans: &SpanCache,
    object: Object<'_>,
    bytes: u64,
) -> Option<(Kind, Vec<u8>)> {
    let prefix = spans.get(object, &(0..object.size.min(bytes)))?;
    Some((kind_of(&prefix), prefix))
}

/// What a file whose first bytes are `prefix` is.
fn kind_of(prefix: &[u8]) -> Kind {
    if prefix.starts_with(&ofconvert_arrayrecord::SIGNATURE) {
        return Kind::ArrayRecord;
    }
    if ofconvert_parquet::is_parquet(prefix) {
        return Kind::Parquet;
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

/// `file` (a TFRecord or OFRecord file stored at `at`) with its salvaged index (see
/// [`salvaged`]): found in the cache as `name`, else made in a pass over it (with `keep`, as
/// [`build`]'s) under the lock of that entry (`making`, when it is held already) and kept.
fn salvaged_index(
    mut file: IndexedFile,
    storage: &dyn Storage,
    at: &Path,
    (cache, name): (&Path, &str),
    checksums: Checksums,
    making: Option<EntryLock>,
    keep: Option<(&SpanCache, Object<'_>)>,
) -> Result<IndexedFile, Error> {
    let stored = cache.join(name);
    let size = file.size;
    let kept = || {
        fs::read(&stored)
            .ok()
            .and_then(|text| salvaged::parse(&text, size))
    };
    let mut found = kept();
    // Made meanwhile by the process the lock was waited for, or to be made here.
    let mut making = making;
    if found.is_none() && making.is_none() {
        making = EntryLock::take(cache, name).ok();
        found = kept();
    }
    if let Some((index, skipped)) = found {
        (file.index, file.skipped) = (index.into(), skipped);
        file.stored = Some(stored);
        return Ok(file);
    }
    let reader = open_pass(storage, at, file.format, checksums, keep)?;
    let (index, skipped) = salvaged::build(reader)?;
    file.made = true;
    let text = salvaged::to_text(&index, &skipped, size);
    (file.index, file.skipped) = (index.into(), skipped);
    file.stored = cache::write_whole(&stored, &text).is_ok().then_some(stored);
    drop(making);
    Ok(file)
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
    let mut reader = open_pass(storage, at, format, checksums, keep)?;
    let mut starts = Vec::new();
    while let Some(record) = reader.skip()? {
        starts.push(record.offset);
    }
    Ok(RecordIndex::new(starts, reader.position().offset))
}

/// A reader of `at` from its start for a pass over it (see [`build`]).
fn open_pass<'k>(
    storage: &dyn Storage,
    at: &Path,
    format: Format,
    checksums: Checksums,
    keep: Option<(&SpanCache, Object<'_>)>,
) -> Result<RecordReader<'k>, Error> {
    let reader = match keep {
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
    Ok(reader)
}

/// Writes the decompressed records of `at` to the local file `copy` (whole or not at all)
/// and returns their index; with `salvage`, the sound records alone, stepping over damage
/// as [`salvaged`] does, and what was stepped over.
fn decompress(
    storage: &dyn Storage,
    at: &Path,
    copy: &Path,
    checksums: Checksums,
    salvage: bool,
) -> Result<(RecordIndex, SkippedRecords), Error> {
    let mut reader = RecordReader::open_at(storage, at, Format::Tf, checksums, None, None)?;
    let temp = cache::temporary_beside(copy).map_err(|err| Error::io(copy, err))?;
    let written = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, fs::File::create(&temp)?);
        let (mut starts, mut end, mut buf) = (Vec::new(), 0u64, Vec::new());
        let mut header = [0; frame::HEADER_LEN];
        let (mut skipped, mut scratch) = (SkippedRecords::default(), Vec::new());
        loop {
            // Stepping over damage reads each record in place: its data is a slice of it.
            let record: &[u8] = if salvage {
                match reader.read_skipping(&mut scratch, &mut skipped) {
                    Ok(Some(_)) => reader.record(&scratch),
                    Ok(None) => break,
                    Err(err) => return Err(Failed::Read(err)),
                }
            } else {
                match reader.read(&mut buf) {
                    Ok(Some(_)) => &buf,
                    Ok(None) => break,
                    Err(err) => return Err(Failed::Read(err)),
                }
            };
            starts.push(end);
            frame::encode_header(record.len() as u64, &mut header);
            out.write_all(&header)?;
            out.write_all(record)?;
            out.write_all(&frame::encode_footer(record))?;
            end += (frame::HEADER_LEN + record.len() + frame::FOOTER_LEN) as u64;
        }
        out.into_inner()
            .map_err(|err| err.into_error())?
            .sync_all()?;
        fs::rename(&temp, copy)?;
        Ok((RecordIndex::new(starts, end), skipped))
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
mod tests;
