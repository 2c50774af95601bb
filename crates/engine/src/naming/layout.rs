//! The names of everything ofconvert writes into an output directory: parts, TFRecord
//! shards, the manifest, temporary files and the lock. One place, so that writing, cleaning
//! up, resuming and inspecting agree on them.

use ofconvert_tfrecord::Compression;

use crate::naming::names::{part_number, shard_name};

/// The manifest's file name. OneFlow ignores it (it opens only its part names), and so does
/// a `*.tfrecord` glob.
pub const MANIFEST_NAME: &str = "ofconvert-manifest.json";

/// Every temporary file starts with this: hidden, never a part name OneFlow opens, never
/// matched by a `*.tfrecord` glob, and recognisable when cleaning up after a killed run.
pub const TEMP_PREFIX: &str = ".ofconvert-";

/// The lock file a converting run holds in its output root (hidden, like temporary files):
/// the storage layer takes it, and names it.
pub use ofconvert_storage::LOCK_NAME;

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

/// The name of TFRecord shard `index` of `count` written from a OneFlow dataset:
/// `stem-00001-of-00004.tfrecord`, and `stem.tfrecord` when it is the only one; `extension`
/// is `tfrecord`, or `array_record` for ArrayRecord files (never compressed as a whole).
pub fn tf_shard_name(
    stem: &str,
    index: usize,
    count: usize,
    extension: &str,
    compression: Compression,
) -> String {
    let suffix = compression.file_suffix();
    if count == 1 {
        format!("{stem}.{extension}{suffix}")
    } else {
        format!("{stem}-{index:05}-of-{count:05}.{extension}{suffix}")
    }
}

/// The temporary name of output number `sub` of work item `chunk`, unique to this process
/// and, through `tag` (empty, or `name-split.` for a TFDS split), to the dataset among
/// those sharing its directory.
pub(crate) fn temp_part_name(tag: &str, chunk: usize, sub: usize) -> String {
    format!(
        "{TEMP_PREFIX}{tag}part-{chunk}-{sub}.tmp-{}",
        std::process::id()
    )
}

