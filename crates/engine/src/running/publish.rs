//! A dataset's output directory and its files' names, and publication: parts renamed to
//! their final names in order, the files that come with them copied beside them, the
//! manifest last (what was there before and what replaces it: [`existing`]).
//!
//! [`existing`]: crate::running::existing

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ofconvert_bridge::MappingSpec;
use ofconvert_tfrecord::Compression;

use crate::error::{Error, ErrorKind};
use crate::manifest::{
    Manifest, ManifestInput, ManifestPart, OneflowReader, SideFile, TensorflowReader,
};
use crate::naming::layout::{self, DatasetFiles};
use crate::options::{Direction, ExistingOutput, Options, Settings, TfFile};
use crate::planning::plan::{DatasetPlan, Restore};
use crate::recode::ImageConversion;
use crate::records::copy::{bytes_file, copy_file, empty_file, Copied, Destination};
use crate::records::output::TempPart;
use crate::records::SkippedRecords;
use crate::running::chunk::ChunkOutput;
use crate::running::summary::slash_path;
use crate::running::tfds_info::{recoded_images, rewritten_features};
use crate::schema::SchemaBuilder;
use crate::storage::Storage;
use crate::tfds::{rewrite_features, TfdsOrigin, FEATURES};

/// What a dataset's output directory is written with.
pub(crate) struct Target<'a> {
    /// Where the output is written.
    pub(crate) storage: &'a dyn Storage,
    /// Where the inputs, and the files that come with them, are read.
    pub(crate) input_storage: &'a dyn Storage,
    pub(crate) options: &'a Options,
    pub(crate) settings: &'a Settings,
    pub(crate) dataset: &'a DatasetPlan,
    /// The name of the TFRecord files written by of2tf, unless they are a TFDS split's.
    pub(crate) tf_stem: String,
}

