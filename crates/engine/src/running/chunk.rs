//! Cutting a dataset into work items: one per input file, or runs of records balanced
//! across parts when resharding, which needs the records counted first.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::naming::names::Format;
use crate::options::{OnCorrupt, Options};
use crate::planning::plan::DatasetPlan;
use crate::recode::ImageConversion;
use crate::records::output::TempPart;
use crate::records::SkippedRecords;
use crate::records::{is_damage, RecordAt, RecordReader};
use crate::running::uploads::Upload;
use crate::schema::SchemaBuilder;
use crate::storage::Storage;

/// A position is remembered every this many records while counting, so that a work item
/// starting deep inside an uncompressed file can seek there instead of reading up to it.
const CHECKPOINT_EVERY: u64 = 4096;

/// One run of records to convert into parts: a contiguous stretch of a dataset's input.
pub(crate) struct Chunk {
    /// The dataset, by index in the run.
    pub(crate) dataset: usize,
    /// The work item's number in its dataset, which orders its parts.
    pub(crate) index: usize,
    /// How many work items the dataset has.
    pub(crate) of: usize,
    pub(crate) segments: Vec<Segment>,
    /// The input bytes it reads, estimated from record counts when it reads part of a
    /// file: what balances the work items of a sharded run across its workers.
    pub(crate) bytes: u64,
    /// Its records, when they were counted to cut the dataset (resharding).
    pub(crate) records: Option<u64>,
}

/// The records `[first, end)` of one input file (`end` `None`: to the end of the file).
pub(crate) struct Segment {
    pub(crate) input: usize,
    pub(crate) first: u64,
    pub(crate) end: Option<u64>,
    /// A known record boundary at or before `first` to seek to.
    pub(crate) start: Option<RecordAt>,
}

/// What a work item produced.
#[derive(Default)]
pub(crate) struct ChunkOutput {
    pub(crate) parts: Vec<TempPart>,
    /// Parts still being uploaded, in order after `parts`; the dataset waits for them
    /// ([`settle_uploads`](ChunkOutput::settle_uploads)) before anything else sees them.
    pub(crate) uploads: Vec<Upload>,
    pub(crate) skipped: SkippedRecords,
    pub(crate) schema: SchemaBuilder,
    /// How each input read from its start stores its records
    /// ([`RecordReader::stored_as`](crate::records::RecordReader::stored_as)), by input index.
    pub(crate) compressions: Vec<(usize, String)>,
    /// What `--images` did.
    pub(crate) images: ImageConversion,
    /// Values the mapping rounded to the nearest float, as `--lossy` allows.
    pub(crate) rounded: u64,
    /// Whether its line in the dataset's journal lets a resumed run keep its parts
    /// ([`resume`]).
    ///
    /// [`resume`]: crate::running::resume
    pub(crate) noted: bool,
    /// Whether an earlier run of the same conversion made it, and this one keeps it
    /// (`--resume`).
    pub(crate) kept: bool,
}

