//! TensorFlow Datasets folders: telling that a dataset came from one, remembering where
//! (in the manifest tf2of writes), and giving it back as TFDS lays it out — every split of
//! one dataset in one folder as `name-split.tfrecord-NNNNN-of-NNNNN`, beside a
//! `dataset_info.json` whose shard lengths are those of the new files and TFDS's
//! `features.json` — so that `tfds.builder_from_directory` loads it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ofconvert_tfrecord::Compression;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::manifest::Manifest;
use crate::options::Direction;
use crate::progress::DatasetStatus;
use crate::records::output;
use crate::running::summary::DatasetSummary;
use crate::storage::Storage;

/// TFDS's description of a dataset: its name, splits and their shard lengths.
pub const DATASET_INFO: &str = "dataset_info.json";

/// TFDS's description of the features of a dataset's records.
pub const FEATURES: &str = "features.json";

/// The TFDS dataset and split a dataset's records came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TfdsOrigin {
    /// The TFDS dataset name (`mnist`): `name` in `dataset_info.json`.
    pub name: String,
    /// The split (`train`).
    pub split: String,
    /// The text of the `dataset_info.json` found beside the records.
    pub dataset_info: String,
    /// The text of the `features.json` found beside the records, if there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<String>,
}

impl TfdsOrigin {
    /// `name-split`: what TFDS puts before `.tfrecord-NNNNN-of-NNNNN`.
    pub fn stem(&self) -> String {
        format!("{}-{}", self.name, self.split)
    }

    /// TFDS's name of shard `index` of `count` (TFDS's template
    /// `{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}`), with the compression's suffix.
    pub fn shard_name(&self, index: usize, count: usize, compression: Compression) -> String {
        format!(
            "{}.tfrecord-{index:05}-of-{count:05}{}",
            self.stem(),
            compression.file_suffix()
        )
    }

    /// The name of the manifest of this split's files: the splits of one dataset share a
    /// folder, so each has its own.
    pub fn manifest_name(&self) -> String {
        format!("{}.{}", self.stem(), crate::naming::layout::MANIFEST_NAME)
    }
}

/// The TFDS metadata of one folder.
pub(crate) struct Metadata {
    name: String,
    splits: Vec<String>,
    dataset_info: String,
    features: Option<String>,
}

