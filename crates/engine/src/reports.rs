//! The reports of the inspecting commands (`count`, `verify`, `schema`, `index`): the
//! record files the paths given hold, with what is wrong with those paths, and what each
//! inspection found, in the shapes the command line's `--json` prints and the Python
//! package returns. Each front end shows them its own way; they are made here once.
//!
//! A top layer: it uses `inspect` and the layers below.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{error_chain, Error, ErrorKind};
use crate::front_end::FrontEnd;
use crate::inspect::{
    as_listed, check_shard_length, collect_schema, count_files, expand_paths, oneflow_reader_for,
    unlisted, verify_files_summing, write_index, FileCount,
};
use crate::manifest::{OneflowReader, MANIFEST_NAME};
use crate::naming::layout::{DEFAULT_PART_DIGITS, DEFAULT_PART_PREFIX, INDEX_SUFFIX};
use crate::naming::names::Format;
use crate::options::Checksums;
use crate::progress::ProgressFn;
use crate::published::Published;
use crate::schema::Schema;

/// The record files some paths hold, and what is wrong with the paths.
#[derive(Debug, Default)]
pub struct Found {
    /// Record files and their formats, in the order given (directories walked in name
    /// order).
    pub files: Vec<(PathBuf, Format)>,
    /// The sizes of `files`, in the same order.
    pub sizes: Vec<u64>,
    /// The paths given that are directories (or prefixes in an object store).
    pub directories: Vec<PathBuf>,
    /// What makes the inspection fail: paths that do not exist or cannot be read, named
    /// files of no record format, directories holding no record file.
    pub errors: Vec<Error>,
    /// What the user should know: files passed over, parts without their manifest.
    pub warnings: Vec<String>,
    /// The directories of parts an ofconvert run was writing, or left when it was killed:
    /// no sound dataset, which `verify` fails.
    pub unfinished: Vec<PathBuf>,
    /// The datasets published in the directories walked, as their manifests list them:
    /// what `count` and `verify` check the files against.
    pub published: Vec<Published>,
    /// The record count the metadata beside each of `files` states, where some does (a
    /// manifest's part; a TFDS shard's `shardLengths` in `dataset_info.json`), in the same
    /// order; empty where nothing was looked up.
    pub stated: Vec<Option<u64>>,
}

impl Found {
    /// Whether a path given does not exist: a usage error.
    pub fn missing(&self) -> bool {
        self.errors
            .iter()
            .any(|err| matches!(err.kind(), ErrorKind::InputMissing))
    }

    /// The bytes of every file found.
    pub fn bytes(&self) -> u64 {
        self.sizes.iter().sum()
    }

    /// The record count stated of file `at` of `files`, if any is.
    fn stated_of(&self, at: usize) -> Option<u64> {
        self.stated.get(at).copied().flatten()
    }

    /// Names each directory given under which no file found lies (unless the listing
    /// already did); where OneFlow parts were passed over there (`passed_over`), says that
    /// those are all it holds.
    fn fail_empty_directories(&mut self, passed_over: &[PathBuf]) {
        for dir in &self.directories {
            let named = self.errors.iter().any(
                |err| matches!(err.kind(), ErrorKind::NoRecordFiles { dir: named, .. } if named == dir),
            );
            if !named && !self.files.iter().any(|(file, _)| file.starts_with(dir)) {
                let kind = if passed_over.iter().any(|file| file.starts_with(dir)) {
                    ErrorKind::OnlyOfRecords { dir: dir.clone() }
                } else {
                    ErrorKind::NoRecordFiles {
                        dir: dir.clone(),
                        unfinished: false,
                    }
                };
                self.errors.push(Error::new(kind));
            }
        }
    }
}

