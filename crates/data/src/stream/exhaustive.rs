//! Every small case of a stream's promise, for one dataset ([`Share`]) and a mixture
//! ([`Mixture`]) alike: ranks step together, each rank's loader takes a unit from each
//! worker in turn and passes over an exhausted one; rank 0's state after every step of a
//! pass is resumed on other layouts. Every record of the epoch is read exactly once
//! (`drop_last=false`) or at most once, a pass leaving less than a unit a rank (a unit a
//! lane of each reading, for a mixture, which deals each reading over the lanes) with
//! `drop_last=true`; the units a rank is said to hold are those it yields; with
//! `drop_last` every rank yields as many.

use crate::stream::mixture::{readings, Mixture};
use crate::stream::order::{Order, Shuffle};
use crate::stream::share::{Layout, Pass, Share};
use crate::stream::testing::small_layouts;

/// A record of the epoch: the reading it belongs to (0 for one dataset) and its number.
type Id = (usize, u64);

/// What deals an epoch: one dataset's order, or a mixture's readings.
enum Dealer {
    Stream(Order),
    Mixture {
        readings: Vec<(Order, u64)>,
        shuffled: bool,
    },
}

/// What one pass yields: each rank's units, in the order its loader takes them.
struct Yield {
    ranks: Vec<Vec<Vec<Id>>>,
    /// The units each rank is said to hold (what `len()` reports).
    said: Vec<u64>,
    spent: bool,
}

/// The units of workers taken in turn, an exhausted worker passed over.
fn in_turn<T>(mut workers: Vec<std::collections::VecDeque<T>>) -> Vec<T> {
    let mut out = Vec::new();
    while workers.iter().any(|units| !units.is_empty()) {
        for units in &mut workers {
            if let Some(unit) = units.pop_front() {
                out.push(unit);
            }
        }
    }
    out
}

impl Dealer {
    fn records(&self) -> Vec<Id> {
        match self {
            Dealer::Stream(order) => (0..order.len()).map(|at| (0, order.record(at))).collect(),
            Dealer::Mixture { readings, .. } => readings
                .iter()
                .enumerate()
                .flat_map(|(reading, (order, first))| {
                    (0..*first).map(move |at| (reading, order.record(at)))
                })
                .collect(),
        }
    }

    fn pass(&self, before: &[Pass], layout: Layout) -> Yield {
        let mut ranks = Vec::new();
        let mut said = Vec::new();
        let mut spent = true;
        match self {
            Dealer::Stream(order) => {
                for rank in 0..layout.world {
                    let shares: Vec<Share> = (0..layout.workers)
                        .map(|worker| Share::new(*order, before, layout, rank, worker))
                        .collect();
                    spent &= shares[0].is_spent();
                    said.push(shares[0].rank_units());
                    let workers = shares
                        .iter()
                        .map(|share| {
                            (0..share.units())
                                .map(|unit| {
                                    let mut got = Vec::new();
                                    share.unit_records(unit, &mut got);
                                    got.into_iter().map(|record| (0, record)).collect()
                                })
                                .collect()
                        })
                        .collect();
                    ranks.push(in_turn(workers));
                }
            }
            Dealer::Mixture { readings, shuffled } => {
                let mixture = Mixture::new(readings.clone(), before, layout, *shuffled, (5, 2));
                spent = mixture.is_spent();
                for rank in 0..layout.world {
                    said.push(mixture.rank_units(rank));
                    let workers = (0..layout.workers)
                        .map(|worker| {
                            let shares: Vec<Share> = (0..mixture.readings())
                                .map(|reading| mixture.share(reading, rank, worker))
                                .collect();
                            let mut next = vec![0; shares.len()];
                            mixture
                                .schedule(rank, worker)
                                .turns()
                                .map(|reading| {
                                    let mut got = Vec::new();
                                    shares[reading].unit_records(next[reading], &mut got);
                                    next[reading] += 1;
                                    got.into_iter().map(|record| (reading, record)).collect()
                                })
                                .collect()
                        })
                        .collect();
                    ranks.push(in_turn(workers));
                }
            }
        }
        Yield { ranks, said, spent }
    }

