//! The plan of a sharded run as it is stored in `OUT/.ofconvert/plan.json`: the datasets,
//! their inputs as the plan saw them (so that a late worker finds out if they changed),
//! the settings, and every work item with the worker it is given to.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use ofconvert_tfrecord::Compression;
use serde::{Deserialize, Serialize};

use crate::error::{error_chain, Error, ErrorKind};
use crate::front_end::FrontEnd;
use crate::naming::layout::CONTROL_DIR;
use crate::naming::names::Format;
use crate::options::{Direction, Options, Settings};
use crate::planning::group::tf_file_stem;
use crate::planning::plan::{DatasetPlan, Plan, Restore};
use crate::records::RecordAt;
use crate::running::chunk::{plan_chunks, Chunk, Segment};
use crate::running::summary::slash_path;
use crate::sharded::share::Shard;
use crate::storage::Storage;
use crate::tfds::TfdsOrigin;

pub(crate) const PLAN_NAME: &str = "plan.json";
const PLAN_FORMAT: u32 = 1;

/// The plan every worker of a sharded run follows.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StoredPlan {
    pub(crate) format: u32,
    pub(crate) workers: usize,
    /// The input root, as the first worker named it.
    pub(crate) input: String,
    pub(crate) settings: Settings,
    /// Whether the mapping may round floats: commit's manifests then count what it rounded,
    /// as a single run's do.
    #[serde(default)]
    pub(crate) lossy: bool,
    /// Whether the run replaces datasets published in the output before
    /// ([`Options::replacing`]): every worker must say so, or none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) overwrite: bool,
    pub(crate) datasets: Vec<StoredDataset>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StoredDataset {
    pub(crate) name: String,
    pub(crate) source: String,
    /// The output directory relative to the output root (empty: the root).
    pub(crate) output: String,
    pub(crate) tf_stem: String,
    /// The TFDS dataset and split the records came from, if they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tfds: Option<TfdsOrigin>,
    pub(crate) inputs: Vec<StoredInput>,
    /// The files that come with the records, which `commit` copies beside the parts: each
    /// named by its relative path, with its place (an absolute path or a URL) in `location`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) side_files: Vec<StoredInput>,
    /// The class names of its features, where TFDS names them, under their output names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) class_names: BTreeMap<String, Vec<String>>,
    /// tf2of: the directory of its own the dataset was given among its folder's families.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) subfolder: Option<String>,
    /// of2tf: the TFRecord files given back under the names they had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) restore: Option<Restore>,
    /// of2tf: the compression of its TFRecord files, where they are not given back file by
    /// file.
    #[serde(default, with = "crate::planning::dataset::compression_name")]
    pub(crate) compression: Compression,
    pub(crate) warnings: Vec<String>,
    /// Why it cannot be converted, found while planning.
    pub(crate) problem: Option<String>,
    pub(crate) chunks: Vec<StoredChunk>,
}

/// An input file as the plan saw it: a changed size or modification time is a changed
/// input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredInput {
    pub(crate) path: String,
    pub(crate) bytes: u64,
    /// What changes when it is rewritten: for an input, as its listing says it
    /// (`Listed::changed`, which a single run's manifest and resume journal hold too); for a
    /// side file, as [`Storage::version`] does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<String>,
    /// Where a side file is read from, whatever the directory `commit` runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) location: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StoredChunk {
    pub(crate) worker: usize,
    pub(crate) bytes: u64,
    pub(crate) segments: Vec<StoredSegment>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StoredSegment {
    input: usize,
    first: u64,
    end: Option<u64>,
    /// Offset and index of a record boundary at or before `first`.
    start: Option<(u64, u64)>,
}

impl StoredPlan {
    /// The plan of a run of `workers` workers: `plan`'s datasets cut into work items as a
    /// single run cuts them, each work item given to a worker so that their input bytes are
    /// balanced.
    /// `found` describes `plan`'s datasets ([`describe`]).
    pub(crate) fn build(
        plan: &Plan,
        options: &Options,
        workers: usize,
        found: &[StoredDataset],
    ) -> StoredPlan {
        use rayon::prelude::*;

        let input_format = match plan.direction {
            Direction::TfToOf => Format::Tf,
            Direction::OfToTf => Format::Of,
        };
        let cut: Vec<Result<Vec<Chunk>, String>> = plan
            .datasets
            .par_iter()
            .enumerate()
            .map(|(index, dataset)| match &dataset.problem {
                Some(err) => Err(error_chain(err)),
                None => plan_chunks(&*plan.input_storage, options, input_format, index, dataset)
                    .map_err(|err| error_chain(&err)),
            })
            .collect();
        let mut datasets: Vec<StoredDataset> = found
            .iter()
            .zip(cut)
            .map(|(described, chunks)| {
                let mut stored = described.clone();
                match chunks {
                    Ok(chunks) => stored.chunks = chunks.iter().map(StoredChunk::from).collect(),
                    Err(problem) => stored.problem = Some(problem),
                }
                stored
            })
            .collect();
        assign(&mut datasets, workers);
        StoredPlan {
            format: PLAN_FORMAT,
            workers,
            input: plan.input.display().to_string(),
            settings: options.settings(),
            lossy: options.mapping.is_lossy(),
            overwrite: options.replacing,
            datasets,
        }
    }