/// The record files under `paths` (files, directories, URLs), their format forced by
/// `format` or told from their content, with what is wrong with the paths in
/// `front_end`'s words.
pub fn find(paths: &[PathBuf], format: Option<Format>, front_end: FrontEnd) -> Found {
    let expanded = expand_paths(paths, format);
    let mut warnings: Vec<String> = expanded
        .skipped
        .iter()
        .map(|skipped| format!("skipped {}: {}", skipped.path, skipped.reason))
        .collect();
    let resume = front_end.switch("resume");
    for unpublished in &expanded.unpublished {
        let why = if unpublished.interrupted {
            format!(
                "an ofconvert run writing it was killed or has not finished (`{resume}` \
                 finishes it)"
            )
        } else {
            format!(
                "a run that did not finish (`{resume}` finishes it), or parts ofconvert did \
                 not write"
            )
        };
        warnings.push(format!(
            "{}: OneFlow parts without {MANIFEST_NAME}: not a published dataset: {why}",
            unpublished.dir.display()
        ));
    }
    let mut found = Found {
        files: expanded.files,
        sizes: expanded.sizes,
        directories: expanded.directories,
        errors: expanded.errors,
        warnings,
        unfinished: expanded
            .unpublished
            .iter()
            .filter(|dir| dir.interrupted)
            .map(|dir| dir.dir.clone())
            .collect(),
        published: expanded.published,
        stated: expanded.stated,
    };
    found.fail_empty_directories(&[]);
    found
}

/// The TFRecord files under `paths`, for `index`: OneFlow parts met in a directory are
/// passed over (there is nothing to index in them), one named by itself is an error.
pub fn find_tfrecords(paths: &[PathBuf], format: Option<Format>) -> Found {
    let expanded = expand_paths(paths, format);
    let mut found = Found {
        directories: expanded.directories,
        errors: expanded.errors,
        warnings: expanded
            .skipped
            .iter()
            .map(|skipped| format!("skipped {}: {}", skipped.path, skipped.reason))
            .collect(),
        ..Found::default()
    };
    let mut passed_over = Vec::new();
    for ((path, format), size) in expanded.files.into_iter().zip(expanded.sizes) {
        match format {
            Format::Tf => {
                found.files.push((path, format));
                found.sizes.push(size);
            }
            Format::Of if paths.contains(&path) => {
                found
                    .errors
                    .push(Error::new(ErrorKind::NotTfRecord).in_file(&path));
            }
            Format::Of => passed_over.push(path),
        }
    }
    found.fail_empty_directories(&passed_over);
    found
}

/// What `count` found: as `count --json` prints it.
#[derive(Debug, Serialize)]
pub struct CountReport {
    /// Each file's records.
    pub files: Vec<FileCount>,
    /// The records of every file.
    pub total: u64,
}

/// Counts the records of the files found (`checksums`: check TFRecord length checksums);
/// with the files that could not be counted, and the parts that do not hold the records
/// their manifest lists.
pub fn count(
    found: &Found,
    checksums: Checksums,
    jobs: usize,
    progress: ProgressFn<'_>,
) -> (CountReport, Vec<Error>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let counted = count_files(&found.files, checksums, jobs, progress);
    let listed = as_listed(&found.published, &found.files);
    for (at, ((result, listed), (path, _))) in counted
        .into_iter()
        .zip(listed)
        .zip(&found.files)
        .enumerate()
    {
        match result {
            Ok(count) => {
                errors.extend(match listed {
                    Some(listed) => listed.check_records(path, count.records),
                    None => check_shard_length(path, count.records, found.stated_of(at)),
                });
                files.push(count);
            }
            Err(err) => errors.push(err),
        }
    }
    let total = files.iter().map(|count| count.records).sum();
    (CountReport { files, total }, errors)
}

/// What `verify` found in one file.
#[derive(Debug, Serialize)]
pub struct VerifiedFile {
    /// The file.
    pub path: String,
    /// Its format.
    pub format: Format,
    /// Records whose framing and payload are sound.
    pub good_records: u64,
    /// Every problem, with its offset and record.
    pub problems: Vec<String>,
}

