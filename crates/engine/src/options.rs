//! What a conversion is asked to do.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ofconvert_bridge::{ErrorKind as MappingErrorKind, MappingSpec};
use ofconvert_tfrecord::Compression;
use serde::{Deserialize, Serialize};

use crate::recode::ImagePolicy;

use crate::front_end::FrontEnd;
use crate::naming::layout;
use crate::storage::Durability;

/// Which way a conversion goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    /// TFRecord files in, OneFlow OFRecord datasets out.
    #[serde(rename = "tf2of")]
    TfToOf,
    /// OneFlow OFRecord datasets in, TFRecord files out.
    #[serde(rename = "of2tf")]
    OfToTf,
}

/// What to do about an output directory that already holds files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExistingOutput {
    /// Refuse to start unless the output is empty or missing.
    #[default]
    Refuse,
    /// Replace the datasets this run writes: their old parts, manifests and temporary files
    /// are removed first. Other files are left alone.
    Overwrite,
    /// Keep the datasets whose manifest and parts are complete and were made from the same
    /// inputs with the same settings; redo the others from scratch.
    Resume,
    /// One worker of a sharded run: the output may already hold what the other workers of
    /// the same stored plan wrote, and nothing in it is removed.
    Shared,
}

/// What to do with damaged input records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnCorrupt {
    /// A damaged record fails its dataset.
    #[default]
    Fail,
    /// Salvage: skip records with a bad data checksum or a payload that does not parse,
    /// end a file at a truncated or unframeable tail, and count everything skipped.
    Skip,
}

/// What to do with a record that has no features (OneFlow cannot read one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnEmpty {
    /// An empty record fails its dataset.
    #[default]
    Error,
    /// Empty records are left out and counted.
    Skip,
}

/// The files of2tf writes TensorFlow's records into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TfFile {
    /// TFRecord files (`.tfrecord`), compressed as [`Options::compression`] says, or as
    /// each dataset's manifest records its inputs.
    #[default]
    Tfrecord,
    /// ArrayRecord files (`.array_record`), as TFDS's `file_format='array_record'` and Grain
    /// read them: a record a chunk, zstd, as `array_record`'s own writer makes them.
    ArrayRecord,
}

impl TfFile {
    /// `tfrecord` or `array_record`: the word in file names, in `dataset_info.json`'s
    /// `fileFormat` and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TfFile::Tfrecord => "tfrecord",
            TfFile::ArrayRecord => "array_record",
        }
    }
}

/// How the records of a dataset are cut into output parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Sizing {
    /// Make this many parts of balanced record counts (fewer if there are fewer records).
    pub parts: Option<u64>,
    /// At most this many records per part. Without [`parts`](Sizing::parts), the dataset's
    /// records are cut every this many records, across input files.
    pub records_per_part: Option<u64>,
    /// Start a new part rather than let one grow past this many bytes (a single bigger
    /// record still gets a part of its own).
    pub max_part_bytes: Option<u64>,
}

impl Sizing {
    /// Whether parts follow record counts rather than input files, which needs the records
    /// counted first.
    pub fn reshards(&self) -> bool {
        self.parts.is_some() || self.records_per_part.is_some()
    }
}

