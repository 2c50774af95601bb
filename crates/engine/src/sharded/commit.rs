//! The end of a sharded run: every part checked against its receipt, then each dataset
//! published as a single run publishes it (parts under their final names in order, the
//! manifest last), then the run's control directory removed.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use ofconvert_bridge::MappingSpec;
use ofconvert_tfrecord::Compression;

use crate::error::{Error, ErrorKind};
use crate::front_end::FrontEnd;
use crate::manifest::Manifest;
use crate::naming::layout::CONTROL_DIR;
use crate::options::Options;
use crate::planning::plan::{DatasetPlan, InputFile};
use crate::progress::DatasetStatus;
use crate::records::output;
use crate::records::swap;
use crate::running::chunk::ChunkOutput;
use crate::running::convert::{take_lock, LockFailed};
use crate::running::placing::put_in_place;
use crate::running::publish::{PublishFailed, Target};
use crate::running::summary::{DatasetSummary, Summary};
use crate::running::tfds_info::folder_metadata;
use crate::sharded::receipt::Receipt;
use crate::sharded::shard::{read_receipt, receipt_path, worker_dir};
use crate::sharded::stored::{StoredDataset, StoredPlan};
use crate::storage::object;
use crate::storage::{LockError, Storage};

/// How [`commit()`] publishes.
#[derive(Clone, Copy, Debug, Default)]
pub struct CommitOptions {
    /// Also read every part back and compare its CRC32C with its receipt's.
    pub verify_checksums: bool,
    /// Remove a lock on the output whose holder is not known to run (a lock object a
    /// killed `commit` or run left in a store) and go on.
    pub break_lock: bool,
    /// Whose words messages use.
    pub front_end: FrontEnd,
}