/// What `verify` found: as `verify --json` prints it.
#[derive(Debug, Serialize)]
pub struct VerifyReport {
    /// Each file's findings.
    pub files: Vec<VerifiedFile>,
    /// Sound records in every file.
    pub good_records: u64,
    /// Problems in every file.
    pub problems: usize,
    /// The paths given that could not be read (missing, refused, empty of records), and
    /// the parts a manifest lists that are not there, each with why.
    pub unreadable: Vec<String>,
    /// The directories of parts an ofconvert run was writing or left when it was killed.
    pub unfinished: Vec<String>,
}

impl VerifyReport {
    /// Whether everything given was read and found sound.
    pub fn sound(&self) -> bool {
        self.problems == 0 && self.unreadable.is_empty() && self.unfinished.is_empty()
    }
}

/// Checks every checksum and parses every payload of the files found, and the parts of a
/// published dataset against its manifest: a file whose records read sound must have the
/// records, bytes and CRC-32C listed, and a record file beside the parts must be listed.
pub fn verify(found: &Found, jobs: usize, progress: ProgressFn<'_>) -> VerifyReport {
    let listed = as_listed(&found.published, &found.files);
    let summed: HashSet<&Path> = found
        .files
        .iter()
        .zip(&listed)
        .filter(|(_, listed)| listed.is_some_and(|listed| listed.has_crc32c()))
        .map(|((path, _), _)| path.as_path())
        .collect();
    let summed = |path: &Path| summed.contains(path);
    let verified = verify_files_summing(&found.files, &summed, jobs, progress);
    let files: Vec<VerifiedFile> = verified
        .into_iter()
        .zip(listed.iter().zip(&found.sizes))
        .enumerate()
        .map(|(at, (mut verified, (listed, size)))| {
            if verified.problems.is_empty() {
                verified.problems = match listed {
                    Some(listed) => listed.check_verified(&verified, *size),
                    None => unlisted(&found.published, &verified.path)
                        .into_iter()
                        .chain(check_shard_length(
                            &verified.path,
                            verified.good_records,
                            found.stated_of(at),
                        ))
                        .collect(),
                };
            }
            VerifiedFile {
                path: verified.path.display().to_string(),
                format: verified.format,
                good_records: verified.good_records,
                problems: verified.problems.iter().map(|p| error_chain(p)).collect(),
            }
        })
        .collect();
    VerifyReport {
        good_records: files.iter().map(|file| file.good_records).sum(),
        problems: files.iter().map(|file| file.problems.len()).sum(),
        files,
        unreadable: found.errors.iter().map(|err| error_chain(err)).collect(),
        unfinished: found
            .unfinished
            .iter()
            .map(|dir| dir.display().to_string())
            .collect(),
    }
}

/// The features of the records of the files found (the first `sample` of each directory's
/// files, or all), with the files that could not be read.
pub fn schema(
    found: &Found,
    jobs: usize,
    sample: Option<u64>,
    progress: ProgressFn<'_>,
) -> (Schema, Vec<Error>) {
    collect_schema(&found.files, jobs, sample, progress)
}

/// A schema as `schema --json` prints it: its fields, with its warnings (what would
/// abort OneFlow or give it wrong values) under `warnings`.
pub fn schema_json(schema: &Schema) -> serde_json::Value {
    let mut value = serde_json::to_value(schema).unwrap_or_default();
    value["warnings"] = serde_json::json!(schema.warnings());
    value
}

/// The `OFRecordReader(...)` call for the records of `paths`: the dataset's own when one
/// OneFlow dataset directory was given (or its parts), else the one `tf2of` would make of
/// the files.
pub fn oneflow_reader(paths: &[PathBuf], found: &Found) -> String {
    if let [dir] = paths {
        if let Some(reader) = oneflow_reader_for(dir, DEFAULT_PART_PREFIX) {
            return reader.python;
        }
    }
    let datasets = datasets_of(found);
    if let [dataset] = datasets.as_slice() {
        return dataset_reader(dataset, found);
    }
    placeholder_reader(
        Path::new("OUT"),
        &(0..found.files.len()).collect::<Vec<_>>(),
        found,
    )
}

