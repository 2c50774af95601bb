//! Two datasets compared as multisets of records, whatever their order: every record's
//! canonical digest (128 bits) is added into one of a few thousand buckets, by count and by
//! sum, so that memory stays flat however many records there are. Equal buckets: the same
//! records. Otherwise the records of the buckets that differ are read again (as many
//! buckets as [`MAX_ENTRIES`] digests allow, at least one), their digests kept, and the
//! record with the lowest number that the other side lacks is named.

use std::path::PathBuf;

use rayon::prelude::*;

use super::canonical::Canon;
use super::ordered::Input;
use super::{Difference, Place};
use crate::error::Error;
use crate::options::Checksums;
use crate::progress::{Event, ProgressFn};
use crate::records::{RecordAt, RecordReader};

const BUCKETS: usize = 4096;

/// At most this many digests are kept to name a difference (about 48 MB), unless the first
/// bucket that differs alone holds more.
const MAX_ENTRIES: u64 = 1 << 20;

fn bucket(digest: u128) -> usize {
    (digest as usize) & (BUCKETS - 1)
}

/// Counts and sums of the digests of a side's records, by bucket; and the records of each
/// file.
struct Tally {
    count: Vec<u64>,
    sum: Vec<u128>,
    per_file: Vec<(usize, u64)>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            count: vec![0; BUCKETS],
            sum: vec![0; BUCKETS],
            per_file: Vec::new(),
        }
    }

    fn add(mut self, other: Tally) -> Tally {
        for bucket in 0..BUCKETS {
            self.count[bucket] += other.count[bucket];
            self.sum[bucket] = self.sum[bucket].wrapping_add(other.sum[bucket]);
        }
        self.per_file.extend(other.per_file);
        self
    }

    fn records(&self) -> u64 {
        self.count.iter().sum()
    }
}

/// Calls `f(digest, at)` for every record of file `file` of `input` (side A when
/// `side_a`); returns the records.
fn digest_file(
    canon: &mut Canon,
    input: Input<'_>,
    side_a: bool,
    file: usize,
    progress: ProgressFn<'_>,
    mut f: impl FnMut(u128, RecordAt),
) -> Result<u64, Error> {
    let path = &input.dataset.files[file].0;
    let mut reader = RecordReader::open_at(
        input.storage,
        path,
        input.format,
        Checksums::Verify,
        None,
        Some(progress),
    )?;
    let mut record = Vec::new();
    let mut records = 0;
    while let Some(at) = reader.read(&mut record)? {
        f(canon.digest(&record, input.format, side_a), at);
        records += 1;
        if records % 4096 == 0 {
            progress(Event::Progress {
                bytes: 0,
                records: 4096,
            });
        }
    }
    Ok(records)
}