/// Finishes the sharded run in `output` once all its workers are done: checks that every
/// part of the stored plan has its receipt and is there with the size the receipt says
/// (and, with [`CommitOptions::verify_checksums`], reads it back and compares its CRC32C),
/// writes every
/// dataset's manifest, and removes `OUT/.ofconvert/`. It converts nothing.
///
/// # Errors
///
/// [`ErrorKind::NotSharded`] when there is no sharded run in `output`;
/// [`ErrorKind::WorkerRunning`] or [`ErrorKind::OutputLocked`] while a worker or another
/// run is at work on it (these are usage errors); [`ErrorKind::PartsMissing`] (naming each
/// part and its worker) or [`ErrorKind::ReceiptMismatch`] when a worker has not finished or
/// a part changed: then nothing is published. A dataset the plan found unconvertible is
/// failed in the summary, as a single run fails it.
pub fn commit(output: &Path, how: &CommitOptions) -> Result<Summary, Error> {
    let CommitOptions {
        verify_checksums,
        break_lock,
        front_end,
    } = *how;
    let started = Instant::now();
    let (storage, output) = object::storage_for(output).map_err(|err| Error::io(output, err))?;
    let storage = &*storage;
    let output = output.as_path();
    let Some(stored) = StoredPlan::read(storage, output)? else {
        // A commit killed as it ended left its lock file, which nobody holds: taken and
        // let go, it goes.
        if storage.renames_cheaply() {
            let _ = storage.lock(output);
        }
        return Err(Error::new(ErrorKind::NotSharded { front_end }).in_file(output));
    };
    let _lock = match take_lock(storage, output, break_lock, front_end) {
        Ok(lock) => lock,
        Err(LockFailed::Refused(err)) => return Err(err),
        Err(LockFailed::Io(err)) => return Err(Error::io(output, err)),
    };
    // What is in the control directory: a worker's lock directory, once it ran here.
    let control = storage
        .entries(&output.join(CONTROL_DIR))
        .map_err(|err| Error::io(output, err))?;
    for worker in 0..stored.workers {
        let dir = worker_dir(output, worker);
        let lockable = storage.renames_cheaply()
            && dir
                .file_name()
                .is_some_and(|name| control.iter().any(|entry| name == entry.as_str()));
        if lockable {
            match storage.lock(&dir) {
                Ok(_released) => {}
                Err(LockError::Busy { .. }) => {
                    return Err(Error::new(ErrorKind::WorkerRunning { worker }).in_file(output))
                }
                Err(LockError::Io(err)) => return Err(Error::io(&dir, err)),
            }
        }
    }

    let options = options_of(&stored)?;
    // The files that come with the records are copied from the input by `commit`, the one
    // process that publishes: never by two workers at once.
    let (input_storage, _) = object::storage_for(Path::new(&stored.input))
        .map_err(|err| Error::io(Path::new(&stored.input), err))?;
    let datasets: Vec<DatasetPlan> = stored
        .datasets
        .iter()
        .map(|dataset| DatasetPlan {
            name: dataset.name.clone(),
            source: PathBuf::from(&dataset.source),
            output_dir: if dataset.output.is_empty() {
                output.to_path_buf()
            } else {
                output.join(&dataset.output)
            },
            inputs: dataset
                .inputs
                .iter()
                .map(|input| InputFile {
                    path: PathBuf::from(&input.path),
                    relative: PathBuf::from(&input.path),
                    size: input.bytes,
                    changed: input.version.clone(),
                })
                .collect(),
            warnings: dataset.warnings.clone(),
            problem: None,
            tfds: dataset.tfds.clone(),
            side_files: dataset
                .side_files
                .iter()
                .map(|side| InputFile {
                    path: PathBuf::from(side.location.as_deref().unwrap_or(&side.path)),
                    relative: PathBuf::from(&side.path),
                    size: side.bytes,
                    changed: None,
                })
                .collect(),
            class_names: dataset.class_names.clone(),
            subfolder: dataset.subfolder.clone(),
            restore: dataset.restore.clone(),
            compression: dataset.compression,
        })
        .collect();
    let settings = stored.settings.clone();
    let targets: Vec<Target> = stored
        .datasets
        .iter()
        .zip(&datasets)
        .map(|(dataset, plan)| Target {
            storage,
            input_storage: &*input_storage,
            options: &options,
            settings: &settings,
            dataset: plan,
            tf_stem: dataset.tf_stem.clone(),
        })
        .collect();

    // A commit killed while it replaced a dataset left that half done: finished or undone
    // first, so that each directory holds one dataset.
    for target in &targets {
        let dir = &target.dataset.output_dir;
        for tag in [target.temp_tag(), String::new()] {
            swap::recover(storage, dir, &tag).map_err(|err| Error::io(dir, err))?;
        }
    }
    // Every receipt of every dataset is read and checked before anything is published.
    let mut missing = Vec::new();
    let mut outputs: Vec<Option<Vec<ChunkOutput>>> = Vec::new();
    for (d, (dataset, target)) in stored.datasets.iter().zip(&targets).enumerate() {
        let plan = target.dataset;
        if dataset.problem.is_some() || already_published(target) {
            outputs.push(None);
            continue;
        }
        let mut found = Vec::new();
        for (c, chunk) in dataset.chunks.iter().enumerate() {
            match read_receipt(storage, &receipt_path(output, d, c))? {
                Some(receipt) => {
                    check(storage, &receipt, &plan.output_dir, verify_checksums)?;
                    found.push(receipt.into_output(&plan.output_dir));
                }
                None => missing.push(format!(
                    "{}: part {c} (worker {})",
                    dataset.name, chunk.worker
                )),
            }
        }
        outputs.push(Some(found));
    }
    if !missing.is_empty() {
        return Err(Error::new(ErrorKind::PartsMissing { missing }).in_file(output));
    }

    let mut summaries = Vec::new();
    let mut to_publish: Vec<Publishing> = Vec::new();
    for (index, ((dataset, target), found)) in stored
        .datasets
        .iter()
        .zip(&targets)
        .zip(outputs)
        .enumerate()
    {
        let plan = target.dataset;
        let summary = match (&dataset.problem, found) {
            (Some(problem), _) => {
                let err = Error::new(ErrorKind::Io(std::io::Error::other(problem.clone())));
                DatasetSummary {
                    error: Some(problem.clone()),
                    ..DatasetSummary::failed(plan, &err)
                }
            }
            (None, None) => match target.read_manifest() {
                Ok(Some(manifest)) => DatasetSummary::done(plan, DatasetStatus::Kept, manifest),
                _ => DatasetSummary::failed(plan, &Error::new(ErrorKind::NotSharded { front_end })),
            },
            (None, Some(found)) => match side_files_changed(&*input_storage, dataset)? {
                Some(what) => {
                    let err = Error::new(ErrorKind::InputChanged { what }).in_file(output);
                    DatasetSummary::failed(plan, &err)
                }
                None => {
                    // A dataset no worker wrote a part of (its files only, or empty files)
                    // has no directory yet.
                    let dir = &plan.output_dir;
                    storage
                        .create_dir_all(dir)
                        .map_err(|err| Error::io(dir, err))?;
                    to_publish.push((index, found));
                    // Replaced once published.
                    DatasetSummary::failed(plan, &Error::new(ErrorKind::NotSharded { front_end }))
                }
            },
        };
        summaries.push(summary);
    }
    publish_all(storage, &targets, to_publish, &mut summaries)?;
    // What killed workers left: parts of theirs that no receipt names. Only once every
    // dataset is published, as the splits of a TFDS dataset share a directory and each
    // other's temporary files until then.
    for (target, summary) in targets.iter().zip(&summaries) {
        if summary.status != DatasetStatus::Failed {
            let dir = &target.dataset.output_dir;
            target
                .remove_own_temps()
                .map_err(|err| Error::io(dir, err))?;
        }
    }
    let tfds_metadata =
        crate::running::tfds_info::write_metadata(settings.direction, storage, &mut summaries);
    remove_control(storage, output).map_err(|err| {
        let why = std::io::Error::other(format!(
            "every dataset is published, but the sharded run's files in {CONTROL_DIR}/ could \
             not all be removed ({err}): commit again to remove them"
        ));
        Error::new(ErrorKind::Io(why)).in_file(output)
    })?;
    Ok(Summary {
        tfds_metadata,
        ..Summary::new(
            stored.settings.direction,
            stored.input.clone(),
            output.display().to_string(),
            summaries,
            started,
        )
    })
}

