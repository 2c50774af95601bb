//! Looking at record files without converting them: counting, verifying, indexing,
//! collecting schemas.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ofconvert_bridge::RecordChecker;
use ofconvert_tfrecord::Compression;
use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, ErrorKind};
use crate::manifest::{OneflowReader, MANIFEST_NAME};
use crate::naming::layout::{self, DEFAULT_PART_PREFIX};
use crate::naming::names::{self, part_number, Format};
use crate::options::Checksums;
use crate::planning::plan::SkippedFile;
use crate::progress::ProgressFn;
use crate::records::detect;
use crate::records::output;
use crate::records::RecordReader;
use crate::schema::{Schema, SchemaBuilder};
use crate::storage::object;
use crate::storage::{Durability, Listed, Storage};

/// The record files named by some paths.
#[derive(Debug, Default)]
pub struct Expanded {
    /// Record files and their formats, in the order given (directories walked in name order).
    pub files: Vec<(PathBuf, Format)>,
    /// The sizes of `files`, in the same order.
    pub sizes: Vec<u64>,
    /// The paths given that are directories (or prefixes in an object store).
    pub directories: Vec<PathBuf>,
    /// Symbolic links inside the directories given that lead nowhere or in a loop. Files
    /// that are not record files are left out silently.
    pub skipped: Vec<SkippedFile>,
    /// OneFlow datasets whose parts are there without the manifest that publishes them.
    pub unpublished: Vec<Unpublished>,
    /// Paths that do not exist, named files whose format cannot be told, and files or
    /// directories inside the directories given that cannot be read.
    pub errors: Vec<Error>,
}

/// A directory of OneFlow parts without `ofconvert-manifest.json`.
#[derive(Clone, Debug)]
pub struct Unpublished {
    /// The dataset's directory.
    pub dir: PathBuf,
    /// Whether the temporary files of an ofconvert run lie beside the parts: a run that was
    /// killed or is still writing, for sure. Without them (in an object store, where parts
    /// go straight to their names) the parts may as well come from another tool.
    pub interrupted: bool,
}

/// Turns files and directories (local paths or URLs) into record files: a named file must
/// be a record file (its format forced by `format` or told by its content); in a directory,
/// the files that are record files by name or content are taken and the others left out.
pub fn expand_paths(paths: &[PathBuf], format: Option<Format>) -> Expanded {
    let mut expanded = Expanded::default();
    for path in paths {
        let listed = object::storage_for(path).and_then(|(storage, root)| {
            let listing = storage.list(&root)?;
            Ok((storage, root, listing))
        });
        let (storage, root, listing) = match listed {
            Ok(listed) => listed,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                expanded
                    .errors
                    .push(Error::new(ErrorKind::InputMissing).in_file(path));
                continue;
            }
            Err(err) => {
                expanded.errors.push(Error::io(path, err));
                continue;
            }
        };
        let storage = &*storage;
        if listing.single_file {
            if let Some(file) = listing.directories.values().flatten().next() {
                match format
                    .map(Ok)
                    .unwrap_or_else(|| tell_format(storage, file, path))
                {
                    Ok(format) => {
                        expanded.files.push((path.clone(), format));
                        expanded.sizes.push(file.size);
                    }
                    Err(err) => expanded.errors.push(err),
                }
            }
            continue;
        }
        expanded.directories.push(root);
        expanded
            .skipped
            .extend(listing.skipped.iter().map(|skipped| SkippedFile {
                path: skipped.path.display().to_string(),
                reason: skipped.reason.clone(),
            }));
        for unreadable in &listing.unreadable {
            // Reported as the walk's error itself, as for a file that cannot be read.
            let reason = unreadable.reason.trim_start_matches("cannot read: ");
            let err = io::Error::other(reason.to_owned());
            expanded.errors.push(Error::io(&unreadable.path, err));
        }
        for files in listing.directories.values() {
            let mut parts = false;
            for file in files {
                match judge(storage, file, format) {
                    Ok(Some(format)) => {
                        parts |= format == Format::Of
                            && part_number(&file.name, DEFAULT_PART_PREFIX).is_some();
                        expanded.files.push((file.path.clone(), format));
                        expanded.sizes.push(file.size);
                    }
                    Ok(None) => {}
                    Err(err) => expanded.errors.push(Error::io(&file.path, err)),
                }
            }
            if parts && !files.iter().any(|file| file.name == MANIFEST_NAME) {
                if let Some(dir) = files.first().and_then(|file| file.path.parent()) {
                    expanded.unpublished.extend(unpublished(storage, dir));
                }
            }
        }
    }
    expanded
}

