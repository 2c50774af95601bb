//! The files of a tree outside every dataset's folder (a README and a licence at its top, a
//! folder of notes): each folder of them becomes a dataset of no records, whose files travel
//! as side files do, to the same place in the output.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::dataset::{DatasetPlan, InputFile, SkippedFile};

/// The dataset of no records that carries `files`, the files of the folder `relative_dir`
/// of the input, to the same folder of the output; `name` as datasets are named.
pub(crate) fn files_only(
    name: String,
    relative_dir: &Path,
    output_dir: PathBuf,
    files: Vec<InputFile>,
) -> DatasetPlan {
    DatasetPlan {
        name,
        source: relative_dir.to_path_buf(),
        output_dir,
        inputs: Vec::new(),
        warnings: Vec::new(),
        problem: None,
        tfds: None,
        side_files: files,
        class_names: Default::default(),
        subfolder: None,
        restore: None,
        compression: Default::default(),
    }
}

/// Keeps the datasets of files only that are worth writing: none in a tree of no records
/// (which is no dataset to convert: its files are skipped for `reason`), none carrying
/// nothing, none bound for the folder of a dataset of records (whose own files they would be
/// taken for).
pub(crate) fn settle(
    datasets: &mut Vec<DatasetPlan>,
    skipped: &mut Vec<SkippedFile>,
    reason: &str,
) {
    let with_records: HashMap<PathBuf, String> = datasets
        .iter()
        .filter(|dataset| !dataset.files_only())
        .map(|dataset| (dataset.output_dir.clone(), dataset.name.clone()))
        .collect();
    let mut kept = Vec::with_capacity(datasets.len());
    for dataset in datasets.drain(..) {
        if !dataset.files_only() {
            kept.push(dataset);
            continue;
        }
        let why = match with_records.get(&dataset.output_dir) {
            _ if with_records.is_empty() => reason.to_owned(),
            Some(name) => format!("not carried: it would land in the folder of dataset {name}"),
            None => {
                if !dataset.side_files.is_empty() {
                    kept.push(dataset);
                }
                continue;
            }
        };
        skipped.extend(dataset.side_files.iter().map(|file| SkippedFile {
            path: file.path.display().to_string(),
            reason: why.clone(),
        }));
    }
    *datasets = kept;
}