    /// Rank 0's state after `steps` steps of a pass: the pass as it stopped.
    fn stopped(&self, before: &[Pass], layout: Layout, steps: u64) -> Pass {
        match self {
            Dealer::Stream(order) => {
                let share = Share::new(*order, before, layout, 0, 0);
                share.stopped_after(steps.min(share.rank_units()) * layout.unit)
            }
            Dealer::Mixture { readings, shuffled } => {
                let mixture = Mixture::new(readings.clone(), before, layout, *shuffled, (5, 2));
                mixture.stopped_after(0, steps.min(mixture.rank_units(0)))
            }
        }
    }
}

/// Counts what was checked.
#[derive(Default)]
struct Tally {
    passes: u64,
    resumes: u64,
}

/// Checks the pass after `before` on `layout`, given what was read before it (`read`) and
/// how much `drop_last` may have left so far (`may_lose`); returns what each rank read in
/// the first `steps` steps of it (all of them for `None`).
fn check_pass(
    dealer: &Dealer,
    before: &[Pass],
    layout: Layout,
    read: &[Id],
    steps: Option<u64>,
    may_lose: u64,
    case: &str,
) -> Vec<Id> {
    let got = dealer.pass(before, layout);
    for (rank, units) in got.ranks.iter().enumerate() {
        assert_eq!(
            got.said[rank],
            units.len() as u64,
            "{case}: rank {rank}'s len()"
        );
    }
    if layout.drop_last {
        assert!(
            got.said.windows(2).all(|w| w[0] == w[1]),
            "{case}: uneven ranks {:?}",
            got.said
        );
    }
    assert_eq!(
        got.spent,
        got.said.iter().all(|&units| units == 0),
        "{case}: spent"
    );
    let mut all: Vec<Id> = read.to_vec();
    got.ranks
        .iter()
        .flatten()
        .flatten()
        .for_each(|id| all.push(*id));
    let mut records = dealer.records();
    records.sort_unstable();
    all.sort_unstable();
    let total = all.len();
    all.dedup();
    assert_eq!(all.len(), total, "{case}: a record read twice");
    if layout.drop_last {
        let lost = records.len() - all.len();
        let may = may_lose + dropped(dealer, layout);
        assert!(
            lost as u64 <= may,
            "{case}: {lost} records left, at most {may}"
        );
    } else if may_lose == 0 {
        assert_eq!(all, records, "{case}: records missing");
    }
    let mut taken = Vec::new();
    for units in &got.ranks {
        let take = steps.map_or(units.len(), |steps| units.len().min(steps as usize));
        units[..take]
            .iter()
            .flatten()
            .for_each(|id| taken.push(*id));
    }
    taken
}

/// The most records a pass of `layout` with `drop_last` leaves: less than a unit a rank of
/// one dataset, a unit a lane of each of a mixture's readings.
fn dropped(dealer: &Dealer, layout: Layout) -> u64 {
    match dealer {
        Dealer::Stream(_) => layout.world * layout.unit,
        Dealer::Mixture { readings, .. } => {
            layout.world * layout.workers * layout.unit * readings.len() as u64
        }
    }
}

/// Every layout of 1–3 ranks, 1–3 workers and units of 1–3, both `drop_last`: each pass
/// whole, and rank 0's state after each of its steps resumed on `resumes` (with the unit
/// and `drop_last` of the pass it resumes) and read to the end.
fn every_case(dealer: &Dealer, resumes: &[(u64, u64)], tally: &mut Tally) {
    for first in small_layouts() {
        let case = format!("{first:?}");
        check_pass(dealer, &[], first, &[], None, 0, &case);
        tally.passes += 1;
        let most = dealer.pass(&[], first).said.into_iter().max().unwrap_or(0);
        let lost = if first.drop_last {
            dropped(dealer, first)
        } else {
            0
        };
        for steps in 0..=most {
            let stopped = dealer.stopped(&[], first, steps);
            let before = [stopped];
            let read = check_pass(dealer, &[], first, &[], Some(steps), 0, &case);
            for &(world, workers) in resumes {
                let again = Layout {
                    world,
                    workers,
                    ..first
                };
                let case = format!("{case} after {steps} steps, on {again:?}");
                check_pass(dealer, &before, again, &read, None, lost, &case);
                tally.resumes += 1;
            }
        }
    }
}

