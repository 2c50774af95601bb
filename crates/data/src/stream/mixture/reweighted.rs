//! Every small case of a change of weights at a resume: rank 0's state after every step of
//! a mixture's pass, resumed on other layouts with other weights, then stopped and resumed
//! once more. The rest of the epoch holds each source's share of it by the new weights,
//! each record of an order is read at most once, a source read within its length reads no
//! record twice, and each rank yields the units it is said to hold.

use super::*;
use crate::stream::order::Shuffle;
use std::collections::{HashMap, VecDeque};

/// A record read: its source, the epoch of the order it was read in, and its number.
type Id = (usize, u64, u64);

/// Each rank's units of a pass, in the order its loader takes them (a unit from each
/// worker in turn, an exhausted one passed over), checking the units each rank is said to
/// hold.
fn pass(mixture: &Mixture) -> Vec<Vec<Vec<Id>>> {
    let layout = mixture.layout();
    let mut ranks = Vec::new();
    for rank in 0..layout.world {
        let mut workers: Vec<VecDeque<Vec<Id>>> = Vec::new();
        for worker in 0..layout.workers {
            let shares: Vec<Share> = (0..mixture.readings())
                .map(|reading| mixture.share(reading, rank, worker))
                .collect();
            let mut next = vec![0; shares.len()];
            let units = mixture.schedule(rank, worker).turns().map(|reading| {
                let mut got = Vec::new();
                shares[reading].unit_records(next[reading], &mut got);
                next[reading] += 1;
                let plan = mixture.planned()[reading];
                got.into_iter()
                    .map(|record| (plan.source, plan.epoch, record))
                    .collect()
            });
            workers.push(units.collect());
        }
        let mut taken = Vec::new();
        while workers.iter().any(|units| !units.is_empty()) {
            for units in &mut workers {
                taken.extend(units.pop_front());
            }
        }
        assert_eq!(taken.len() as u64, mixture.rank_units(rank));
        ranks.push(taken);
    }
    ranks
}

/// The records of each rank's first `steps` units.
fn first_steps(ranks: &[Vec<Vec<Id>>], steps: u64) -> Vec<Id> {
    ranks
        .iter()
        .flat_map(|units| units.iter().take(steps as usize).flatten().copied())
        .collect()
}

/// The orders a case is tried in: the records' own, a global shuffle, a block shuffle.
const ORDERS: [Shuffle; 3] = [
    Shuffle::None,
    Shuffle::Global,
    Shuffle::Block {
        chunk: 2,
        window: 2,
    },
];

struct Case<'a> {
    lengths: &'a [u64],
    shares: &'a [u64],
    shuffle: Shuffle,
}

impl Case<'_> {
    fn make(&self, reading: &Reading) -> Result<Order, ()> {
        Ok(Order::new(
            self.lengths[reading.source],
            self.shuffle,
            reading.seed,
            reading.epoch,
        ))
    }

    fn mixture(&self, before: &[Pass], weights: &[Option<Vec<f64>>], layout: Layout) -> Mixture {
        let planned = readings(self.lengths, self.shares, 11, 1);
        let readings = planned
            .iter()
            .map(|reading| ((self.make(reading).unwrap(), reading.first), *reading))
            .collect();
        let sources = Sources {
            lengths: self.lengths,
            seed: 11,
            epoch: 1,
        };
        let shuffled = self.shuffle != Shuffle::None;
        Mixture::reweighted(
            readings,
            &sources,
            before,
            weights,
            layout,
            shuffled,
            (5, 2),
            |reading| self.make(reading),
        )
        .unwrap()
    }
}

fn layout(world: u64, workers: u64, unit: u64) -> Layout {
    Layout {
        world,
        workers,
        unit,
        drop_last: false,
    }
}

