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

/// What `index` appends to a TFRecord file's name for its index: DALI's convention (its
/// `tfrecord2idx` writes the name it is given, which DALI's documentation spells so).
pub const INDEX_SUFFIX: &str = ".idx";

/// What the `tfrecord` package's indexer, given a folder (`python -m
/// tfrecord.tools.tfrecord2idx DIR`), names the index of each `NAME.tfrecord` in it:
/// `NAME.tfindex`, a line `offset length` a record.
pub const TFRECORD_PACKAGE_INDEX_SUFFIX: &str = ".tfindex";

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

/// What tells this run's temporary files from those of every other run, here or on another
/// machine sharing the file system (containers, where every run may be process 1; NFS): the
/// process id and a number drawn at random once a process.
pub(crate) fn run_id() -> String {
    use std::sync::Mutex;
    // Drawn again in a forked child, which has the same memory but another process id.
    static DRAWN: Mutex<Option<(u32, String)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut drawn = DRAWN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    match &*drawn {
        Some((by, id)) if *by == pid => id.clone(),
        _ => {
            let id = format!("{pid}-{:08x}", random_u64() as u32);
            *drawn = Some((pid, id.clone()));
            id
        }
    }
}

/// A number no other process draws, nor this one twice.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // A hasher keyed at random for each process, fed a counter.
    static DRAWN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(DRAWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    hasher.finish()
}

/// A name drawn for one file or one replacement: the process id and a random number.
pub(crate) fn unique_id() -> String {
    format!("{}-{:016x}", std::process::id(), random_u64())
}

/// What the temporary files of a dataset carry after the temporary prefix: nothing for a
/// dataset that has its directory to itself; for one that shares it with others (the splits
/// of a TFDS dataset, the shard families given back to one folder), its `tag` and a dot.
pub(crate) fn temp_tag(tag: Option<&str>) -> String {
    tag.map(|tag| format!("{tag}.")).unwrap_or_default()
}

/// What every temporary file of a dataset says after its [`temp_tag`]: what it is. A tag
/// that another starts with (`data.` and `data.v2.`) is told from it by these (`v2.part-`
/// is none of them).
const TEMPORARY_KINDS: [&str; 6] = [
    "part-",
    "copy.",
    JOURNAL_STEM,
    SWAP_STEM,
    ASIDE_STEM,
    // A staged manifest: `staged_name(manifest)`, the manifest's name starting with the tag.
    "ofconvert-manifest.json.tmp-",
];

/// Whether `name` is a temporary file of the dataset whose [`temp_tag`] is `tag`: for an
/// empty `tag` (a dataset alone in its directory), every temporary file but the lock; for
/// another, its own and no other dataset's.
pub(crate) fn is_own_temporary(name: &str, tag: &str) -> bool {
    if !is_temporary(name) || name == LOCK_NAME {
        return false;
    }
    if tag.is_empty() {
        return true;
    }
    name[TEMP_PREFIX.len()..]
        .strip_prefix(tag)
        .is_some_and(|kind| TEMPORARY_KINDS.iter().any(|known| kind.starts_with(known)))
}

/// The temporary name of output number `sub` of work item `chunk`, unique to this run and,
/// through `tag` ([`temp_tag`]), to the dataset among those sharing its directory.
pub(crate) fn temp_part_name(tag: &str, chunk: usize, sub: usize) -> String {
    format!("{TEMP_PREFIX}{tag}part-{chunk}-{sub}.tmp-{}", run_id())
}

/// The temporary name under which `name` is written before it is renamed into place, drawn
/// for this name: the process id and a random number.
pub fn staged_name(name: &str) -> String {
    format!("{TEMP_PREFIX}{name}.tmp-{}", unique_id())
}

/// The temporary name of a whole file copied into a dataset's directory (a side file, an
/// empty shard given back) before it takes its name `name`; `tag` as for
/// [`temp_part_name`], so that datasets sharing a directory never share a temporary file.
pub(crate) fn temp_copy_name(tag: &str, name: &str) -> String {
    format!("{TEMP_PREFIX}{tag}copy.{name}.tmp-{}", run_id())
}

/// The journal of a run's finished work items of the dataset tagged `tag`, for `--resume`:
/// one a run, so that a later run with the same process id (in a container, every run may be
/// process 1) never writes over an earlier one's.
pub(crate) fn journal_name(tag: &str) -> String {
    format!(
        "{TEMP_PREFIX}{tag}{JOURNAL_STEM}{}{JOURNAL_SUFFIX}",
        run_id()
    )
}

/// The journal line of work item `chunk` of this run, in an object store, where an object is
/// written whole or not at all: an object of its own.
pub(crate) fn journal_line_name(tag: &str, chunk: usize) -> String {
    format!(
        "{TEMP_PREFIX}{tag}{JOURNAL_STEM}{}-{chunk}{JOURNAL_SUFFIX}",
        run_id()
    )
}

/// Whether `name` is a resume journal (or, in an object store, a journal line) of the
/// dataset tagged `tag`.
pub(crate) fn is_journal(name: &str, tag: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX)
        .and_then(|rest| rest.strip_prefix(tag))
        .is_some_and(|rest| rest.starts_with(JOURNAL_STEM) && rest.ends_with(JOURNAL_SUFFIX))
}

const JOURNAL_STEM: &str = "done-";
const JOURNAL_SUFFIX: &str = ".jsonl";