impl ChunkOutput {
    /// Waits for the parts being uploaded and adds them to `parts`; the first error, once
    /// every upload has ended. A part that failed is for the caller to remove, with the
    /// others.
    pub(crate) fn settle_uploads(&mut self) -> Result<(), (Error, Vec<PathBuf>)> {
        let mut failed = None;
        for upload in self.uploads.drain(..) {
            let path = upload.path().to_path_buf();
            match upload.wait() {
                Ok(part) => self.parts.push(part),
                Err(err) => {
                    let (_, paths) = failed.get_or_insert_with(|| (err, Vec::new()));
                    paths.push(path);
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }
}

/// Cuts dataset number `dataset_index` into work items: one per non-empty input file, or,
/// when resharding, runs of records found by counting them first.
pub(crate) fn plan_chunks(
    storage: &dyn Storage,
    options: &Options,
    input_format: Format,
    dataset_index: usize,
    dataset: &DatasetPlan,
) -> Result<Vec<Chunk>, Error> {
    let sizing = options.sizing;
    let inputs = &dataset.inputs;
    if !sizing.reshards() {
        let non_empty: Vec<usize> = inputs
            .iter()
            .enumerate()
            .filter(|(_, input)| input.size > 0)
            .map(|(input, _)| input)
            .collect();
        let of = non_empty.len();
        return Ok(non_empty
            .into_iter()
            .enumerate()
            .map(|(index, input)| Chunk {
                dataset: dataset_index,
                index,
                of,
                segments: vec![Segment {
                    input,
                    first: 0,
                    end: None,
                    start: None,
                }],
                bytes: inputs[input].size,
                records: None,
            })
            .collect());
    }
    let counts = inputs
        .iter()
        .map(|input| count_input(storage, options, input_format, &input.path))
        .collect::<Result<Vec<_>, _>>()?;
    let total: u64 = counts.iter().map(|count| count.records).sum();
    let bounds = part_bounds(total, sizing.parts, sizing.records_per_part);
    let of = bounds.len() - 1;
    let mut chunks = Vec::new();
    for (index, range) in bounds.windows(2).enumerate() {
        let (from, to) = (range[0], range[1]);
        let mut segments = Vec::new();
        let mut bytes = 0u64;
        let mut input_start = 0u64;
        for (input, count) in counts.iter().enumerate() {
            let input_end = input_start + count.records;
            let first = from.max(input_start);
            let last = to.min(input_end);
            if first < last {
                let first_local = first - input_start;
                let end_local = last - input_start;
                let share = u128::from(inputs[input].size) * u128::from(end_local - first_local)
                    / u128::from(count.records);
                bytes += share as u64;
                segments.push(Segment {
                    input,
                    first: first_local,
                    // The last records of a file read on to its real end, so that damage
                    // after them is found and reported.
                    end: (end_local < count.records).then_some(end_local),
                    start: count.checkpoint_before(first_local),
                });
            }
            input_start = input_end;
        }
        chunks.push(Chunk {
            dataset: dataset_index,
            index,
            of,
            segments,
            bytes,
            records: Some(to - from),
        });
    }
    Ok(chunks)
}

/// Record boundaries `0 = b0 < b1 < ... < bn = total` of the parts: `parts` balanced parts,
/// or cuts every `per_part` records, or balanced parts no bigger than `per_part` when both
/// are given. Never an empty part.
fn part_bounds(total: u64, parts: Option<u64>, per_part: Option<u64>) -> Vec<u64> {
    if total == 0 {
        return vec![0];
    }
    match (parts, per_part) {
        (None, Some(per_part)) => {
            let per_part = per_part.max(1);
            let mut bounds: Vec<u64> = (0..total).step_by(per_part as usize).collect();
            bounds.push(total);
            bounds
        }
        (parts, per_part) => {
            let by_size = per_part.map_or(1, |per_part| total.div_ceil(per_part.max(1)));
            let count = parts.unwrap_or(1).max(by_size).clamp(1, total);
            (0..=count)
                .map(|i| (u128::from(total) * u128::from(i) / u128::from(count)) as u64)
                .collect()
        }
    }
}

/// The records of one input, with seek points when it is uncompressed.
struct InputCount {
    records: u64,
    checkpoints: Vec<RecordAt>,
}

impl InputCount {
    fn checkpoint_before(&self, record: u64) -> Option<RecordAt> {
        let slot = usize::try_from(record / CHECKPOINT_EVERY).ok()?;
        slot.checked_sub(1)
            .and_then(|slot| self.checkpoints.get(slot))
            .copied()
    }
}

/// Counts records without reading their data. Damage fails the count unless salvaging,
/// where the count stops at damage that ends the framing (conversion reports it).
fn count_input(
    storage: &dyn Storage,
    options: &Options,
    input_format: Format,
    path: &Path,
) -> Result<InputCount, Error> {
    let mut reader =
        RecordReader::open_at(storage, path, input_format, options.checksums(), None, None)?;
    let seekable = reader.seekable();
    let mut count = InputCount {
        records: 0,
        checkpoints: Vec::new(),
    };
    loop {
        let at = reader.position();
        if seekable && at.index > 0 && at.index % CHECKPOINT_EVERY == 0 {
            count.checkpoints.push(at);
        }
        match reader.skip() {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(err) if options.on_corrupt == OnCorrupt::Skip && is_damage(&err) => {
                if !reader.step_past(&err) {
                    break;
                }
            }
            Err(err) => return Err(err),
        }
        count.records = reader.position().index;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::part_bounds;

    #[test]
    fn balanced_parts_never_empty() {
        assert_eq!(part_bounds(10, Some(3), None), vec![0, 3, 6, 10]);
        assert_eq!(part_bounds(2, Some(5), None), vec![0, 1, 2]);
        assert_eq!(part_bounds(0, Some(5), None), vec![0]);
    }

    #[test]
    fn records_per_part_cuts_across_inputs() {
        assert_eq!(part_bounds(10, None, Some(4)), vec![0, 4, 8, 10]);
        assert_eq!(part_bounds(8, None, Some(4)), vec![0, 4, 8]);
    }

    #[test]
    fn both_give_balanced_parts_within_the_cap() {
        assert_eq!(part_bounds(10, Some(2), Some(3)), vec![0, 2, 5, 7, 10]);
        assert_eq!(part_bounds(10, Some(4), Some(9)), vec![0, 2, 5, 7, 10]);
    }
}
