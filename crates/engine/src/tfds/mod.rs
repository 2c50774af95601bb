//! TensorFlow Datasets folders: telling that a dataset came from one, remembering where
//! (in the manifest tf2of writes), and giving it back as TFDS lays it out — every split of
//! one dataset in one folder as `name-split.tfrecord-NNNNN-of-NNNNN`, beside a
//! `dataset_info.json` whose shard lengths are those of the new files and TFDS's
//! `features.json` — so that `tfds.builder_from_directory` loads it.
//!
//! This folder owns reading TFDS's own files (`dataset_info.json`, `features.json`, the
//! class names of `<feature>.labels.txt`, [`labels`]), rewriting `features.json` for what
//! `--images` made of the images ([`features`]) and the origin a manifest records. It uses
//! only `storage`; writing the metadata of a run's outputs, which needs the manifests and
//! the summary, lives in `running`, and finding a OneFlow dataset's origin from its manifest
//! lives in `planning`.

use std::path::Path;

use ofconvert_tfrecord::Compression;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::storage::Storage;

mod features;
mod labels;
mod lengths;

pub(crate) use features::{rewrite_features, Recoded};
pub(crate) use labels::class_names;
pub(crate) use lengths::shard_lengths;

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
    /// `{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}`, the file format `tfrecord` or
    /// `array_record`), with the compression's suffix.
    pub fn shard_name(
        &self,
        index: usize,
        count: usize,
        file_format: &str,
        compression: Compression,
    ) -> String {
        format!(
            "{}.{file_format}-{index:05}-of-{count:05}{}",
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

/// `dataset_info.json` with the splits replaced by `splits` (name, records per shard, bytes
/// of the serialized examples when known): splits not in `splits` are dropped, since their
/// files are not there. Numbers are written as strings where TFDS wrote them so (its JSON
/// writes int64 as strings); everything else stays as it was, keys sorted as TFDS sorts
/// them.
pub(crate) fn rewrite_info(
    text: &str,
    splits: &[(String, Vec<u64>, Option<u64>)],
    file_format: &str,
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
        if let (Some(old), Some(bytes)) = (fields.get("numBytes"), bytes) {
            let new = if old.is_string() {
                Value::String(bytes.to_string())
            } else {
                Value::from(*bytes)
            };
            fields.insert("numBytes".to_owned(), new);
        }
    }
    // The shards are in the format written (`tfrecord` or `array_record`), whatever the
    // dataset was prepared as: TFDS looks for the format named. A missing one means TFRecord.
    if let Some(format) = info.get_mut("fileFormat") {
        if format.as_str() != Some(file_format) {
            *format = Value::String(file_format.to_owned());
        }
    } else if file_format != "tfrecord" {
        if let Some(fields) = info.as_object_mut() {
            fields.insert(
                "fileFormat".to_owned(),
                Value::String(file_format.to_owned()),
            );
        }
    }
    let mut rewritten = serde_json::to_string_pretty(&info).map_err(|err| err.to_string())?;
    if text.ends_with('\n') {
        rewritten.push('\n');
    }
    Ok(rewritten)
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
            ("test".to_owned(), vec![40], Some(23482)),
            ("train".to_owned(), vec![40, 40], Some(47537)),
        ];
        assert_eq!(rewrite_info(INFO, &splits, "tfrecord").unwrap(), INFO);
    }

    #[test]
    fn new_shards_replace_lengths_and_drop_absent_splits() {
        let rewritten = rewrite_info(
            INFO,
            &[("train".to_owned(), vec![27, 27, 26], Some(9))],
            "tfrecord",
        )
        .unwrap();
        let info: Value = serde_json::from_str(&rewritten).unwrap();
        let splits = info["splits"].as_array().unwrap();
        assert_eq!(splits.len(), 1);
        assert_eq!(
            splits[0]["shardLengths"],
            serde_json::json!(["27", "27", "26"])
        );
        assert_eq!(splits[0]["numBytes"], "9");
        assert!(rewrite_info(INFO, &[("valid".to_owned(), vec![1], Some(1))], "tfrecord").is_err());
        // Bytes not known: numBytes stays as it was.
        let kept = rewrite_info(INFO, &[("test".to_owned(), vec![40], None)], "tfrecord").unwrap();
        let info: Value = serde_json::from_str(&kept).unwrap();
        assert_eq!(info["splits"][0]["numBytes"], "23482");
    }

    #[test]
    fn the_file_format_is_the_one_written() {
        let info = r#"{"fileFormat": "array_record", "splits": [{"name": "train", "shardLengths": ["3"]}]}"#;
        let splits = [("train".to_owned(), vec![3], None)];
        let rewritten = rewrite_info(info, &splits, "tfrecord").unwrap();
        let info: Value = serde_json::from_str(&rewritten).unwrap();
        assert_eq!(info["fileFormat"], "tfrecord");
        let unnamed = r#"{"splits": [{"name": "train", "shardLengths": ["3"]}]}"#;
        let rewritten = rewrite_info(unnamed, &splits, "array_record").unwrap();
        let info: Value = serde_json::from_str(&rewritten).unwrap();
        assert_eq!(info["fileFormat"], "array_record");
        // None named means TFRecord: none is added.
        let rewritten = rewrite_info(unnamed, &splits, "tfrecord").unwrap();
        let info: Value = serde_json::from_str(&rewritten).unwrap();
        assert!(info.get("fileFormat").is_none());
    }

    #[test]
    fn numbers_stay_numbers() {
        let info = r#"{"splits": [{"name": "train", "shardLengths": [3], "numBytes": 5}]}"#;
        let rewritten = rewrite_info(
            info,
            &[("train".to_owned(), vec![1, 2], Some(7))],
            "tfrecord",
        )
        .unwrap();
        let info: Value = serde_json::from_str(&rewritten).unwrap();
        assert_eq!(info["splits"][0]["shardLengths"], serde_json::json!([1, 2]));
        assert_eq!(info["splits"][0]["numBytes"], 7);
    }
}
