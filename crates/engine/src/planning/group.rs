//! Walking an input tree and grouping what it holds into datasets: TFRecord shard
//! families, OneFlow part folders, TFDS splits, and the files passed over.

use crate::error::{Error, ErrorKind};
use crate::naming::names::{self, part_number, shard_name};
use crate::published::{listed_as, published_in};
use crate::storage::{Listed, Listing, NotListed, Storage};
use crate::tfds::{self};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::dataset::{DatasetPlan, InputFile, SkippedFile};
use super::judge::{judge_tf, Judged};
use super::loose;
use super::restore::{recorded_compression, restore_of};
use crate::manifest::Manifest;
use crate::options::{Direction, Options, TfFile};
use ofconvert_tfrecord::Compression;

/// A file found by the walk.
type Found = Listed;

/// What the walk found: files per directory (relative to the root), what it skipped and
/// what it could not read.
pub(crate) struct Walk {
    directories: BTreeMap<PathBuf, Vec<Found>>,
    skipped: Vec<SkippedFile>,
    unreadable: Vec<SkippedFile>,
    /// Set when the input is a single file rather than a directory.
    single_file: bool,
}

impl Walk {
    /// Every file found, directory by directory.
    pub(crate) fn files(&self) -> impl Iterator<Item = &Found> {
        self.directories.values().flatten()
    }

    /// Whether the input is a single file.
    pub(crate) fn single_file(&self) -> bool {
        self.single_file
    }

    /// The paths that could not be read, and why.
    pub(crate) fn unreadable(&self) -> &[SkippedFile] {
        &self.unreadable
    }
}

pub(crate) fn walk(storage: &dyn Storage, input: &Path) -> Result<Walk, Error> {
    let listing = storage.list(input).map_err(|err| Error::io(input, err))?;
    Ok(walk_of(listing))
}

/// What a walk finds in `listing`.
pub(crate) fn walk_of(listing: Listing) -> Walk {
    let skipped_file = |not: NotListed| SkippedFile {
        path: not.path.display().to_string(),
        reason: not.reason,
    };
    Walk {
        directories: listing.directories,
        skipped: listing.skipped.into_iter().map(skipped_file).collect(),
        unreadable: listing.unreadable.into_iter().map(skipped_file).collect(),
        single_file: listing.single_file,
    }
}

/// The name of a directory for naming things after it: its last component, or for the
/// root, the last component of the input path as given or resolved.
fn directory_name(input: &Path, relative: &Path) -> String {
    let named = relative.file_name().or_else(|| input.file_name());
    match named {
        Some(name) => name.to_string_lossy().into_owned(),
        None => fs::canonicalize(input)
            .ok()
            .and_then(|path| path.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "dataset".to_owned()),
    }
}

/// `root/relative`, and `root` itself (without a trailing separator) for an empty
/// `relative`.
fn under(root: &Path, relative: &Path) -> PathBuf {
    if relative.as_os_str().is_empty() {
        root.to_path_buf()
    } else {
        root.join(relative)
    }
}

/// How a dataset is named in messages and summaries: its directory `relative` to the root,
/// `/`-separated; the dataset at the root by the input's own name (the file's, for a single
/// file), never `.`.
fn display_name(input: &Path, relative: &Path) -> String {
    let parts: Vec<_> = relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        directory_name(input, relative)
    } else {
        parts.join("/")
    }
}

fn input_file(input: &Path, found: Found, single_file: bool) -> InputFile {
    let relative = if single_file {
        PathBuf::from(&found.name)
    } else {
        found
            .path
            .strip_prefix(input)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| PathBuf::from(&found.name))
    };
    InputFile {
        path: found.path,
        relative,
        size: found.size,
        changed: found.changed,
    }
}

/// A family of TFRecord files in one directory.
struct Family {
    /// The shard stem; `None` for the files without a shard name.
    stem: Option<String>,
    files: Vec<(Found, Option<names::ShardName>)>,
}

/// Datasets, skipped files and unreadable files.
type Grouped = (Vec<DatasetPlan>, Vec<SkippedFile>, Vec<SkippedFile>);