/// One dataset among the files found: what `tf2of` would group (the shards of one family
/// in a directory, or its other record files), or a OneFlow dataset's directory of parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundDataset {
    /// Its directory.
    pub dir: PathBuf,
    /// The shard family (`STEM` of `STEM-NNNNN-of-MMMMM`), when its directory holds others.
    pub family: Option<String>,
    /// The indexes of its files among those found.
    pub files: Vec<usize>,
}

impl FoundDataset {
    /// How it is named in a report: its directory, and its family when the directory holds
    /// several.
    pub fn name(&self) -> String {
        match &self.family {
            Some(family) => format!("{} ({family})", self.dir.display()),
            None => self.dir.display().to_string(),
        }
    }
}

/// The datasets of the files found, in the order of their first file.
pub fn datasets_of(found: &Found) -> Vec<FoundDataset> {
    let mut datasets: Vec<(PathBuf, Option<String>, Format, Vec<usize>)> = Vec::new();
    for (index, (path, format)) in found.files.iter().enumerate() {
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let family = match format {
            Format::Of => None,
            Format::Tf => path
                .file_name()
                .and_then(|name| crate::naming::names::shard_name(&name.to_string_lossy()))
                .map(|shard| shard.stem),
        };
        match datasets
            .iter_mut()
            .find(|(d, f, fmt, _)| *d == dir && *f == family && fmt == format)
        {
            Some((_, _, _, files)) => files.push(index),
            None => datasets.push((dir, family, *format, vec![index])),
        }
    }
    let mut named = Vec::new();
    for (dir, family, _, files) in &datasets {
        let several = datasets.iter().filter(|(d, ..)| d == dir).count() > 1;
        named.push(FoundDataset {
            dir: dir.clone(),
            family: family.clone().filter(|_| several),
            files: files.clone(),
        });
    }
    named
}

/// The `OFRecordReader(...)` call that opens `dataset`: its own for a OneFlow dataset; for
/// TFRecords, the one `tf2of` would write under `OUT`.
pub fn dataset_reader(dataset: &FoundDataset, found: &Found) -> String {
    let oneflow = dataset
        .files
        .iter()
        .all(|&index| found.files[index].1 == Format::Of);
    if oneflow {
        if let Some(reader) = oneflow_reader_for(&dataset.dir, DEFAULT_PART_PREFIX) {
            return reader.python;
        }
    }
    placeholder_reader(Path::new("OUT"), &dataset.files, found)
}

fn placeholder_reader(out: &Path, files: &[usize], found: &Found) -> String {
    let parts = files
        .iter()
        .filter(|&&index| found.sizes.get(index).is_some_and(|size| *size > 0))
        .count()
        .max(1);
    OneflowReader::new(out, parts as u64, DEFAULT_PART_PREFIX, DEFAULT_PART_DIGITS).python
}

/// The schema of each dataset of the files found, with its reader call, and the files that
/// could not be read.
pub fn schemas(
    found: &Found,
    jobs: usize,
    sample: Option<u64>,
    progress: ProgressFn<'_>,
) -> (Vec<(FoundDataset, Schema, String)>, Vec<Error>) {
    let mut each = Vec::new();
    let mut errors = Vec::new();
    for dataset in datasets_of(found) {
        let files: Vec<(PathBuf, Format)> = dataset
            .files
            .iter()
            .map(|&index| found.files[index].clone())
            .collect();
        let (schema, dataset_errors) = collect_schema(&files, jobs, sample, progress);
        errors.extend(dataset_errors);
        let reader = dataset_reader(&dataset, found);
        each.push((dataset, schema, reader));
    }
    (each, errors)
}

/// What `schema --oneflow` (`oneflow`) or `--tf` prints for `datasets` (from [`schemas`]):
/// each dataset's code, under a `# NAME: N records in M files` line when there are several,
/// with its own reader.
pub fn schema_code(datasets: &[(FoundDataset, Schema, String)], oneflow: bool) -> String {
    let mut text = String::new();
    for (index, (dataset, schema, reader)) in datasets.iter().enumerate() {
        if datasets.len() > 1 {
            if index > 0 {
                text.push('\n');
            }
            text.push_str(&format!("# {}\n", dataset_heading(dataset, schema)));
        }
        text.push_str(&if oneflow {
            schema.oneflow_snippet(reader)
        } else {
            schema.tf_snippet()
        });
    }
    text
}

