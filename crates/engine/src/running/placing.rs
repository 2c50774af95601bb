//! Putting datasets ready to be published in place: one alone, or the splits of a TFDS
//! dataset that share a folder together with the folder's metadata, in one replacement
//! (`records::swap`), so that a folder holds the old splits or the new ones, never a mix.

use std::path::Path;

use crate::error::Error;
use crate::manifest::Manifest;
use crate::naming::layout;
use crate::records::swap::{self, Replacement};
use crate::running::chunk::ChunkOutput;
use crate::running::publish::{PublishFailed, Ready, Target};
use crate::storage::Storage;

impl Target<'_> {
    /// Copies the files that come with a dataset beside its parts, and puts the parts and
    /// the copies in place under their names with the manifest last, replacing the dataset
    /// published there before only now that the new one is whole, all or nothing.
    pub(crate) fn publish(&self, outputs: Vec<ChunkOutput>) -> Result<Manifest, PublishFailed> {
        let ready = self.ready(outputs)?;
        let dir = &self.dataset.output_dir;
        let mut manifests = put_in_place(self.storage, dir, vec![(self, ready)], Vec::new())?;
        Ok(manifests.remove(0))
    }
}

/// Puts `members`, datasets ready in the directory `dir` of `storage`, in place in one
/// replacement, with the small files `metadata` (TFDS's, for a folder of splits) put before
/// the manifests. Returns their manifests, in order.
pub(crate) fn put_in_place(
    storage: &dyn Storage,
    dir: &Path,
    members: Vec<(&Target<'_>, Ready)>,
    metadata: Vec<(String, Vec<u8>)>,
) -> Result<Vec<Manifest>, PublishFailed> {
    if let Err(failed) = replace_with(storage, dir, &members, metadata) {
        // Undone, the replacement left the directory as it was: what the datasets copied
        // there goes.
        if failed.left.is_none() {
            for (_, ready) in &members {
                for copy in &ready.copies {
                    copy.undo(storage);
                }
            }
        }
        return Err(failed);
    }
    let mut manifests = Vec::new();
    for (target, ready) in members {
        // What is left of the dataset's temporary files (the notes a resumed run read,
        // parts of notes it could not use) is of no use once it is published.
        let _ = target.remove_own_temps();
        manifests.push(ready.manifest);
    }
    Ok(manifests)
}

/// The replacement that puts `members` and `metadata` in place of what is in `dir`.
fn replace_with(
    storage: &dyn Storage,
    dir: &Path,
    members: &[(&Target<'_>, Ready)],
    metadata: Vec<(String, Vec<u8>)>,
) -> Result<(), PublishFailed> {
    let undone = |err| PublishFailed { err, left: None };
    let present = storage
        .file_names(dir)
        .map_err(|err| undone(Error::io(dir, err)))?;
    let mut old: Vec<String> = Vec::new();
    for (target, _) in members {
        let theirs = target
            .old_files(&present)
            .map_err(|err| undone(Error::io(dir, err)))?;
        for name in theirs {
            if !old.contains(&name) {
                old.push(name);
            }
        }
    }
    let placed: Vec<&str> = members
        .iter()
        .flat_map(|(_, ready)| ready.placed.iter().map(String::as_str))
        .collect();
    old.retain(|name| !placed.contains(&name.as_str()));
    let mut replacement = Replacement {
        old,
        present,
        last: metadata,
        ..Replacement::default()
    };
    for (_, ready) in members {
        replacement.new.extend(ready.new.iter().cloned());
        replacement.last.push(ready.manifest_file.clone());
    }
    // A dataset alone names the replacement's files with its tag; the splits of a folder
    // together, with none (each split's run recovers such a replacement: `prepare`).
    let tag = match members {
        [(target, _)] => target.temp_tag(),
        _ => layout::temp_tag(None),
    };
    swap::replace(storage, dir, &tag, &replacement).map_err(|failed| PublishFailed {
        err: Error::io(&failed.path, failed.err),
        left: failed.left,
    })
}
