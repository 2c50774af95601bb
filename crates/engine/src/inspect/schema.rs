//! The schema of record files, with the class names TFDS gives their features.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::open_reporting;
use crate::error::Error;
use crate::manifest::{Manifest, OneflowReader};
use crate::naming::layout;
use crate::naming::names::{part_number, Format};
use crate::options::Checksums;
use crate::progress::ProgressFn;
use crate::schema::{Schema, SchemaBuilder};
use crate::storage::object;
use crate::tfds;

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
    let mut schema = whole.finish();
    schema.set_class_names(&class_names_of(files));
    (schema, errors)
}

/// The class names TFDS gives the features of the records in `files`: those a converted
/// dataset's manifest records, or else those of TFDS's files beside the records. The first
/// directory that names a feature's classes wins.
fn class_names_of(files: &[(PathBuf, Format)]) -> BTreeMap<String, Vec<String>> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (file, _) in files {
        let dir = match file.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    let mut found = BTreeMap::new();
    for dir in dirs {
        let Ok((storage, at)) = object::storage_for(&dir) else {
            continue;
        };
        let names = storage.file_names(&at).unwrap_or_default();
        let recorded = names
            .iter()
            .filter(|name| layout::is_manifest(name))
            .filter_map(|name| Manifest::read_named(&*storage, &at, name).ok().flatten())
            .map(|manifest| manifest.schema.class_names());
        let paths: Vec<PathBuf> = names.iter().map(|name| at.join(name)).collect();
        let beside = tfds::class_names(&*storage, &at, paths.iter());
        for names in recorded.chain([beside]) {
            for (feature, classes) in names {
                found.entry(feature).or_insert(classes);
            }
        }
    }
    found
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
