//! A dataset's output directory before its records are converted and once they are: what an
//! earlier run left there that this one keeps (a dataset complete with the same inputs and
//! settings, the finished work items of an unfinished run) or removes, and a dataset
//! published there before, which stays whole until the new one is and is then replaced.

use std::collections::BTreeMap;

use crate::error::Error;
use crate::manifest::Manifest;
use crate::naming::layout;
use crate::options::ExistingOutput;
use crate::planning::plan::DatasetPlan;
use crate::progress::DatasetStatus;
use crate::records::output::{clear_dataset, remove_temps, remove_temps_but};
use crate::running::chunk::ChunkOutput;
use crate::running::publish::{file_name, Target};
use crate::running::resume;
use crate::running::summary::{slash_path, DatasetSummary};

impl Target<'_> {
    /// Gets the output directory ready: what an earlier run left there that this one uses
    /// (a dataset complete with the same inputs and settings, or, resuming, the finished work
    /// items of an unfinished run) and what it removes (the temporary files of runs that
    /// ended). A dataset already there stays, whole, until [`publish`](Target::publish)
    /// replaces it with a complete new one.
    pub(crate) fn prepare(&self) -> Result<Prepared, Error> {
        let dir = &self.dataset.output_dir;
        if self.options.existing == ExistingOutput::Resume {
            if let Ok(Some(manifest)) = self.read_manifest() {
                if &manifest.settings == self.settings
                    && same_inputs(&manifest, self.dataset)
                    && same_side_files(&manifest, self.dataset)
                    && manifest.parts_complete_in(self.storage, dir)
                {
                    remove_temps(self.storage, dir).map_err(|err| Error::io(dir, err))?;
                    return Ok(Prepared::Complete(Box::new(DatasetSummary::done(
                        self.dataset,
                        DatasetStatus::Kept,
                        manifest,
                    ))));
                }
            }
        }
        let key = resume::run_key(self.settings, self.dataset);
        let kept = match self.options.existing {
            ExistingOutput::Resume => resume::kept(self.storage, dir, &self.temp_tag(), &key),
            _ => resume::Kept::default(),
        };
        self.storage
            .create_dir_all(dir)
            .map_err(|err| Error::io(dir, err))?;
        match self.options.existing {
            // Nothing runs yet: every temporary file in the directory is a leftover.
            ExistingOutput::Overwrite => {
                remove_temps(self.storage, dir).map_err(|err| Error::io(dir, err))?
            }
            ExistingOutput::Resume => {
                remove_temps_but(self.storage, dir, &self.temp_tag(), &kept.files)
                    .map_err(|err| Error::io(dir, err))?;
            }
            ExistingOutput::Refuse | ExistingOutput::Shared => {}
        }
        Ok(Prepared::Convert {
            key,
            kept: kept.outputs,
        })
    }

    /// Whether a published dataset is in the directory (its manifest is there): one a failed
    /// run leaves as it was.
    pub(crate) fn holds_published(&self) -> bool {
        matches!(self.read_manifest(), Ok(Some(_)))
    }

    /// Removes this dataset's temporary files from its directory (those of the other
    /// datasets sharing it stay), and nothing else: a run that failed or was stopped leaves
    /// the dataset published there before as it was.
    pub(crate) fn remove_temps(&self) -> std::io::Result<()> {
        remove_temps_but(
            self.storage,
            &self.dataset.output_dir,
            &self.temp_tag(),
            &[],
        )
    }

    /// Removes the dataset's manifest, parts and temporary files from its directory (the
    /// temporary files of the other datasets sharing it, the splits of a TFDS dataset, stay);
    /// for a TFDS split, the folder's metadata too, which no longer describes the files there.
    pub(crate) fn clear_own(&self) -> std::io::Result<()> {
        let dir = &self.dataset.output_dir;
        self.with_files(|files| {
            clear_dataset(
                self.storage,
                dir,
                &self.manifest_name(),
                files,
                &self.temp_tag(),
            )
        })?;
        for name in self.tfds_metadata() {
            if self.storage.size(&dir.join(name))?.is_some() {
                self.storage.remove(&dir.join(name))?;
            }
        }
        Ok(())
    }

    /// Removes the dataset published in the directory before, if any, but for the files
    /// named `keep`, which the new one puts in place of theirs: its manifest first, then its
    /// parts and files (those its manifest lists, and those named as this dataset's are),
    /// and a TFDS split's metadata, which no longer describes the files.
    pub(super) fn retire_old(&self, keep: &[&str]) -> std::io::Result<()> {
        let dir = &self.dataset.output_dir;
        let old = self.read_manifest().ok().flatten();
        let manifest_name = self.manifest_name();
        if old.is_some() {
            self.storage.remove(&dir.join(&manifest_name))?;
        }
        let listed: Vec<String> = old
            .iter()
            .flat_map(|manifest| {
                let parts = manifest.parts.iter().map(|part| part.name.clone());
                parts.chain(manifest.side_files.iter().map(|side| side.name.clone()))
            })
            .collect();
        let tfds_metadata = self.tfds_metadata();
        let names = self.storage.file_names(dir)?;
        self.with_files(|files| {
            for name in names {
                let old_file = listed.contains(&name)
                    || tfds_metadata.contains(&name.as_str())
                    || (!layout::is_temporary(&name)
                        && layout::is_dataset_file(&name, &manifest_name, files, ""));
                if old_file && !keep.contains(&name.as_str()) {
                    self.storage.remove(&dir.join(&name))?;
                }
            }
            Ok(())
        })
    }
}

/// How a dataset's output directory was found: holding the dataset complete (`--resume`),
/// or to be converted as `key` tells the conversion ([`resume::run_key`]), keeping the
/// finished work items of an unfinished run of it, by number, with how many work items that
/// run had.
pub(crate) enum Prepared {
    Complete(Box<DatasetSummary>),
    Convert {
        key: String,
        kept: BTreeMap<usize, (usize, ChunkOutput)>,
    },
}

/// Whether a manifest lists the files that come with `dataset` as they are now: same names,
/// same sizes (none when side files are not carried).
fn same_side_files(manifest: &Manifest, dataset: &DatasetPlan) -> bool {
    if !manifest.settings.side_files {
        return manifest.side_files.is_empty();
    }
    manifest.side_files.len() == dataset.side_files.len()
        && manifest
            .side_files
            .iter()
            .zip(&dataset.side_files)
            .all(|(listed, side)| {
                let input_bytes = listed.input_bytes.unwrap_or(listed.bytes);
                listed.name == file_name(&side.relative) && input_bytes == side.size
            })
}

/// Whether a manifest lists the very inputs of `dataset`: same paths, same sizes.
fn same_inputs(manifest: &Manifest, dataset: &DatasetPlan) -> bool {
    manifest.inputs.len() == dataset.inputs.len()
        && manifest
            .inputs
            .iter()
            .zip(&dataset.inputs)
            .all(|(listed, input)| {
                listed.path == slash_path(&input.relative) && listed.bytes == input.size
            })
}
