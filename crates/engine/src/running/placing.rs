//! Putting datasets ready to be published in place: one alone, or the splits of a TFDS
//! dataset that share a folder together with the folder's metadata, in one replacement
//! (`records::swap`), so that a folder holds the old splits or the new ones, never a mix.

use std::path::Path;

use crate::error::Error;
use crate::manifest::Manifest;
use crate::naming::layout;
use crate::records::copy::Copied;
use crate::records::swap::{self, Replacement};
use crate::running::publish::{PublishFailed, Target};
use crate::storage::Storage;

/// A dataset whose files are written and whose manifest is made: what its replacement
/// moves into place.
pub(crate) struct Ready {
    pub(crate) manifest: Manifest,
    /// The manifest's name and bytes.
    pub(crate) manifest_file: (String, Vec<u8>),
    /// Each file waiting under a temporary name, and its name.
    pub(crate) new: Vec<(String, String)>,
    /// The names of the files already in place under their names (an object store takes
    /// a fresh dataset's parts so): the new dataset's own, never set aside.
    pub(crate) placed: Vec<String>,
    /// The files copied beside the parts, removed if the replacement is undone.
    pub(crate) copies: Vec<Copied>,
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
