//! A dataset's output directory before its records are converted and once they are: what an
//! earlier run left there that this one keeps (a dataset complete with the same inputs and
//! settings, the finished work items of an unfinished run) or removes, and a dataset
//! published there before, which stays whole until the new one is and is then replaced.

use std::collections::BTreeMap;

use crate::error::Error;
use crate::naming::layout;
use crate::options::ExistingOutput;
use crate::progress::DatasetStatus;
use crate::records::output::remove_own_temps;
use crate::records::swap;
use crate::running::chunk::ChunkOutput;
use crate::running::publish::Target;
use crate::running::resume;
use crate::running::summary::DatasetSummary;

impl Target<'_> {
    /// Gets the output directory ready: what an earlier run left there that this one uses
    /// (a dataset complete with the same inputs and settings, or, resuming, the finished work
    /// items of an unfinished run) and what it removes (the temporary files of runs that
    /// ended). A dataset already there stays, whole, until [`publish`](Target::publish)
    /// replaces it with a complete new one.
    pub(crate) fn prepare(&self) -> Result<Prepared, Error> {
        let dir = &self.dataset.output_dir;
        // Before anything else is looked at or removed: a replacement a killed run left
        // half done is finished or undone, so that the directory holds one dataset.
        if matches!(
            self.options.existing,
            ExistingOutput::Resume | ExistingOutput::Overwrite
        ) {
            let tag = self.temp_tag();
            swap::recover(self.storage, dir, &tag).map_err(|err| Error::io(dir, err))?;
            // The splits of a folder published together left the replacement untagged.
            if !tag.is_empty() {
                swap::recover(self.storage, dir, "").map_err(|err| Error::io(dir, err))?;
            }
        }
        if self.options.existing == ExistingOutput::Resume {
            if let Ok(Some(manifest)) = self.read_manifest() {
                if resume::still_whole(&manifest, self.settings, self.dataset, self.storage) {
                    self.remove_own_temps().map_err(|err| Error::io(dir, err))?;
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
        // Nothing runs yet: every temporary file of the dataset is a leftover, but the
        // finished work items a resumed run keeps. Those of other datasets sharing the
        // directory are theirs to keep or remove.
        match self.options.existing {
            ExistingOutput::Overwrite => self.remove_own_temps(),
            ExistingOutput::Resume => {
                remove_own_temps(self.storage, dir, &self.temp_tag(), &kept.files)
            }
            ExistingOutput::Refuse | ExistingOutput::Shared => Ok(()),
        }
        .map_err(|err| Error::io(dir, err))?;
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
    pub(crate) fn remove_own_temps(&self) -> std::io::Result<()> {
        remove_own_temps(
            self.storage,
            &self.dataset.output_dir,
            &self.temp_tag(),
            &[],
        )
    }

    /// The files of `present` (the names in the dataset's directory) that are the dataset
    /// published there before, which a new one replaces: its manifest, the parts and files
    /// it lists, those named as this dataset's files are, and a TFDS split's metadata,
    /// which no longer describes the files.
    pub(super) fn old_files(&self, present: &[String]) -> std::io::Result<Vec<String>> {
        let old = self.read_manifest()?;
        let manifest_name = self.manifest_name();
        let listed: Vec<&str> = old
            .iter()
            .flat_map(|manifest| {
                let parts = manifest.parts.iter().map(|part| part.name.as_str());
                parts.chain(manifest.side_files.iter().map(|side| side.name.as_str()))
            })
            .collect();
        let tfds_metadata = self.tfds_metadata();
        let old_files = self.with_files(|files| {
            present
                .iter()
                .filter(|name| {
                    listed.contains(&name.as_str())
                        || tfds_metadata.contains(&name.as_str())
                        || (!layout::is_temporary(name)
                            && layout::is_dataset_file(name, &manifest_name, files, ""))
                })
                .cloned()
                .collect()
        });
        Ok(old_files)
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
