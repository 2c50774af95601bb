//! A conversion as it would run (`--dry-run`): each dataset with its inputs, where it goes
//! and the parts it would make, the records counted where the parts follow record counts;
//! nothing read beyond that and nothing written.

use serde::Serialize;

use crate::error::error_chain;
use crate::naming::names::Format;
use crate::options::{Direction, Options};
use crate::planning::plan::{Plan, SkippedFile};
use crate::running::chunk::plan_chunks;

/// One dataset as it would be converted.
#[derive(Debug, Serialize)]
pub struct DatasetPreview {
    /// Its name (its output directory relative to the output root).
    pub name: String,
    /// Where its files would go.
    pub output: String,
    /// Its input files.
    pub inputs: usize,
    /// Their bytes.
    pub input_bytes: u64,
    /// The parts (or TFRecord files) it would make; at least these many under
    /// `--max-part-bytes`, which cuts a part where it grows too big.
    pub parts: usize,
    /// Its records, when they were counted (the parts follow record counts).
    pub records: Option<u64>,
    /// The files that would travel beside its parts.
    pub side_files: usize,
    /// Whether it holds no records, only the files of a folder outside every dataset's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub files_only: bool,
    /// Why it would fail, found while planning (a rule that matches nothing, a gap in its
    /// part numbers, ...); nothing of it would be written.
    pub problem: Option<String>,
}

/// A conversion as it would run.
#[derive(Debug, Serialize)]
pub struct Preview {
    /// Which way.
    pub direction: Direction,
    /// The input root.
    pub input: String,
    /// The output root.
    pub output: String,
    /// Every dataset found, in walk order.
    pub datasets: Vec<DatasetPreview>,
    /// Files of the input that would not be converted, and why.
    pub skipped_files: Vec<SkippedFile>,
    /// Files and directories of the input that cannot be read.
    pub unreadable: Vec<SkippedFile>,
}

impl Preview {
    /// Whether the run would fail something: a dataset, or an input it cannot read.
    pub fn would_fail(&self) -> bool {
        !self.unreadable.is_empty() || self.datasets.iter().any(|d| d.problem.is_some())
    }
}

/// What converting `plan` with `options` would do. Reads no record but to count them when
/// the parts follow record counts (`--parts`, `--records-per-part`); writes nothing.
pub fn preview(plan: &Plan, options: &Options) -> Preview {
    let input_format = match plan.direction {
        Direction::TfToOf => Format::Tf,
        Direction::OfToTf => Format::Of,
    };
    let output_root = plan.output.display().to_string();
    let datasets = plan
        .datasets
        .iter()
        .enumerate()
        .map(|(index, dataset)| {
            let chunks = match &dataset.problem {
                Some(problem) => Err(error_chain(problem)),
                None => plan_chunks(&*plan.input_storage, options, input_format, index, dataset)
                    .map_err(|err| error_chain(&err)),
            };
            let records = chunks
                .as_ref()
                .ok()
                .and_then(|chunks| chunks.iter().map(|chunk| chunk.records).sum());
            DatasetPreview {
                name: dataset.name.clone(),
                output: dataset.output_dir.display().to_string(),
                inputs: dataset.inputs.len(),
                input_bytes: dataset.inputs.iter().map(|input| input.size).sum(),
                parts: chunks.as_ref().map_or(0, Vec::len),
                records,
                side_files: if options.side_files {
                    dataset.side_files.len()
                } else {
                    0
                },
                files_only: dataset.files_only(),
                problem: chunks.err(),
            }
        })
        .collect();
    Preview {
        direction: plan.direction,
        input: plan.input.display().to_string(),
        output: output_root,
        datasets,
        skipped_files: plan.skipped.clone(),
        unreadable: plan.unreadable.clone(),
    }
}
