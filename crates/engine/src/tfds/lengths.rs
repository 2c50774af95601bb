//! The record count of each shard, as a TFDS folder's `dataset_info.json` states it: what a
//! reader deals records by without reading the shards to count them.

use serde_json::Value;

/// TFDS's default template of shard names, the only one whose names are known here.
const DEFAULT_TEMPLATE: &str = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}";

/// Each shard's file name and its record count, as `dataset_info.json` (its `text`) states
/// them: `NAME-SPLIT.FORMAT-NNNNN-of-MMMMM` (the format `tfrecord` unless `fileFormat` says
/// another) for each split's `shardLengths`, numbers or strings as TFDS writes them. Nothing
/// for a text that is not such a JSON, or whose `filepathTemplate` is not TFDS's default.
pub(crate) fn shard_lengths(text: &str) -> Vec<(String, u64)> {
    let Ok(info) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let Some(name) = info.get("name").and_then(Value::as_str) else {
        return Vec::new();
    };
    let format = info
        .get("fileFormat")
        .and_then(Value::as_str)
        .unwrap_or("tfrecord");
    let mut lengths = Vec::new();
    for split in info
        .get("splits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let template = split.get("filepathTemplate").and_then(Value::as_str);
        if template.is_some_and(|template| template != DEFAULT_TEMPLATE) {
            continue;
        }
        let (Some(split_name), Some(shards)) = (
            split.get("name").and_then(Value::as_str),
            split.get("shardLengths").and_then(Value::as_array),
        ) else {
            continue;
        };
        let counts: Option<Vec<u64>> = shards
            .iter()
            .map(|length| match length {
                Value::String(text) => text.parse().ok(),
                number => number.as_u64(),
            })
            .collect();
        let Some(counts) = counts else {
            continue;
        };
        let of = counts.len();
        for (shard, records) in counts.into_iter().enumerate() {
            lengths.push((
                format!("{name}-{split_name}.{format}-{shard:05}-of-{of:05}"),
                records,
            ));
        }
    }
    lengths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shard_is_named_with_its_length() {
        let info = r#"{"name": "mnist", "splits": [
            {"name": "train", "shardLengths": ["40", "38"]},
            {"name": "test", "shardLengths": [7], "filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"}
        ]}"#;
        assert_eq!(
            shard_lengths(info),
            [
                ("mnist-train.tfrecord-00000-of-00002".to_owned(), 40),
                ("mnist-train.tfrecord-00001-of-00002".to_owned(), 38),
                ("mnist-test.tfrecord-00000-of-00001".to_owned(), 7),
            ]
        );
        let array = r#"{"name": "m", "fileFormat": "array_record", "splits": [{"name": "train", "shardLengths": ["3"]}]}"#;
        assert_eq!(
            shard_lengths(array),
            [("m-train.array_record-00000-of-00001".to_owned(), 3)]
        );
    }

    #[test]
    fn what_is_not_understood_states_nothing() {
        let other = r#"{"name": "m", "splits": [{"name": "train", "shardLengths": ["3"], "filepathTemplate": "{SPLIT}-{SHARD_INDEX}"}]}"#;
        assert!(shard_lengths(other).is_empty());
        let bad = r#"{"name": "m", "splits": [{"name": "train", "shardLengths": ["three"]}]}"#;
        assert!(shard_lengths(bad).is_empty());
        assert!(shard_lengths("not json").is_empty());
        assert!(shard_lengths(r#"{"splits": []}"#).is_empty());
    }
}
