//! A dataset's output directory before and after its records are converted: what resuming
//! keeps, what an earlier run left that must go, and publication — parts renamed to their
//! final names in order, the manifest last.

use std::path::PathBuf;

use ofconvert_tfrecord::Compression;

use crate::error::Error;
use crate::manifest::{Manifest, ManifestInput, ManifestPart, OneflowReader, TensorflowReader};
use crate::naming::layout::{self, DatasetFiles};
use crate::options::{Direction, ExistingOutput, Options, Settings};
use crate::planning::plan::DatasetPlan;
use crate::progress::DatasetStatus;
use crate::recode::ImageConversion;
use crate::records::output::clear_dataset;
use crate::records::SkippedRecords;
use crate::running::chunk::ChunkOutput;
use crate::running::summary::{slash_path, DatasetSummary};
use crate::schema::SchemaBuilder;
use crate::storage::Storage;
use crate::tfds::TfdsOrigin;

/// What a dataset's output directory is written with.
pub(crate) struct Target<'a> {
    pub(crate) storage: &'a dyn Storage,
    pub(crate) options: &'a Options,
    pub(crate) settings: &'a Settings,
    pub(crate) dataset: &'a DatasetPlan,
    /// The name of the TFRecord files written by of2tf, unless they are a TFDS split's.
    pub(crate) tf_stem: String,
}

