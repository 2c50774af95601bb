//! What a conversion reports when it ends: per dataset, and for the whole run.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{error_chain, Error, ErrorKind};
use crate::manifest::Manifest;
use crate::options::{is_corrupt_payload, Direction};
use crate::planning::plan::{DatasetPlan, SkippedFile};
use crate::progress::DatasetStatus;
use crate::records::is_damage;
use crate::running::chunk::ChunkOutput;

/// What a conversion did.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Which way it converted.
    pub direction: Direction,
    /// The input root.
    pub input: String,
    /// The output root.
    pub output: String,
    /// Every dataset found, in walk order.
    pub datasets: Vec<DatasetSummary>,
    /// Files of the input that were not converted, and why.
    pub skipped_files: Vec<SkippedFile>,
    /// Files and directories of the input that could not be read: what they hold is
    /// missing from the output.
    pub unreadable: Vec<SkippedFile>,
    /// Records in the datasets converted or kept.
    pub records: u64,
    /// Size of the input files converted by this run (not what an earlier run read for the
    /// parts a resumed run kept).
    pub input_bytes: u64,
    /// Size of the parts written by this run (not those a resumed run kept).
    pub output_bytes: u64,
    /// The parts of converted datasets that a resumed run kept from an earlier run rather
    /// than make again.
    pub kept_parts: usize,
    /// Their records.
    pub kept_records: u64,
    /// The files that came with the records (every other file of their folders) this run
    /// copied beside the parts; a file the datasets sharing a folder all bring counts once.
    pub side_files: usize,
    /// How many datasets failed.
    pub failed: usize,
    /// Whether the run was interrupted: some datasets may not have been converted.
    pub interrupted: bool,
    /// The TFDS metadata files (`dataset_info.json`, `features.json`) written beside the
    /// splits of TFDS datasets (of2tf).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tfds_metadata: Vec<String>,
    /// Wall time of the conversion.
    pub seconds: f64,
}

impl Summary {
    /// What the run finished of the datasets it was interrupted in, all together: the parts
    /// and records kept for `--resume`.
    pub fn kept_for_resume(&self) -> Finished {
        self.datasets
            .iter()
            .filter(|dataset| dataset.status == DatasetStatus::Interrupted)
            .filter_map(|dataset| dataset.finished)
            .fold(Finished::default(), |all, finished| Finished {
                parts: all.parts + finished.parts,
                records: all.records + finished.records,
            })
    }

    /// Every warning of the run, `DATASET: what`: what would abort OneFlow (a feature
    /// missing from some records, a kind that varies), shards missing from a family.
    pub fn warnings(&self) -> Vec<String> {
        self.datasets
            .iter()
            .filter_map(|dataset| Some((&dataset.name, dataset.manifest.as_ref()?)))
            .flat_map(|(name, manifest)| {
                manifest
                    .warnings
                    .iter()
                    .map(move |warning| format!("{name}: {warning}"))
            })
            .collect()
    }

    /// The summary as `--json` prints it and the Python package returns it: its fields,
    /// with [`warnings`](Summary::warnings) gathered under `warnings`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        value["warnings"] = serde_json::json!(self.warnings());
        value
    }

    /// The summary of a run that ended with `datasets`, started at `started`: records of
    /// every dataset converted or kept, bytes of those converted by this run. Nothing
    /// skipped or unreadable, not interrupted, no TFDS metadata: the caller adds those.
    pub(crate) fn new(
        direction: Direction,
        input: String,
        output: String,
        datasets: Vec<DatasetSummary>,
        started: std::time::Instant,
    ) -> Summary {
        let converted = || {
            datasets
                .iter()
                .filter(|d| d.status == DatasetStatus::Converted)
                .filter_map(|d| d.manifest.as_ref())
        };
        let resumed = || {
            datasets
                .iter()
                .filter(|d| d.status == DatasetStatus::Converted)
                .filter_map(|d| d.resumed.as_ref())
        };
        Summary {
            direction,
            input,
            output,
            records: datasets
                .iter()
                .filter(|d| d.status != DatasetStatus::Failed)
                .filter_map(|d| d.manifest.as_ref())
                .map(|m| m.records)
                .sum(),
            input_bytes: converted()
                .flat_map(|m| &m.inputs)
                .map(|input| input.bytes)
                .sum::<u64>()
                .saturating_sub(resumed().map(|r| r.input_bytes).sum()),
            output_bytes: converted()
                .flat_map(|m| &m.parts)
                .map(|part| part.bytes)
                .sum::<u64>()
                .saturating_sub(resumed().map(|r| r.bytes).sum()),
            kept_parts: resumed().map(|r| r.parts.len()).sum(),
            kept_records: resumed().map(|r| r.records).sum(),
            side_files: datasets
                .iter()
                .filter(|d| d.status == DatasetStatus::Converted)
                .filter_map(|d| Some((&d.output_dir, &d.manifest.as_ref()?.side_files)))
                .flat_map(|(dir, sides)| sides.iter().map(move |side| (dir, &side.name)))
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            failed: datasets
                .iter()
                .filter(|d| d.status == DatasetStatus::Failed)
                .count(),
            interrupted: false,
            skipped_files: Vec::new(),
            unreadable: Vec::new(),
            datasets,
            tfds_metadata: Vec::new(),
            seconds: started.elapsed().as_secs_f64(),
        }
    }
}

