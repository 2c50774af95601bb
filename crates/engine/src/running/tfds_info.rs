//! The TFDS metadata of a run's outputs: `features.json` made to describe the images
//! `--images` changed (tf2of), and `dataset_info.json` and `features.json` written back
//! beside the splits `of2tf` gave back, once every split bound for a folder is done.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::manifest::Manifest;
use crate::options::Direction;
use crate::progress::DatasetStatus;
use crate::recode::ImagePolicy;
use crate::records::output;
use crate::running::summary::DatasetSummary;
use crate::schema::Schema;
use crate::storage::Storage;
use crate::tfds::{rewrite_features, rewrite_info, Recoded, DATASET_INFO, FEATURES};

/// Writes `dataset_info.json` and `features.json` into each folder that the splits of a
/// TFDS dataset went back to where they are not what its splits say: a folder whose splits
/// were all kept from a run that ended before its metadata (a folder's splits converted are
/// put in place with its metadata, all at once: `running::placing`). Each file is staged and
/// renamed into place, features first, so that a folder with a `dataset_info.json` holds
/// every file it lists. A folder whose metadata cannot be written fails its splits.
/// Returns the files written. Only of2tf writes them: OneFlow has no use for them.
pub(crate) fn write_metadata(
    direction: Direction,
    storage: &dyn Storage,
    datasets: &mut [DatasetSummary],
) -> Vec<String> {
    if direction != Direction::OfToTf {
        return Vec::new();
    }
    let mut folders: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, dataset) in datasets.iter().enumerate() {
        let origin = dataset.manifest.as_ref().and_then(|m| m.tfds.as_ref());
        if origin.is_some() || dataset.tfds {
            folders
                .entry(dataset.output_dir.clone())
                .or_default()
                .push(index);
        }
    }
    let mut written = Vec::new();
    for (folder, members) in folders {
        let done = |index: &usize| {
            matches!(
                datasets[*index].status,
                DatasetStatus::Converted | DatasetStatus::Kept
            )
        };
        if !members.iter().all(done) {
            continue;
        }
        let manifests: Vec<&Manifest> = members
            .iter()
            .filter_map(|&index| datasets[index].manifest.as_ref())
            .collect();
        let dir = PathBuf::from(&folder);
        let result = folder_metadata(&manifests)
            .map_err(std::io::Error::other)
            .and_then(|files| {
                let mut staged = Vec::new();
                for (name, text) in &files {
                    let path = dir.join(name);
                    let found = storage.read(&path)?;
                    if found.as_deref() == Some(text.as_slice()) {
                        continue;
                    }
                    // Where a file is put only if absent, the old one must go first (a
                    // resumed run that kept every split still has it).
                    if found.is_some() && !storage.renames_cheaply() {
                        storage.remove(&path)?;
                    }
                    staged.push(output::stage(storage, &dir, name, text)?);
                }
                // features.json first: dataset_info.json, last, says the folder is whole.
                for staged in staged {
                    staged.commit()?;
                }
                Ok(files
                    .iter()
                    .map(|(name, _)| dir.join(name))
                    .collect::<Vec<_>>())
            });
        match result {
            Ok(paths) => written.extend(paths.iter().map(|path| path.display().to_string())),
            Err(err) => {
                for index in members {
                    let dataset = &mut datasets[index];
                    dataset.status = DatasetStatus::Failed;
                    dataset.error = Some(format!(
                        "{}: cannot write the TFDS metadata: {err}",
                        dir.join(DATASET_INFO).display()
                    ));
                }
            }
        }
    }
    written
}

/// The TFDS metadata of a folder whose splits have `manifests`, in the order they are put
/// in place: `features.json` (when the splits' origin has one), then `dataset_info.json`,
/// which says the folder is whole. Nothing for splits without a TFDS origin.
pub(crate) fn folder_metadata(manifests: &[&Manifest]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let Some(first) = manifests.first().and_then(|m| m.tfds.clone()) else {
        return Ok(Vec::new());
    };
    let splits: Vec<(String, Vec<u64>, Option<u64>)> = manifests
        .iter()
        .filter_map(|manifest| {
            let origin = manifest.tfds.as_ref()?;
            let lengths = manifest.parts.iter().map(|part| part.records).collect();
            Some((origin.split.clone(), lengths, example_bytes(manifest)))
        })
        .collect();
    let file_format = manifests[0].settings.to.name();
    let info = rewrite_info(&first.dataset_info, &splits, file_format)?;
    let mut files: Vec<(String, Vec<u8>)> = first
        .features
        .map(|text| (FEATURES.to_owned(), text.into_bytes()))
        .into_iter()
        .collect();
    files.push((DATASET_INFO.to_owned(), info.into_bytes()));
    Ok(files)
}

/// What TFDS counts as a split's `numBytes`: the bytes of its serialized examples, the
/// TFRecord framing (16 bytes a record) left out. Unknown for compressed files and
/// ArrayRecord ones.
fn example_bytes(manifest: &Manifest) -> Option<u64> {
    const FRAMING: u64 = 16;
    // The compression of the files written, whatever the run asked.
    let uncompressed = manifest.settings.to == crate::options::TfFile::Tfrecord
        && manifest
            .tensorflow
            .as_ref()
            .map_or(manifest.parts.is_empty(), |reader| {
                reader.compression_type.is_empty()
            });
    uncompressed.then(|| {
        manifest
            .parts
            .iter()
            .map(|part| part.bytes.saturating_sub(FRAMING * part.records))
            .sum()
    })
}

/// The image features of converted records (`schema`) that `policy` changed, by name, and
/// what they hold now: pixels (with `NAME/shape` beside them, of one shape in every record
/// or not), or colour JPEGs.
pub(crate) fn recoded_images(policy: ImagePolicy, schema: &Schema) -> BTreeMap<String, Recoded> {
    let mut recoded = BTreeMap::new();
    for feature in &schema.features {
        let now = match policy {
            ImagePolicy::Keep => break,
            ImagePolicy::Jpeg { .. } if feature.image.as_deref() == Some("jpeg") => Recoded::Jpeg,
            ImagePolicy::Jpeg { .. } => continue,
            ImagePolicy::Raw => {
                let shape_name = format!("{}/shape", feature.name);
                let Some(shape) = schema.features.iter().find(|f| f.name == shape_name) else {
                    continue;
                };
                let everywhere =
                    shape.present == schema.records && feature.present == shape.present;
                Recoded::Pixels(shape.same_values.clone().filter(|_| everywhere))
            }
        };
        recoded.insert(feature.name.clone(), now);
    }
    recoded
}

/// The text of the TFDS `features.json` at `path` in `storage` rewritten for `recoded`,
/// when it describes images `recoded` names; `None` when it needs no change, or is not
/// there to read.
pub(crate) fn rewritten_features(
    storage: &dyn Storage,
    path: &Path,
    recoded: &BTreeMap<String, Recoded>,
) -> Option<String> {
    if recoded.is_empty() {
        return None;
    }
    let text = String::from_utf8(storage.read(path).ok()??).ok()?;
    rewrite_features(&text, recoded)
}
