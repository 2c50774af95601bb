//! What a run that does not end leaves for the next to carry on from: a journal beside each
//! dataset's parts (hidden, named as the run's temporary files are) with a line for each
//! finished work item, saying which conversion it belongs to and what a manifest needs of it;
//! and what `--resume` keeps of them.
//!
//! A line is written once the work item's parts are finished (synced, when the run syncs),
//! so a part it names was whole when it was written; a line cut short by a kill does not
//! parse and is passed over. A resumed run keeps a work item when the line's key is its own
//! (the same settings and the same inputs, paths, sizes and versions: a digest of them, so
//! that a line stays small however many inputs the dataset has), the work items were cut
//! alike, and every part it names is there with its size; everything else is done again.
//! It keeps a whole published dataset on the same terms ([`still_whole`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::manifest::Manifest;
use crate::naming::layout;
use crate::options::Settings;
use crate::planning::plan::DatasetPlan;
use crate::recode::ImageConversion;
use crate::records::output::TempPart;
use crate::records::SkippedRecords;
use crate::running::chunk::ChunkOutput;
use crate::running::publish::file_name;
use crate::running::summary::slash_path;
use crate::schema::SchemaBuilder;
use crate::storage::{Durability, OutputFile, Storage};

/// Whether the dataset `manifest` describes, published in `dataset`'s directory, is the
/// one this run would make: the same settings, the very inputs and side files, every part
/// there whole. `--resume` keeps such a dataset.
pub(crate) fn still_whole(
    manifest: &Manifest,
    settings: &Settings,
    dataset: &DatasetPlan,
    storage: &dyn Storage,
) -> bool {
    &manifest.settings == settings
        && same_inputs(manifest, dataset)
        && same_side_files(manifest, dataset)
        && manifest.parts_complete_in(storage, &dataset.output_dir)
}

/// Whether a manifest lists the files that come with `dataset` as they are now: same names,
/// same sizes (none when side files are not carried).
fn same_side_files(manifest: &Manifest, dataset: &DatasetPlan) -> bool {
    if !manifest.settings.side_files {
        return manifest.side_files.is_empty();
    }
    manifest.side_files.len() == dataset.side_files.len()
        && manifest
            .side_files
            .iter()
            .zip(&dataset.side_files)
            .all(|(listed, side)| {
                let input_bytes = listed.input_bytes.unwrap_or(listed.bytes);
                listed.name == file_name(&side.relative) && input_bytes == side.size
            })
}

/// Whether a manifest lists the very inputs of `dataset`: same paths, same sizes, not
/// rewritten since (a manifest that does not say cannot vouch for them).
fn same_inputs(manifest: &Manifest, dataset: &DatasetPlan) -> bool {
    manifest.inputs.len() == dataset.inputs.len()
        && manifest
            .inputs
            .iter()
            .zip(&dataset.inputs)
            .all(|(listed, input)| {
                listed.path == slash_path(&input.relative)
                    && listed.bytes == input.size
                    && listed.changed == input.changed
            })
}

/// The line of a finished work item.
#[derive(Serialize, Deserialize)]
struct Note {
    /// The conversion it belongs to ([`run_key`]).
    key: String,
    /// The work item's number, and how many the dataset was cut into.
    chunk: usize,
    of: usize,
    /// Its parts, in order: file names in the dataset's directory, records, bytes, CRC-32C.
    /// (A line of a version before the CRC does not parse: its work item is done again.)
    parts: Vec<(String, u64, u64, Option<u32>)>,
    skipped: SkippedRecords,
    compressions: Vec<(usize, String)>,
    images: ImageConversion,
    schema: SchemaBuilder,
    rounded: u64,
}

/// What tells one conversion of a dataset from another: a digest (64-bit FNV-1a) of its
/// settings and of its inputs' paths, sizes and versions (what changes when a file is
/// rewritten at the same size: its modification time, its ETag).
pub(crate) fn run_key(settings: &Settings, dataset: &DatasetPlan) -> String {
    let inputs: Vec<(String, u64, Option<&str>)> = dataset
        .inputs
        .iter()
        .map(|input| {
            let changed = input.changed.as_deref();
            (slash_path(&input.relative), input.size, changed)
        })
        .collect();
    let described = serde_json::to_vec(&(settings, inputs)).unwrap_or_default();
    let digest = described
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{digest:016x}")
}