impl Metadata {
    /// Reads `dir/dataset_info.json` (and `features.json`); `None` when there is none or it
    /// does not name a dataset.
    pub(crate) fn read(storage: &dyn Storage, dir: &Path) -> Option<Metadata> {
        let bytes = storage.read(&dir.join(DATASET_INFO)).ok()??;
        let dataset_info = String::from_utf8(bytes).ok()?;
        let info: Value = serde_json::from_str(&dataset_info).ok()?;
        let name = info.get("name")?.as_str()?.to_owned();
        let splits = info
            .get("splits")
            .and_then(Value::as_array)
            .map(|splits| {
                splits
                    .iter()
                    .filter_map(|split| split.get("name")?.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let features = storage
            .read(&dir.join(FEATURES))
            .ok()
            .flatten()
            .and_then(|bytes| String::from_utf8(bytes).ok());
        Some(Metadata {
            name,
            splits,
            dataset_info,
            features,
        })
    }

    /// The origin of the records named `stem` (`mnist-train`, `train`) when it is one of
    /// the splits `dataset_info.json` lists.
    pub(crate) fn origin(&self, stem: &str) -> Option<TfdsOrigin> {
        let split = stem
            .strip_prefix(&self.name)
            .and_then(|rest| rest.strip_prefix('-'))
            .unwrap_or(stem);
        self.splits
            .iter()
            .any(|known| known == split)
            .then(|| TfdsOrigin {
                name: self.name.clone(),
                split: split.to_owned(),
                dataset_info: self.dataset_info.clone(),
                features: self.features.clone(),
            })
    }
}

/// The TFDS origin of the OneFlow dataset in `dir` (named `dir_name`), and whether it goes
/// back to the folder above: what its manifest says (the folder above when the directory
/// is named after the split, as tf2of names it: `mnist-train`), or else a
/// `dataset_info.json` that lists the split the directory is named after, in the directory
/// or the one above (then the folder above).
pub(crate) fn origin_of_oneflow(
    storage: &dyn Storage,
    dir: &Path,
    dir_name: &str,
) -> Option<(TfdsOrigin, bool)> {
    if let Ok(Some(manifest)) = Manifest::read_from(storage, dir) {
        let origin = manifest.tfds?;
        let up = dir_name == origin.stem() || dir_name == origin.split;
        return Some((origin, up));
    }
    if let Some(origin) = Metadata::read(storage, dir).and_then(|m| m.origin(dir_name)) {
        return Some((origin, false));
    }
    let origin = Metadata::read(storage, dir.parent()?)?.origin(dir_name)?;
    Some((origin, true))
}

/// Whether two datasets are different splits of one TFDS dataset, which share a folder.
pub(crate) fn splits_of_one(a: &Option<TfdsOrigin>, b: &Option<TfdsOrigin>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.name == b.name && a.split != b.split,
        _ => false,
    }
}

/// `dataset_info.json` with the splits replaced by `splits` (name, records per shard,
/// bytes): splits not in `splits` are dropped, since their files are not there. Numbers
/// are written as strings where TFDS wrote them so (its JSON writes int64 as strings);
/// everything else stays as it was, keys sorted as TFDS sorts them.
pub(crate) fn rewrite_info(
    text: &str,
    splits: &[(String, Vec<u64>, u64)],
) -> Result<String, String> {
    let mut info: Value =
        serde_json::from_str(text).map_err(|err| format!("{DATASET_INFO}: {err}"))?;
    let listed = info
        .get_mut("splits")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| format!("{DATASET_INFO} lists no splits"))?;
    let split_name = |split: &Value| split.get("name").and_then(Value::as_str).map(str::to_owned);
    if let Some((name, ..)) = splits.iter().find(|(name, ..)| {
        !listed
            .iter()
            .any(|split| split_name(split).as_ref() == Some(name))
    }) {
        return Err(format!("{DATASET_INFO} does not list the split {name}"));
    }
    listed.retain(|split| {
        split_name(split).is_some_and(|name| splits.iter().any(|(kept, ..)| *kept == name))
    });
    for split in listed.iter_mut() {
        let name = split_name(split).unwrap_or_default();
        let Some((_, lengths, bytes)) = splits.iter().find(|(kept, ..)| *kept == name) else {
            continue;
        };
        let as_strings = split
            .get("shardLengths")
            .and_then(Value::as_array)
            .and_then(|lengths| lengths.first())
            .is_none_or(Value::is_string);
        let number = |n: u64| {
            if as_strings {
                Value::String(n.to_string())
            } else {
                Value::from(n)
            }
        };
        let fields = split
            .as_object_mut()
            .ok_or_else(|| format!("{DATASET_INFO}: split {name} is not an object"))?;
        fields.insert(
            "shardLengths".to_owned(),
            Value::Array(lengths.iter().map(|&n| number(n)).collect()),
        );
        if let Some(old) = fields.get("numBytes") {
            let new = if old.is_string() {
                Value::String(bytes.to_string())
            } else {
                Value::from(*bytes)
            };
            fields.insert("numBytes".to_owned(), new);
        }
    }
    let mut rewritten = serde_json::to_string_pretty(&info).map_err(|err| err.to_string())?;
    if text.ends_with('\n') {
        rewritten.push('\n');
    }
    Ok(rewritten)
}

/// Writes `dataset_info.json` and `features.json` into each folder that the splits of a
/// TFDS dataset went back to, once every split bound for it is converted (or kept): last,
/// each file staged and renamed into place, so that a folder with a `dataset_info.json`
/// holds every file it lists. A folder whose metadata cannot be written fails its splits.
/// Returns the files written. Only of2tf writes them: OneFlow has no use for them.
pub(crate) fn write_metadata(
    direction: Direction,
    storage: &dyn Storage,
    datasets: &mut [DatasetSummary],
) -> Vec<String> {
    if direction != Direction::OfToTf {
        return Vec::new();
    }
    let mut folders: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, dataset) in datasets.iter().enumerate() {
        let origin = dataset.manifest.as_ref().and_then(|m| m.tfds.as_ref());
        if origin.is_some() || dataset.tfds {
            folders
                .entry(dataset.output_dir.clone())
                .or_default()
                .push(index);
        }
    }
    let mut written = Vec::new();
    for (folder, members) in folders {
        let done = |index: &usize| {
            matches!(
                datasets[*index].status,
                DatasetStatus::Converted | DatasetStatus::Kept
            )
        };
        if !members.iter().all(done) {
            continue;
        }
        let manifests: Vec<&Manifest> = members
            .iter()
            .filter_map(|&index| datasets[index].manifest.as_ref())
            .collect();
        let Some(first) = manifests.first().and_then(|m| m.tfds.clone()) else {
            continue;
        };
        let splits: Vec<(String, Vec<u64>, u64)> = manifests
            .iter()
            .filter_map(|manifest| {
                let origin = manifest.tfds.as_ref()?;
                let lengths = manifest.parts.iter().map(|part| part.records).collect();
                let bytes = manifest.parts.iter().map(|part| part.bytes).sum();
                Some((origin.split.clone(), lengths, bytes))
            })
            .collect();
        let dir = PathBuf::from(&folder);
        let result = rewrite_info(&first.dataset_info, &splits)
            .map_err(std::io::Error::other)
            .and_then(|info| {
                let mut files = vec![(DATASET_INFO, info)];
                files.extend(first.features.clone().map(|text| (FEATURES, text)));
                let mut staged = Vec::new();
                for (name, text) in &files {
                    let path = dir.join(name);
                    let found = storage.read(&path)?;
                    if found.as_deref() == Some(text.as_bytes()) {
                        continue;
                    }
                    // Where a file is put only if absent, the old one must go first (a
                    // resumed run that kept every split still has it).
                    if found.is_some() && !storage.renames_cheaply() {
                        storage.remove(&path)?;
                    }
                    staged.push(output::stage(storage, &dir, name, text.as_bytes())?);
                }
                // features.json first: dataset_info.json, last, says the folder is whole.
                for staged in staged.into_iter().rev() {
                    staged.commit()?;
                }
                Ok(files
                    .iter()
                    .map(|(name, _)| dir.join(name))
                    .collect::<Vec<_>>())
            });
        match result {
            Ok(paths) => written.extend(paths.iter().map(|path| path.display().to_string())),
            Err(err) => {
                for index in members {
                    let dataset = &mut datasets[index];
                    dataset.status = DatasetStatus::Failed;
                    dataset.error = Some(format!(
                        "{}: cannot write the TFDS metadata: {err}",
                        dir.join(DATASET_INFO).display()
                    ));
                }
            }
        }
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = r#"{
  "name": "mnist",
  "splits": [
    {
      "name": "test",
      "numBytes": "23482",
      "shardLengths": [
        "40"
      ]
    },
    {
      "name": "train",
      "numBytes": "47537",
      "shardLengths": [
        "40",
        "40"
      ]
    }
  ],
  "version": "3.0.1"
}
"#;