fn orders(len: u64, seed: u64, epoch: u64) -> [Order; 3] {
    let block = Shuffle::Block {
        chunk: 2,
        window: 2,
    };
    [Shuffle::None, Shuffle::Global, block].map(|shuffle| Order::new(len, shuffle, seed, epoch))
}

const RESUMES: [(u64, u64); 4] = [(1, 1), (2, 3), (3, 2), (8, 1)];

#[test]
fn a_stream_reads_every_record_once_resumed_after_any_step_on_any_layout() {
    let mut tally = Tally::default();
    for len in (0..=12).chain([23, 40]) {
        for order in orders(len, 3, 1) {
            every_case(&Dealer::Stream(order), &RESUMES, &mut tally);
        }
    }
    eprintln!("stream: {} passes, {} resumes", tally.passes, tally.resumes);
    assert!(tally.resumes > 40_000);
}

#[test]
fn a_mixture_reads_every_record_once_resumed_after_any_step_on_any_layout() {
    let mut tally = Tally::default();
    // Sources of 3 and 5 records in shares below, at and above their lengths.
    for (lengths, shares) in [
        (vec![3, 5], vec![3, 5]),
        (vec![3, 5], vec![7, 2]),
        (vec![5, 5, 5], vec![5, 5, 5]),
        (vec![4], vec![9]),
        (vec![2, 6], vec![1, 0]),
    ] {
        for (shuffle, shuffled) in [(Shuffle::None, false), (Shuffle::Global, true)] {
            let readings = readings(&lengths, &shares, 11, 1)
                .into_iter()
                .map(|r| {
                    (
                        Order::new(lengths[r.source], shuffle, r.seed, r.epoch),
                        r.first,
                    )
                })
                .collect();
            every_case(
                &Dealer::Mixture { readings, shuffled },
                &RESUMES,
                &mut tally,
            );
        }
    }
    eprintln!(
        "mixture: {} passes, {} resumes",
        tally.passes, tally.resumes
    );
    assert!(tally.resumes > 5_000);
}

/// The case a reviewer found: 3 sources of 5 records, batches of 2, one rank of 2 workers
/// whose lanes hold 6 and 3 batches; the states after steps 8 and 9 read a record twice,
/// and the state after the last step said 14 of 15 were read.
#[test]
fn a_mixtures_state_follows_workers_of_uneven_lanes() {
    let lengths = [5, 5, 5];
    let readings: Vec<(Order, u64)> = readings(&lengths, &lengths, 0, 0)
        .into_iter()
        .map(|r| (Order::new(5, Shuffle::None, r.seed, r.epoch), r.first))
        .collect();
    let dealer = Dealer::Mixture {
        readings: readings.clone(),
        shuffled: false,
    };
    let layout = Layout {
        world: 1,
        workers: 2,
        unit: 2,
        drop_last: false,
    };
    let mixture = Mixture::new(readings.clone(), &[], layout, false, (5, 2));
    assert_eq!((mixture.lane_units(0, 0), mixture.lane_units(0, 1)), (6, 3));
    for steps in 0..=9 {
        let read = check_pass(&dealer, &[], layout, &[], Some(steps), 0, "uneven");
        let before = [dealer.stopped(&[], layout, steps)];
        let after = Mixture::new(readings.clone(), &before, layout, false, (5, 2));
        assert_eq!(after.left(), 15 - read.len() as u64, "after {steps} steps");
        check_pass(
            &dealer,
            &before,
            Layout {
                world: 1,
                workers: 1,
                ..layout
            },
            &read,
            None,
            0,
            "uneven",
        );
    }
}
