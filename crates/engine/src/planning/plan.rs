//! Walking the input tree and grouping record files into datasets.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::clash::mark_clashes;
use super::group::{group_of, group_tf, walk, walk_of};
use super::loose::settle;
use super::noting::Noting;
use crate::error::{Error, ErrorKind};
use crate::front_end::FrontEnd;
use crate::holder::{Liveness, LockHolder};
use crate::options::{Direction, ExistingOutput, Options};
use crate::storage::object;
use crate::storage::{absolute_through_existing, Listing, LocalFs, Storage};

pub(crate) use super::dataset::Restore;
pub use super::dataset::{DatasetPlan, InputFile, Plan, SkippedFile};

/// Walks `input` and decides the datasets of a conversion into `output`.
///
/// # Errors
///
/// Usage errors ([`Error::is_usage`]): `input` missing, `output` not empty without
/// [`ExistingOutput::Overwrite`] or [`ExistingOutput::Resume`], one inside the other.
/// Problems with single files or datasets do not fail the plan: they are in
/// [`Plan::skipped`] and [`DatasetPlan::problem`].
///
/// `input` and `output` are local paths or object-store URLs (`s3://bucket/prefix`,
/// `gs://...`, `az://...`, `file://...`; `http(s)://` for a single input file).
pub fn plan(input: &Path, output: &Path, options: &Options) -> Result<Plan, Error> {
    plan_listed(input, None, output, options)
}

/// [`plan`], the input's files being `listed` when given (the objects named one by one
/// under the prefix `input`, found already) rather than listed from its storage.
pub(crate) fn plan_listed(
    input: &Path,
    listed: Option<Listing>,
    output: &Path,
    options: &Options,
) -> Result<Plan, Error> {
    let (input_storage, input) = object::storage_for(input).map_err(|err| Error::io(input, err))?;
    let (output_storage, output) =
        object::storage_for(output).map_err(|err| Error::io(output, err))?;
    let (input, output) = (input.as_path(), output.as_path());
    if object::is_url(input) || object::is_url(output) {
        let input_found = listed.is_some();
        check_urls(
            &*input_storage,
            input,
            input_found,
            &*output_storage,
            output,
            options,
        )?;
    } else {
        check_paths(input, output, options)?;
    }
    let walk = match listed {
        Some(listing) => walk_of(listing),
        None => walk(&*input_storage, input)?,
    };
    let noting = Noting::new(&*input_storage);
    let (mut datasets, mut skipped, unreadable) = match options.direction {
        Direction::TfToOf => {
            let side_files = options.side_files.then_some(options.part_prefix.as_str());
            group_tf(&noting, input, output, walk, side_files)
        }
        Direction::OfToTf => group_of(&noting, input, output, walk, options),
    };
    noting.fail_datasets(input, &mut datasets);
    if options.direction == Direction::OfToTf {
        fail_folder_siblings(&mut datasets, output);
    }
    let not_records = match options.direction {
        Direction::TfToOf => "not a TFRecord file".to_owned(),
        Direction::OfToTf => format!("not a part file ({}<number>)", options.part_prefix),
    };
    settle(&mut datasets, &mut skipped, &not_records);
    mark_clashes(&mut datasets, options.direction);
    Ok(Plan {
        direction: options.direction,
        input: input.to_path_buf(),
        output: output.to_path_buf(),
        datasets,
        skipped,
        unreadable,
        input_storage,
        output_storage,
    })
}

/// The splits of a TFDS dataset go back to one folder, published together: a split that
/// cannot be converted (its folder could not be read, so that even where it would go is
/// not known) keeps the others of the folder it would go to from being published.
fn fail_folder_siblings(datasets: &mut [DatasetPlan], output: &Path) {
    let failed: Vec<(String, PathBuf)> = datasets
        .iter()
        .filter(|dataset| dataset.problem.is_some())
        .filter_map(|dataset| {
            let parent = dataset.source.parent()?;
            let folder = match parent.as_os_str().is_empty() {
                true => output.to_path_buf(),
                false => output.join(parent),
            };
            Some((dataset.name.clone(), folder))
        })
        .collect();
    for dataset in datasets.iter_mut() {
        let sibling = failed
            .iter()
            .find(|(name, folder)| *folder == dataset.output_dir && *name != dataset.name);
        if let (Some((name, _)), None, Some(_)) = (sibling, &dataset.problem, &dataset.tfds) {
            let why = io::Error::other(format!(
                "not converted: {name}, a split of the same folder, cannot be; the folder keeps \
                 what it held"
            ));
            dataset.problem = Some(Error::io(&dataset.output_dir, why));
        }
    }
}