    #[test]
    fn same_shards_give_the_same_text() {
        let splits = [
            ("test".to_owned(), vec![40], 23482),
            ("train".to_owned(), vec![40, 40], 47537),
        ];
        assert_eq!(rewrite_info(INFO, &splits).unwrap(), INFO);
    }

    #[test]
    fn new_shards_replace_lengths_and_drop_absent_splits() {
        let rewritten = rewrite_info(INFO, &[("train".to_owned(), vec![27, 27, 26], 9)]).unwrap();
        let info: Value = serde_json::from_str(&rewritten).unwrap();
        let splits = info["splits"].as_array().unwrap();
        assert_eq!(splits.len(), 1);
        assert_eq!(
            splits[0]["shardLengths"],
            serde_json::json!(["27", "27", "26"])
        );
        assert_eq!(splits[0]["numBytes"], "9");
        assert!(rewrite_info(INFO, &[("valid".to_owned(), vec![1], 1)]).is_err());
    }

    #[test]
    fn numbers_stay_numbers() {
        let info = r#"{"splits": [{"name": "train", "shardLengths": [3], "numBytes": 5}]}"#;
        let rewritten = rewrite_info(info, &[("train".to_owned(), vec![1, 2], 7)]).unwrap();
        let info: Value = serde_json::from_str(&rewritten).unwrap();
        assert_eq!(info["splits"][0]["shardLengths"], serde_json::json!([1, 2]));
        assert_eq!(info["splits"][0]["numBytes"], 7);
    }
}