/// What a directory of parts without a manifest is: `None` when it is an ordinary OneFlow
/// dataset on a file system (OneFlow writes none); in an object store, where ofconvert
/// writes parts under their own names, parts alone are no published dataset.
fn unpublished(storage: &dyn Storage, dir: &Path) -> Option<Unpublished> {
    let interrupted = storage.file_names(dir).is_ok_and(|names| {
        names
            .iter()
            .any(|name| layout::is_temporary(name) && name != layout::LOCK_NAME)
    });
    (interrupted || !storage.renames_cheaply()).then(|| Unpublished {
        dir: dir.to_path_buf(),
        interrupted,
    })
}

/// The format of `file`, named `path` on the command line.
fn tell_format(storage: &dyn Storage, file: &Listed, path: &Path) -> Result<Format, Error> {
    detect::detect_format_in(storage, &file.path, file.size)
        .map_err(|err| Error::io(path, err))?
        .ok_or_else(|| Error::new(ErrorKind::UnknownFormat).in_file(path))
}

/// The format of a file met inside a directory, or `None` to skip it.
///
/// # Errors
///
/// When its content must be read to tell and cannot be: it may be a record file.
fn judge(
    storage: &dyn Storage,
    file: &Listed,
    format: Option<Format>,
) -> io::Result<Option<Format>> {
    let name = &file.name;
    if layout::is_own_file(name) || names::is_known_metadata(name) {
        return Ok(None);
    }
    let path = &file.path;
    let tf_by_name = names::has_record_name(name);
    let of_by_name = part_number(name, DEFAULT_PART_PREFIX).is_some();
    Ok(match format {
        Some(Format::Tf) => {
            (tf_by_name || detect::looks_like_tfrecord_in(storage, path)?).then_some(Format::Tf)
        }
        Some(Format::Of) => {
            (of_by_name || detect::looks_like_ofrecord_in(storage, path)?).then_some(Format::Of)
        }
        None if tf_by_name => Some(Format::Tf),
        None => match detect::detect_format_in(storage, path, file.size)? {
            // An empty file with an unremarkable name is no record file.
            Some(Format::Tf) if file.size == 0 => of_by_name.then_some(Format::Of),
            found => found,
        },
    })
}

/// Runs `f` over `files` on `jobs` threads (0: one per core), results in the files' order.
fn map_files<T: Send>(
    files: &[(PathBuf, Format)],
    jobs: usize,
    f: impl Fn(&Path, Format) -> T + Sync + Send,
) -> Vec<T> {
    let run = || {
        files
            .par_iter()
            .with_max_len(1)
            .map(|(path, format)| f(path, *format))
            .collect()
    };
    match rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
        Ok(pool) => pool.install(run),
        Err(_) => files
            .iter()
            .map(|(path, format)| f(path, *format))
            .collect(),
    }
}

/// The record count of one file.
#[derive(Clone, Debug, Serialize)]
pub struct FileCount {
    /// The file.
    pub path: String,
    /// Its format.
    pub format: Format,
    /// `none`, `gzip` or `zlib`.
    pub compression: &'static str,
    /// Its records.
    pub records: u64,
    /// Its size.
    pub bytes: u64,
}

/// Counts the records of a file without reading their data. With `verify`, TFRecord
/// length checksums are checked (data checksums need `verify_file`).
///
/// # Errors
///
/// When the file cannot be read or its framing is damaged.
pub fn count_file(path: &Path, format: Format, checksums: Checksums) -> Result<FileCount, Error> {
    count_file_reporting(path, format, checksums, &|_| {})
}

/// Opens `path` in `format`, reporting the bytes read to `progress`.
fn open_reporting<'a>(
    path: &Path,
    format: Format,
    checksums: Checksums,
    progress: ProgressFn<'a>,
) -> Result<RecordReader<'a>, Error> {
    let (storage, at) = object::storage_for(path).map_err(|err| Error::io(path, err))?;
    RecordReader::open_at(&*storage, &at, format, checksums, None, Some(progress))
}

fn count_file_reporting(
    path: &Path,
    format: Format,
    checksums: Checksums,
    progress: ProgressFn<'_>,
) -> Result<FileCount, Error> {
    let mut reader = open_reporting(path, format, checksums, progress)?;
    while reader.skip()?.is_some() {}
    let (storage, at) = object::storage_for(path).map_err(|err| Error::io(path, err))?;
    let bytes = storage
        .size(&at)
        .map_err(|err| Error::io(path, err))?
        .unwrap_or_default();
    Ok(FileCount {
        path: path.display().to_string(),
        format,
        compression: reader.compression().name(),
        records: reader.position().index,
        bytes,
    })
}