impl Target<'_> {
    /// Gets the output directory ready. `Ok(Some(_))` when resuming finds the dataset
    /// complete from an earlier run with the same inputs and settings.
    pub(crate) fn prepare(&self) -> Result<Option<DatasetSummary>, Error> {
        let dir = &self.dataset.output_dir;
        if self.options.existing == ExistingOutput::Resume {
            if let Ok(Some(manifest)) = self.read_manifest() {
                if &manifest.settings == self.settings
                    && same_inputs(&manifest, self.dataset)
                    && manifest.parts_complete_in(self.storage, dir)
                {
                    crate::records::output::remove_temps(self.storage, dir)
                        .map_err(|err| Error::io(dir, err))?;
                    return Ok(Some(DatasetSummary::done(
                        self.dataset,
                        DatasetStatus::Kept,
                        manifest,
                    )));
                }
            }
        }
        self.storage
            .create_dir_all(dir)
            .map_err(|err| Error::io(dir, err))?;
        if matches!(
            self.options.existing,
            ExistingOutput::Overwrite | ExistingOutput::Resume
        ) {
            // Nothing runs yet: every temporary file in the directory is a leftover.
            self.clear("").map_err(|err| Error::io(dir, err))?;
        }
        Ok(None)
    }

    /// Removes the dataset's manifest, parts and temporary files (those named with `temps`
    /// after the temporary prefix) from its directory; for a TFDS split, the folder's
    /// metadata too, which no longer describes the files there.
    pub(crate) fn clear(&self, temps: &str) -> std::io::Result<()> {
        let dir = &self.dataset.output_dir;
        let files = match self.settings.direction {
            Direction::TfToOf => DatasetFiles::Parts {
                prefix: &self.options.part_prefix,
            },
            Direction::OfToTf => DatasetFiles::Shards { stem: &self.stem() },
        };
        clear_dataset(self.storage, dir, &self.manifest_name(), files, temps)?;
        if self.tfds().is_some() {
            for name in [crate::tfds::DATASET_INFO, crate::tfds::FEATURES] {
                if self.storage.size(&dir.join(name))?.is_some() {
                    self.storage.remove(&dir.join(name))?;
                }
            }
        }
        Ok(())
    }

    /// Removes what [`Target::clear`] removes, leaving the temporary files of the other
    /// datasets sharing the directory (the splits of a TFDS dataset) alone.
    pub(crate) fn clear_own(&self) -> std::io::Result<()> {
        self.clear(&self.temp_tag())
    }

    /// The TFDS dataset and split given back in TFDS's layout (of2tf).
    fn tfds(&self) -> Option<&TfdsOrigin> {
        match self.settings.direction {
            Direction::TfToOf => None,
            Direction::OfToTf => self.dataset.tfds.as_ref(),
        }
    }

    /// What the TFRecord files' names start with (of2tf).
    fn stem(&self) -> String {
        match self.tfds() {
            Some(origin) => origin.stem(),
            None => self.tf_stem.clone(),
        }
    }

    /// The dataset's manifest, if one is there.
    pub(crate) fn read_manifest(&self) -> std::io::Result<Option<Manifest>> {
        Manifest::read_named(
            self.storage,
            &self.dataset.output_dir,
            &self.manifest_name(),
        )
    }

    /// The manifest's file name: each split of a TFDS dataset has its own.
    pub(crate) fn manifest_name(&self) -> String {
        match self.tfds() {
            Some(origin) => origin.manifest_name(),
            None => layout::MANIFEST_NAME.to_owned(),
        }
    }

    /// What this dataset's temporary file names carry after the temporary prefix.
    fn temp_tag(&self) -> String {
        self.tfds()
            .map(|origin| format!("{}.", origin.stem()))
            .unwrap_or_default()
    }

    /// The name of part `index` of `count`.
    pub(crate) fn part_name(&self, index: usize, count: usize) -> String {
        let options = self.options;
        match (self.settings.direction, self.tfds()) {
            (Direction::TfToOf, _) => {
                layout::part_name(&options.part_prefix, options.part_digits, index)
            }
            (Direction::OfToTf, Some(origin)) => {
                origin.shard_name(index, count, options.compression)
            }
            (Direction::OfToTf, None) => {
                layout::tf_shard_name(&self.tf_stem, index, count, options.compression)
            }
        }
    }

    /// Where work item `index` of `count` writes its part number `sub`: under a temporary
    /// name, renamed when the dataset is done; or, where renames are copies and the work
    /// item writes one part, under the part's final name: the manifest, written last,
    /// is what publishes it.
    pub(crate) fn part_path(&self, index: usize, count: usize, sub: usize) -> PathBuf {
        let dir = &self.dataset.output_dir;
        if self.storage.renames_cheaply() || self.options.sizing.max_part_bytes.is_some() {
            dir.join(layout::temp_part_name(&self.temp_tag(), index, sub))
        } else {
            dir.join(self.part_name(index, count))
        }
    }

    /// Renames a dataset's parts to their final names, in order, and writes its manifest.
    pub(crate) fn publish(&self, outputs: Vec<ChunkOutput>) -> Result<Manifest, Error> {
        let dir = &self.dataset.output_dir;
        let options = self.options;
        let mut schema = SchemaBuilder::new();
        let mut skipped = SkippedRecords::default();
        let mut temps = Vec::new();
        let mut compressions = vec![None; self.dataset.inputs.len()];
        let mut images = ImageConversion::default();
        let mut rounded = 0;
        for output in outputs {
            images.add(&output.images);
            rounded += output.rounded;
            schema.merge(output.schema);
            skipped.add(output.skipped);
            temps.extend(output.parts);
            for (input, compression) in output.compressions {
                if let Some(slot) = compressions.get_mut(input) {
                    *slot = Some(compression);
                }
            }
        }
        let count = temps.len();
        let parts: Vec<ManifestPart> = temps
            .iter()
            .enumerate()
            .map(|(index, temp)| ManifestPart {
                name: self.part_name(index, count),
                records: temp.records,
                bytes: temp.bytes,
            })
            .collect();

        let schema = schema.finish();
        let mut manifest = Manifest::new(self.settings.clone());
        manifest.inputs = manifest_inputs(self.dataset, &compressions);
        manifest.records = parts.iter().map(|part| part.records).sum();
        manifest.warnings = self.dataset.warnings.clone();
        manifest.warnings.extend(schema.warnings());
        if manifest.records == 0 {
            manifest
                .warnings
                .push("no records: there is nothing to open".to_owned());
        }
        // The reader lines must work from wherever the user runs Python.
        let absolute = if crate::storage::object::is_url(dir) {
            dir.clone()
        } else {
            std::path::absolute(dir).unwrap_or_else(|_| dir.clone())
        };
        match self.settings.direction {
            Direction::TfToOf if count > 0 => {
                manifest.oneflow = Some(OneflowReader::new(
                    &absolute,
                    count as u64,
                    &options.part_prefix,
                    options.part_digits,
                ));
            }
            Direction::OfToTf if count > 0 => {
                let names: Vec<String> = parts.iter().map(|part| part.name.clone()).collect();
                manifest.tensorflow = Some(TensorflowReader::new(
                    &absolute,
                    &names,
                    options.compression.tf_name(),
                ));
            }
            _ => {}
        }
        manifest.parts = parts;
        manifest.skipped = skipped;
        manifest.schema = schema;
        manifest.image_conversion = (!images.is_empty()).then_some(images);
        manifest.tfds = self.dataset.tfds.clone();
        if self.tfds().is_some() && options.compression != Compression::None {
            manifest.warnings.push(format!(
                "{} shards: tfds.builder_from_directory reads only uncompressed TFRecord \
                 files; convert without --compression to load the folder with TFDS",
                options.compression.name()
            ));
        }
        manifest.rounded_values = options.mapping.is_lossy().then_some(rounded);

        // The manifest is complete and synced before the first part takes its final name: a
        // run killed while renaming leaves it staged beside the parts, and it appears last.
        let staged = manifest
            .stage(self.storage, dir, &self.manifest_name())
            .map_err(|err| Error::io(dir, err))?;
        let renamed = temps
            .iter()
            .zip(&manifest.parts)
            .filter(|(temp, part)| temp.path != dir.join(&part.name))
            .try_for_each(|(temp, part)| {
                self.storage
                    .rename(&temp.path, &dir.join(&part.name))
                    .map_err(|err| Error::io(&temp.path, err))
            })
            .and_then(|()| {
                self.storage
                    .sync_dir(dir)
                    .map_err(|err| Error::io(dir, err))
            });
        if let Err(err) = renamed {
            staged.discard();
            return Err(err);
        }
        staged.commit().map_err(|err| Error::io(dir, err))?;
        Ok(manifest)
    }
}

/// The inputs as a manifest lists them; `compressions` holds what reading found, by input
/// index (inputs never opened, being empty, are uncompressed).
fn manifest_inputs(
    dataset: &DatasetPlan,
    compressions: &[Option<Compression>],
) -> Vec<ManifestInput> {
    dataset
        .inputs
        .iter()
        .enumerate()
        .map(|(index, input)| ManifestInput {
            path: slash_path(&input.relative),
            bytes: input.size,
            compression: compressions
                .get(index)
                .copied()
                .flatten()
                .unwrap_or_default()
                .name()
                .to_owned(),
        })
        .collect()
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
