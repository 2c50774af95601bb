//! Walking an input tree and grouping what it holds into datasets: TFRecord shard
//! families, OneFlow part folders, TFDS splits, and the files passed over.

use crate::error::{Error, ErrorKind};
use crate::naming::names::{self, part_number, shard_name};
use crate::records::detect;
use crate::storage::{Listed, NotListed, Storage};
use crate::tfds::{self};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use super::plan::{DatasetPlan, InputFile, SkippedFile};

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

pub(crate) fn walk(storage: &dyn Storage, input: &Path) -> Result<Walk, Error> {
    let listing = storage.list(input).map_err(|err| Error::io(input, err))?;
    let skipped_file = |not: NotListed| SkippedFile {
        path: not.path.display().to_string(),
        reason: not.reason,
    };
    Ok(Walk {
        directories: listing.directories,
        skipped: listing.skipped.into_iter().map(skipped_file).collect(),
        unreadable: listing.unreadable.into_iter().map(skipped_file).collect(),
        single_file: listing.single_file,
    })
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

fn display_name(relative: &Path) -> String {
    let parts: Vec<_> = relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        ".".to_owned()
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
    }
}

/// Files ofconvert wrote (indexes, manifests, ...) and TFDS metadata: neither converted nor
/// listed as skipped.
fn passed_over(name: &str) -> bool {
    crate::naming::layout::is_own_file(name) || names::is_known_metadata(name)
}

/// A family of TFRecord files in one directory.
struct Family {
    /// The shard stem; `None` for the files without a shard name.
    stem: Option<String>,
    files: Vec<(Found, Option<names::ShardName>)>,
}

/// Datasets, skipped files and unreadable files.
type Grouped = (Vec<DatasetPlan>, Vec<SkippedFile>, Vec<SkippedFile>);

pub(crate) fn group_tf(storage: &dyn Storage, input: &Path, output: &Path, walk: Walk) -> Grouped {
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
        let mut families: BTreeMap<Option<String>, Family> = BTreeMap::new();
        for found in files {
            if passed_over(&found.name) {
                continue;
            }
            let record_by_name = names::has_record_name(&found.name);
            if !record_by_name {
                let sniffed = storage
                    .open(&found.path, 0)
                    .and_then(|opened| detect::is_tfrecord_stream(opened.reader));
                match sniffed {
                    Ok(true) => {}
                    Ok(false) => {
                        skipped.push(SkippedFile {
                            path: found.path.display().to_string(),
                            reason: "not a TFRecord file".to_owned(),
                        });
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
        let several = families.len() > 1;
        for family in families.into_values() {
            let relative_out = match (&family.stem, several) {
                (_, false) => relative_dir.clone(),
                (Some(stem), true) => relative_dir.join(stem),
                (None, true) => relative_dir.join(directory_name(input, &relative_dir)),
            };
            let origin = metadata.as_ref().zip(family.stem.as_deref());
            let tfds = origin.and_then(|(metadata, stem)| metadata.origin(stem));
            datasets.push(DatasetPlan {
                tfds,
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
        name: display_name(&relative_out),
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
    prefix: &str,
) -> Grouped {
    let Walk {
        directories,
        mut skipped,
        unreadable,
        single_file,
    } = walk;
    let mut datasets = Vec::new();
    for (relative_dir, files) in directories {
        let mut parts = Vec::new();
        for found in files {
            if passed_over(&found.name) {
                continue;
            }
            match part_number(&found.name, prefix) {
                Some(number) => parts.push((number, found)),
                None => {
                    let reason = if found.name.starts_with(prefix) {
                        format!(
                            "not a OneFlow part name: OFRecordReader opens only \
                             {prefix}<number>"
                        )
                    } else {
                        format!("not a part file ({prefix}<number>)")
                    };
                    skipped.push(SkippedFile {
                        path: found.path.display().to_string(),
                        reason,
                    });
                }
            }
        }
        if parts.is_empty() {
            continue;
        }
        parts.sort_by(|(a, a_found), (b, b_found)| {
            a.cmp(b).then_with(|| a_found.name.cmp(&b_found.name))
        });
        let problem =
            part_problem(&parts).map(|kind| Error::new(kind).in_file(&input.join(&relative_dir)));
        let found = (!single_file).then(|| {
            let name = directory_name(input, &relative_dir);
            crate::planning::tfds_origin::origin_of_oneflow(
                storage,
                &under(input, &relative_dir),
                &name,
            )
        });
        let (origin, up) = found.flatten().unzip();
        let output_relative = match (up, relative_dir.parent()) {
            (Some(true), Some(parent)) => parent.to_path_buf(),
            _ => relative_dir.clone(),
        };
        datasets.push(DatasetPlan {
            name: display_name(&relative_dir),
            source: relative_dir.clone(),
            output_dir: under(output, &output_relative),
            inputs: parts
                .into_iter()
                .map(|(_, found)| input_file(input, found, single_file))
                .collect(),
            warnings: Vec::new(),
            problem,
            tfds: origin,
        });
    }
    (datasets, skipped, unreadable)
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

/// Two datasets bound for one output directory would overwrite each other: both fail.
/// Only the splits of one TFDS dataset share a folder, as TFDS keeps them.
pub(crate) fn mark_clashes(datasets: &mut [DatasetPlan]) {
    let mut by_output: HashMap<PathBuf, Vec<usize>> = HashMap::new();
    let mut clashes = Vec::new();
    for (index, dataset) in datasets.iter().enumerate() {
        let sharing = by_output.entry(dataset.output_dir.clone()).or_default();
        if let Some(&other) = sharing
            .iter()
            .find(|&&other| !tfds::splits_of_one(&dataset.tfds, &datasets[other].tfds))
        {
            clashes.push((index, other));
        } else {
            sharing.push(index);
        }
    }
    for (a, b) in clashes {
        for (this, other) in [(a, b), (b, a)] {
            let other_source = datasets[other].source.clone();
            let dataset = &mut datasets[this];
            if dataset.problem.is_none() {
                dataset.problem = Some(
                    Error::new(ErrorKind::OutputClash {
                        other: other_source,
                    })
                    .in_file(&dataset.output_dir),
                );
            }
        }
    }
}

/// Directory name used for the TFRecord files written from a OneFlow dataset.
pub(crate) fn tf_file_stem(input: &Path, dataset: &DatasetPlan) -> String {
    directory_name(input, &dataset.source)
}