/// `side_files`: the prefix of the parts to be written when the other files of a folder of
/// records travel with them; `None` for records only.
pub(crate) fn group_tf(
    storage: &dyn Storage,
    input: &Path,
    output: &Path,
    walk: Walk,
    side_files: Option<&str>,
) -> Grouped {
    let Walk {
        directories,
        mut skipped,
        mut unreadable,
        single_file,
    } = walk;
    let mut datasets = Vec::new();
    for (relative_dir, files) in directories {
        let metadata = files
            .iter()
            .find(|found| found.name == tfds::DATASET_INFO)
            .and_then(|found| tfds::Metadata::read(storage, found.path.parent()?));
        // A manifest that cannot be read says nothing: the files are told by their content.
        let listed = match files.first().and_then(|found| found.path.parent()) {
            Some(dir) if !single_file => {
                published_in(storage, dir, files.iter().map(|found| found.name.as_str()))
                    .unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let mut families: BTreeMap<Option<String>, Family> = BTreeMap::new();
        let mut others = Vec::new();
        for found in files {
            if crate::naming::layout::is_passed_over(&found.name) {
                continue;
            }
            if names::is_known_metadata(&found.name) {
                others.push((found, Judged::Other, None));
                continue;
            }
            if !names::has_record_name(&found.name) {
                let listed = listed_as(&listed, &found.name);
                match judge_tf(storage, &found, listed) {
                    Ok(Judged::Record) => {}
                    Ok(judged) => {
                        others.push((found, judged, Some("not a TFRecord file")));
                        continue;
                    }
                    Err(err) => {
                        unreadable.push(SkippedFile {
                            path: found.path.display().to_string(),
                            reason: format!("cannot read: {err}"),
                        });
                        continue;
                    }
                }
            }
            let shard = shard_name(&found.name);
            let stem = shard.as_ref().map(|shard| shard.stem.clone());
            families
                .entry(stem.clone())
                .or_insert_with(|| Family {
                    stem,
                    files: Vec::new(),
                })
                .files
                .push((found, shard));
        }
        // The other files of a folder of records travel with every dataset made of them;
        // those of a folder without records, on their own to the same place. One named
        // like a part would be taken for one, or replace one.
        let carried = side_files.filter(|_| !single_file);
        let mut side = Vec::new();
        for (found, judged, reason) in others {
            let part_like =
                carried.is_some_and(|prefix| part_number(&found.name, prefix).is_some());
            let of_records = carried.is_some() && judged == Judged::OfRecords;
            if carried.is_some() && !part_like && !of_records {
                side.push(input_file(input, found, single_file));
            } else if part_like {
                skipped.push(SkippedFile {
                    path: found.path.display().to_string(),
                    reason: "named like a OneFlow part: not carried beside the parts".to_owned(),
                });
            } else if of_records {
                skipped.push(SkippedFile {
                    path: found.path.display().to_string(),
                    reason: "OFRecord records: not carried beside the parts (of2tf converts \
                             them)"
                        .to_owned(),
                });
            } else if let Some(reason) = reason {
                skipped.push(SkippedFile {
                    path: found.path.display().to_string(),
                    reason: reason.to_owned(),
                });
            }
        }
        if families.is_empty() {
            if !side.is_empty() {
                let name = display_name(input, &relative_dir);
                let output_dir = under(output, &relative_dir);
                datasets.push(loose::files_only(name, &relative_dir, output_dir, side));
            }
            continue;
        }
        let dir = under(input, &relative_dir);
        let class_names = tfds::class_names(storage, &dir, side.iter().map(|file| &file.path));
        let several = families.len() > 1;
        for family in families.into_values() {
            let subfolder = match (&family.stem, several) {
                (_, false) => None,
                (Some(stem), true) => Some(stem.clone()),
                (None, true) => Some(directory_name(input, &relative_dir)),
            };
            let relative_out = match &subfolder {
                Some(name) => relative_dir.join(name),
                None => relative_dir.clone(),
            };
            let origin = metadata.as_ref().zip(family.stem.as_deref());
            let tfds = origin.and_then(|(metadata, stem)| metadata.origin(stem));
            datasets.push(DatasetPlan {
                tfds,
                side_files: side.clone(),
                class_names: class_names.clone(),
                subfolder,
                ..tf_dataset(
                    input,
                    output,
                    &relative_dir,
                    relative_out,
                    family,
                    single_file,
                )
            });
        }
    }
    (datasets, skipped, unreadable)
}

fn tf_dataset(
    input: &Path,
    output: &Path,
    relative_dir: &Path,
    relative_out: PathBuf,
    mut family: Family,
    single_file: bool,
) -> DatasetPlan {
    let mut warnings = Vec::new();
    if family.stem.is_some() {
        family.files.sort_by(|(a, a_shard), (b, b_shard)| {
            let key = |shard: &Option<names::ShardName>| shard.as_ref().map(|s| (s.index, s.count));
            key(a_shard)
                .cmp(&key(b_shard))
                .then_with(|| a.name.cmp(&b.name))
        });
        if let Some(warning) = shard_warning(&family) {
            warnings.push(warning);
        }
    } else {
        family.files.sort_by(|(a, _), (b, _)| a.name.cmp(&b.name));
    }
    DatasetPlan {
        name: display_name(input, &relative_out),
        source: relative_dir.to_path_buf(),
        output_dir: under(output, &relative_out),
        inputs: family
            .files
            .into_iter()
            .map(|(found, _)| input_file(input, found, single_file))
            .collect(),
        warnings,
        problem: None,
        tfds: None,
        side_files: Vec::new(),
        class_names: BTreeMap::new(),
        subfolder: None,
        restore: None,
        compression: Compression::None,
    }
}

/// Says which shards of a family are missing or doubled, judging by the counts in the names.
fn shard_warning(family: &Family) -> Option<String> {
    let shards: Vec<_> = family
        .files
        .iter()
        .filter_map(|(_, shard)| shard.as_ref())
        .collect();
    let stem = family.stem.as_deref().unwrap_or_default();
    let total = shards.first()?.count;
    if shards.iter().any(|shard| shard.count != total) {
        return Some(format!(
            "the shards of {stem} disagree on their total (the -of-N in their names)"
        ));
    }
    let numbers: BTreeSet<u64> = shards.iter().map(|shard| shard.index).collect();
    let doubled = numbers.len() < shards.len();
    let missing: Vec<String> = (0..total)
        .filter(|index| !numbers.contains(index))
        .take(10)
        .map(|index| index.to_string())
        .collect();
    if missing.is_empty() && !doubled && shards.len() as u64 == total {
        return None;
    }
    let mut message = format!("{} of {total} shards of {stem} found", shards.len());
    if !missing.is_empty() {
        message.push_str(&format!("; missing: {}", missing.join(", ")));
        if missing.len() == 10 {
            message.push_str(", ...");
        }
    }
    if doubled {
        message.push_str("; some shard numbers appear twice");
    }
    Some(message)
}

pub(crate) fn group_of(
    storage: &dyn Storage,
    input: &Path,
    output: &Path,
    walk: Walk,
    options: &Options,
) -> Grouped {
    let prefix = options.part_prefix.as_str();
    let Walk {
        directories,
        mut skipped,
        unreadable,
        single_file,
    } = walk;
    let mut datasets = Vec::new();
    for (relative_dir, files) in directories {
        let dir = under(input, &relative_dir);
        let manifest = files
            .iter()
            .any(|found| found.name == crate::naming::layout::MANIFEST_NAME && !single_file)
            .then(|| Manifest::read_from(storage, &dir).ok().flatten())
            .flatten();
        // A dataset tf2of made of files without records has no part: its manifest says it
        // is one.
        let no_records = manifest.as_ref().is_some_and(|manifest| {
            manifest.settings.direction == Direction::TfToOf && manifest.parts.is_empty()
        });
        // The parts its manifest lists are its parts, in the manifest's order, whatever the
        // prefix they were named with: never files that come with the records.
        let listed = |name: &str| {
            let manifest = manifest.as_ref()?;
            let parts = &manifest.parts;
            (manifest.settings.direction == Direction::TfToOf)
                .then(|| parts.iter().position(|part| part.name == name))?
                .map(|at| at as u64)
        };
        let mut parts = Vec::new();
        let mut others = Vec::new();
        for found in files {
            if crate::naming::layout::is_passed_over(&found.name) {
                continue;
            }
            match listed(&found.name).or_else(|| part_number(&found.name, prefix)) {
                Some(number) => parts.push((number, found)),
                None if found.name.starts_with(prefix) => skipped.push(SkippedFile {
                    path: found.path.display().to_string(),
                    reason: format!(
                        "not a OneFlow part name: OFRecordReader opens only {prefix}<number>"
                    ),
                }),
                None => others.push(found),
            }
        }
        let empty = parts.is_empty() && !no_records;
        // The files of a folder without parts travel on their own to the same place.
        if empty && options.side_files && !single_file && !others.is_empty() {
            let files = others
                .into_iter()
                .map(|found| input_file(input, found, single_file))
                .collect();
            let name = display_name(input, &relative_dir);
            let output_dir = under(output, &relative_dir);
            datasets.push(loose::files_only(name, &relative_dir, output_dir, files));
            continue;
        }
        if empty || !options.side_files {
            for found in others {
                if !names::is_known_metadata(&found.name) {
                    skipped.push(SkippedFile {
                        path: found.path.display().to_string(),
                        reason: format!("not a part file ({prefix}<number>)"),
                    });
                }
            }
            if empty {
                continue;
            }
            others = Vec::new();
        }
        parts.sort_by(|(a, a_found), (b, b_found)| {
            a.cmp(b).then_with(|| a_found.name.cmp(&b_found.name))
        });
        let problem =
            part_problem(&parts).map(|kind| Error::new(kind).in_file(&input.join(&relative_dir)));
        let name = directory_name(input, &relative_dir);
        let found = (!single_file)
            .then(|| crate::planning::tfds_origin::origin_of_oneflow(storage, &dir, &name));
        let (origin, up) = found.flatten().unzip();
        let has_parent = relative_dir.parent().is_some();
        let restore = manifest
            .as_ref()
            .and_then(|manifest| restore_of(manifest, &parts, options, &name, has_parent));
        // An ArrayRecord file compresses its chunks itself, never as a whole.
        let compression = match options.to {
            TfFile::Tfrecord => options
                .compression
                .or_else(|| recorded_compression(manifest.as_ref()?))
                .unwrap_or_default(),
            TfFile::ArrayRecord => Compression::None,
        };
        let go_up = up == Some(true) || restore.as_ref().is_some_and(|r| r.shared.is_some());
        let output_relative = match (go_up, relative_dir.parent()) {
            (true, Some(parent)) => parent.to_path_buf(),
            _ => relative_dir.clone(),
        };
        let mut side: Vec<InputFile> = others
            .into_iter()
            .map(|found| input_file(input, found, single_file))
            .collect();
        let class_names = match manifest.as_ref() {
            Some(manifest) => manifest.schema.class_names(),
            None => tfds::class_names(storage, &dir, side.iter().map(|file| &file.path)),
        };
        if origin.is_some() {
            // TFDS's metadata is written anew beside the splits, once they are all done.
            side.retain(|file| !names::is_known_metadata(&file_name_of(file)));
        }
        datasets.push(DatasetPlan {
            name: display_name(input, &relative_dir),
            source: relative_dir.clone(),
            output_dir: under(output, &output_relative),
            inputs: parts
                .into_iter()
                .map(|(_, found)| input_file(input, found, single_file))
                .collect(),
            warnings: Vec::new(),
            problem,
            tfds: origin,
            side_files: side,
            class_names,
            subfolder: None,
            restore,
            compression,
        });
    }
    (datasets, skipped, unreadable)
}

fn file_name_of(file: &InputFile) -> String {
    file.relative
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// OneFlow opens `part-0` to `part-(N-1)`: a gap or a doubled number is an error.
fn part_problem(parts: &[(u64, Found)]) -> Option<ErrorKind> {
    for (expected, (number, _)) in (0u64..).zip(parts) {
        if *number < expected {
            return Some(ErrorKind::DuplicatePart { number: *number });
        }
        if *number > expected {
            return Some(ErrorKind::PartGap {
                missing: expected,
                found: parts.len(),
            });
        }
    }
    None
}

/// Directory name used for the TFRecord files written from a OneFlow dataset.
pub(crate) fn tf_file_stem(input: &Path, dataset: &DatasetPlan) -> String {
    directory_name(input, &dataset.source)
}
