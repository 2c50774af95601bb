//! What a conversion reports when it ends: per dataset, and for the whole run.

use serde::Serialize;

use crate::error::{error_chain, Error};
use crate::manifest::Manifest;
use crate::options::Direction;
use crate::plan::{DatasetPlan, SkippedFile};
use crate::progress::DatasetStatus;

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
    /// Size of the input files converted by this run.
    pub input_bytes: u64,
    /// Size of the parts written by this run.
    pub output_bytes: u64,
    /// How many datasets failed.
    pub failed: usize,
    /// Whether the run was interrupted: some datasets may not have been converted.
    pub interrupted: bool,
    /// Wall time of the conversion.
    pub seconds: f64,
}

/// What happened to one dataset.
#[derive(Debug, Serialize)]
pub struct DatasetSummary {
    /// The output directory relative to the output root (`.` for the root).
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
    /// The manifest written (or found, when kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Manifest>,
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
            ..DatasetSummary::of(dataset, DatasetStatus::Failed)
        }
    }

    /// A dataset the run stopped before it was done; nothing of it was published.
    pub(crate) fn interrupted(dataset: &DatasetPlan) -> DatasetSummary {
        DatasetSummary::of(dataset, DatasetStatus::Interrupted)
    }

    fn of(dataset: &DatasetPlan, status: DatasetStatus) -> DatasetSummary {
        DatasetSummary {
            name: dataset.name.clone(),
            source: slash_path(&dataset.source),
            output_dir: dataset.output_dir.display().to_string(),
            status,
            error: None,
            manifest: None,
        }
    }
}

/// A relative path with `/` separators whatever the platform, as manifests record them.
pub(crate) fn slash_path(path: &std::path::Path) -> String {
    path.components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