    /// Whether worker `shard` with these `settings`, that found `datasets`, belongs to this
    /// plan; what differs is said in `front_end`'s words.
    pub(crate) fn check(
        &self,
        (settings, replacing): (&Settings, bool),
        shard: Shard,
        datasets: &[StoredDataset],
        front_end: FrontEnd,
    ) -> Result<(), ErrorKind> {
        if self.overwrite != replacing {
            let overwrite = front_end.switch("overwrite");
            let (planned, here) = match self.overwrite {
                true => (overwrite.clone(), format!("without {overwrite}")),
                false => (format!("without {overwrite}"), overwrite.clone()),
            };
            return Err(ErrorKind::ShardFlags {
                differs: format!("its flags differ ({planned} in the run's plan, {here} here)"),
            });
        }
        if self.workers != shard.count {
            return Err(ErrorKind::ShardFlags {
                differs: format!(
                    "it was planned for {} workers ({}), this one was given {}",
                    self.workers,
                    front_end.shard("K", &self.workers.to_string()),
                    front_end.shard(&shard.index.to_string(), &shard.count.to_string()),
                ),
            });
        }
        if &self.settings != settings {
            return Err(ErrorKind::ShardFlags {
                differs: format!(
                    "its flags differ ({})",
                    super::flags::differing(&self.settings, settings, front_end)
                ),
            });
        }
        // Datasets are told apart by where they are, not by their names: the one at the
        // root is named after the input, which workers may reach under other names.
        let places = |list: &[StoredDataset]| -> Vec<(String, String)> {
            list.iter()
                .map(|d| (d.source.clone(), d.output.clone()))
                .collect()
        };
        if places(&self.datasets) != places(datasets) {
            let names = |list: &[StoredDataset]| -> Vec<String> {
                list.iter().map(|d| d.name.clone()).collect()
            };
            return Err(ErrorKind::InputChanged {
                what: format!(
                    "datasets were {:?}, are {:?}",
                    names(&self.datasets),
                    names(datasets)
                ),
            });
        }
        for (stored, found) in self.datasets.iter().zip(datasets) {
            let changed = input_change(&stored.inputs, &found.inputs)
                .or_else(|| input_change(&stored.side_files, &found.side_files));
            if let Some(what) = changed {
                return Err(ErrorKind::InputChanged {
                    what: format!("dataset {}: {what}", stored.name),
                });
            }
        }
        Ok(())
    }

    /// Work item `index` of dataset `dataset` as [`run_chunk`] takes it.
    pub(crate) fn chunk(&self, dataset: usize, index: usize) -> Chunk {
        let chunks = &self.datasets[dataset].chunks;
        let stored = &chunks[index];
        Chunk {
            dataset,
            index,
            of: chunks.len(),
            segments: stored
                .segments
                .iter()
                .map(|segment| Segment {
                    input: segment.input,
                    first: segment.first,
                    end: segment.end,
                    start: segment
                        .start
                        .map(|(offset, index)| RecordAt { offset, index }),
                })
                .collect(),
            bytes: stored.bytes,
            records: None,
        }
    }

    /// Reads the plan stored in `output`, if there is one.
    pub(crate) fn read(storage: &dyn Storage, output: &Path) -> Result<Option<StoredPlan>, Error> {
        let path = output.join(CONTROL_DIR).join(PLAN_NAME);
        let Some(bytes) = storage.read(&path).map_err(|err| Error::io(&path, err))? else {
            return Ok(None);
        };
        let plan: StoredPlan = serde_json::from_slice(&bytes)
            .map_err(|err| Error::io(&path, io::Error::new(io::ErrorKind::InvalidData, err)))?;
        if plan.format != PLAN_FORMAT {
            let err = io::Error::new(
                io::ErrorKind::InvalidData,
                format!("plan format {} is not {PLAN_FORMAT}", plan.format),
            );
            return Err(Error::io(&path, err));
        }
        Ok(Some(plan))
    }