impl Target<'_> {
    /// Calls `f` with what tells the dataset's files from the others in its directory.
    pub(super) fn with_files<R>(&self, f: impl FnOnce(DatasetFiles<'_>) -> R) -> R {
        let stem = self.stem();
        match (self.settings.direction, self.restore()) {
            (Direction::TfToOf, _) => f(DatasetFiles::Parts {
                prefix: &self.options.part_prefix,
            }),
            (Direction::OfToTf, Some(restore)) => {
                let names: Vec<String> =
                    restore.files.iter().map(|(name, _)| name.clone()).collect();
                f(DatasetFiles::Named { names: &names })
            }
            (Direction::OfToTf, None) => f(DatasetFiles::Shards { stem: &stem }),
        }
    }

    /// The TFDS metadata files beside a TFDS split given back in TFDS's layout, which no
    /// longer describe the folder once its files change.
    pub(super) fn tfds_metadata(&self) -> &'static [&'static str] {
        match self.tfds() {
            Some(_) => &[crate::tfds::DATASET_INFO, crate::tfds::FEATURES],
            None => &[],
        }
    }

    /// The TFDS dataset and split given back in TFDS's layout (of2tf).
    fn tfds(&self) -> Option<&TfdsOrigin> {
        match self.settings.direction {
            Direction::TfToOf => None,
            Direction::OfToTf => self.dataset.tfds.as_ref(),
        }
    }

    /// The TFRecord files given back under the names they had (of2tf).
    fn restore(&self) -> Option<&Restore> {
        match self.settings.direction {
            Direction::TfToOf => None,
            Direction::OfToTf => self.dataset.restore.as_ref(),
        }
    }

    /// What tells the dataset from the others sharing its directory, if it shares one.
    fn shared_tag(&self) -> Option<String> {
        self.dataset.shared_tag(self.settings.direction)
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

    /// The manifest's file name: each dataset sharing a directory (the splits of a TFDS
    /// dataset, the families of a folder given back to it) has its own.
    pub(crate) fn manifest_name(&self) -> String {
        match self.shared_tag() {
            Some(tag) => layout::shared_manifest_name(&tag),
            None => layout::MANIFEST_NAME.to_owned(),
        }
    }

    /// What this dataset's temporary file names carry after the temporary prefix.
    pub(crate) fn temp_tag(&self) -> String {
        layout::temp_tag(self.shared_tag().as_deref())
    }

    /// The name of part `index` of `count`.
    pub(crate) fn part_name(&self, index: usize, count: usize) -> String {
        let options = self.options;
        if let Some(name) = self.restore().and_then(|r| r.part_names().nth(index)) {
            return name.to_owned();
        }
        match (self.settings.direction, self.tfds()) {
            (Direction::TfToOf, _) => {
                layout::part_name(&options.part_prefix, options.part_digits, index)
            }
            (Direction::OfToTf, Some(origin)) => {
                origin.shard_name(index, count, options.to.name(), self.dataset.compression)
            }
            (Direction::OfToTf, None) => {
                let (extension, compression) = (options.to.name(), self.dataset.compression);
                layout::tf_shard_name(&self.tf_stem, index, count, extension, compression)
            }
        }
    }

    /// Where work item `index` of `count` writes its part number `sub`: under a temporary
    /// name, renamed when the dataset is done; or, where renames are copies, the work item
    /// writes one part and no dataset can be in the way, under the part's final name: the
    /// manifest, written last, is what publishes it.
    pub(crate) fn part_path(&self, index: usize, count: usize, sub: usize) -> PathBuf {
        let dir = &self.dataset.output_dir;
        if self.writes_under_temporary_names() || self.options.sizing.max_part_bytes.is_some() {
            dir.join(layout::temp_part_name(&self.temp_tag(), index, sub))
        } else {
            dir.join(self.part_name(index, count))
        }
    }

    /// Whether the dataset's files wait under temporary names until it is published: where
    /// renames are cheap, and wherever a dataset there already must stay whole until the
    /// new one is (its files are not written over).
    fn writes_under_temporary_names(&self) -> bool {
        let replacing = matches!(
            self.options.existing,
            ExistingOutput::Overwrite | ExistingOutput::Resume
        );
        self.storage.renames_cheaply() || replacing || self.options.replacing
    }

    /// Makes the dataset's manifest from the outputs of its work items and copies the
    /// files that come with it beside its parts, each under a temporary name: what
    /// `running::placing` needs to publish it.
    pub(crate) fn ready(&self, outputs: Vec<ChunkOutput>) -> Result<Ready, PublishFailed> {
        let dir = &self.dataset.output_dir;
        let options = self.options;
        let mut schema = SchemaBuilder::new();
        let mut skipped = SkippedRecords::default();
        let mut per_chunk = Vec::new();
        let mut compressions = vec![None; self.dataset.inputs.len()];
        let mut images = ImageConversion::default();
        let mut rounded = 0;
        for output in outputs {
            images.add(&output.images);
            rounded += output.rounded;
            schema.merge(output.schema);
            skipped.add(output.skipped);
            per_chunk.push(output.parts);
            for (input, compression) in output.compressions {
                if let Some(slot) = compressions.get_mut(input) {
                    *slot = Some(compression);
                }
            }
        }
        let files = self.files(per_chunk);
        let count = files.len();
        let mut schema = schema.finish();
        schema.set_class_names(&self.class_names());
        // TFDS's description of the features follows what `--images` made of the images.
        let recoded = match self.settings.direction {
            Direction::TfToOf => recoded_images(self.settings.images, &schema),
            Direction::OfToTf => BTreeMap::new(),
        };
        let features = self.dataset.side_files.iter().find_map(|side| {
            (file_name(&side.relative) == FEATURES)
                .then(|| rewritten_features(self.input_storage, &side.path, &recoded))?
                .map(|text| (side.size, text))
        });
        let copies = self
            .copy_files(&files, features.as_ref().map(|(_, text)| text))
            .map_err(PublishFailed::undone)?;
        let (parts, temps): (Vec<ManifestPart>, Vec<Option<TempPart>>) = files.into_iter().unzip();

        let mixed = self.restore().is_some_and(Restore::mixes_compressions);
        let mut manifest = Manifest::new(self.settings.clone());
        manifest.inputs = manifest_inputs(self.dataset, &compressions);
        manifest.records = parts.iter().map(|part| part.records).sum();
        manifest.warnings = self.dataset.warnings.clone();
        // The schema's warnings are about OneFlow's reader and decoders: TFRecords written
        // by of2tf are read by TensorFlow.
        if self.settings.direction == Direction::TfToOf {
            manifest.warnings.extend(schema.warnings());
        }
        if manifest.records == 0 && !self.dataset.files_only() {
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
            // How tf.data reads the shards; it reads no ArrayRecord file, nor files of
            // several compressions at once.
            Direction::OfToTf if count > 0 && options.to == TfFile::Tfrecord && !mixed => {
                let names: Vec<String> = parts.iter().map(|part| part.name.clone()).collect();
                manifest.tensorflow = Some(TensorflowReader::new(
                    &absolute,
                    &names,
                    self.dataset.compression_of(0).tf_name(),
                ));
            }
            _ => {}
        }
        manifest.parts = parts;
        manifest.skipped = skipped;
        manifest.schema = schema;
        manifest.image_conversion = (!images.is_empty()).then_some(images);
        manifest.tfds = self.dataset.tfds.clone().map(|mut origin| {
            if let Some(text) = origin.features.as_deref() {
                origin.features = rewrite_features(text, &recoded).or(origin.features);
            }
            origin
        });
        manifest.subfolder = self.dataset.subfolder.clone();
        manifest.side_files = copies
            .iter()
            .filter(|copy| self.is_side_file(&copy.name))
            .map(|copy| SideFile {
                name: copy.name.clone(),
                bytes: copy.bytes,
                crc32c: format!("{:08x}", copy.crc32c),
                input_bytes: features
                    .as_ref()
                    .filter(|_| copy.name == FEATURES)
                    .map(|(size, _)| *size),
            })
            .collect();
        if mixed {
            manifest.warnings.push(
                "the files went back compressed as each was, in more than one way: read each \
                 compression_type on its own"
                    .to_owned(),
            );
        }
        if let Some(compression) = self.dataset.compressed().filter(|_| self.tfds().is_some()) {
            manifest.warnings.push(format!(
                "{} shards: tfds.builder_from_directory reads only uncompressed TFRecord \
                 files; convert with --compression none to load the folder with TFDS",
                compression.name()
            ));
        }
        manifest.rounded_values = options.mapping.is_lossy().then_some(rounded);

        // Every new file waits under a temporary name (but the parts and copies an object
        // store takes under their names, where no dataset is in the way), until the
        // replacement sets the old dataset aside and puts the new one in place, its manifest
        // last (`running::placing`).
        let mut new: Vec<(String, String)> = temps
            .iter()
            .zip(&manifest.parts)
            .filter_map(|(temp, part)| Some((temp.as_ref()?, part)))
            .filter(|(temp, part)| temp.path != dir.join(&part.name))
            .map(|(temp, part)| (file_name(&temp.path), part.name.clone()))
            .collect();
        new.extend(copies.iter().filter_map(Copied::waiting));
        let placed: Vec<String> = manifest
            .parts
            .iter()
            .map(|part| part.name.clone())
            .chain(copies.iter().map(|copy| copy.name.clone()))
            .filter(|name| !new.iter().any(|(_, moved)| moved == name))
            .collect();
        let bytes = match manifest.to_bytes() {
            Ok(bytes) => bytes,
            Err(err) => {
                undo_all(self.storage, &copies);
                return Err(PublishFailed::undone(Error::io(dir, err)));
            }
        };
        Ok(Ready {
            manifest_file: (self.manifest_name(), bytes),
            manifest,
            new,
            placed,
            copies,
        })
    }

    /// The dataset's files in order, each as its manifest lists it, with the part that
    /// holds it (`per_chunk`: the parts of each work item, in order). Given back as it was,
    /// a file that held no records has no part: it is written empty.
    fn files(&self, per_chunk: Vec<Vec<TempPart>>) -> Vec<(ManifestPart, Option<TempPart>)> {
        let listed = |name: String, temp: Option<TempPart>, from: Option<String>| {
            let part = ManifestPart {
                name,
                records: temp.as_ref().map_or(0, |temp| temp.records),
                bytes: temp.as_ref().map_or(0, |temp| temp.bytes),
                // An empty file given back: the CRC of no bytes.
                crc32c: temp
                    .as_ref()
                    .map_or(Some(0), |temp| temp.crc32c)
                    .map(|crc| format!("{crc:08x}")),
                from,
            };
            (part, temp)
        };
        if let Some(restore) = self.restore() {
            let mut chunks = per_chunk.into_iter();
            return restore
                .files
                .iter()
                .map(|(name, empty)| {
                    let temp = match empty {
                        true => None,
                        false => chunks.next().and_then(|parts| parts.into_iter().next()),
                    };
                    listed(name.clone(), temp, None)
                })
                .collect();
        }
        // One part per input file holding records, unless resharding: the part holds
        // that whole file, which of2tf can give back under its name.
        let whole_files = self.settings.direction == Direction::TfToOf
            && !self.options.sizing.reshards()
            && self.options.sizing.max_part_bytes.is_none();
        // A name that is not UTF-8 cannot be written down exactly: such a file is not
        // given back under its name.
        let mut sources = self
            .dataset
            .inputs
            .iter()
            .filter(|input| input.size > 0)
            .map(|input| {
                input
                    .relative
                    .file_name()
                    .and_then(|name| name.to_str())
                    .map(str::to_owned)
            });
        let mut found = Vec::new();
        for parts in per_chunk {
            let source = sources.next().flatten();
            let whole = whole_files && parts.len() == 1;
            for temp in parts {
                found.push((temp, source.clone().filter(|_| whole)));
            }
        }
        let count = found.len();
        found
            .into_iter()
            .enumerate()
            .map(|(index, (temp, from))| listed(self.part_name(index, count), Some(temp), from))
            .collect()
    }

    /// Copies the files that come with the dataset beside its parts (TFDS's
    /// `features.json` as `features` when given), and writes the empty files of a dataset
    /// given back as it was; all or none.
    fn copy_files(
        &self,
        files: &[(ManifestPart, Option<TempPart>)],
        features: Option<&String>,
    ) -> Result<Vec<Copied>, Error> {
        let tag = self.temp_tag();
        let to = Destination {
            storage: self.storage,
            dir: &self.dataset.output_dir,
            tag: &tag,
            durability: self.options.durability(),
            temporary: self.writes_under_temporary_names(),
        };
        let mut copies = Vec::new();
        let empties = files
            .iter()
            .filter(|(_, temp)| temp.is_none())
            .map(|(part, _)| part.name.as_str());
        // In a directory other datasets share, a side file placed is theirs too (a copy of
        // the same file): a failure never removes it.
        let shared = self.shared_tag().is_some();
        let copy_all = || -> Result<(), Error> {
            if self.options.side_files {
                for side in &self.dataset.side_files {
                    let name = side
                        .relative
                        .file_name()
                        .unwrap_or(side.relative.as_os_str());
                    let copy = match features.filter(|_| name == FEATURES) {
                        Some(text) => bytes_file(to, name, text.clone().into_bytes())?,
                        None => copy_file(self.input_storage, &side.path, side.size, to, name)?,
                    };
                    copies.push(if shared {
                        copy.kept_once_placed()
                    } else {
                        copy
                    });
                }
            }
            for name in empties {
                copies.push(empty_file(to, name.as_ref())?);
            }
            Ok(())
        };
        match copy_all() {
            Ok(()) => Ok(copies),
            Err(err) => {
                undo_all(self.storage, &copies);
                Err(err)
            }
        }
    }

    /// Whether `name` is one of the files that came with the dataset (not an empty file it
    /// gives back).
    fn is_side_file(&self, name: &str) -> bool {
        self.options.side_files
            && self
                .dataset
                .side_files
                .iter()
                .any(|side| file_name(&side.relative) == name)
    }

    /// The class names of the dataset's features, under the names the mapping gives them.
    fn class_names(&self) -> BTreeMap<String, Vec<String>> {
        mapped_class_names(self.dataset, &self.options.mapping)
    }
}

