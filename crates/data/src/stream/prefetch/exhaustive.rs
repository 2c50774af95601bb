//! Every small case of what a stream reading by spans fetches: every layout of 1–3 ranks,
//! 1–3 workers and units of 1–3, both `drop_last`, each pass whole and rank 0's state after
//! each of its steps resumed on other layouts, over every way of cutting up to 7 records into
//! files, in the records' own order and block shuffles, with and without a cache.
//!
//! What the thread that reads by spans does is played out on its [`Plan`] alone: a chunk is
//! held from the step that wants it until a group that lacks it begins. For every unit, each
//! of its records is in a chunk held, among the records fetched of it; no chunk is fetched
//! twice by a lane. Without a cache the lanes of a pass fetch, between them, each record they
//! read once and nothing else. With one, a lane fetches only the files it reads records of,
//! and of a chunk it fetches the chunk's whole part in each such file, as any other lane does.

use std::collections::HashMap;
use std::ops::Range;

use super::Plan;
use crate::stream::order::{Order, Shuffle};
use crate::stream::share::{Layout, Pass, Share};
use crate::stream::testing::small_layouts;

/// What a lane fetches and reads in a pass: each chunk fetched with the records fetched of
/// it, and the records read.
struct Lane {
    fetched: Vec<(u64, Range<u64>)>,
    read: Vec<u64>,
}

/// Plays out the thread that reads `share` by spans of `chunk` records, through a cache of
/// spans when the files' starts (`whole`) are given, checking that each unit's records are
/// cut from chunks held, fetched with them.
fn play(share: &Share, chunk: u64, whole: Option<&[u64]>, case: &str) -> Lane {
    let mut plan = Plan::new(share.clone(), 0, chunk, whole);
    let mut lane = Lane {
        fetched: Vec::new(),
        read: Vec::new(),
    };
    let mut held: HashMap<u64, Range<u64>> = HashMap::new();
    let mut indices = Vec::new();
    // A resumed block shuffle's first unit, without a cache, is fetched record by record.
    let alone = share.is_resumed() && share.order.window_len().is_some() && whole.is_none();
    let mut first = true;
    while let Some(step) = plan.next() {
        if let Some(group) = &step.group {
            held.retain(|number, _| group.binary_search(number).is_ok());
        }
        for &number in &step.wanted {
            let records = plan.records_of(number);
            assert!(
                held.insert(number, records.clone()).is_none(),
                "{case}: chunk {number} wanted while held"
            );
            lane.fetched.push((number, records));
        }
        share.unit_records(step.unit, &mut indices);
        lane.read.extend_from_slice(&indices);
        if std::mem::take(&mut first) && alone {
            lane.fetched
                .extend(indices.iter().map(|&record| (u64::MAX, record..record + 1)));
            continue;
        }
        for &record in &indices {
            let number = record / chunk;
            let fetched = held.get(&number);
            assert!(
                fetched.is_some_and(|records| records.contains(&record)),
                "{case}: unit {} reads record {record} of chunk {number}, held as {fetched:?}",
                step.unit
            );
        }
    }
    // What each chunk must be fetched for: the lane's first and last record in it.
    let mut bounds: HashMap<u64, Range<u64>> = HashMap::new();
    for &record in &lane.read {
        bounds
            .entry(record / chunk)
            .and_modify(|bound| *bound = bound.start.min(record)..bound.end.max(record + 1))
            .or_insert(record..record + 1);
    }
    for (number, records) in &lane.fetched {
        if *number == u64::MAX {
            continue;
        }
        let bound = bounds.get(number);
        assert!(
            bound.is_some(),
            "{case}: chunk {number} fetched, none of it read"
        );
        if whole.is_none() {
            assert_eq!(Some(records), bound, "{case}: chunk {number} fetched");
        }
    }
    let mut numbers: Vec<u64> = lane.fetched.iter().map(|(number, _)| *number).collect();
    numbers.retain(|&number| number != u64::MAX);
    numbers.sort_unstable();
    let all = numbers.len();
    numbers.dedup();
    assert_eq!(numbers.len(), all, "{case}: a chunk fetched twice");
    lane
}

/// The files a cut of `len` records into files gives, by their starts then `len`: each cut
/// is a bit of `cuts` (bit `i` cuts after record `i + 1`).
fn starts_of(len: u64, cuts: u64) -> Vec<u64> {
    let mut starts = vec![0];
    starts.extend((1..len).filter(|at| cuts >> (at - 1) & 1 == 1));
    starts.push(len);
    starts
}

/// The file of `starts` that `record` is in.
fn file_of(starts: &[u64], record: u64) -> usize {
    starts.partition_point(|&start| start <= record) - 1
}

#[derive(Default)]
struct Tally {
    passes: u64,
    lanes: u64,
    /// Records read, and records fetched beyond them, without a cache.
    read: u64,
    extra: u64,
    /// Files fetched through a cache that the lane reads nothing of.
    unread_files: u64,
}