/// The tally of every record of both sides, read file by file on the current pool.
fn tally(inputs: [Input<'_>; 2], progress: ProgressFn<'_>) -> Result<[Tally; 2], Error> {
    let files: Vec<(usize, usize)> = (0..2)
        .flat_map(|side| (0..inputs[side].dataset.files.len()).map(move |file| (side, file)))
        .collect();
    let folded = files
        .par_iter()
        .with_max_len(1)
        .fold(
            || {
                (
                    Canon::new(inputs[0].mapped),
                    [Tally::new(), Tally::new()],
                    Ok(()),
                )
            },
            |(mut canon, mut tallies, result), &(side, file)| {
                if result.is_err() {
                    return (canon, tallies, result);
                }
                let tally = &mut tallies[side];
                let read = digest_file(
                    &mut canon,
                    inputs[side],
                    side == 0,
                    file,
                    progress,
                    |digest, _| {
                        let bucket = bucket(digest);
                        tally.count[bucket] += 1;
                        tally.sum[bucket] = tally.sum[bucket].wrapping_add(digest);
                    },
                );
                let result = read.map(|records| tally.per_file.push((file, records)));
                (canon, tallies, result)
            },
        )
        .map(|(_, tallies, result)| result.map(|()| tallies))
        .reduce(
            || Ok([Tally::new(), Tally::new()]),
            |x, y| {
                let ([a1, b1], [a2, b2]) = (x?, y?);
                Ok([a1.add(a2), b1.add(b2)])
            },
        )?;
    Ok(folded)
}

/// A record of a bucket: its digest, file and place, and its number in its dataset.
struct Entry {
    digest: u128,
    number: u64,
    file: usize,
    at: RecordAt,
}

/// The records of both sides whose digests fall in the buckets `wanted`.
fn entries_in(
    inputs: [Input<'_>; 2],
    tallies: &[Tally; 2],
    wanted: &[bool],
    progress: ProgressFn<'_>,
) -> Result<[Vec<Entry>; 2], Error> {
    let mut found: [Vec<Entry>; 2] = [Vec::new(), Vec::new()];
    for side in 0..2 {
        // The number of each file's first record.
        let mut counts = tallies[side].per_file.clone();
        counts.sort_unstable();
        let mut first = 0u64;
        let firsts: Vec<u64> = counts
            .iter()
            .map(|(_, records)| {
                let this = first;
                first += records;
                this
            })
            .collect();
        let per_file: Vec<Result<Vec<Entry>, Error>> = (0..inputs[side].dataset.files.len())
            .into_par_iter()
            .with_max_len(1)
            .map(|file| {
                let mut canon = Canon::new(inputs[0].mapped);
                let mut entries = Vec::new();
                digest_file(
                    &mut canon,
                    inputs[side],
                    side == 0,
                    file,
                    progress,
                    |digest, at| {
                        if wanted[bucket(digest)] {
                            entries.push(Entry {
                                digest,
                                number: firsts[file] + at.index,
                                file,
                                at,
                            });
                        }
                    },
                )?;
                Ok(entries)
            })
            .collect();
        for entries in per_file {
            found[side].extend(entries?);
        }
    }
    Ok(found)
}

/// Compares `a` and `b` as multisets of records on the current pool; `Ok(None)` when they
/// hold the same records, as many times each. Also returns the records of `a`.
pub(crate) fn compare(
    a: Input<'_>,
    b: Input<'_>,
    progress: ProgressFn<'_>,
) -> Result<(Option<Difference>, u64), Error> {
    let inputs = [a, b];
    let tallies = tally(inputs, progress)?;
    let records = tallies[0].records();
    let mut wanted = vec![false; BUCKETS];
    let mut kept = 0u64;
    for (bucket, wanted) in wanted.iter_mut().enumerate() {
        let (count, other) = (tallies[0].count[bucket], tallies[1].count[bucket]);
        if count == other && tallies[0].sum[bucket] == tallies[1].sum[bucket] {
            continue;
        }
        if kept > 0 && kept + count + other > MAX_ENTRIES {
            break;
        }
        *wanted = true;
        kept += count + other;
    }
    if !wanted.contains(&true) {
        return Ok((None, records));
    }
    let [mut left, mut right] = entries_in(inputs, &tallies, &wanted, progress)?;
    left.sort_by_key(|entry| (entry.digest, entry.number));
    right.sort_by_key(|entry| (entry.digest, entry.number));
    // The first record (by its number) of either side whose digest the other side has
    // fewer times.
    let mut unmatched: Option<(usize, &Entry, usize, usize)> = None;
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        let digest = match (left.get(i), right.get(j)) {
            (Some(x), Some(y)) => x.digest.min(y.digest),
            (Some(x), None) => x.digest,
            (None, Some(y)) => y.digest,
            (None, None) => break,
        };
        let run = |entries: &[Entry], from: usize| {
            entries[from..]
                .iter()
                .take_while(|entry| entry.digest == digest)
                .count()
        };
        let (in_a, in_b) = (run(&left, i), run(&right, j));
        if in_a != in_b {
            // The extra ones: those after the first `min` of the side with more.
            let (side, entries, from) = if in_a > in_b {
                (0, &left, i + in_b)
            } else {
                (1, &right, j + in_a)
            };
            let extra = &entries[from];
            let earlier = unmatched.as_ref().is_none_or(|(known_side, known, _, _)| {
                (extra.number, side) < (known.number, *known_side)
            });
            if earlier {
                unmatched = Some((side, extra, in_a, in_b));
            }
        }
        i += in_a;
        j += in_b;
    }
    let Some((side, entry, in_a, in_b)) = unmatched else {
        // The sums differ but no digest is missing: two different multisets whose sums
        // collide in this bucket cannot be told apart; say so rather than claim equality.
        return Ok((
            Some(Difference {
                dataset: String::new(),
                record: None,
                feature: None,
                what: "the records differ (their digests sum differently) but none could be \
                       named"
                    .to_owned(),
                a: None,
                b: None,
                a_place: None,
                b_place: None,
            }),
            records,
        ));
    };
    let files = &inputs[side].dataset.files;
    let place = Some(place_of(files, entry));
    let (this, other) = if side == 0 { ("A", "B") } else { ("B", "A") };
    let what = match (in_a, in_b) {
        (_, 0) | (0, _) => format!("record only in {this}: {other} has no record equal to it"),
        _ => format!("record {} in A, {} in B", times(in_a), times(in_b)),
    };
    Ok((
        Some(Difference {
            dataset: String::new(),
            record: Some(entry.number),
            feature: None,
            what,
            a: None,
            b: None,
            a_place: if side == 0 { place.clone() } else { None },
            b_place: if side == 1 { place } else { None },
        }),
        records,
    ))
}

fn times(n: usize) -> String {
    match n {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
    }
}

fn place_of(files: &[(PathBuf, u64)], entry: &Entry) -> Place {
    Place {
        path: files[entry.file].0.display().to_string(),
        offset: entry.at.offset,
        record: entry.at.index,
        byte: None,
    }
}