    /// Stores the plan in `output` unless one is there already; returns the one stored, and
    /// whether this call stored it (another worker may have been first in between).
    pub(crate) fn store(
        self,
        storage: &dyn Storage,
        output: &Path,
    ) -> Result<(StoredPlan, bool), Error> {
        let control = output.join(CONTROL_DIR);
        let path = control.join(PLAN_NAME);
        let mut bytes = serde_json::to_vec_pretty(&self).map_err(io::Error::other);
        if let Ok(bytes) = &mut bytes {
            bytes.push(b'\n');
        }
        let written = bytes.and_then(|bytes| put_if_absent(storage, &control, &bytes));
        match written {
            Ok(()) => Ok((self, true)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                let stored = StoredPlan::read(storage, output)?
                    .ok_or_else(|| Error::io(&path, io::Error::from(io::ErrorKind::NotFound)))?;
                Ok((stored, false))
            }
            Err(err) => Err(Error::io(&path, err)),
        }
    }
}

/// Writes the plan whole where none is: through a hard link on a file system (a reader
/// never sees half a plan), with the store's create-if-absent write elsewhere.
fn put_if_absent(storage: &dyn Storage, control: &Path, bytes: &[u8]) -> io::Result<()> {
    let path = control.join(PLAN_NAME);
    if !storage.renames_cheaply() {
        return storage.put_new(&path, bytes);
    }
    let temp = control.join(crate::naming::layout::staged_name(PLAN_NAME));
    std::fs::write(&temp, bytes)?;
    let linked = std::fs::File::open(&temp)
        .and_then(|file| file.sync_all())
        .and_then(|()| std::fs::hard_link(&temp, &path));
    let _ = std::fs::remove_file(&temp);
    linked?;
    storage.sync_dir(control)
}

impl From<&Chunk> for StoredChunk {
    fn from(chunk: &Chunk) -> StoredChunk {
        StoredChunk {
            worker: 0,
            bytes: chunk.bytes,
            segments: chunk
                .segments
                .iter()
                .map(|segment| StoredSegment {
                    input: segment.input,
                    first: segment.first,
                    end: segment.end,
                    start: segment.start.map(|at| (at.offset, at.index)),
                })
                .collect(),
        }
    }
}

/// Where `path` is, wherever it is read from: a URL as it is, a local path made absolute.
fn location(path: &Path) -> String {
    let path = if crate::storage::object::is_url(path) {
        path.to_path_buf()
    } else {
        std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
    };
    path.display().to_string()
}

/// A dataset as the plan stores it, without its work items. Asks the input's storage for
/// the version of every input and side file (a request each in an object store, several
/// at a time).
pub(crate) fn describe(plan: &Plan, options: &Options, dataset: &DatasetPlan) -> StoredDataset {
    use rayon::prelude::*;

    let storage = &*plan.input_storage;
    let output = dataset
        .output_dir
        .strip_prefix(&plan.output)
        .map(slash_path)
        .unwrap_or_default();
    StoredDataset {
        name: dataset.name.clone(),
        source: slash_path(&dataset.source),
        output,
        tf_stem: tf_file_stem(&plan.input, dataset),
        tfds: dataset.tfds.clone(),
        inputs: dataset
            .inputs
            .iter()
            .map(|input| StoredInput {
                path: slash_path(&input.relative),
                bytes: input.size,
                // As the listing says it, as a single run's manifest does.
                version: input.changed.clone(),
                location: None,
            })
            .collect(),
        side_files: if options.side_files {
            dataset
                .side_files
                .par_iter()
                .map(|side| StoredInput {
                    path: slash_path(&side.relative),
                    bytes: side.size,
                    version: storage.version(&side.path).ok().flatten(),
                    location: Some(location(&side.path)),
                })
                .collect()
        } else {
            Vec::new()
        },
        // Under their output names: `commit` publishes without the mapping.
        class_names: crate::running::publish::mapped_class_names(dataset, &options.mapping),
        subfolder: dataset.subfolder.clone(),
        restore: dataset.restore.clone(),
        compression: dataset.compression,
        warnings: dataset.warnings.clone(),
        problem: None,
        chunks: Vec::new(),
    }
}

/// The first difference between the inputs a plan saw and those found now.
fn input_change(stored: &[StoredInput], found: &[StoredInput]) -> Option<String> {
    for (was, is) in stored.iter().zip(found) {
        if was.path != is.path {
            return Some(format!("{} is now {}", was.path, is.path));
        }
        if was.bytes != is.bytes {
            return Some(format!(
                "{} was {} bytes, is {}",
                was.path, was.bytes, is.bytes
            ));
        }
        if was.version != is.version {
            return Some(format!("{} was modified", was.path));
        }
    }
    match stored.len().cmp(&found.len()) {
        std::cmp::Ordering::Less => Some(format!("{} is new", found[stored.len()].path)),
        std::cmp::Ordering::Greater => Some(format!("{} is gone", stored[found.len()].path)),
        std::cmp::Ordering::Equal => None,
    }
}

