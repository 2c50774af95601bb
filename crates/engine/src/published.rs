//! What the manifests in a directory say its files are: the parts of each dataset published
//! there, in the format its conversion wrote, with their records, bytes and CRC-32C; and the
//! files that came with them. What looks for record files believes a manifest first: a part
//! it lists is a record file however damaged, a file it lists as a side file is none.

use std::io;
use std::path::{Path, PathBuf};

use crate::manifest::{Manifest, ManifestPart};
use crate::naming::layout;
use crate::naming::names::Format;
use crate::options::Direction;
use crate::storage::Storage;

/// A dataset published in a directory, as its manifest lists it.
#[derive(Clone, Debug)]
pub struct Published {
    /// The directory.
    pub dir: PathBuf,
    /// The manifest's file name (`ofconvert-manifest.json`, or `name-split.` before it for
    /// one of the datasets sharing a folder).
    pub manifest: String,
    /// The format of its parts: OFRecord for tf2of's, TFRecord (or ArrayRecord) for of2tf's.
    pub format: Format,
    /// Its parts, in order.
    pub parts: Vec<ManifestPart>,
    /// The names of the files that came with its records.
    pub side_files: Vec<String>,
}

/// What a manifest says a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListedAs {
    /// A part, of this format.
    Part(Format),
    /// A file that came with the records.
    Side,
}

/// The datasets the manifests among `names` (the files of `dir`) list; a manifest this
/// version cannot read lists nothing.
///
/// # Errors
///
/// When a manifest cannot be read.
pub(crate) fn published_in<'a>(
    storage: &dyn Storage,
    dir: &Path,
    names: impl IntoIterator<Item = &'a str>,
) -> io::Result<Vec<Published>> {
    let mut listed = Vec::new();
    for name in names.into_iter().filter(|name| layout::is_manifest(name)) {
        let Some(manifest) = Manifest::read_named(storage, dir, name)? else {
            continue;
        };
        listed.push(Published {
            dir: dir.to_path_buf(),
            manifest: name.to_owned(),
            format: match manifest.settings.direction {
                Direction::TfToOf => Format::Of,
                Direction::OfToTf => Format::Tf,
            },
            parts: manifest.parts,
            side_files: manifest.side_files.into_iter().map(|f| f.name).collect(),
        });
    }
    Ok(listed)
}

/// What the manifests `listed` say the file `name` is, if any lists it: a part before all
/// (datasets sharing a folder each list its side files, never another's part as one).
pub(crate) fn listed_as(listed: &[Published], name: &str) -> Option<ListedAs> {
    let part = listed
        .iter()
        .find(|dataset| dataset.parts.iter().any(|part| part.name == name));
    match part {
        Some(dataset) => Some(ListedAs::Part(dataset.format)),
        None => listed
            .iter()
            .any(|dataset| dataset.side_files.iter().any(|side| side == name))
            .then_some(ListedAs::Side),
    }
}
