//! What a run that does not end leaves for the next to carry on from: each finished work
//! item a note beside its parts (hidden, named as the run's temporary files are), saying which
//! conversion it belongs to and what a manifest needs of it; and what `--resume` keeps of them.
//!
//! A note is written once the work item's parts are finished (synced, when the run syncs),
//! so a part it names was whole when it was written. A resumed run keeps a note when the
//! settings and the dataset's inputs (paths and sizes) are the same, the work items were cut
//! alike, and every part it names is there with its size; everything else is done again.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::naming::layout::TEMP_PREFIX;
use crate::options::Settings;
use crate::planning::plan::DatasetPlan;
use crate::recode::ImageConversion;
use crate::records::output::TempPart;
use crate::records::SkippedRecords;
use crate::running::chunk::ChunkOutput;
use crate::running::summary::slash_path;
use crate::schema::SchemaBuilder;
use crate::storage::Storage;

/// What a note's name starts with after the temporary prefix and the dataset's tag.
const NOTE_STEM: &str = "done-";

/// The note of a finished work item.
#[derive(Serialize, Deserialize)]
struct Note {
    /// The conversion it belongs to.
    settings: Settings,
    /// The dataset's inputs, relative paths and sizes.
    inputs: Vec<(String, u64)>,
    /// The work item's number, and how many the dataset was cut into.
    chunk: usize,
    of: usize,
    /// Its parts, in order: file names in the dataset's directory, records, bytes.
    parts: Vec<(String, u64, u64)>,
    skipped: SkippedRecords,
    compressions: Vec<(usize, String)>,
    images: ImageConversion,
    schema: SchemaBuilder,
    rounded: u64,
}

/// The name of work item `chunk`'s note, `tag` as the dataset's temporary files carry.
fn note_name(tag: &str, chunk: usize) -> String {
    format!("{TEMP_PREFIX}{tag}{NOTE_STEM}{chunk}.json")
}

/// The dataset's inputs as a note records them.
fn inputs_of(dataset: &DatasetPlan) -> Vec<(String, u64)> {
    dataset
        .inputs
        .iter()
        .map(|input| (slash_path(&input.relative), input.size))
        .collect()
}

/// Writes the note of work item `chunk` of `of`, whose parts are finished, into `dir`;
/// whether it was written. A note that cannot be written only means that a resumed run does
/// the work item again.
pub(crate) fn write_note(
    storage: &dyn Storage,
    dir: &Path,
    tag: &str,
    (settings, dataset): (&Settings, &DatasetPlan),
    (chunk, of): (usize, usize),
    output: &ChunkOutput,
) -> bool {
    let note = Note {
        settings: settings.clone(),
        inputs: inputs_of(dataset),
        chunk,
        of,
        parts: output
            .parts
            .iter()
            .filter_map(|part| {
                let name = part.path.file_name()?.to_str()?.to_owned();
                Some((name, part.records, part.bytes))
            })
            .collect(),
        skipped: output.skipped.clone(),
        compressions: output.compressions.clone(),
        images: output.images.clone(),
        schema: output.schema.clone(),
        rounded: output.rounded,
    };
    if note.parts.len() != output.parts.len() {
        return false;
    }
    let Ok(bytes) = serde_json::to_vec(&note) else {
        return false;
    };
    let path = dir.join(note_name(tag, chunk));
    let written = storage
        .create(&path, crate::storage::Durability::Unsynced)
        .and_then(|mut file| {
            std::io::Write::write_all(&mut file, &bytes)?;
            file.finish()
        });
    if written.is_err() {
        let _ = storage.remove(&path);
    }
    written.is_ok()
}

/// The finished work items that an earlier run of the same conversion left in a dataset's
/// directory: by number, how many work items that run cut the dataset into and what the
/// item produced; and the names of the files they hold (notes and parts), which a resumed
/// run keeps.
pub(crate) struct Kept {
    pub(crate) outputs: BTreeMap<usize, (usize, ChunkOutput)>,
    pub(crate) files: Vec<String>,
}

/// Reads the notes in `dir` of the dataset tagged `tag` and keeps those of the same
/// conversion whose parts are all there, whole.
pub(crate) fn kept(
    storage: &dyn Storage,
    dir: &Path,
    tag: &str,
    settings: &Settings,
    dataset: &DatasetPlan,
) -> Kept {
    let mut kept = Kept {
        outputs: BTreeMap::new(),
        files: Vec::new(),
    };
    let Ok(names) = storage.file_names(dir) else {
        return kept;
    };
    let inputs = inputs_of(dataset);
    let prefix = format!("{TEMP_PREFIX}{tag}{NOTE_STEM}");
    for name in names {
        let Some(number) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".json"))
        else {
            continue;
        };
        if number.parse::<usize>().is_err() {
            continue;
        }
        let Ok(Some(bytes)) = storage.read(&dir.join(&name)) else {
            continue;
        };
        let Ok(note) = serde_json::from_slice::<Note>(&bytes) else {
            continue;
        };
        if note.settings != *settings || note.inputs != inputs || note.chunk.to_string() != number {
            continue;
        }
        let whole = note.parts.iter().all(|(part, _, bytes)| {
            matches!(storage.size(&dir.join(part)), Ok(Some(size)) if size == *bytes)
        });
        if !whole {
            continue;
        }
        kept.files.push(name);
        kept.files
            .extend(note.parts.iter().map(|(part, _, _)| part.clone()));
        let output = ChunkOutput {
            parts: note
                .parts
                .into_iter()
                .map(|(part, records, bytes)| TempPart {
                    path: dir.join(part),
                    records,
                    bytes,
                })
                .collect(),
            uploads: Vec::new(),
            skipped: note.skipped,
            schema: note.schema,
            compressions: note.compressions,
            images: note.images,
            rounded: note.rounded,
            noted: true,
        };
        kept.outputs.insert(note.chunk, (note.of, output));
    }
    kept
}