/// Gives every work item to a worker: the biggest first, each to the worker with the fewest
/// bytes so far (the lowest number on a tie), so that every worker derives the same split.
fn assign(datasets: &mut [StoredDataset], workers: usize) {
    let mut items: Vec<(u64, usize, usize)> = datasets
        .iter()
        .enumerate()
        .flat_map(|(d, dataset)| {
            dataset
                .chunks
                .iter()
                .enumerate()
                .map(move |(c, chunk)| (chunk.bytes, d, c))
        })
        .collect();
    items.sort_by(|a, b| b.0.cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let mut loads = vec![(0u64, 0usize); workers.max(1)];
    for (worker, load) in loads.iter_mut().enumerate() {
        load.1 = worker;
    }
    for (bytes, d, c) in items {
        let least = loads.iter_mut().min().map(|load| {
            load.0 += bytes.max(1);
            load.1
        });
        datasets[d].chunks[c].worker = least.unwrap_or(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset(chunk_bytes: &[u64]) -> StoredDataset {
        StoredDataset {
            name: "d".to_owned(),
            source: String::new(),
            output: String::new(),
            tf_stem: "d".to_owned(),
            tfds: None,
            inputs: Vec::new(),
            side_files: Vec::new(),
            class_names: BTreeMap::new(),
            subfolder: None,
            restore: None,
            compression: Compression::None,
            warnings: Vec::new(),
            problem: None,
            chunks: chunk_bytes
                .iter()
                .map(|&bytes| StoredChunk {
                    worker: usize::MAX,
                    bytes,
                    segments: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn work_items_go_biggest_first_to_the_worker_with_the_fewest_bytes() {
        let mut datasets = vec![dataset(&[3, 10, 2]), dataset(&[5, 7, 3])];
        assign(&mut datasets, 2);
        let workers = |d: &StoredDataset| d.chunks.iter().map(|c| c.worker).collect::<Vec<_>>();
        // 10 to 0; 7 to 1; 5 to 1 (7 < 10); 3 (first in plan order) to 0 (10 < 12);
        // the other 3 to 1 (12 < 13); 2 to 0 (13 < 15).
        assert_eq!(workers(&datasets[0]), vec![0, 0, 0]);
        assert_eq!(workers(&datasets[1]), vec![1, 1, 1]);
        // More workers than work items: the rest get nothing.
        let mut few = vec![dataset(&[1, 1])];
        assign(&mut few, 4);
        assert_eq!(workers(&few[0]), vec![0, 1]);
    }

    #[test]
    fn of_two_workers_storing_a_plan_only_the_first_stored_it() {
        let out = tempfile::tempdir().unwrap();
        let plan = || StoredPlan {
            format: PLAN_FORMAT,
            workers: 2,
            input: "in".to_owned(),
            settings: crate::options::Options::new(crate::options::Direction::TfToOf).settings(),
            lossy: false,
            overwrite: false,
            datasets: vec![dataset(&[1, 2])],
        };
        let storage = crate::storage::LocalFs;
        std::fs::create_dir_all(out.path().join(CONTROL_DIR)).unwrap();
        let (first, stored) = plan().store(&storage, out.path()).unwrap();
        assert!(stored);
        let (second, stored) = plan().store(&storage, out.path()).unwrap();
        assert!(
            !stored,
            "the second worker took the plan stored, it stored none"
        );
        assert_eq!(second.workers, first.workers);
    }

    #[test]
    fn an_input_that_grew_moved_or_went_is_named() {
        let input = |path: &str, bytes: u64| StoredInput {
            path: path.to_owned(),
            bytes,
            version: Some("1".to_owned()),
            location: None,
        };
        let stored = vec![input("a", 10), input("b", 20)];
        assert_eq!(
            input_change(&stored, &[input("a", 10), input("b", 20)]),
            None
        );
        assert_eq!(
            input_change(&stored, &[input("a", 10), input("b", 21)]).as_deref(),
            Some("b was 20 bytes, is 21")
        );
        assert_eq!(
            input_change(&stored, &[input("a", 10)]).as_deref(),
            Some("b is gone")
        );
        let mut touched = input("a", 10);
        touched.version = Some("2".to_owned());
        assert_eq!(
            input_change(&stored[..1], &[touched]).as_deref(),
            Some("a was modified")
        );
    }
}
