//! Two datasets of as many files each compared file with file, in parallel, as `verify`
//! reads files: each thread reads one file of each side and compares their records in
//! turn, with nothing between the reading and the comparing. When every file holds as many
//! records as its counterpart (a dataset and its conversion one file per part, the
//! converters' default), that is the whole comparison; when one does not (a resharded
//! conversion), the records do not line up file by file and [`ordered`](super::ordered)
//! compares the datasets as streams instead.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::canonical::{Canon, RecordDifference};
use super::ordered::Input;
use super::{Difference, Place};
use crate::error::Error;
use crate::options::Checksums;
use crate::progress::{Event, ProgressFn};
use crate::records::{RecordAt, RecordReader};

/// Records between two progress reports, and between two looks at whether an earlier pair
/// of files already settled the comparison.
const REPORT_EVERY: u64 = 1024;

/// What comparing the datasets file by file found.
pub(crate) enum Paired {
    /// The first difference (none: the same records), and the records compared.
    Compared(Option<Box<Difference>>, u64),
    /// Two files of a pair hold different numbers of records.
    Uneven,
}

/// What one pair of files held.
enum Pair {
    /// As many records each, all alike.
    Same(u64),
    /// Record `index` of both files differs.
    Differs(u64, RecordDifference, RecordAt, RecordAt),
    /// One file ended first.
    Uneven,
    /// Not compared: an earlier pair settled it.
    Skipped,
}

/// Compares file `i` of `a` with file `i` of `b` for every `i`, on the current pool. The
/// two must have as many files.
///
/// # Errors
///
/// A file that cannot be read, or whose framing is damaged, before any difference.
pub(crate) fn compare(
    a: Input<'_>,
    b: Input<'_>,
    progress: ProgressFn<'_>,
) -> Result<Paired, Error> {
    // The first pair that settles the comparison (a difference, uneven files, damage).
    let settled = AtomicUsize::new(usize::MAX);
    let pairs: Vec<Result<Pair, Error>> = (0..a.dataset.files.len())
        .into_par_iter()
        .with_max_len(1)
        .map_init(
            || Canon::new(a.mapped),
            |canon, file| {
                let pair = compare_files(canon, a, b, file, &settled, progress);
                if !matches!(pair, Ok(Pair::Same(_) | Pair::Skipped)) {
                    settled.fetch_min(file, Ordering::Relaxed);
                }
                pair
            },
        )
        .collect();
    let mut first = 0u64;
    for (file, pair) in pairs.into_iter().enumerate() {
        match pair? {
            Pair::Same(records) => first += records,
            Pair::Differs(index, found, a_at, b_at) => {
                let place = |input: Input<'_>, at: RecordAt| Place {
                    path: input.dataset.files[file].0.display().to_string(),
                    offset: at.offset,
                    record: at.index,
                    byte: None,
                };
                let difference =
                    found.into_difference(first + index, place(a, a_at), place(b, b_at));
                return Ok(Paired::Compared(
                    Some(Box::new(difference)),
                    first + index + 1,
                ));
            }
            Pair::Uneven => return Ok(Paired::Uneven),
            // Only after a pair that settled it, which returned above.
            Pair::Skipped => break,
        }
    }
    Ok(Paired::Compared(None, first))
}

fn compare_files(
    canon: &mut Canon,
    a: Input<'_>,
    b: Input<'_>,
    file: usize,
    settled: &AtomicUsize,
    progress: ProgressFn<'_>,
) -> Result<Pair, Error> {
    let open = |input: Input<'_>| {
        RecordReader::open_at(
            input.storage,
            &input.dataset.files[file].0,
            input.format,
            Checksums::Verify,
            None,
            Some(progress),
        )
    };
    let (mut left, mut right) = (open(a)?, open(b)?);
    let (mut record_a, mut record_b) = (Vec::new(), Vec::new());
    let mut index = 0u64;
    loop {
        if index.is_multiple_of(REPORT_EVERY) && index > 0 {
            progress(Event::Progress {
                bytes: 0,
                records: REPORT_EVERY,
            });
            if settled.load(Ordering::Relaxed) < file {
                return Ok(Pair::Skipped);
            }
        }
        match (left.read(&mut record_a)?, right.read(&mut record_b)?) {
            (Some(a_at), Some(b_at)) => {
                if let Some(found) = canon.compare(&record_a, a.format, &record_b, b.format) {
                    return Ok(Pair::Differs(index, found, a_at, b_at));
                }
            }
            (None, None) => return Ok(Pair::Same(index)),
            _ => return Ok(Pair::Uneven),
        }
        index += 1;
    }
}