/// Everything a conversion is asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// Which way to convert.
    pub direction: Direction,
    /// The feature mapping applied to every record.
    pub mapping: MappingSpec,
    /// How the mapping was asked for, in words (the command-line flags, say), recorded in
    /// every manifest for people to read. Resuming compares the mapping itself (its
    /// canonical description and fingerprint), whether or not these words are given.
    pub mapping_description: Vec<String>,
    /// The prefix of OneFlow part names: written by tf2of, looked for by of2tf.
    pub part_prefix: String,
    /// Zero-padded width of the number in OneFlow part names written by tf2of; 0 for none.
    pub part_digits: usize,
    /// How records are cut into parts.
    pub sizing: Sizing,
    /// Compression of the TFRecord files written by of2tf. `None` (the default): each file
    /// as the dataset's manifest records the input it was made from, when of2tf gives the
    /// files back under their names; otherwise the compression most of the dataset's inputs
    /// had; none for a dataset without a tf2of manifest. `Some`: every file so, and
    /// [`Compression::None`] asks for plain files whatever the inputs were.
    pub compression: Option<Compression>,
    /// What of2tf writes: TFRecord or ArrayRecord files.
    pub to: TfFile,
    /// How of2tf groups and compresses ArrayRecord files.
    pub array_record: ofconvert_arrayrecord::WriterOptions,
    /// Check TFRecord checksums while reading.
    pub verify_checksums: bool,
    /// Flush every part to the disk (fsync) before it takes its final name. Without it a
    /// killed run still leaves nothing half-written, but a power failure may lose the
    /// contents of parts that the manifest lists.
    pub sync: bool,
    /// What to do with damaged records.
    pub on_corrupt: OnCorrupt,
    /// What to do with records without features.
    pub on_empty: OnEmpty,
    /// What to do about existing output.
    pub existing: ExistingOutput,
    /// Remove a lock on the output whose holder is not known to run (a lock object a killed
    /// run left in a store) and convert; a holder running on this machine is still waited
    /// for.
    pub break_lock: bool,
    /// For a worker of a sharded run ([`ExistingOutput::Shared`]): the output may hold
    /// datasets published before, which the run's commit replaces once it is whole
    /// (`--shard K/N --overwrite`); the workers write beside them, never over them.
    pub replacing: bool,
    /// Worker threads; 0 means one per available core.
    pub jobs: usize,
    /// Set from elsewhere (a signal handler) to stop the conversion early.
    pub interrupt: Interrupt,
    /// What tf2of does with encoded images (of2tf leaves them as they are).
    pub images: ImagePolicy,
    /// Whose words the messages of the run use when they name an option.
    pub front_end: FrontEnd,
    /// Carry the files that come with the records (every other file of a dataset's folder)
    /// to the output, beside the parts (the default); without it, parts only.
    pub side_files: bool,
}

/// A flag that stops a running conversion when set, from any thread or a signal handler:
/// the workers stop at the next record, their temporary files are removed, datasets
/// already published stay, and the others are reported as
/// [`Interrupted`](crate::DatasetStatus::Interrupted), ready for a resumed run.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A flag not set.
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// The flag itself, for a signal handler to set (`signal_hook::flag::register`).
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }

    /// Asks the conversion to stop.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether stopping was asked for.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl Options {
    /// The defaults for a direction: lossless mapping, `part-NNNNN` names, one part per
    /// input file, TFRecord files compressed as the inputs were, checksums verified, damaged
    /// and empty records fail.
    pub fn new(direction: Direction) -> Options {
        Options {
            direction,
            mapping: MappingSpec::new(),
            mapping_description: Vec::new(),
            part_prefix: layout::DEFAULT_PART_PREFIX.to_owned(),
            part_digits: layout::DEFAULT_PART_DIGITS,
            sizing: Sizing::default(),
            compression: None,
            to: TfFile::default(),
            array_record: ofconvert_arrayrecord::WriterOptions::default(),
            verify_checksums: true,
            sync: true,
            on_corrupt: OnCorrupt::default(),
            on_empty: OnEmpty::default(),
            existing: ExistingOutput::default(),
            break_lock: false,
            replacing: false,
            jobs: 0,
            interrupt: Interrupt::new(),
            images: ImagePolicy::Keep,
            front_end: FrontEnd::CommandLine,
            side_files: true,
        }
    }

    /// Which mapping errors these options skip: records without features under
    /// [`OnEmpty::Skip`], payloads that do not parse under [`OnCorrupt::Skip`]. Mapping
    /// failures proper (an inexact double, a cast out of range) always fail.
    pub(crate) fn skips(&self, kind: &MappingErrorKind) -> Option<Skip> {
        match kind {
            MappingErrorKind::EmptyRecord if self.on_empty == OnEmpty::Skip => Some(Skip::Empty),
            kind if is_corrupt_payload(kind) && self.on_corrupt == OnCorrupt::Skip => {
                Some(Skip::Corrupt)
            }
            _ => None,
        }
    }

    /// How finished parts are made durable, as [`sync`](Options::sync) says.
    pub fn durability(&self) -> Durability {
        if self.sync {
            Durability::Synced
        } else {
            Durability::Unsynced
        }
    }

    /// Whether TFRecord checksums are checked, as [`verify_checksums`](Options::verify_checksums)
    /// says.
    pub fn checksums(&self) -> Checksums {
        if self.verify_checksums {
            Checksums::Verify
        } else {
            Checksums::Ignore
        }
    }

    /// The settings that decide the bytes of the output, as recorded in manifests.
    pub(crate) fn settings(&self) -> Settings {
        Settings {
            direction: self.direction,
            mapping: self.mapping_description.clone(),
            mapping_spec: self.mapping.to_string(),
            mapping_fingerprint: format!("{:016x}", self.mapping.fingerprint()),
            part_prefix: self.part_prefix.clone(),
            part_digits: self.part_digits,
            sizing: self.sizing,
            compression: match (self.compression, self.direction) {
                (Some(compression), _) => compression.name(),
                (None, Direction::OfToTf) => AS_RECORDED,
                // tf2of writes OFRecord, which nothing compresses.
                (None, Direction::TfToOf) => Compression::None.name(),
            }
            .to_owned(),
            to: self.to,
            array_record_options: if self.to == TfFile::ArrayRecord
                && self.array_record != ofconvert_arrayrecord::WriterOptions::default()
            {
                self.array_record.to_string()
            } else {
                String::new()
            },
            verify_checksums: self.verify_checksums,
            on_corrupt: self.on_corrupt,
            on_empty: self.on_empty,
            images: self.images,
            side_files: self.side_files,
        }
    }
}