/// Checks every lane of a pass after `before` on `layout`, by spans of `chunk` records,
/// without a cache and through one over each cut of the records into files.
fn check_pass(order: Order, chunk: u64, before: &[Pass], layout: Layout, tally: &mut Tally) {
    let len = order.len();
    let case = format!("{order:?} by {chunk}, {layout:?} after {before:?}");
    let shares: Vec<Share> = (0..layout.world)
        .flat_map(|rank| {
            (0..layout.workers).map(move |worker| Share::new(order, before, layout, rank, worker))
        })
        .collect();
    // Without a cache: between them, each record read once, and nothing else.
    let (mut fetched, mut read) = (Vec::new(), Vec::new());
    for share in &shares {
        let lane = play(share, chunk, None, &case);
        // A resumed block shuffle's first unit, fetched alone, is also in its chunks.
        let spans = lane
            .fetched
            .into_iter()
            .filter(|(number, _)| *number != u64::MAX);
        fetched.extend(spans.flat_map(|(_, records)| records));
        read.extend(lane.read);
        tally.lanes += 1;
    }
    fetched.sort_unstable();
    read.sort_unstable();
    // A resumed lane fetches of each chunk the records from its first there to its last:
    // those read before the stop between them too, and those others read (a window the
    // stopped pass began, dealt to several lanes now).
    if before.is_empty() {
        assert_eq!(fetched, read, "{case}: fetched without a cache");
    }
    tally.extra += (fetched.len() - read.len()) as u64;
    tally.read += read.len() as u64;
    // Through a cache, over each cut into files.
    for cuts in 0..1u64 << len.saturating_sub(1) {
        let starts = starts_of(len, cuts);
        for share in &shares {
            let lane = play(share, chunk, Some(&starts), &case);
            // The files the lane reads records of in each chunk.
            let mut read_in: HashMap<u64, Vec<usize>> = HashMap::new();
            for &record in &lane.read {
                read_in
                    .entry(record / chunk)
                    .or_default()
                    .push(file_of(&starts, record));
            }
            for (number, records) in lane.fetched {
                assert_ne!(
                    number,
                    u64::MAX,
                    "{case}: a unit fetched alone through a cache"
                );
                let files = read_in.get_mut(&number).expect("a chunk read");
                files.sort_unstable();
                files.dedup();
                let fetched = file_of(&starts, records.start)..=file_of(&starts, records.end - 1);
                let (first, last) = (files[0], files[files.len() - 1]);
                let case = format!("{case}, files {starts:?}: chunk {number}");
                assert_eq!(fetched, first..=last, "{case}: the files fetched");
                let whole = number * chunk..((number + 1) * chunk).min(len);
                for file in fetched {
                    let part = whole.start.max(starts[file])..whole.end.min(starts[file + 1]);
                    let got = records.start.max(part.start)..records.end.min(part.end);
                    assert_eq!(got, part, "{case}: file {file}");
                    if files.binary_search(&file).is_err() {
                        // Only where a resumed lane's records of a chunk are not neighbours.
                        assert!(
                            !before.is_empty(),
                            "{case}: file {file} fetched, none of it read"
                        );
                        tally.unread_files += 1;
                    }
                }
            }
            tally.lanes += 1;
        }
    }
    tally.passes += 1;
}

/// Rank 0's state after `steps` steps of the pass of `layout`.
fn stopped(order: Order, layout: Layout, steps: u64) -> Pass {
    let share = Share::new(order, &[], layout, 0, 0);
    share.stopped_after(steps.min(share.rank_units()) * layout.unit)
}

const RESUMES: [(u64, u64); 3] = [(1, 1), (2, 3), (3, 2)];

#[test]
fn spans_fetch_each_chunk_once_and_only_the_files_a_lane_reads_on_every_small_layout() {
    let mut tally = Tally::default();
    let mut orders = Vec::new();
    for len in 1..=7 {
        for chunk in 1..=3 {
            orders.push((Order::new(len, Shuffle::None, 0, 0), chunk));
        }
        for (chunk, window) in [(1, 2), (2, 1), (2, 2), (3, 2)] {
            let block = Shuffle::Block { chunk, window };
            orders.push((Order::new(len, block, 5, 1), chunk));
        }
    }
    for (order, chunk) in orders {
        for first in small_layouts() {
            check_pass(order, chunk, &[], first, &mut tally);
            let most = Share::new(order, &[], first, 0, 0).rank_units();
            for steps in 1..most {
                let before = [stopped(order, first, steps)];
                for (world, workers) in RESUMES {
                    let again = Layout {
                        world,
                        workers,
                        ..first
                    };
                    check_pass(order, chunk, &before, again, &mut tally);
                }
            }
        }
    }
    eprintln!(
        "spans: {} passes, {} lanes; without a cache {} records read, {} more fetched; \
         through one {} files fetched unread",
        tally.passes, tally.lanes, tally.read, tally.extra, tally.unread_files
    );
    assert!(tally.passes > 8_000 && tally.lanes > 1_000_000);
}