/// Checks what an epoch read in all: no record of an order twice, and no record twice of a
/// source read within its length whose share was within it all along (`over`: the sources
/// that some weights drew past their length, which read again in orders of their own).
fn check_read(case: &Case<'_>, read: &[Id], over: &[bool], what: &str) {
    let mut seen: HashMap<Id, u64> = HashMap::new();
    let mut of_source: HashMap<(usize, u64), u64> = HashMap::new();
    for &id in read {
        *seen.entry(id).or_default() += 1;
        *of_source.entry((id.0, id.2)).or_default() += 1;
    }
    assert!(
        seen.values().all(|&n| n == 1),
        "{what}: an order's record twice"
    );
    for (source, &length) in case.lengths.iter().enumerate() {
        let reads = read.iter().filter(|id| id.0 == source).count() as u64;
        let once = case.shares[source] <= length && reads <= length && !over[source];
        let twice = of_source.iter().any(|(&(s, _), &n)| s == source && n > 1);
        assert!(
            !(once && twice),
            "{what}: source {source} read twice within its length"
        );
    }
}

#[test]
fn the_rest_of_an_epoch_follows_weights_changed_at_a_resume_on_any_layout() {
    let new_weights: [&[f64]; 4] = [&[1.0, 1.0], &[9.0, 1.0], &[1.0, 9.0], &[0.5, 3.0]];
    let mut resumes = 0u64;
    for (lengths, shares) in [
        (&[3u64, 5][..], &[3u64, 5][..]),
        (&[3, 5], &[2, 2]),
        (&[4, 2], &[9, 1]),
        (&[5, 3], &[0, 6]),
    ] {
        for shuffle in ORDERS {
            let case = Case {
                lengths,
                shares,
                shuffle,
            };
            let size: u64 = shares.iter().sum();
            for first in [layout(1, 1, 1), layout(2, 2, 1), layout(1, 2, 2)] {
                let whole = pass(&case.mixture(&[], &[], first));
                let most = whole.iter().map(Vec::len).max().unwrap_or(0) as u64;
                for steps in 0..=most {
                    let stopped = case
                        .mixture(&[], &[], first)
                        .stopped_after(0, steps.min(whole[0].len() as u64));
                    let taken = first_steps(&whole, steps);
                    for weights in new_weights {
                        let changed = vec![None, Some(weights.to_vec())];
                        for then in [
                            layout(1, 1, 1),
                            layout(2, 1, 1),
                            layout(1, 3, 2),
                            layout(3, 2, 1),
                            Layout {
                                drop_last: true,
                                ..layout(2, 1, 2)
                            },
                        ] {
                            let before = [stopped.clone()];
                            let resumed = case.mixture(&before, &changed, then);
                            let rest = pass(&resumed);
                            let rest_ids: Vec<Id> =
                                rest.iter().flatten().flatten().copied().collect();
                            let what = format!(
                                "{lengths:?} shares {shares:?} {shuffle:?} on {first:?} after {steps}, \
                                 {weights:?} on {then:?}"
                            );
                            let left = size - taken.len() as u64;
                            assert_eq!(resumed.left(), left, "{what}");
                            let wanted = shares_of(left, weights);
                            for (source, &want) in wanted.iter().enumerate() {
                                let got =
                                    rest_ids.iter().filter(|id| id.0 == source).count() as u64;
                                // What drop_last sets aside is not read this epoch.
                                match then.drop_last {
                                    true => assert!(got <= want, "{what}: source {source}"),
                                    false => assert_eq!(got, want, "{what}: source {source}"),
                                }
                            }
                            let mut read = taken.clone();
                            read.extend(&rest_ids);
                            check_read(&case, &read, &[false; 2], &what);
                            resumes += 1;
                            if then.drop_last {
                                // What it set aside is read by a pass resumed after it.
                                continue;
                            }
                            // Stopped again after a step of rank 0, and resumed as it was.
                            let again = resumed.stopped_after(0, 1.min(rest[0].len() as u64));
                            let taken_again = first_steps(&rest, again.steps);
                            let twice = [stopped.clone(), again];
                            let last =
                                case.mixture(&twice, &[None, Some(weights.to_vec()), None], first);
                            let mut all = read[..taken.len()].to_vec();
                            all.extend(taken_again);
                            all.extend(pass(&last).into_iter().flatten().flatten());
                            let mut sorted_all = all.clone();
                            sorted_all.sort_unstable();
                            let mut sorted_read = read.clone();
                            sorted_read.sort_unstable();
                            assert_eq!(sorted_all, sorted_read, "{what}, stopped again");
                            // Or resumed with the weights changed once more.
                            let other = new_weights[(steps as usize) % new_weights.len()];
                            let changes = [None, Some(weights.to_vec()), Some(other.to_vec())];
                            let third = pass(&case.mixture(&twice, &changes, first));
                            let third: Vec<Id> = third.into_iter().flatten().flatten().collect();
                            let left = size - (all.len() - third_len(&last)) as u64;
                            for (source, &want) in shares_of(left, other).iter().enumerate() {
                                let got = third.iter().filter(|id| id.0 == source).count() as u64;
                                assert_eq!(got, want, "{what}, then {other:?}: source {source}");
                            }
                            let mut read = all[..all.len() - third_len(&last)].to_vec();
                            read.extend(third);
                            // Drawn past its length by the first change of weights.
                            let over: Vec<bool> = (0..2)
                                .map(|source| {
                                    let before = taken.iter().filter(|id| id.0 == source).count();
                                    before as u64 + wanted[source] > lengths[source]
                                })
                                .collect();
                            let what = format!("{what}, then {other:?}");
                            check_read(&case, &read, &over, &what);
                        }
                    }
                }
            }
        }
    }
    eprintln!("weights changed at {resumes} resumes");
    assert!(resumes > 4_000, "{resumes}");
}

