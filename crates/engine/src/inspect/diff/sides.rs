//! One side of a comparison: a record file, or a tree of them, local or in a store, cut
//! into datasets as the converters cut it (TFRecord shard families, OneFlow part folders),
//! so that a dataset and its conversion pair up by name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, ErrorKind};
use crate::naming::layout;
use crate::naming::names::{self, part_number, Format};
use crate::options::{Direction, Options};
use crate::planning::group::{group_of, group_tf, walk};
use crate::records::detect::{self, Head};
use crate::running::summary::slash_path;
use crate::storage::{object, Storage};

/// What one side holds.
pub(crate) struct Side {
    pub(crate) format: Format,
    pub(crate) datasets: Vec<Dataset>,
    /// Where its files are read.
    pub(crate) storage: Arc<dyn Storage>,
}

impl Side {
    /// What its files are, in words: `ofrecord`, `tfrecord`, or `array_record` or `parquet`
    /// when its first file is an ArrayRecord or Parquet file (read as TFRecords are).
    pub(crate) fn kind(&self) -> &'static str {
        if self.format == Format::Of {
            return "ofrecord";
        }
        let first = self
            .datasets
            .iter()
            .find_map(|dataset| dataset.files.first());
        let head = first.and_then(|(path, _)| {
            let opened = self.storage.open(path, 0).ok()?;
            Some(detect::sniff_head(opened.reader).ok()?.0)
        });
        match head {
            Some(Head::ArrayRecord) => "array_record",
            Some(Head::Parquet) => "parquet",
            _ => "tfrecord",
        }
    }
}

/// A dataset of one side: its record files in order.
pub(crate) struct Dataset {
    /// What the converters call it (its directory relative to the root, the tree's own
    /// name at the root); for a single file, the file's name.
    pub(crate) name: String,
    /// What it pairs up by: its directory relative to the root (`.` for the root, whatever
    /// the two trees are called), as `tf2of` places it.
    pub(crate) key: String,
    pub(crate) files: Vec<(PathBuf, u64)>,
}

impl Dataset {
    pub(crate) fn bytes(&self) -> u64 {
        self.files.iter().map(|(_, size)| size).sum()
    }
}

/// The datasets under `path` (a file or a tree, a local path or a URL), all of `format` or
/// of the one format its files are of.
///
/// # Errors
///
/// A path that does not exist ([`ErrorKind::InputMissing`]), a tree of both formats
/// ([`ErrorKind::MixedFormats`]), one without record files, a file of no known format, a
/// listing or a dataset that cannot be read (a gap in OneFlow part numbers).
pub(crate) fn side(path: &Path, format: Option<Format>) -> Result<Side, Error> {
    let (storage, root) = object::storage_for(path).map_err(|err| Error::io(path, err))?;
    let found = walk(&*storage, &root).map_err(|err| match err.kind() {
        ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            Error::new(ErrorKind::InputMissing).in_file(path)
        }
        _ => err,
    })?;
    if let Some(unreadable) = found.unreadable().first() {
        let err = std::io::Error::other(unreadable.reason.clone());
        return Err(Error::io(Path::new(&unreadable.path), err));
    }
    if found.single_file() {
        let Some(file) = found.files().next() else {
            return Err(Error::new(ErrorKind::InputMissing).in_file(path));
        };
        let format = match format {
            Some(format) => format,
            None => detect::detect_format_in(&*storage, &file.path, file.size)
                .map_err(|err| Error::io(path, err))?
                .ok_or_else(|| Error::new(ErrorKind::UnknownFormat).in_file(path))?,
        };
        let datasets = vec![Dataset {
            name: file.name.clone(),
            key: file.name.clone(),
            files: vec![(file.path.clone(), file.size)],
        }];
        return Ok(Side {
            format,
            datasets,
            storage,
        });
    }
    let format = match format {
        Some(format) => format,
        None => format_of_tree(&*storage, path, found.files())?,
    };
    let (planned, _, unreadable) = match format {
        Format::Tf => group_tf(&*storage, &root, &root, found, None),
        Format::Of => {
            let mut options = Options::new(Direction::OfToTf);
            options.side_files = false;
            group_of(&*storage, &root, &root, found, &options)
        }
    };
    if let Some(unreadable) = unreadable.first() {
        let err = std::io::Error::other(unreadable.reason.clone());
        return Err(Error::io(Path::new(&unreadable.path), err));
    }
    let mut datasets = Vec::new();
    for dataset in planned {
        if let Some(problem) = dataset.problem {
            return Err(problem);
        }
        // The files at the top of a tree, outside every dataset, hold no record; carried
        // over by a conversion, they are a "dataset" of the output alone.
        if dataset.files_only() {
            continue;
        }
        let relative = match format {
            Format::Tf => dataset
                .output_dir
                .strip_prefix(&root)
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            Format::Of => dataset.source.clone(),
        };
        let key = slash_path(&relative);
        datasets.push(Dataset {
            key: if key.is_empty() { ".".to_owned() } else { key },
            name: dataset.name,
            files: dataset
                .inputs
                .into_iter()
                .map(|input| (input.path, input.size))
                .collect(),
        });
    }
    if datasets.is_empty() {
        return Err(Error::new(ErrorKind::NoRecordFiles {
            dir: path.to_path_buf(),
            unfinished: false,
        }));
    }
    datasets.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(Side {
        format,
        datasets,
        storage,
    })
}

/// The format of a tree's record files: told by their names (TFRecord names, OneFlow's
/// `part-N`), else by the content of the first file that has one.
fn format_of_tree<'a>(
    storage: &dyn Storage,
    path: &Path,
    files: impl Iterator<Item = &'a crate::storage::Listed>,
) -> Result<Format, Error> {
    let (mut tf, mut of, mut others) = (None, None, Vec::new());
    for file in files {
        if layout::is_passed_over(&file.name) || names::is_known_metadata(&file.name) {
            continue;
        }
        if names::has_record_name(&file.name) {
            tf.get_or_insert_with(|| file.path.clone());
        } else if part_number(&file.name, layout::DEFAULT_PART_PREFIX).is_some() {
            of.get_or_insert_with(|| file.path.clone());
        } else {
            others.push(file);
        }
    }
    match (tf, of) {
        (Some(tf), Some(of)) => Err(Error::new(ErrorKind::MixedFormats { tf, of }).in_file(path)),
        (Some(_), None) => Ok(Format::Tf),
        (None, Some(_)) => Ok(Format::Of),
        (None, None) => {
            for file in others {
                if file.size == 0 {
                    continue;
                }
                let found = detect::detect_format_in(storage, &file.path, file.size)
                    .map_err(|err| Error::io(&file.path, err))?;
                if let Some(format) = found {
                    return Ok(format);
                }
            }
            Err(Error::new(ErrorKind::NoRecordFiles {
                dir: path.to_path_buf(),
                unfinished: false,
            }))
        }
    }
}
