//! What planning decides: the datasets of a run (their inputs, output directories and the
//! files that come with them), the files left out, and the plan that holds them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use ofconvert_tfrecord::Compression;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Error;
use crate::options::Direction;
use crate::storage::Storage;
use crate::tfds::TfdsOrigin;

/// One input file of a dataset.
#[derive(Clone, Debug)]
pub struct InputFile {
    /// The file, as found under the input path.
    pub path: PathBuf,
    /// The path relative to the input directory (the file name when the input is a file).
    pub relative: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// What changes when it is rewritten, even at the same size, as its listing says
    /// (`Listed::changed`): a modification time, an ETag.
    pub changed: Option<String>,
}

/// A dataset found in the input: the files that become one output directory.
#[derive(Debug)]
pub struct DatasetPlan {
    /// The dataset's name in messages and summaries: its directory relative to the root,
    /// with `/` separators; the input's own name (the directory's, or the file's) for a
    /// dataset at the root.
    pub name: String,
    /// The directory of the inputs, relative to the input root.
    pub source: PathBuf,
    /// The output directory.
    pub output_dir: PathBuf,
    /// The input files in conversion order.
    pub inputs: Vec<InputFile>,
    /// Things worth knowing found while planning (shards missing from a family...).
    pub warnings: Vec<String>,
    /// Why this dataset cannot be converted as found, if it cannot.
    pub problem: Option<Error>,
    /// The TFDS dataset and split the records came from, when they did.
    pub tfds: Option<TfdsOrigin>,
    /// The files that come with the records, carried beside them (unless
    /// [`Options::side_files`](crate::Options::side_files) is off): for tf2of every other file of the folder of its
    /// TFRecord files, for of2tf every file of its directory that is not a part.
    pub side_files: Vec<InputFile>,
    /// The class names TFDS gives integer features (`ClassLabel`s), by feature name.
    pub(crate) class_names: BTreeMap<String, Vec<String>>,
    /// tf2of: the directory of its own the dataset gets, named after its family, below the
    /// place of a folder that holds several families.
    pub(crate) subfolder: Option<String>,
    /// of2tf: the TFRecord files tf2of read, given back under their names.
    pub(crate) restore: Option<Restore>,
    /// of2tf: the compression of the TFRecord files written, where they are not given back
    /// file by file ([`Restore::compressions`]): as the run asks, or else the one most of the
    /// dataset's inputs had as its manifest records them (the first of those on a tie), none
    /// without a manifest.
    pub(crate) compression: Compression,
}

/// The TFRecord files a OneFlow dataset was converted from, as of2tf gives them back when
/// it writes one file per part (its default) and each part holds one whole file: the same
/// names, in the same folder, empty files included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Restore {
    /// Every file, in order: its name, and whether it was empty (then it has no part and is
    /// given back empty). The others match the parts one for one, in order.
    pub(crate) files: Vec<(String, bool)>,
    /// The family name the dataset goes back under when it goes back to a folder it shares
    /// with other families (the folder above its directory): what its manifest's and its
    /// temporary files' names start with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shared: Option<String>,
    /// The compression of each file that holds records, in part order: the one it had.
    /// Left out (by plans stored before files kept theirs), the dataset's.
    #[serde(
        default,
        serialize_with = "names_of",
        deserialize_with = "compressions_named"
    )]
    pub(crate) compressions: Vec<Compression>,
}

impl Restore {
    /// The names of the files that hold records, in part order.
    pub(crate) fn part_names(&self) -> impl Iterator<Item = &str> {
        self.files
            .iter()
            .filter(|(_, empty)| !empty)
            .map(|(name, _)| name.as_str())
    }

    /// Whether the files that hold records go back under more than one compression.
    pub(crate) fn mixes_compressions(&self) -> bool {
        self.compressions.windows(2).any(|pair| pair[0] != pair[1])
    }
}

/// Compressions as their names (`gzip`), as manifests write them.
fn names_of<S: Serializer>(compressions: &[Compression], to: S) -> Result<S::Ok, S::Error> {
    to.collect_seq(compressions.iter().map(|compression| compression.name()))
}

fn compressions_named<'de, D: Deserializer<'de>>(from: D) -> Result<Vec<Compression>, D::Error> {
    let names = Vec::<String>::deserialize(from)?;
    names
        .iter()
        .map(|name| name.parse().map_err(serde::de::Error::custom))
        .collect()
}

/// A compression as its name (`gzip`), for `#[serde(with = ...)]`.
pub(crate) mod compression_name {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        compression: &Compression,
        to: S,
    ) -> Result<S::Ok, S::Error> {
        to.serialize_str(compression.name())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<Compression, D::Error> {
        String::deserialize(from)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl DatasetPlan {
    /// What tells this dataset from the others that share its output directory (a TFDS
    /// split's `name-split`, a shard family's name), when it shares one.
    pub(crate) fn shared_tag(&self, direction: Direction) -> Option<String> {
        if direction != Direction::OfToTf {
            return None;
        }
        if let Some(shared) = self.restore.as_ref().and_then(|r| r.shared.clone()) {
            return Some(shared);
        }
        self.tfds.as_ref().map(TfdsOrigin::stem)
    }

    /// Whether the dataset holds no records, only the files of a folder outside every
    /// dataset's, carried to the same folder of the output.
    pub fn files_only(&self) -> bool {
        self.inputs.is_empty() && self.restore.as_ref().is_none_or(|r| r.files.is_empty())
    }

    /// of2tf: the compression of the TFRecord file that part `index` of the dataset becomes.
    pub(crate) fn compression_of(&self, index: usize) -> Compression {
        self.restore
            .as_ref()
            .and_then(|restore| restore.compressions.get(index).copied())
            .unwrap_or(self.compression)
    }

    /// of2tf: a compression some of its TFRecord files are written with, if any is.
    pub(crate) fn compressed(&self) -> Option<Compression> {
        let each = self.restore.as_ref().map(|restore| &restore.compressions);
        each.filter(|each| !each.is_empty())
            .map_or(&[self.compression][..], Vec::as_slice)
            .iter()
            .copied()
            .find(|compression| *compression != Compression::None)
    }
}

/// A file of the input tree that is not converted, and why.
#[derive(Clone, Debug, Serialize)]
pub struct SkippedFile {
    /// The file (invalid UTF-8 replaced).
    pub path: String,
    /// Why it was left out.
    pub reason: String,
}

/// Everything a conversion will do, decided before any output is written.
#[derive(Debug)]
pub struct Plan {
    /// Which way the run converts.
    pub direction: Direction,
    /// The input root, as given.
    pub input: PathBuf,
    /// The output root, as given.
    pub output: PathBuf,
    /// The datasets, in walk order.
    pub datasets: Vec<DatasetPlan>,
    /// Files of the input tree that are not converted.
    pub skipped: Vec<SkippedFile>,
    /// Files and directories of the input tree that could not be read: whatever records
    /// they hold are missing from the output, so the run fails.
    pub unreadable: Vec<SkippedFile>,
    /// Where the input is read.
    pub input_storage: Arc<dyn Storage>,
    /// Where the output is written.
    pub output_storage: Arc<dyn Storage>,
}
