//! `diff`: whether two datasets hold the same records, each a TFRecord or OFRecord file or
//! tree, local or in a store, record by record as the default mapping relates them
//! ([`canonical`]). Each side is cut into datasets as the converters cut it ([`sides`]),
//! so that a dataset and its conversion pair up by name; each pair is compared in order,
//! file with file when the files line up ([`paired`]) and else streaming ([`ordered`]), or
//! as multisets of record digests ([`unordered`]). Given the mapping a conversion was asked
//! for, side A's records go through it before they are compared.

mod canonical;
mod ordered;
mod paired;
mod sides;
mod unordered;

use std::path::Path;
use std::time::Instant;

use ofconvert_bridge::{MappingSpec, Transcoder};
use serde::Serialize;

use crate::error::{Error, ErrorKind};
use crate::naming::names::Format;
use crate::progress::{Event, ProgressFn};

use ordered::Input;

/// What to compare and how.
#[derive(Clone, Debug, Default)]
pub struct DiffOptions {
    /// The format of side A's files, instead of telling it from them.
    pub format_a: Option<Format>,
    /// The format of side B's files.
    pub format_b: Option<Format>,
    /// Compare the records of each dataset as multisets, whatever their order.
    pub unordered: bool,
    /// Threads comparing (0: one per core); as many more read.
    pub jobs: usize,
    /// The mapping side A's records go through before they are compared: the one the
    /// conversion of A into B was asked for (`tf2of --preset imagenet`, `--rename`, ...), as
    /// the front ends build it from those flags. None: the default mapping alone.
    pub mapping: Option<MappingSpec>,
}

/// Where a record is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Place {
    /// Its file.
    pub path: String,
    /// The byte offset of its start (in the decompressed stream of a compressed file).
    pub offset: u64,
    /// Its 0-based number in the file.
    pub record: u64,
    /// The offset in the record (its payload, from its first byte after the framing) of
    /// the first byte that differs from the other side's record, when the difference is
    /// one of values that this side's bytes locate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byte: Option<u64>,
}

/// The first difference between two sides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// The dataset it is in: its name on side A (or B, when A has none of that name).
    pub dataset: String,
    /// The record's 0-based number in the dataset, when it is about one.
    pub record: Option<u64>,
    /// The feature, when it is about one.
    pub feature: Option<String>,
    /// What differs, in words.
    pub what: String,
    /// The values on side A, cut short (kind and values).
    pub a: Option<String>,
    /// The values on side B.
    pub b: Option<String>,
    /// Where the record is on side A.
    pub a_place: Option<Place>,
    /// Where it is on side B.
    pub b_place: Option<Place>,
}

/// What `diff` found.
#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    /// Side A as given.
    pub a: String,
    /// Side B as given.
    pub b: String,
    /// The format of A's files.
    pub a_format: Format,
    /// The format of B's files.
    pub b_format: Format,
    /// What A's files are, in words: `tfrecord`, `array_record` or `ofrecord`.
    pub a_kind: &'static str,
    /// What B's files are, in words.
    pub b_kind: &'static str,
    /// Whether the records were compared as multisets.
    pub unordered: bool,
    /// Whether A's records went through a mapping ([`DiffOptions::mapping`]) first.
    pub mapped: bool,
    /// The datasets compared (pairs found on both sides, up to the first difference).
    pub datasets: usize,
    /// The records of A compared.
    pub records: u64,
    /// The first difference; none when both hold the same records.
    pub difference: Option<Difference>,
    /// Wall time in seconds.
    pub seconds: f64,
}

impl DiffReport {
    /// Whether both sides hold the same records.
    pub fn same(&self) -> bool {
        self.difference.is_none()
    }

    /// The report as `diff --json` prints it and the Python package returns it: its fields,
    /// with [`same`](DiffReport::same) under `same`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        value["same"] = serde_json::json!(self.same());
        value
    }
}