/// The journal of a dataset being converted: created in its directory with its first line.
#[derive(Default)]
pub(crate) struct Journal {
    /// What tells this conversion of the dataset from others ([`run_key`]).
    key: String,
    file: Option<Box<dyn OutputFile>>,
    /// Set once it could not be written: the run goes on without it.
    broken: bool,
}

impl Journal {
    /// The journal of the conversion `key` ([`run_key`]), not created yet.
    pub(crate) fn new(key: String) -> Journal {
        Journal {
            key,
            ..Journal::default()
        }
    }

    /// Appends the line of work item `chunk` of `of`, whose parts are finished, to the
    /// journal in `dir` of the dataset tagged `tag`; whether it was written. A line that
    /// cannot be written only means that a resumed run does the work item again.
    pub(crate) fn note(
        &mut self,
        storage: &dyn Storage,
        (dir, tag): (&Path, &str),
        (chunk, of): (usize, usize),
        output: &ChunkOutput,
    ) -> bool {
        if self.broken {
            return false;
        }
        let note = Note {
            key: self.key.clone(),
            chunk,
            of,
            parts: output
                .parts
                .iter()
                .filter_map(|part| {
                    let name = part.path.file_name()?.to_str()?.to_owned();
                    Some((name, part.records, part.bytes, part.crc32c))
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
        let Ok(mut line) = serde_json::to_vec(&note) else {
            return false;
        };
        line.push(b'\n');
        // In an object store nothing is seen of an object until it is whole: a line an
        // object of its own.
        if !storage.renames_cheaply() {
            let path = dir.join(layout::journal_line_name(tag, chunk));
            return storage.put_new(&path, &line).is_ok();
        }
        if self.file.is_none() {
            match storage.create(&dir.join(layout::journal_name(tag)), Durability::Unsynced) {
                Ok(file) => self.file = Some(file),
                Err(_) => self.broken = true,
            }
        }
        let Some(file) = self.file.as_mut() else {
            return false;
        };
        // Flushed line by line: a run killed next keeps what it finished.
        let written = file.write_all(&line).and_then(|()| file.flush()).is_ok();
        self.broken = !written;
        written
    }
}

/// The finished work items that earlier runs of the same conversion left in a dataset's
/// directory: by number, how many work items that run cut the dataset into and what the
/// item produced; and the names of the files they hold (journals and parts), which a resumed
/// run keeps.
#[derive(Default)]
pub(crate) struct Kept {
    pub(crate) outputs: BTreeMap<usize, (usize, ChunkOutput)>,
    pub(crate) files: Vec<String>,
}

/// Reads the journals in `dir` of the dataset tagged `tag` and keeps the work items of the
/// conversion `key` whose parts are all there, whole.
pub(crate) fn kept(storage: &dyn Storage, dir: &Path, tag: &str, key: &str) -> Kept {
    let mut kept = Kept::default();
    let Ok(names) = storage.file_names(dir) else {
        return kept;
    };
    for name in names {
        if !layout::is_journal(&name, tag) {
            continue;
        }
        let Ok(Some(bytes)) = storage.read(&dir.join(&name)) else {
            continue;
        };
        let mut used = false;
        for line in bytes.split(|byte| *byte == b'\n') {
            let Ok(note) = serde_json::from_slice::<Note>(line) else {
                continue;
            };
            let whole = note.parts.iter().all(|(part, _, bytes, _)| {
                matches!(storage.size(&dir.join(part)), Ok(Some(size)) if size == *bytes)
            });
            if note.key != key || !whole {
                continue;
            }
            used = true;
            kept.files
                .extend(note.parts.iter().map(|(part, _, _, _)| part.clone()));
            let output = ChunkOutput {
                parts: note
                    .parts
                    .into_iter()
                    .map(|(part, records, bytes, crc32c)| TempPart {
                        path: dir.join(part),
                        records,
                        bytes,
                        crc32c,
                    })
                    .collect(),
                uploads: Vec::new(),
                skipped: note.skipped,
                schema: note.schema,
                compressions: note.compressions,
                images: note.images,
                rounded: note.rounded,
                noted: true,
                kept: true,
            };
            kept.outputs.insert(note.chunk, (note.of, output));
        }
        if used {
            kept.files.push(name);
        }
    }
    kept
}
