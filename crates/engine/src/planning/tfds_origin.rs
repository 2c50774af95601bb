//! Where a OneFlow dataset came from, when it came from a TFDS folder: what its manifest
//! says, or else a `dataset_info.json` beside or above it.

use std::path::Path;

use crate::manifest::Manifest;
use crate::storage::Storage;
use crate::tfds::{Metadata, TfdsOrigin};

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