/// The class names of `dataset`'s features under the names `mapping` gives them; a feature
/// the mapping leaves out or shifts (an offset) loses them.
pub(crate) fn mapped_class_names(
    dataset: &DatasetPlan,
    mapping: &MappingSpec,
) -> BTreeMap<String, Vec<String>> {
    dataset
        .class_names
        .iter()
        .filter(|(name, _)| !mapping.offsets(name))
        .filter_map(|(name, names)| Some((mapping.output_name(name)?.to_owned(), names.clone())))
        .collect()
}

/// A dataset whose files are written and whose manifest is made: what its replacement
/// moves into place.
pub(crate) struct Ready {
    pub(crate) manifest: Manifest,
    /// The manifest's name and bytes.
    pub(crate) manifest_file: (String, Vec<u8>),
    /// Each file waiting under a temporary name, and its name.
    pub(crate) new: Vec<(String, String)>,
    /// The names of the files already in place under their names (an object store takes
    /// a fresh dataset's parts so): the new dataset's own, never set aside.
    pub(crate) placed: Vec<String>,
    /// The files copied beside the parts, removed if the replacement is undone.
    pub(crate) copies: Vec<Copied>,
}

/// Why a dataset could not be published, and what that left.
pub(crate) struct PublishFailed {
    pub(crate) err: Error,
    /// When the replacement could be neither done nor undone: what is left in the dataset's
    /// directory, in words. `None`: nothing was changed there.
    pub(crate) left: Option<String>,
}