/// What happened to one dataset.
#[derive(Debug, Serialize)]
pub struct DatasetSummary {
    /// Its name: its directory relative to the root, `/`-separated; the input's own name
    /// (the directory's, or the file's) for a dataset at the root.
    pub name: String,
    /// The input directory relative to the input root.
    pub source: String,
    /// The output directory.
    pub output_dir: String,
    /// How it ended.
    pub status: DatasetStatus,
    /// Why it failed: `path: offset N (record #I): what`, with the causes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What kind of failure it was, when it failed: what the hint that fixes it goes by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<FailureKind>,
    /// Where it failed, when the error says: for callers that want the place as values
    /// rather than inside the message (the Python bindings' exceptions).
    #[serde(skip)]
    pub error_at: Option<ErrorPlace>,
    /// Whether it holds no records, only the files of a folder outside every dataset's
    /// (the files at the top of a tree), carried to the same place.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub files_only: bool,
    /// The manifest written (or found, when kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Manifest>,
    /// Whether the dataset goes back to a TFDS folder, which gets its metadata once all its
    /// splits are done.
    #[serde(skip)]
    pub(crate) tfds: bool,
    /// Of a dataset the run was interrupted in: the parts it finished, and their records,
    /// which a resumed run keeps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished: Option<Finished>,
    /// Of a dataset that failed: whether the dataset published in its directory before is
    /// there still, as it was.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub previous_kept: bool,
    /// Of a dataset converted from where an earlier run of the same conversion stopped
    /// (`--resume`): what it kept of that run's work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed: Option<Resumed>,
    /// Of a dataset that failed while it replaced the one published in its directory
    /// before, and could not undo that either: what is left there, in words, and what puts
    /// it right. `None`: nothing of the failed run is left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left: Option<String>,
}

/// What a converted dataset took from an earlier run of the same conversion (`--resume`):
/// the parts that run finished, which this one kept rather than make again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Resumed {
    /// The parts kept, by name.
    pub parts: Vec<String>,
    /// Their records.
    pub records: u64,
    /// Their bytes, which this run did not write.
    pub bytes: u64,
    /// The input bytes they were made of, which this run did not read.
    pub input_bytes: u64,
    /// The inputs the earlier run read whole for them, by path.
    pub inputs: Vec<String>,
}

impl Resumed {
    /// What `manifest`'s dataset kept of an earlier run: `kept` says, part by part in the
    /// order of the parts holding records, which that run made; `input_bytes` and `inputs`
    /// are what they were made of. `None` when it kept nothing.
    pub(crate) fn of(
        manifest: &Manifest,
        kept: &[bool],
        input_bytes: u64,
        inputs: Vec<String>,
    ) -> Option<Resumed> {
        // Files given back empty have no part of their own.
        let parts = manifest.parts.iter().filter(|part| part.bytes > 0);
        let kept: Vec<&crate::manifest::ManifestPart> = parts
            .zip(kept)
            .filter(|(_, kept)| **kept)
            .map(|(part, _)| part)
            .collect();
        if kept.is_empty() {
            return None;
        }
        Some(Resumed {
            parts: kept.iter().map(|part| part.name.clone()).collect(),
            records: kept.iter().map(|part| part.records).sum(),
            bytes: kept.iter().map(|part| part.bytes).sum(),
            input_bytes,
            inputs,
        })
    }
}

/// What an interrupted run finished of a dataset, kept for `--resume`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Finished {
    /// Parts written whole.
    pub parts: usize,
    /// Records in them.
    pub records: u64,
}

/// What kind of failure failed a dataset, as far as an option may change it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// Damaged input: a record whose framing or checksum is wrong, a file cut short, a
    /// payload that does not parse. Salvaging ([`OnCorrupt::Skip`](crate::OnCorrupt::Skip))
    /// converts the rest.
    Damaged,
    /// A double that float cannot hold exactly, without lossy rounding.
    InexactDouble,
    /// An Example without features, which OneFlow cannot read
    /// ([`OnEmpty::Skip`](crate::OnEmpty::Skip) leaves such records out).
    EmptyRecord,
    /// Anything else: an unreadable or unwritable file, a rule that matches nothing, ...
    Other,
}