/// [`count_file`] over many files in parallel, reporting the bytes read to `progress`.
pub fn count_files(
    files: &[(PathBuf, Format)],
    checksums: Checksums,
    jobs: usize,
    progress: ProgressFn<'_>,
) -> Vec<Result<FileCount, Error>> {
    map_files(files, jobs, |path, format| {
        count_file_reporting(path, format, checksums, progress)
    })
}

/// What verifying one file found.
#[derive(Debug)]
pub struct Verification {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// Records whose framing and payload are sound.
    pub good_records: u64,
    /// Every problem, with offset and record.
    pub problems: Vec<Error>,
}

/// Reads every record of a file, checking every checksum and parsing every payload
/// (Example or SequenceExample for TFRecord, OFRecord for OFRecord). Goes on past damage
/// that leaves the framing intact, so that every such problem is reported.
pub fn verify_file(path: &Path, format: Format) -> Verification {
    verify_file_reporting(path, format, &|_| {})
}

fn verify_file_reporting(path: &Path, format: Format, progress: ProgressFn<'_>) -> Verification {
    let mut verification = Verification {
        path: path.to_path_buf(),
        format,
        good_records: 0,
        problems: Vec::new(),
    };
    let mut reader = match open_reporting(path, format, Checksums::Verify, progress) {
        Ok(reader) => reader,
        Err(err) => {
            verification.problems.push(err);
            return verification;
        }
    };
    let mut buf = Vec::new();
    let mut checker = RecordChecker::new();
    loop {
        match reader.read_in_place(&mut buf) {
            Ok(Some(at)) => {
                let record = reader.record(&buf);
                let parsed = match format {
                    Format::Tf => checker.check_example(record).map(|_| ()),
                    Format::Of => checker.check_ofrecord(record),
                };
                match parsed {
                    Ok(()) => verification.good_records += 1,
                    Err(err) => verification.problems.push(Error::mapping(path, at, err)),
                }
            }
            Ok(None) => break,
            Err(err) => {
                let go_on = reader.recover(&err);
                verification.problems.push(err);
                if !go_on {
                    break;
                }
            }
        }
    }
    verification
}

/// [`verify_file`] over many files in parallel, reporting the bytes read to `progress`.
pub fn verify_files(
    files: &[(PathBuf, Format)],
    jobs: usize,
    progress: ProgressFn<'_>,
) -> Vec<Verification> {
    map_files(files, jobs, |path, format| {
        verify_file_reporting(path, format, progress)
    })
}

/// Writes the index of an uncompressed TFRecord file to `index`: one line per record,
/// `OFFSET LENGTH`, the record's start and its framed length (header, data and CRCs), as
/// DALI's `tfrecord2idx` and the Python `tfrecord` package write them. The index appears
/// whole or not at all. Returns the number of records.
///
/// # Errors
///
/// When the file is compressed ([`ErrorKind::Compressed`]), damaged, or cannot be read or
/// written.
pub fn write_index(path: &Path, index: &Path, progress: ProgressFn<'_>) -> Result<u64, Error> {
    let mut reader = open_reporting(path, Format::Tf, Checksums::Verify, progress)?;
    if reader.compression() != Compression::None {
        return Err(Error::new(ErrorKind::Compressed).in_file(path));
    }
    let mut text = Vec::new();
    while let Some(at) = reader.skip()? {
        let length = reader.position().offset - at.offset;
        // Writing into a Vec cannot fail.
        let _ = writeln!(text, "{} {length}", at.offset);
    }
    put_whole(index, &text).map_err(|err| Error::io(index, err))?;
    Ok(reader.position().index)
}

/// Writes `bytes` to `path` (a local path or a URL), creating the directories it needs,
/// whole or not at all, replacing what is there.
fn put_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (storage, path) = object::storage_for(path)?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    storage.create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .ok_or_else(|| io::Error::other("not a file name"))?;
    if storage.renames_cheaply() {
        return output::stage(&*storage, dir, &name, bytes)?.commit();
    }
    // An upload appears whole when it completes.
    let mut file = storage.create(&path, Durability::Synced)?;
    file.write_all(bytes)?;
    file.finish().map(|_| ())
}