/// The temporary name under which `name` is written before it is renamed into place: the
/// process id and a number drawn for this name, as two processes on two machines that share
/// a file system (containers, NFS) may have the same id and write the same file.
pub fn staged_name(name: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    // A hasher keyed at random for each process, fed a counter: a number no other process
    // draws, nor this one twice.
    static DRAWN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(DRAWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    format!(
        "{TEMP_PREFIX}{name}.tmp-{}-{:016x}",
        std::process::id(),
        hasher.finish()
    )
}

/// The temporary name of a whole file copied into a dataset's directory (a side file, an
/// empty shard given back) before it takes its name `name`; `tag` as for
/// [`temp_part_name`], so that datasets sharing a directory never share a temporary file.
pub(crate) fn temp_copy_name(tag: &str, name: &str) -> String {
    format!("{TEMP_PREFIX}{tag}copy.{name}.tmp-{}", std::process::id())
}

/// The manifest's name of a dataset that shares its directory with others, each known by
/// `tag` (a TFDS split's `name-split`, a shard family's name): `tag.ofconvert-manifest.json`.
pub(crate) fn shared_manifest_name(tag: &str) -> String {
    format!("{tag}.{MANIFEST_NAME}")
}

/// Whether `name` is a temporary file of some run.
pub fn is_temporary(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
}

/// Whether `name` is a file ofconvert writes beside records: an index, a manifest, a
/// temporary file or the lock. Every command passes over them without a word: they are
/// never records, and listing them as skipped would only be noise.
pub fn is_own_file(name: &str) -> bool {
    name.ends_with(INDEX_SUFFIX) || is_manifest(name) || is_temporary(name)
}

/// Whether `name` is a manifest: [`MANIFEST_NAME`], or `name-split.` before it for a split
/// of a TFDS dataset, whose splits share a folder.
pub fn is_manifest(name: &str) -> bool {
    name == MANIFEST_NAME
        || name
            .strip_suffix(MANIFEST_NAME)
            .is_some_and(|stem| stem.len() > 1 && stem.ends_with('.'))
}

/// The files a dataset's output directory holds besides its manifest.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DatasetFiles<'a> {
    /// OneFlow parts, `prefix` + digits (tf2of).
    Parts { prefix: &'a str },
    /// TFRecord shards `stem-NNNNN-of-NNNNN.tfrecord*`, `stem.tfrecord*` or TFDS's
    /// `stem.tfrecord-NNNNN-of-NNNNN*` (of2tf), and the same with `array_record`.
    Shards { stem: &'a str },
    /// TFRecord files given back under the names they had (of2tf).
    Named { names: &'a [String] },
}

/// Whether `name`, in an output directory, belongs to the dataset written there: its
/// manifest (named `manifest`), its `files` and temporary files — those whose names
/// start with `temps` (all of them for an empty `temps`). Nothing else in the directory is
/// ours to remove.
pub(crate) fn is_dataset_file(
    name: &str,
    manifest: &str,
    files: DatasetFiles<'_>,
    temps: &str,
) -> bool {
    name == manifest
        || (is_temporary(name) && name != LOCK_NAME && name[TEMP_PREFIX.len()..].starts_with(temps))
        || match files {
            DatasetFiles::Parts { prefix } => part_number(name, prefix).is_some(),
            DatasetFiles::Shards { stem } => {
                let single = name.strip_prefix(stem).is_some_and(|rest| {
                    matches!(
                        rest,
                        ".tfrecord" | ".tfrecord.gz" | ".tfrecord.zz" | ".array_record"
                    )
                });
                single
                    || (shard_name(name).is_some_and(|shard| shard.stem == stem)
                        && (name.contains(".tfrecord") || name.contains(".array_record")))
            }
            DatasetFiles::Named { names } => names.iter().any(|known| known == name),
        }
}

/// The hidden directory of a sharded run in its output root: the plan, the receipts, the
/// workers' locks. `commit` removes it.
pub const CONTROL_DIR: &str = ".ofconvert";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_and_shard_names() {
        assert_eq!(part_name("part-", 5, 3), "part-00003");
        assert_eq!(part_name("part-", 0, 12), "part-12");
        assert_eq!(
            tf_shard_name("train", 1, 4, "tfrecord", Compression::Gzip),
            "train-00001-of-00004.tfrecord.gz"
        );
        assert_eq!(
            tf_shard_name("train", 0, 1, "tfrecord", Compression::None),
            "train.tfrecord"
        );
    }

    #[test]
    fn dataset_files_are_told_from_the_rest() {
        let tf2of = |name: &str| {
            is_dataset_file(
                name,
                MANIFEST_NAME,
                DatasetFiles::Parts { prefix: "part-" },
                "",
            )
        };
        assert!(tf2of("part-00000"));
        assert!(tf2of(MANIFEST_NAME));
        assert!(tf2of(&temp_part_name("", 0, 0)));
        assert!(!tf2of(LOCK_NAME));
        assert!(!tf2of("README"));
        let of2tf = |name: &str| {
            is_dataset_file(
                name,
                MANIFEST_NAME,
                DatasetFiles::Shards { stem: "train" },
                "",
            )
        };
        assert!(of2tf("train-00000-of-00002.tfrecord"));
        assert!(of2tf("train.tfrecord.gz"));
        assert!(of2tf("train-00001-of-00002.array_record"));
        assert!(of2tf("train.array_record"));
        assert!(!of2tf("test-00000-of-00002.tfrecord"));
        assert!(!of2tf("train.tfrecord.idx"));
    }

    #[test]
    fn splits_sharing_a_folder_keep_to_their_own_files() {
        let manifest = "mnist-train.ofconvert-manifest.json";
        assert!(is_manifest(manifest));
        assert!(!is_manifest(".ofconvert-manifest.json"));
        let train = |name: &str| {
            is_dataset_file(
                name,
                manifest,
                DatasetFiles::Shards {
                    stem: "mnist-train",
                },
                "mnist-train.",
            )
        };
        assert!(train("mnist-train.tfrecord-00001-of-00002"));
        assert!(train(manifest));
        assert!(train(&temp_part_name("mnist-train.", 3, 0)));
        assert!(!train(&temp_part_name("mnist-test.", 3, 0)));
        assert!(!train("mnist-test.tfrecord-00000-of-00001"));
        assert!(!train("mnist-test.ofconvert-manifest.json"));
        assert!(!train("dataset_info.json"));
    }
}