impl FailureKind {
    /// The kind of `err`.
    pub(crate) fn of(err: &Error) -> FailureKind {
        use ofconvert_bridge::ErrorKind as Mapping;
        match err.kind() {
            _ if is_damage(err) => FailureKind::Damaged,
            ErrorKind::Mapping(mapping) => match mapping.kind() {
                kind if is_corrupt_payload(kind) => FailureKind::Damaged,
                Mapping::InexactDouble { .. } => FailureKind::InexactDouble,
                Mapping::EmptyRecord => FailureKind::EmptyRecord,
                _ => FailureKind::Other,
            },
            _ => FailureKind::Other,
        }
    }
}

/// The file and position an error names, each when known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorPlace {
    /// The file.
    pub path: Option<PathBuf>,
    /// The byte offset in it.
    pub offset: Option<u64>,
    /// The 0-based record index.
    pub record: Option<u64>,
}

impl DatasetSummary {
    /// A dataset converted (or kept) with `manifest`.
    pub(crate) fn done(
        dataset: &DatasetPlan,
        status: DatasetStatus,
        manifest: Manifest,
    ) -> DatasetSummary {
        DatasetSummary {
            status,
            manifest: Some(manifest),
            ..DatasetSummary::of(dataset, status)
        }
    }

    /// A dataset that failed with `err`.
    pub(crate) fn failed(dataset: &DatasetPlan, err: &Error) -> DatasetSummary {
        DatasetSummary {
            error: Some(error_chain(err)),
            error_kind: Some(FailureKind::of(err)),
            error_at: Some(ErrorPlace {
                path: err.path().map(Path::to_path_buf),
                offset: err.offset(),
                record: err.record(),
            }),
            ..DatasetSummary::of(dataset, DatasetStatus::Failed)
        }
    }

    /// A dataset the run stopped before it was done; nothing of it was published, and the
    /// work items in `finished` are kept for a resumed run.
    pub(crate) fn interrupted(dataset: &DatasetPlan, finished: &[ChunkOutput]) -> DatasetSummary {
        let parts = finished.iter().flat_map(|output| &output.parts);
        DatasetSummary {
            finished: Some(Finished {
                parts: parts.clone().count(),
                records: parts.map(|part| part.records).sum(),
            }),
            ..DatasetSummary::of(dataset, DatasetStatus::Interrupted)
        }
    }

    fn of(dataset: &DatasetPlan, status: DatasetStatus) -> DatasetSummary {
        DatasetSummary {
            name: dataset.name.clone(),
            source: slash_path(&dataset.source),
            output_dir: dataset.output_dir.display().to_string(),
            status,
            error: None,
            error_kind: None,
            error_at: None,
            files_only: dataset.files_only(),
            manifest: None,
            tfds: dataset.tfds.is_some(),
            finished: None,
            previous_kept: false,
            resumed: None,
            left: None,
        }
    }
}

/// A relative path with `/` separators whatever the platform, as manifests record them.
pub(crate) fn slash_path(path: &Path) -> String {
    path.components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use crate::{convert, plan, Direction, Options};

    #[test]
    fn a_failed_dataset_keeps_the_place_of_its_error() {
        let input = tempfile::tempdir().unwrap();
        let output = tempfile::tempdir().unwrap();
        let example =
            ofconvert_bridge::tf::example([("label", ofconvert_bridge::tf::int64_feature([7]))]);
        let mut payload = Vec::new();
        ofconvert_bridge::encode_example(&example, &mut payload);
        let mut writer = ofconvert_tfrecord::Writer::new(Vec::new());
        writer.write_record(&payload).unwrap();
        writer.write_record(&payload).unwrap();
        let mut bytes = writer.finish().unwrap();
        // The second record's first data byte flipped: a data checksum mismatch there.
        let second = 12 + payload.len() + 4;
        bytes[second + 12] ^= 0xff;
        std::fs::write(input.path().join("train.tfrecord"), &bytes).unwrap();

        let options = Options::new(Direction::TfToOf);
        let plan = plan(input.path(), &output.path().join("of"), &options).unwrap();
        let summary = convert(plan, &options, &|_| {}).unwrap();
        assert_eq!(summary.failed, 1);
        let place = summary.datasets[0].error_at.clone().unwrap();
        let path = place.path.unwrap();
        assert_eq!(path.file_name().unwrap(), "train.tfrecord");
        assert_eq!(place.record, Some(1));
        assert_eq!(place.offset, Some((second + 12) as u64));
    }
}
