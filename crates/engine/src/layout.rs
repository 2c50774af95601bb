//! The names of everything ofconvert writes into an output directory: parts, TFRecord
//! shards, the manifest, temporary files and the lock. One place, so that writing, cleaning
//! up, resuming and inspecting agree on them.

use ofconvert_tfrecord::Compression;

use crate::detect::{part_number, shard_name};

/// The manifest's file name. OneFlow ignores it (it opens only its part names), and so does
/// a `*.tfrecord` glob.
pub const MANIFEST_NAME: &str = "ofconvert-manifest.json";

/// Every temporary file starts with this: hidden, never a part name OneFlow opens, never
/// matched by a `*.tfrecord` glob, and recognisable when cleaning up after a killed run.
pub const TEMP_PREFIX: &str = ".ofconvert-";

/// The lock file a converting run holds in its output root (hidden, like temporary files).
pub const LOCK_NAME: &str = ".ofconvert-lock";

/// What `index` appends to a TFRecord file's name for its index (DALI's and the `tfrecord`
/// package's convention).
pub const INDEX_SUFFIX: &str = ".idx";

/// OneFlow's part name prefix, `OFRecordReader`'s `part_name_prefix` default.
pub const DEFAULT_PART_PREFIX: &str = "part-";

/// The part number width of the ImageNet and Wide&Deep conventions (`part-00000`).
pub const DEFAULT_PART_DIGITS: usize = 5;

/// The name of OneFlow part `index`: `prefix` + the number zero-padded to `digits` (0: not
/// padded), as `OFRecordReader` opens it.
pub fn part_name(prefix: &str, digits: usize, index: usize) -> String {
    format!("{prefix}{index:0digits$}")
}

/// The name of TFRecord shard `index` of `count` written from a OneFlow dataset.
pub fn tf_shard_name(stem: &str, index: usize, count: usize, compression: Compression) -> String {
    format!(
        "{stem}-{index:05}-of-{count:05}.tfrecord{}",
        compression.file_suffix()
    )
}

/// The temporary name of output number `sub` of work item `chunk`, unique to this process.
pub(crate) fn temp_part_name(chunk: usize, sub: usize) -> String {
    format!("{TEMP_PREFIX}part-{chunk}-{sub}.tmp-{}", std::process::id())
}

/// The temporary name under which `name` is written before it is renamed into place.
pub(crate) fn staged_name(name: &str) -> String {
    format!("{TEMP_PREFIX}{name}.tmp-{}", std::process::id())
}

/// Whether `name` is a temporary file of some run.
pub fn is_temporary(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
}

/// Whether `name` is a file ofconvert writes beside records: an index, a manifest, a
/// temporary file or the lock. Every command passes over them without a word: they are
/// never records, and listing them as skipped would only be noise.
pub fn is_own_file(name: &str) -> bool {
    name.ends_with(INDEX_SUFFIX) || name == MANIFEST_NAME || is_temporary(name)
}

/// The files a dataset's output directory holds besides its manifest.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DatasetFiles<'a> {
    /// OneFlow parts, `prefix` + digits (tf2of).
    Parts { prefix: &'a str },
    /// TFRecord shards `stem-NNNNN-of-NNNNN.tfrecord*` (of2tf).
    Shards { stem: &'a str },
}

/// Whether `name`, in an output directory, belongs to the dataset written there: its
/// manifest, its `files` and temporary files. Nothing else in the directory is ours to
/// remove.
pub(crate) fn is_dataset_file(name: &str, files: DatasetFiles<'_>) -> bool {
    name == MANIFEST_NAME
        || (is_temporary(name) && name != LOCK_NAME)
        || match files {
            DatasetFiles::Parts { prefix } => part_number(name, prefix).is_some(),
            DatasetFiles::Shards { stem } => {
                shard_name(name).is_some_and(|shard| shard.stem == stem)
                    && name.contains(".tfrecord")
            }
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_and_shard_names() {
        assert_eq!(part_name("part-", 5, 3), "part-00003");
        assert_eq!(part_name("part-", 0, 12), "part-12");
        assert_eq!(
            tf_shard_name("train", 1, 4, Compression::Gzip),
            "train-00001-of-00004.tfrecord.gz"
        );
    }

    #[test]
    fn dataset_files_are_told_from_the_rest() {
        let tf2of = |name: &str| is_dataset_file(name, DatasetFiles::Parts { prefix: "part-" });
        assert!(tf2of("part-00000"));
        assert!(tf2of(MANIFEST_NAME));
        assert!(tf2of(&temp_part_name(0, 0)));
        assert!(!tf2of(LOCK_NAME));
        assert!(!tf2of("README"));
        let of2tf = |name: &str| is_dataset_file(name, DatasetFiles::Shards { stem: "train" });
        assert!(of2tf("train-00000-of-00002.tfrecord"));
        assert!(!of2tf("test-00000-of-00002.tfrecord"));
    }
}
