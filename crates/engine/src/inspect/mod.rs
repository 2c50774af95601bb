//! Looking at record files without converting them: finding them under the paths given
//! (here), counting, verifying and indexing them ([`files`]) and checking them against
//! their manifests ([`against`]), collecting their schema ([`schema`]), comparing two
//! datasets record by record ([`diff`]).
//!
//! The top layer: uses `planning`, `records`, `schema`, `manifest`, `tfds`, `storage` and
//! everything below; nothing names it.

mod against;
mod diff;
mod files;
mod schema;

pub(crate) use against::{as_listed, check_shard_length, unlisted};
pub use diff::{diff, DiffOptions, DiffReport, Difference, Place};
pub(crate) use files::verify_files_summing;
pub use files::{
    count_file, count_files, verify_file, verify_files, write_index, FileCount, Verification,
};
pub use schema::{collect_schema, oneflow_reader_for};

use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{Error, ErrorKind};
use crate::manifest::MANIFEST_NAME;
use crate::naming::layout::{self, DEFAULT_PART_PREFIX};
use crate::naming::names::{self, part_number, Format};
use crate::options::Checksums;
use crate::planning::plan::SkippedFile;
use crate::progress::ProgressFn;
use crate::published::{listed_as, published_in, ListedAs, Published};
use crate::records::detect;
use crate::records::RecordReader;
use crate::storage::object;
use crate::storage::{each_at_once, Listed, Storage, REQUESTS_AT_ONCE};

/// The record files named by some paths.
#[derive(Debug, Default)]
pub struct Expanded {
    /// Record files and their formats, in the order given (directories walked in name order).
    pub files: Vec<(PathBuf, Format)>,
    /// The sizes of `files`, in the same order.
    pub sizes: Vec<u64>,
    /// Their versions, in the same order, where the listing learned them as
    /// [`Storage::stat`](crate::storage::Storage::stat) gives them (a single file named in
    /// a store); a reader that needs one asks for the others.
    pub versions: Vec<Option<String>>,
    /// The record count of each of `files`, in the same order, where the metadata of its
    /// directory states it: a part a manifest lists at the size listed, a shard of a TFDS
    /// folder's `dataset_info.json` (TFDS shard names). What reads records by index
    /// deals them by these without reading the files to count them, and checks them when
    /// it reads a file.
    pub stated: Vec<Option<u64>>,
    /// The paths given that are directories (or prefixes in an object store).
    pub directories: Vec<PathBuf>,
    /// Symbolic links inside the directories given that lead nowhere or in a loop. Files
    /// that are not record files are left out silently.
    pub skipped: Vec<SkippedFile>,
    /// OneFlow datasets whose parts are there without the manifest that publishes them.
    pub unpublished: Vec<Unpublished>,
    /// The datasets published in the directories walked, as their manifests list them: a
    /// part they list is taken as a record file of their format without looking at it, a
    /// file that came with the records is passed over, and a part missing is an error.
    pub published: Vec<Published>,
    /// Paths that do not exist, named files whose format cannot be told, files or
    /// directories inside the directories given that cannot be read, parts a manifest lists
    /// that are not there, and directories given that hold no record file.
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
/// the parts its manifests list and the files that are record files by name or content are
/// taken, and the others left out.
pub fn expand_paths(paths: &[PathBuf], format: Option<Format>) -> Expanded {
    let mut expanded = Expanded::default();
    // Each path listed (in a store, a request or two that wait a round trip) side by side
    // with the others, then taken in the order given.
    let listings = each_at_once(paths, REQUESTS_AT_ONCE, |path| {
        object::storage_for(path).and_then(|(storage, root)| {
            let listing = storage.list(&root)?;
            Ok((storage, root, listing))
        })
    });
    for (path, listed) in paths.iter().zip(listings) {
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
                        expanded.versions.push(file.version.clone());
                        expanded.stated.push(None);
                    }
                    Err(err) => expanded.errors.push(err),
                }
            }
            continue;
        }
        let found_before = expanded.files.len();
        expanded.directories.push(root.clone());
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
            let dir = files.first().and_then(|file| file.path.parent());
            let published = match dir {
                Some(dir) => match published_in(storage, dir, files.iter().map(|f| &*f.name)) {
                    Ok(published) => published,
                    Err(err) => {
                        expanded.errors.push(Error::io(dir, err));
                        Vec::new()
                    }
                },
                None => Vec::new(),
            };
            let mut parts = false;
            let stated = match dir {
                Some(dir) => stated_counts(storage, dir, files, &published),
                None => Default::default(),
            };
            for file in files {
                let listed = listed_as(&published, &file.name);
                match judge(storage, file, format, listed) {
                    Ok(Some(format)) => {
                        parts |= format == Format::Of
                            && part_number(&file.name, DEFAULT_PART_PREFIX).is_some();
                        expanded.files.push((file.path.clone(), format));
                        expanded.sizes.push(file.size);
                        expanded.versions.push(file.version.clone());
                        expanded.stated.push(stated.get(&file.name).copied());
                    }
                    Ok(None) => {}
                    Err(err) => expanded.errors.push(Error::io(&file.path, err)),
                }
            }
            if parts && !files.iter().any(|file| file.name == MANIFEST_NAME) {
                if let Some(dir) = dir {
                    expanded.unpublished.extend(unpublished(storage, dir));
                }
            }
            for dataset in &published {
                expanded.errors.extend(missing_parts(dataset, files));
            }
            expanded.published.extend(published);
        }
        // A directory without records is an error for everyone who reads one: `count`,
        // `cat` and Python's readers alike.
        if expanded.files.len() == found_before {
            // Listings pass over hidden files: the directory itself is asked.
            let unfinished = storage.file_names(&root).is_ok_and(|names| {
                names
                    .iter()
                    .any(|name| layout::is_temporary(name) && name != layout::LOCK_NAME)
            });
            expanded.errors.push(Error::new(ErrorKind::NoRecordFiles {
                dir: root,
                unfinished,
            }));
        }
    }
    expanded
}

