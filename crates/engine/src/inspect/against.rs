//! Record files checked against what their dataset's manifest lists: each part's records,
//! bytes and CRC-32C, and the record files beside the parts that no manifest lists (the
//! parts missing are found with the files, [`expand_paths`](super::expand_paths)).

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};
use crate::manifest::ManifestPart;
use crate::naming::names::Format;
use crate::published::Published;

use super::files::Verification;

/// The listed part a file is, and the manifest that lists it.
#[derive(Clone, Copy)]
pub(crate) struct AsListed<'a> {
    part: &'a ManifestPart,
    manifest: &'a str,
}

impl AsListed<'_> {
    /// Whether the manifest has the part's CRC-32C (manifests of older versions do not).
    pub(crate) fn has_crc32c(&self) -> bool {
        self.part.crc32c.is_some()
    }

    fn differs(&self, path: &Path, found: String, listed: String, why: &str) -> Error {
        let what = format!("{found} where {} lists {listed}{why}", self.manifest);
        Error::new(ErrorKind::NotAsListed { what }).in_file(path)
    }

    /// What is wrong with `path`, which holds `records` records, if not as listed.
    pub(crate) fn check_records(&self, path: &Path, records: u64) -> Option<Error> {
        let shown = |records: u64| format!("{records} record{}", plural(records));
        (records != self.part.records)
            .then(|| self.differs(path, shown(records), shown(self.part.records), ""))
    }

    /// What is wrong with a file verified sound (`verified`), of `size` bytes, if not as
    /// listed: its size, its records, its CRC-32C when both sides have one.
    pub(crate) fn check_verified(&self, verified: &Verification, size: u64) -> Vec<Error> {
        let path = &verified.path;
        let mut wrong = Vec::new();
        if size != self.part.bytes {
            let shown = |bytes: u64| format!("{bytes} bytes");
            wrong.push(self.differs(path, shown(size), shown(self.part.bytes), ""));
        }
        wrong.extend(self.check_records(path, verified.good_records));
        if let (Some(found), Some(listed)) = (verified.crc32c, &self.part.crc32c) {
            let found = format!("{found:08x}");
            if &found != listed {
                wrong.push(self.differs(
                    path,
                    format!("CRC-32C {found}"),
                    listed.clone(),
                    ": its bytes changed since it was written",
                ));
            }
        }
        wrong
    }
}

fn plural(count: u64) -> &'static str {
    if count == 1 {
        ""
    } else {
        "s"
    }
}

/// What is wrong with `path`, a file no manifest lists that holds `records` records, when the
/// folder's `dataset_info.json` states another count (`stated`) of it: TFDS's own Parquet
/// writer leaves shards short of what it states.
pub(crate) fn check_shard_length(path: &Path, records: u64, stated: Option<u64>) -> Option<Error> {
    let stated = stated.filter(|&stated| stated != records)?;
    let what = format!(
        "{records} record{} where {}'s shardLengths says {stated}",
        plural(records),
        crate::tfds::DATASET_INFO
    );
    Some(Error::new(ErrorKind::NotAsListed { what }).in_file(path))
}

/// For each of `files`, the part it is of a dataset `published` lists, if one does.
pub(crate) fn as_listed<'a>(
    published: &'a [Published],
    files: &[(PathBuf, Format)],
) -> Vec<Option<AsListed<'a>>> {
    files
        .iter()
        .map(|(path, _)| {
            let (dir, name) = (path.parent()?, path.file_name()?.to_str()?);
            published
                .iter()
                .filter(|dataset| dataset.dir == dir)
                .find_map(|dataset| {
                    let part = dataset.parts.iter().find(|part| part.name == name)?;
                    Some(AsListed {
                        part,
                        manifest: &dataset.manifest,
                    })
                })
        })
        .collect()
}

/// Why `path`, a record file that no manifest lists, is not one of the datasets published
/// beside it, if any is.
pub(crate) fn unlisted(published: &[Published], path: &Path) -> Option<Error> {
    let dir = path.parent()?;
    let beside: Vec<&Published> = published
        .iter()
        .filter(|dataset| dataset.dir == dir)
        .collect();
    let what = match beside.as_slice() {
        [] => return None,
        [dataset] => format!(
            "a record file {} does not list: not one of the dataset's {} part{}",
            dataset.manifest,
            dataset.parts.len(),
            plural(dataset.parts.len() as u64)
        ),
        several => format!(
            "a record file none of the {} manifests beside it lists",
            several.len()
        ),
    };
    Some(Error::new(ErrorKind::NotAsListed { what }).in_file(path))
}