/// The first side file of `dataset` rewritten since the plan was stored, in words.
///
/// # Errors
///
/// When one cannot be looked at: then it is not known to have changed.
fn side_files_changed(
    input: &dyn Storage,
    dataset: &StoredDataset,
) -> Result<Option<String>, Error> {
    for side in &dataset.side_files {
        let path = PathBuf::from(side.location.as_deref().unwrap_or(&side.path));
        let size = input.size(&path).map_err(|err| Error::io(&path, err))?;
        let version = input.version(&path);
        let same = match (size, version) {
            (Some(size), Ok(version)) => size == side.bytes && version == side.version,
            (Some(_), Err(err)) => return Err(Error::io(&path, err)),
            (None, _) => false,
        };
        if !same {
            return Ok(Some(format!(
                "dataset {}: {} changed since the plan was stored",
                dataset.name, side.path
            )));
        }
    }
    Ok(None)
}

/// A dataset to publish: its index among the targets, and its work items' outputs.
type Publishing = (usize, Vec<ChunkOutput>);

/// Publishes each dataset of `to_publish` (an index into `targets` and its outputs), the
/// splits of a TFDS dataset that share a folder together with the folder's metadata, and
/// puts its summary in `summaries`.
fn publish_all(
    storage: &dyn Storage,
    targets: &[Target<'_>],
    to_publish: Vec<Publishing>,
    summaries: &mut [DatasetSummary],
) -> Result<(), Error> {
    let mut groups: Vec<(PathBuf, Vec<Publishing>)> = Vec::new();
    for (index, outputs) in to_publish {
        let target = &targets[index];
        let dir = &target.dataset.output_dir;
        match groups
            .iter_mut()
            .find(|(folder, _)| folder == dir && target.in_folder_group())
        {
            Some((_, members)) => members.push((index, outputs)),
            None => groups.push((dir.clone(), vec![(index, outputs)])),
        }
    }
    for (dir, members) in groups {
        let mut ready = Vec::new();
        let mut indices = Vec::new();
        for (index, outputs) in members {
            let target = &targets[index];
            match target.ready(outputs) {
                Ok(made) => {
                    ready.push((target, made));
                    indices.push(index);
                }
                Err(failed) => {
                    for (_, made) in &ready {
                        for copy in &made.copies {
                            copy.undo(storage);
                        }
                    }
                    return Err(failed.into_error());
                }
            }
        }
        // The folder's metadata, from its splits published now and those kept.
        let metadata = match targets[indices[0]].in_folder_group() {
            true => {
                let kept = summaries.iter().filter(|summary| {
                    summary.status == DatasetStatus::Kept && Path::new(&summary.output_dir) == dir
                });
                let manifests: Vec<&Manifest> = ready
                    .iter()
                    .map(|(_, made)| &made.manifest)
                    .chain(kept.filter_map(|summary| summary.manifest.as_ref()))
                    .collect();
                folder_metadata(&manifests).map_err(|why| {
                    let why =
                        std::io::Error::other(format!("cannot write the TFDS metadata: {why}"));
                    Error::new(ErrorKind::Io(why)).in_file(&dir)
                })?
            }
            false => Vec::new(),
        };
        let manifests =
            put_in_place(storage, &dir, ready, metadata).map_err(PublishFailed::into_error)?;
        for (index, manifest) in indices.into_iter().zip(manifests) {
            summaries[index] =
                DatasetSummary::done(targets[index].dataset, DatasetStatus::Converted, manifest);
        }
    }
    Ok(())
}

/// Whether the dataset this run makes is published already, whole: a commit that stopped
/// after publishing it (not a dataset published there before, which it replaces).
fn already_published(target: &Target) -> bool {
    target
        .read_manifest()
        .ok()
        .flatten()
        .is_some_and(|manifest| {
            crate::running::resume::still_whole(
                &manifest,
                target.settings,
                target.dataset,
                target.storage,
            )
        })
}

fn check(
    storage: &dyn Storage,
    receipt: &Receipt,
    dir: &Path,
    verify_checksums: bool,
) -> Result<(), Error> {
    let checked = receipt.check_part(storage, dir).and_then(|()| {
        if verify_checksums {
            receipt.check_checksum(storage, dir)
        } else {
            Ok(())
        }
    });
    checked.map_err(|what| Error::new(ErrorKind::ReceiptMismatch { what }).in_file(dir))
}

/// The options a single run with the stored plan's settings would have had, for
/// publishing.
fn options_of(stored: &StoredPlan) -> Result<Options, Error> {
    let settings = &stored.settings;
    let mut options = Options::new(settings.direction);
    options.mapping = MappingSpec::new().lossy(stored.lossy);
    options.part_prefix = settings.part_prefix.clone();
    options.part_digits = settings.part_digits;
    options.sizing = settings.sizing;
    options.side_files = settings.side_files;
    options.to = settings.to;
    options.compression = match settings.compression.as_str() {
        crate::options::AS_RECORDED => None,
        name => Some(Compression::from_str(name).map_err(|_| {
            Error::new(ErrorKind::Io(std::io::Error::other(format!(
                "unknown compression {name:?} in the stored plan"
            ))))
        })?),
    };
    Ok(options)
}

/// Removes the receipts, the workers' lock directories and, last, the plan: a commit
/// that fails or is killed on the way still finds the plan, and finishes.
fn remove_control(storage: &dyn Storage, output: &Path) -> std::io::Result<()> {
    let control = output.join(CONTROL_DIR);
    let files = storage.file_names(&control)?;
    for name in storage.entries(&control)? {
        if files.contains(&name) {
            continue;
        }
        let dir = control.join(name);
        let names = storage.file_names(&dir)?;
        let failed = output::remove_all(storage, names.into_iter().map(|name| dir.join(name)));
        if let Some((_, err)) = failed.into_iter().next() {
            return Err(err);
        }
        storage.remove_dir_if_empty(&dir);
    }
    let (plan, others): (Vec<String>, Vec<String>) = files
        .into_iter()
        .partition(|name| name == crate::sharded::stored::PLAN_NAME);
    for name in others.into_iter().chain(plan) {
        storage.remove(&control.join(name))?;
    }
    storage.remove_dir_if_empty(&control);
    Ok(())
}