/// [`check_paths`] where one side is in an object store: the input must exist, the output
/// must hold nothing (unless overwriting or resuming), and neither may contain the other.
/// An input `found` already is not looked for again.
fn check_urls(
    input_storage: &dyn Storage,
    input: &Path,
    found: bool,
    output_storage: &dyn Storage,
    output: &Path,
    options: &Options,
) -> Result<(), Error> {
    let existing = options.existing;
    let (input_text, output_text) = (input.to_string_lossy(), output.to_string_lossy());
    let inside = |outer: &str, inner: &str| {
        let outer = outer.trim_end_matches('/');
        inner == outer || inner.starts_with(&format!("{outer}/"))
    };
    if inside(&input_text, &output_text) || inside(&output_text, &input_text) {
        return Err(Error::new(ErrorKind::Overlap {
            other: input.to_path_buf(),
        })
        .in_file(output));
    }
    // A prefix with objects under it, or else a single object.
    let input_found = found
        || input_storage
            .entries(input)
            .and_then(|entries| Ok(!entries.is_empty() || input_storage.size(input)?.is_some()))
            .map_err(|err| Error::io(input, err))?;
    if !input_found {
        return Err(Error::new(ErrorKind::InputMissing).in_file(input));
    }
    // Workers of a sharded run take no lock in a store (a rerun worker must not wait for a
    // lock a killed one left), nor heed one.
    if existing != ExistingOutput::Shared {
        let holder = output_storage
            .lock_holder(output)
            .map_err(|err| Error::io(output, err))?;
        check_lock(output, holder, options)?;
    }
    match existing {
        // Workers of a sharded run over datasets published before write beside them.
        ExistingOutput::Shared if options.replacing => {}
        ExistingOutput::Refuse | ExistingOutput::Shared => {
            let mut names = output_storage
                .entries(output)
                .map_err(|err| Error::io(output, err))?;
            // A lock nobody holds (or one to break) is nothing in the way.
            names.retain(|name| name != crate::naming::layout::LOCK_NAME);
            refuse_unless_empty(output, unshared(existing, names), options.front_end)?;
        }
        ExistingOutput::Overwrite | ExistingOutput::Resume => {}
    }
    Ok(())
}

/// Refuses an output whose lock `holder` holds, before anything else is said of it: a
/// running conversion's files are not an interrupted run's. With
/// [`Options::break_lock`], a holder not known to run is let be: the run breaks its lock
/// when it takes its own.
fn check_lock(output: &Path, holder: Option<LockHolder>, options: &Options) -> Result<(), Error> {
    let Some(holder) = holder else {
        return Ok(());
    };
    let err = Error::locked(
        output,
        Box::new(holder),
        options.break_lock,
        options.front_end,
    );
    match err.kind() {
        ErrorKind::OutputLocked { liveness, .. }
            if options.break_lock && *liveness != Liveness::Running =>
        {
            Ok(())
        }
        _ => Err(err),
    }
}

/// The names found in an output that refuse it: all of them, or for a worker of a sharded
/// run, none once the run's plan is there (the other workers' files are expected then).
fn unshared(existing: ExistingOutput, names: Vec<String>) -> Vec<String> {
    let shared = existing == ExistingOutput::Shared
        && names
            .iter()
            .any(|name| name == crate::naming::layout::CONTROL_DIR);
    if shared {
        return Vec::new();
    }
    names
        .into_iter()
        .filter(|name| {
            existing != ExistingOutput::Shared || name != crate::naming::layout::LOCK_NAME
        })
        .collect()
}

/// [`ErrorKind::OutputNotEmpty`] naming some of `names` (sorted), if there are any.
fn refuse_unless_empty(
    output: &Path,
    mut names: Vec<String>,
    front_end: FrontEnd,
) -> Result<(), Error> {
    if names.is_empty() {
        return Ok(());
    }
    let more = names.len().saturating_sub(NAMES_SHOWN);
    names.truncate(NAMES_SHOWN);
    Err(Error::new(ErrorKind::OutputNotEmpty {
        found: names,
        more,
        front_end,
    })
    .in_file(output))
}

/// How many of the names found in an output that is not empty the error shows.
const NAMES_SHOWN: usize = 4;

fn check_paths(input: &Path, output: &Path, options: &Options) -> Result<(), Error> {
    let existing = options.existing;
    let input_abs =
        fs::canonicalize(input).map_err(|_| Error::new(ErrorKind::InputMissing).in_file(input))?;
    let output_abs = absolute_through_existing(output).map_err(|err| Error::io(output, err))?;
    if output_abs.starts_with(&input_abs) || input_abs.starts_with(&output_abs) {
        return Err(Error::new(ErrorKind::Overlap {
            other: input.to_path_buf(),
        })
        .in_file(output));
    }
    match fs::metadata(output) {
        Ok(meta) if !meta.is_dir() => {
            Err(Error::new(ErrorKind::OutputNotDirectory).in_file(output))
        }
        Ok(_) => {
            // One that cannot be read is no lock this run could take either: the run
            // fails on what it cannot write.
            check_lock(output, LocalFs.lock_holder(output).ok().flatten(), options)?;
            let refuses = matches!(existing, ExistingOutput::Refuse | ExistingOutput::Shared);
            if !refuses || options.replacing {
                return Ok(());
            }
            let mut names = LocalFs
                .entries(output)
                .map_err(|err| Error::io(output, err))?;
            // A lock file nobody holds is what a killed run leaves: nothing in the way.
            names.retain(|name| name != crate::naming::layout::LOCK_NAME);
            refuse_unless_empty(output, unshared(existing, names), options.front_end)
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(Error::io(output, err)),
    }
}