/// Compares the records of `a` and `b` (each a record file or a tree of them, a local path
/// or a URL): the datasets of each side pair up by name (the names `tf2of` gives them; a
/// side that is one dataset pairs with the other's one dataset whatever their names), and
/// each pair is compared record by record in order, or as multisets with
/// [`DiffOptions::unordered`]. An Example and an OFRecord are equal when they carry the
/// same features with the same values, as the default mapping relates them. Stops at the
/// first difference, which the report names. With [`DiffOptions::mapping`], each record of
/// A is first mapped as the conversion of A would map it, so that a conversion under a
/// mapping compares equal to its source. Bytes and records read are reported to
/// `progress`.
///
/// # Errors
///
/// When the sides cannot be compared: a path missing ([`Error::is_usage`]), a mapping that
/// contradicts itself, a tree holding both formats, no record files, a file that cannot be
/// read or whose framing is damaged.
pub fn diff(
    a: &Path,
    b: &Path,
    options: &DiffOptions,
    progress: ProgressFn<'_>,
) -> Result<DiffReport, Error> {
    let started = Instant::now();
    let mapped = match &options.mapping {
        Some(spec) => Some(
            Transcoder::new(spec.clone())
                .map_err(|err| Error::new(ErrorKind::InvalidMapping(err)))?,
        ),
        None => None,
    };
    let side_a = sides::side(a, options.format_a)?;
    let side_b = sides::side(b, options.format_b)?;
    let jobs = match options.jobs {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    let pairs = pair(&side_a.datasets, &side_b.datasets);
    progress(Event::Started {
        datasets: pairs.len(),
        files: pairs
            .iter()
            .flat_map(|(x, y)| [x, y])
            .flatten()
            .map(|dataset| dataset.files.len())
            .sum(),
        bytes: pairs
            .iter()
            .flat_map(|(x, y)| [x, y])
            .flatten()
            .map(|dataset| dataset.bytes())
            .sum(),
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|err| Error::new(ErrorKind::Io(std::io::Error::other(err))))?;
    let mut report = DiffReport {
        a: a.display().to_string(),
        b: b.display().to_string(),
        a_format: side_a.format,
        b_format: side_b.format,
        a_kind: side_a.kind(),
        b_kind: side_b.kind(),
        unordered: options.unordered,
        mapped: mapped.is_some(),
        datasets: 0,
        records: 0,
        difference: None,
        seconds: 0.0,
    };
    for (dataset_a, dataset_b) in pairs {
        let (dataset_a, dataset_b) = match (dataset_a, dataset_b) {
            (Some(x), Some(y)) => (x, y),
            (only_a, only_b) => {
                let (name, side, other) = match (only_a, only_b) {
                    (Some(only), _) => (&only.name, "A", "B"),
                    (_, Some(only)) => (&only.name, "B", "A"),
                    (None, None) => continue,
                };
                report.difference = Some(Difference {
                    dataset: name.clone(),
                    record: None,
                    feature: None,
                    what: format!("dataset only in {side}: {other} has none of that name"),
                    a: None,
                    b: None,
                    a_place: None,
                    b_place: None,
                });
                break;
            }
        };
        report.datasets += 1;
        let input_a = Input {
            storage: &*side_a.storage,
            format: side_a.format,
            dataset: dataset_a,
            mapped: mapped.as_ref(),
        };
        let input_b = Input {
            storage: &*side_b.storage,
            format: side_b.format,
            dataset: dataset_b,
            mapped: None,
        };
        let lined_up = dataset_a.files.len() == dataset_b.files.len() && dataset_a.files.len() > 1;
        let (difference, records) = if options.unordered {
            pool.install(|| unordered::compare(input_a, input_b, progress))?
        } else if lined_up {
            match pool.install(|| paired::compare(input_a, input_b, progress))? {
                paired::Paired::Compared(difference, records) => (difference.map(|d| *d), records),
                paired::Paired::Uneven => ordered::compare(input_a, input_b, jobs, progress)?,
            }
        } else {
            ordered::compare(input_a, input_b, jobs, progress)?
        };
        report.records += records;
        if let Some(mut difference) = difference {
            difference.dataset = dataset_a.name.clone();
            report.difference = Some(difference);
            break;
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

type Pair<'a> = (Option<&'a sides::Dataset>, Option<&'a sides::Dataset>);

/// The datasets of both sides paired by name, in name order; one dataset each pair
/// whatever their names.
fn pair<'a>(a: &'a [sides::Dataset], b: &'a [sides::Dataset]) -> Vec<Pair<'a>> {
    if let ([x], [y]) = (a, b) {
        return vec![(Some(x), Some(y))];
    }
    let mut pairs = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.key == y.key => {
                pairs.push((Some(x), Some(y)));
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.key < y.key => {
                pairs.push((Some(x), None));
                i += 1;
            }
            (Some(x), None) => {
                pairs.push((Some(x), None));
                i += 1;
            }
            (_, y) => {
                pairs.push((None, y));
                j += 1;
            }
        }
    }
    pairs
}
