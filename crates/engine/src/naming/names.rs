//! The names of record files: TF and TFDS shard names, names that say "TFRecord", OneFlow
//! part numbers, and the metadata files known tools keep beside their records.

/// The two record formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// TensorFlow TFRecord (length, CRCs, optional GZIP/ZLIB around the stream).
    Tf,
    /// OneFlow OFRecord (an 8-byte length before each payload).
    Of,
}

impl Format {
    /// `"tfrecord"` or `"ofrecord"`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Tf => "tfrecord",
            Format::Of => "ofrecord",
        }
    }
}

/// A name of the form `STEM-NNNNN-of-MMMMM`, with anything after the shard part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardName {
    /// The family: what comes before the shard part, with a trailing `.tfrecord` (TFDS puts
    /// it there) removed.
    pub stem: String,
    /// The shard's number, `NNNNN`.
    pub index: u64,
    /// The number of shards the name announces, `MMMMM`.
    pub count: u64,
}

/// Parses a TF/TFDS shard name: `train-00003-of-01024`, `mnist-train.tfrecord-00000-of-00002`,
/// `data-00001-of-00004.tfrecord.gz`, `mnist-train.array_record-00000-of-00002`,
/// `mnist-train.parquet-00000-of-00002`. The last `-DIGITS-of-DIGITS` in the name counts.
pub fn shard_name(name: &str) -> Option<ShardName> {
    let mut search_end = name.len();
    while let Some(of_at) = name[..search_end].rfind("-of-") {
        search_end = of_at;
        let before = &name[..of_at];
        let after = &name[of_at + 4..];
        let count_len = after.bytes().take_while(u8::is_ascii_digit).count();
        let index_len = before.bytes().rev().take_while(u8::is_ascii_digit).count();
        if count_len == 0 || index_len == 0 || !before[..before.len() - index_len].ends_with('-') {
            continue;
        }
        let (Ok(index), Ok(count)) = (
            before[before.len() - index_len..].parse::<u64>(),
            after[..count_len].parse::<u64>(),
        ) else {
            continue;
        };
        let mut stem = &before[..before.len() - index_len - 1];
        for extension in [
            ".tfrecords",
            ".tfrecord",
            ".tfrec",
            ".array_record",
            ".parquet",
        ] {
            if let Some(shorter) = stem.strip_suffix(extension) {
                stem = shorter;
                break;
            }
        }
        if stem.is_empty() {
            continue;
        }
        return Some(ShardName {
            stem: stem.to_owned(),
            index,
            count,
        });
    }
    None
}

/// Whether a file name says "TFRecord" (or ArrayRecord, TensorFlow's other record file)
/// whatever the content: `*.tfrecord`, `*.tfrecords`, `*.tfrec`, `*.array_record`, those with a compression suffix (`.gz`, `.zz`, `.gzip`, `.zlib`) or a numbered
/// suffix (`-00000-of-00004`, `.3`), and shard names. Such a file is never skipped: empty means
/// no records, damaged means an error. Names that merely continue past `.tfrecord` with an
/// extension of their own (`train.tfrecord.idx`, `x.tfrecord.expected.json`) do not count.
pub fn has_record_name(name: &str) -> bool {
    if name.ends_with(".tfrec") || name.ends_with(".array_record") || shard_name(name).is_some() {
        return true;
    }
    let mut rest = name;
    while let Some(at) = rest.find(".tfrecord") {
        let after = &rest[at + ".tfrecord".len()..];
        let numbered = |tail: &str| !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit());
        let record_like = matches!(after, "" | "s" | ".gz" | ".zz" | ".gzip" | ".zlib")
            || after.starts_with(['-', '_'])
            || after.strip_prefix('.').is_some_and(numbered);
        if record_like {
            return true;
        }
        rest = after;
    }
    false
}

/// Whether `name` is metadata a known tool keeps beside its records: TFDS's
/// `dataset_info.json` and `features.json`. Not records, and no surprise to find: commands
/// pass over them without listing them as skipped.
pub fn is_known_metadata(name: &str) -> bool {
    matches!(name, "dataset_info.json" | "features.json")
}

/// The number in a OneFlow part name: `part-00012` gives 12 for the prefix `part-`. Only
/// `prefix` followed by ASCII digits and nothing else counts, since that is all
/// `OFRecordReader` opens.
pub fn part_number(name: &str, prefix: &str) -> Option<u64> {
    let digits = name.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names_of_tf_and_tfds() {
        let tfds = shard_name("mnist-train.tfrecord-00000-of-00002").unwrap();
        assert_eq!(
            tfds,
            ShardName {
                stem: "mnist-train".into(),
                index: 0,
                count: 2
            }
        );
        let inception = shard_name("train-01023-of-01024").unwrap();
        assert_eq!((inception.stem.as_str(), inception.index), ("train", 1023));
        let suffixed = shard_name("data-00001-of-00004.tfrecord.gz").unwrap();
        assert_eq!((suffixed.stem.as_str(), suffixed.count), ("data", 4));
        let dashed = shard_name("my-set-of-things-00002-of-00003").unwrap();
        assert_eq!(dashed.stem, "my-set-of-things");
        // TFDS's ArrayRecord shards: the same family as its TFRecord ones.
        let array = shard_name("mnist-train.array_record-00001-of-00002").unwrap();
        assert_eq!((array.stem.as_str(), array.index), ("mnist-train", 1));
        assert!(has_record_name("mnist-train.array_record-00001-of-00002"));
        let parquet = shard_name("mnist-train.parquet-00001-of-00002").unwrap();
        assert_eq!((parquet.stem.as_str(), parquet.index), ("mnist-train", 1));
        assert!(has_record_name("images.array_record"));
        assert!(!has_record_name("images.array_record.idx"));
    }

    #[test]
    fn names_that_are_not_shards() {
        for name in [
            "train.tfrecord",
            "-00000-of-00001",
            "x-0a-of-3",
            "x-1-of-",
            "x1-of-2",
            "list-of-things",
        ] {
            assert_eq!(shard_name(name), None, "{name}");
        }
    }

    #[test]
    fn record_names() {
        for name in [
            "a.tfrecord",
            "a.tfrecords",
            "a.tfrec",
            "a.tfrecord.gz",
            "a.tfrecord.3",
            "a.tfrecord_part1",
            "mnist-test.tfrecord-00000-of-00001",
            "validation-00000-of-00001",
        ] {
            assert!(has_record_name(name), "{name}");
        }
        for name in [
            "dataset_info.json",
            "README.md",
            "image.jpg",
            "part-00000",
            "train.tfrecord.idx",
            "tutorial.tfrecord.expected.json",
        ] {
            assert!(!has_record_name(name), "{name}");
        }
    }

    #[test]
    fn part_numbers() {
        assert_eq!(part_number("part-00012", "part-"), Some(12));
        assert_eq!(part_number("part-7", "part-"), Some(7));
        assert_eq!(part_number("part-", "part-"), None);
        assert_eq!(part_number("part-00000-abc.ofrecord", "part-"), None);
        assert_eq!(part_number("other-1", "part-"), None);
    }
}