impl PublishFailed {
    /// A failure before anything was changed in the directory.
    pub(crate) fn undone(err: Error) -> PublishFailed {
        PublishFailed { err, left: None }
    }

    /// The failure as one error, saying what it left.
    pub(crate) fn into_error(self) -> Error {
        match self.left {
            None => self.err,
            Some(left) => {
                let path = self.err.path().map(Path::to_path_buf);
                let err = Error::new(ErrorKind::Io(std::io::Error::other(format!(
                    "{}; {left}",
                    crate::error::error_chain(&self.err)
                ))));
                match path {
                    Some(path) => err.in_file(&path),
                    None => err,
                }
            }
        }
    }
}

/// Removes what copying wrote.
fn undo_all(storage: &dyn Storage, copies: &[Copied]) {
    for copy in copies {
        copy.undo(storage);
    }
}

/// The last component of a path relative to a root.
pub(super) fn file_name(relative: &Path) -> String {
    relative
        .file_name()
        .unwrap_or(relative.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// The inputs as a manifest lists them; `compressions` holds how reading found each stores
/// its records, by input index (inputs never opened, being empty, are uncompressed).
fn manifest_inputs(dataset: &DatasetPlan, compressions: &[Option<String>]) -> Vec<ManifestInput> {
    dataset
        .inputs
        .iter()
        .enumerate()
        .map(|(index, input)| ManifestInput {
            path: slash_path(&input.relative),
            bytes: input.size,
            changed: input.changed.clone(),
            compression: compressions
                .get(index)
                .cloned()
                .flatten()
                .unwrap_or_else(|| Compression::None.name().to_owned()),
        })
        .collect()
}