/// The record counts the metadata in `dir` states of its files (`files`, as listed), by
/// name: each part a manifest of `published` lists at the size it is listed with (a part
/// rewritten since is not the one it counted), else each shard the folder's
/// `dataset_info.json`, where there is one, gives a length (TFDS names shards by template;
/// nothing else there says their sizes).
pub(crate) fn stated_counts(
    storage: &dyn Storage,
    dir: &Path,
    files: &[Listed],
    published: &[Published],
) -> std::collections::HashMap<String, u64> {
    let mut stated = std::collections::HashMap::new();
    if files
        .iter()
        .any(|file| file.name == crate::tfds::DATASET_INFO)
    {
        let text = storage
            .read(&dir.join(crate::tfds::DATASET_INFO))
            .ok()
            .flatten();
        if let Some(text) = text.and_then(|bytes| String::from_utf8(bytes).ok()) {
            stated.extend(crate::tfds::shard_lengths(&text));
        }
    }
    for part in published.iter().flat_map(|dataset| &dataset.parts) {
        let size = files
            .iter()
            .find(|file| file.name == part.name)
            .map(|file| file.size);
        match size == Some(part.bytes) {
            true => stated.insert(part.name.clone(), part.records),
            false => stated.remove(&part.name),
        };
    }
    stated
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

/// The errors of the parts `dataset` lists that are not among `files`, its directory's.
fn missing_parts<'a>(
    dataset: &'a Published,
    files: &'a [Listed],
) -> impl Iterator<Item = Error> + 'a {
    dataset
        .parts
        .iter()
        .filter(|part| !files.iter().any(|file| file.name == part.name))
        .map(|part| {
            let what = format!(
                "missing, yet {} lists it ({} record{}, {} bytes)",
                dataset.manifest,
                part.records,
                if part.records == 1 { "" } else { "s" },
                part.bytes
            );
            Error::new(ErrorKind::NotAsListed { what }).in_file(&dataset.dir.join(&part.name))
        })
}

/// The format of a file met inside a directory, or `None` to skip it: as its directory's
/// manifests list it (`listed`), when one does in a format not forced otherwise, else by
/// its name or content.
///
/// # Errors
///
/// When its content must be read to tell and cannot be: it may be a record file.
fn judge(
    storage: &dyn Storage,
    file: &Listed,
    format: Option<Format>,
    listed: Option<ListedAs>,
) -> io::Result<Option<Format>> {
    let name = &file.name;
    if layout::is_passed_over(name) || names::is_known_metadata(name) {
        return Ok(None);
    }
    match listed {
        Some(ListedAs::Side) => return Ok(None),
        Some(ListedAs::Part(listed)) if format.is_none_or(|format| format == listed) => {
            return Ok(Some(listed))
        }
        _ => {}
    }
    let path = &file.path;
    let tf_by_name = names::has_record_name(name);
    let of_by_name = part_number(name, DEFAULT_PART_PREFIX).is_some();
    Ok(match format {
        Some(Format::Tf) => {
            (tf_by_name || detect::holds_tfrecord_in(storage, path)?).then_some(Format::Tf)
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
pub(crate) fn map_files<T: Send>(
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

/// Opens `path` in `format`, reporting the bytes read to `progress`.
pub(crate) fn open_reporting<'a>(
    path: &Path,
    format: Format,
    checksums: Checksums,
    progress: ProgressFn<'a>,
) -> Result<RecordReader<'a>, Error> {
    let (storage, at) = object::storage_for(path).map_err(|err| Error::io(path, err))?;
    RecordReader::open_at(&*storage, &at, format, checksums, None, Some(progress))
}