/// Records a pass yields, every rank's together.
fn third_len(mixture: &Mixture) -> usize {
    pass(mixture).iter().flatten().flatten().count()
}

fn shares_of(size: u64, weights: &[f64]) -> Vec<u64> {
    shares(size, weights)
}

#[test]
fn shares_cut_a_size_by_weights_in_whole_records_the_largest_remainders_first() {
    assert_eq!(shares(10, &[1.0, 1.0, 1.0]), vec![4, 3, 3]);
    assert_eq!(shares(7, &[3.0, 5.0]), vec![3, 4]);
    assert_eq!(shares(0, &[1.0, 2.0]), vec![0, 0]);
    assert_eq!(shares(5, &[0.5, 3.0]), vec![1, 4]);
    // Summed as Python 3.12's sum() sums them: 0.8 + 0.2 + 0.2 is 1.2000000000000002 there,
    // and 1.2 added one by one, which moves a record from the third source to the first.
    assert_eq!(shares(1018, &[0.8, 0.2, 0.2]), vec![678, 170, 170]);
}

#[test]
fn weights_changed_before_the_first_step_cut_the_whole_epoch() {
    let new_weights: [&[f64]; 3] = [&[1.0, 1.0], &[9.0, 1.0], &[0.5, 3.0]];
    for (lengths, shares_before) in [(&[3u64, 5][..], &[3u64, 5][..]), (&[4, 2], &[9, 1])] {
        for shuffle in ORDERS {
            let case = Case {
                lengths,
                shares: shares_before,
                shuffle,
            };
            let size: u64 = shares_before.iter().sum();
            for weights in new_weights {
                for then in [layout(1, 1, 1), layout(2, 2, 1), layout(3, 1, 2)] {
                    let mixture = case.mixture(&[], &[Some(weights.to_vec())], then);
                    let read: Vec<Id> = pass(&mixture).into_iter().flatten().flatten().collect();
                    let what = format!("{lengths:?} {shuffle:?} {weights:?} on {then:?}");
                    for (source, &want) in shares(size, weights).iter().enumerate() {
                        let got = read.iter().filter(|id| id.0 == source).count() as u64;
                        assert_eq!(got, want, "{what}: source {source}");
                    }
                    check_read(&case, &read, &[false; 2], &what);
                }
            }
        }
    }
}