/// `NAME: N records in M files`.
pub fn dataset_heading(dataset: &FoundDataset, schema: &Schema) -> String {
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    format!(
        "{}: {} record{} in {} file{}",
        dataset.name(),
        schema.records,
        plural(schema.records),
        dataset.files.len(),
        plural(dataset.files.len() as u64)
    )
}

/// One index `index` wrote.
#[derive(Debug, Serialize)]
pub struct IndexedFile {
    /// The TFRecord file.
    pub path: String,
    /// Its index.
    pub index: String,
    /// The records it lists.
    pub records: u64,
}

/// What `index` wrote: as `index --json` prints it.
#[derive(Debug, Serialize)]
pub struct IndexReport {
    /// Each index written.
    pub files: Vec<IndexedFile>,
    /// The records of every file indexed.
    pub total: u64,
}

/// Where the index of `file` goes: beside it, or under `output_dir` at the path `file` has
/// relative to the directory given that holds it (a file named itself keeps only its
/// name).
fn index_path(file: &Path, roots: &[PathBuf], output_dir: Option<&Path>) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(INDEX_SUFFIX);
    let Some(output_dir) = output_dir else {
        return file.with_file_name(name);
    };
    let relative = roots
        .iter()
        .find_map(|root| file.strip_prefix(root).ok())
        .and_then(Path::parent)
        .unwrap_or(Path::new(""));
    output_dir.join(relative).join(name)
}

/// Writes the index of each file found, beside it or under `output_dir`, `jobs` files at a
/// time (0: one per core); never one path twice. Returns what was written and, for the
/// others, why not.
pub fn index(
    found: &Found,
    output_dir: Option<&Path>,
    jobs: usize,
    progress: ProgressFn<'_>,
) -> (IndexReport, Vec<String>) {
    let mut errors = Vec::new();
    let mut sources: HashMap<PathBuf, PathBuf> = HashMap::new();
    let mut indexes: HashMap<PathBuf, PathBuf> = HashMap::new();
    let mut to_write = Vec::new();
    for (path, format) in &found.files {
        let index = index_path(path, &found.directories, output_dir);
        match sources.get(&index) {
            Some(source) if source == path => continue,
            Some(source) => {
                errors.push(format!(
                    "{}: not written: the index of {} went there in this run",
                    index.display(),
                    source.display()
                ));
                continue;
            }
            None => {
                sources.insert(index.clone(), path.clone());
            }
        }
        indexes.insert(path.clone(), index);
        to_write.push((path.clone(), *format));
    }
    let written = crate::inspect::map_files(&to_write, jobs, |path, _| {
        let index = &indexes[path];
        write_index(path, index, progress).map(|records| IndexedFile {
            path: path.display().to_string(),
            index: index.display().to_string(),
            records,
        })
    });
    let mut files = Vec::new();
    for result in written {
        match result {
            Ok(file) => files.push(file),
            Err(err) => errors.push(error_chain(&err)),
        }
    }
    let total = files.iter().map(|file| file.records).sum();
    (IndexReport { files, total }, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_goes_beside_its_file_or_at_its_relative_path() {
        let roots = [PathBuf::from("data")];
        assert_eq!(
            index_path(Path::new("data/a/x.tfrecord"), &roots, None),
            Path::new("data/a/x.tfrecord.idx")
        );
        assert_eq!(
            index_path(
                Path::new("data/a/x.tfrecord"),
                &roots,
                Some(Path::new("idx"))
            ),
            Path::new("idx/a/x.tfrecord.idx")
        );
        assert_eq!(
            index_path(Path::new("y.tfrecord"), &roots, Some(Path::new("idx"))),
            Path::new("idx/y.tfrecord.idx")
        );
    }
}