/// Collects the schema of the records of `files`, in parallel; a file that cannot be read
/// to its end adds an error (its records up to the damage still count). With `sample`,
/// only the first `sample` records of each dataset (the record files of one directory,
/// in order) are read. Bytes read are reported to `progress`.
pub fn collect_schema(
    files: &[(PathBuf, Format)],
    jobs: usize,
    sample: Option<u64>,
    progress: ProgressFn<'_>,
) -> (Schema, Vec<Error>) {
    // Without a sample every file is a task of its own; with one, a directory's files are
    // read in order until the sample is full.
    let mut groups: Vec<Vec<(PathBuf, Format)>> = Vec::new();
    for file in files {
        let same_dir = sample.is_some()
            && groups
                .last()
                .and_then(|group| group.last())
                .is_some_and(|(last, _)| last.parent() == file.0.parent());
        match groups.last_mut() {
            Some(group) if same_dir => group.push(file.clone()),
            _ => groups.push(vec![file.clone()]),
        }
    }
    let per_group = map_groups(&groups, jobs, |group| {
        let mut builder = SchemaBuilder::new();
        let mut errors = Vec::new();
        let mut left = sample.unwrap_or(u64::MAX);
        for (path, format) in group {
            if left == 0 {
                break;
            }
            let (file_builder, file_errors, read) = schema_of_file(path, *format, left, progress);
            builder.merge(file_builder);
            errors.extend(file_errors);
            left -= read;
        }
        (builder, errors)
    });
    let mut whole = SchemaBuilder::new();
    let mut errors = Vec::new();
    for (builder, group_errors) in per_group {
        whole.merge(builder);
        errors.extend(group_errors);
    }
    (whole.finish(), errors)
}

/// Runs `f` over `groups` on `jobs` threads (0: one per core), results in order.
fn map_groups<T: Send>(
    groups: &[Vec<(PathBuf, Format)>],
    jobs: usize,
    f: impl Fn(&[(PathBuf, Format)]) -> T + Sync + Send,
) -> Vec<T> {
    let run = || {
        groups
            .par_iter()
            .with_max_len(1)
            .map(|group| f(group))
            .collect()
    };
    match rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
        Ok(pool) => pool.install(run),
        Err(_) => groups.iter().map(|group| f(group)).collect(),
    }
}

/// The schema of at most `limit` records of one file, its errors, and the records read.
fn schema_of_file(
    path: &Path,
    format: Format,
    limit: u64,
    progress: ProgressFn<'_>,
) -> (SchemaBuilder, Vec<Error>, u64) {
    let mut builder = SchemaBuilder::new();
    let mut errors = Vec::new();
    let mut reader = match open_reporting(path, format, Checksums::Verify, progress) {
        Ok(reader) => reader,
        Err(err) => return (builder, vec![err], 0),
    };
    let mut buf = Vec::new();
    let mut read = 0u64;
    while read < limit {
        match reader.read(&mut buf) {
            Ok(Some(at)) => {
                read += 1;
                let added = match format {
                    Format::Tf => builder.add_example(&buf).map(|_| ()),
                    Format::Of => builder.add_ofrecord(&buf),
                };
                if let Err(err) = added {
                    errors.push(Error::mapping(path, at, err));
                }
            }
            Ok(None) => break,
            Err(err) => {
                let go_on = reader.recover(&err);
                errors.push(err);
                if !go_on {
                    break;
                }
            }
        }
    }
    (builder, errors, read)
}

/// The `OFRecordReader` arguments that open the OneFlow dataset in `dir`, when it holds
/// `prefix`-numbered parts from 0 without a gap. Zero-padded numbers of one width give
/// `part_name_suffix_length`; unpadded ones give -1.
pub fn oneflow_reader_for(dir: &Path, prefix: &str) -> Option<OneflowReader> {
    let (storage, at) = object::storage_for(dir).ok()?;
    let mut parts: Vec<(u64, usize)> = storage
        .file_names(&at)
        .ok()?
        .into_iter()
        .filter_map(|name| {
            let number = part_number(&name, prefix)?;
            Some((number, name.len() - prefix.len()))
        })
        .collect();
    parts.sort_unstable();
    if parts.is_empty()
        || parts
            .iter()
            .zip(0u64..)
            .any(|((number, _), i)| *number != i)
    {
        return None;
    }
    let width = parts[0].1;
    let padded = parts.iter().all(|(_, digits)| *digits == width)
        && parts
            .iter()
            .any(|(number, digits)| number.to_string().len() < *digits);
    Some(OneflowReader::new(
        dir,
        parts.len() as u64,
        prefix,
        if padded { width } else { 0 },
    ))
}