/// Which phase of a replacement its journal was renamed for, in order: while the old
/// files are set aside; once they all are, while the new ones take their names; once they
/// all have, and the replacement is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SwapPhase {
    Out,
    In,
    Done,
}

/// The journal of the replacement `id` of the dataset tagged `tag` in `phase`.
pub(crate) fn swap_journal_name(tag: &str, id: &str, phase: SwapPhase) -> String {
    let phase = match phase {
        SwapPhase::Out => "out",
        SwapPhase::In => "in",
        SwapPhase::Done => "done",
    };
    format!("{TEMP_PREFIX}{tag}{SWAP_STEM}{id}.{phase}.json")
}

/// The replacement and phase of a replacement's journal of the dataset tagged `tag`.
pub(crate) fn swap_journal_of(name: &str, tag: &str) -> Option<(String, SwapPhase)> {
    let rest = name.strip_prefix(TEMP_PREFIX)?.strip_prefix(tag)?;
    let rest = rest.strip_prefix(SWAP_STEM)?;
    [
        (".out.json", SwapPhase::Out),
        (".in.json", SwapPhase::In),
        (".done.json", SwapPhase::Done),
    ]
    .into_iter()
    .find_map(|(suffix, phase)| Some((rest.strip_suffix(suffix)?.to_owned(), phase)))
}

const SWAP_STEM: &str = "swap-";

/// The hidden name a file of the dataset published before takes while the replacement `id`
/// of the dataset tagged `tag` puts the new one in place.
pub(crate) fn aside_name(tag: &str, id: &str, name: &str) -> String {
    format!("{TEMP_PREFIX}{tag}{ASIDE_STEM}{id}.{name}")
}

const ASIDE_STEM: &str = "old-";

/// The manifest's name of a dataset that shares its directory with others, each known by
/// `tag` (a TFDS split's `name-split`, a shard family's name): `tag.ofconvert-manifest.json`.
pub(crate) fn shared_manifest_name(tag: &str) -> String {
    format!("{tag}.{MANIFEST_NAME}")
}

/// Whether `name` is a temporary file of some run.
pub fn is_temporary(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
}

/// Whether every command passes over `name` without a word: a file ofconvert writes beside
/// records (an index, a manifest, a temporary file or the lock), or another indexer's index
/// of a record file. They are never records, and listing them as skipped would only be
/// noise. Nor is an index carried beside the parts made of the records it indexes: its
/// offsets are the TFRecord file's, and would mislead there.
pub fn is_passed_over(name: &str) -> bool {
    name.ends_with(INDEX_SUFFIX)
        || name.ends_with(TFRECORD_PACKAGE_INDEX_SUFFIX)
        || is_manifest(name)
        || is_temporary(name)
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
/// manifest (named `manifest`), its `files` and temporary files — those of the
/// [`temp_tag`] `temps` (all of them for an empty `temps`). Nothing else in the directory is
/// ours to remove.
pub(crate) fn is_dataset_file(
    name: &str,
    manifest: &str,
    files: DatasetFiles<'_>,
    temps: &str,
) -> bool {
    name == manifest
        || is_own_temporary(name, temps)
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
                &temp_tag(Some("mnist-train")),
            )
        };
        assert!(train("mnist-train.tfrecord-00001-of-00002"));
        assert!(train(manifest));
        let (own, other) = (temp_tag(Some("mnist-train")), temp_tag(Some("mnist-test")));
        assert!(train(&temp_part_name(&own, 3, 0)));
        assert!(!train(&temp_part_name(&other, 3, 0)));
        assert!(!train("mnist-test.tfrecord-00000-of-00001"));
        assert!(!train("mnist-test.ofconvert-manifest.json"));
        assert!(!train("dataset_info.json"));
    }

    #[test]
    fn a_tag_another_starts_with_owns_none_of_its_temporary_files() {
        let (data, v2) = (temp_tag(Some("data")), temp_tag(Some("data.v2")));
        let theirs = [
            temp_part_name(&v2, 0, 0),
            temp_copy_name(&v2, "README"),
            journal_name(&v2),
            swap_journal_name(&v2, "7", SwapPhase::Out),
            aside_name(&v2, "7", "part-00000"),
            staged_name(&shared_manifest_name("data.v2")),
        ];
        for name in &theirs {
            assert!(is_own_temporary(name, &v2), "{name}");
            assert!(!is_own_temporary(name, &data), "{name}");
            assert!(is_own_temporary(name, ""), "{name}");
        }
        assert!(is_own_temporary(&temp_part_name(&data, 0, 0), &data));
        assert!(!is_own_temporary(LOCK_NAME, ""));
        assert_eq!(
            swap_journal_of(&swap_journal_name(&v2, "7-ab", SwapPhase::In), &v2),
            Some(("7-ab".to_owned(), SwapPhase::In))
        );
        assert_eq!(
            swap_journal_of(&swap_journal_name(&v2, "7", SwapPhase::In), &data),
            None
        );
        assert!(is_journal(&journal_name(&v2), &v2));
        assert!(!is_journal(&journal_name(&v2), &data));
    }

    #[test]
    fn a_run_keeps_one_id_and_draws_a_new_name_for_each_file() {
        assert_eq!(run_id(), run_id());
        assert!(run_id().starts_with(&format!("{}-", std::process::id())));
        assert_ne!(staged_name("x"), staged_name("x"));
        assert_ne!(unique_id(), unique_id());
    }
}
