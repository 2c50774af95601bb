//! Datasets bound for one output directory: which may share it (the splits of a TFDS
//! dataset, the families of a folder going back to it) and which clash.

use std::collections::HashMap;
use std::path::PathBuf;

use super::dataset::DatasetPlan;
use crate::error::{Error, ErrorKind};
use crate::options::Direction;

/// Two datasets bound for one output directory would overwrite each other: both fail.
/// Only datasets going back to a folder they shared (the splits of one TFDS dataset, the
/// shard families of one folder) share one, each known by its own tag, and only when the
/// side files both bring there are alike.
pub(crate) fn mark_clashes(datasets: &mut [DatasetPlan], direction: Direction) {
    let mut by_output: HashMap<PathBuf, Vec<usize>> = HashMap::new();
    let mut clashes = Vec::new();
    for (index, dataset) in datasets.iter().enumerate() {
        let sharing = by_output.entry(dataset.output_dir.clone()).or_default();
        let tag = dataset.shared_tag(direction);
        let clash = sharing.iter().find_map(|&other| {
            let other_plan = &datasets[other];
            let other_tag = other_plan.shared_tag(direction);
            let other_tfds_dataset = matches!(
                (&dataset.tfds, &other_plan.tfds),
                (Some(a), Some(b)) if a.name != b.name
            );
            if tag.is_none() || other_tag.is_none() || tag == other_tag || other_tfds_dataset {
                return Some((other, None));
            }
            differing_side_file(dataset, other_plan).map(|name| (other, Some(name)))
        });
        if let Some((other, side_file)) = clash {
            clashes.push((index, other, side_file));
        } else {
            sharing.push(index);
        }
    }
    for (a, b, side_file) in clashes {
        for (this, other) in [(a, b), (b, a)] {
            let other = datasets[other].source.clone();
            let dataset = &mut datasets[this];
            if dataset.problem.is_none() {
                let kind = match &side_file {
                    Some(name) => ErrorKind::SideFileClash {
                        name: name.clone(),
                        other,
                    },
                    None => ErrorKind::OutputClash { other },
                };
                dataset.problem = Some(Error::new(kind).in_file(&dataset.output_dir));
            }
        }
    }
}

/// The first side file two datasets bring to one folder under one name but at different
/// sizes: not copies of one file.
fn differing_side_file(a: &DatasetPlan, b: &DatasetPlan) -> Option<String> {
    a.side_files.iter().find_map(|mine| {
        let name = mine.relative.file_name()?;
        b.side_files
            .iter()
            .any(|theirs| theirs.relative.file_name() == Some(name) && theirs.size != mine.size)
            .then(|| name.to_string_lossy().into_owned())
    })
}