/// Whether a mapping error is a payload that does not parse (damage, which
/// [`OnCorrupt::Skip`] steps over) rather than a mapping that cannot be applied to values
/// that parse.
pub(crate) fn is_corrupt_payload(kind: &MappingErrorKind) -> bool {
    matches!(
        kind,
        MappingErrorKind::Malformed { .. }
            | MappingErrorKind::UnknownFeatureKind { .. }
            | MappingErrorKind::AmbiguousFeature
            | MappingErrorKind::NotAnExample
    )
}

/// Whether a [`RecordReader`](crate::RecordReader) checks TFRecord checksums (OFRecord has
/// none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Checksums {
    /// Check the length and data checksum of every record.
    #[default]
    Verify,
    /// Trust the lengths and data as they are.
    Ignore,
}

/// Why a record that could not be converted is left out rather than failing its dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// It has no features.
    Empty,
    /// Its payload does not parse.
    Corrupt,
}

/// [`Settings::compression`] of an of2tf run not asked for a compression: each dataset's
/// TFRecord files are compressed as its manifest records its inputs.
pub const AS_RECORDED: &str = "as_recorded";

/// The settings a dataset was converted with, as a manifest records them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// Which way.
    pub direction: Direction,
    /// The mapping, in the words it was asked for with.
    pub mapping: Vec<String>,
    /// What the mapping does, described canonically ([`MappingSpec`]'s `Display`).
    #[serde(default)]
    pub mapping_spec: String,
    /// [`MappingSpec::fingerprint`] in hexadecimal.
    #[serde(default)]
    pub mapping_fingerprint: String,
    /// The part name prefix.
    pub part_prefix: String,
    /// The part number width.
    pub part_digits: usize,
    /// How records were cut into parts.
    pub sizing: Sizing,
    /// `none`, `gzip` or `zlib`, as asked; [`AS_RECORDED`] when of2tf is not asked for one
    /// (each dataset's files then follow its manifest).
    pub compression: String,
    /// What of2tf wrote (left out for TFRecord files, as manifests written before there was
    /// a choice say nothing).
    #[serde(default, skip_serializing_if = "is_tfrecord")]
    pub to: TfFile,
    /// How ArrayRecord files were grouped and compressed, in `array_record`'s words (left
    /// out for the default, a record a chunk under `zstd:3`, and for TFRecord files).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub array_record_options: String,
    /// Whether checksums were checked.
    pub verify_checksums: bool,
    /// What happened to damaged records.
    pub on_corrupt: OnCorrupt,
    /// What happened to empty records.
    pub on_empty: OnEmpty,
    /// Whether images are re-encoded or decoded.
    #[serde(default, skip_serializing_if = "is_keep")]
    pub images: ImagePolicy,
    /// Whether the files that came with the records were carried too.
    #[serde(default = "carried", skip_serializing_if = "is_carried")]
    pub side_files: bool,
}

fn is_tfrecord(to: &TfFile) -> bool {
    *to == TfFile::Tfrecord
}

fn is_keep(policy: &ImagePolicy) -> bool {
    *policy == ImagePolicy::Keep
}

/// Side files are carried unless a manifest says otherwise (those written before there were
/// side files say nothing).
fn carried() -> bool {
    true
}

fn is_carried(side_files: &bool) -> bool {
    *side_files
}
