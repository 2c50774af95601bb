//! A mixture of datasets read as one stream: each epoch a share of records from each source,
//! every source's share read as *readings* (its first places of one of its orders; a source
//! drawn more than its length read again in another order), each reading dealt over every
//! process's lane as [`share`](crate::stream::share) deals one dataset, and each lane's
//! items drawn from its readings in a [`Schedule`]: at random in proportion when shuffled,
//! smoothly in proportion when not.
//!
//! A pass of the mixture stops as a stream's does, the units each rank took ([`Pass`]).
//! What it took of each reading's lanes follows from the loader's round robin, which passes
//! over an exhausted worker ([`taken_in_turn`]), and from each lane's schedule; each
//! reading's passes are then its lanes' units taken, which the next pass deals on any
//! layout. All of it is computed from a few integers a pass: a state of any size costs
//! what its passes and lanes do, not what its records do.
//!
//! The weights may change as a pass begins ([`Mixture::reweighted`]): what the passes before
//! it left is cut by the new weights into each source's share of the rest, each reading then
//! dealing no more than its part of that share, and readings added where a source's share
//! is more than its readings left.

use crate::stream::order::{mix, Order, Permutation};
use crate::stream::share::{taken_in_turn, Layout, Pass, Share};

/// Epochs of a source's order one epoch of a mixture may read it at most.
pub const REPEATS: u64 = 1 << 16;
/// Keeps the sources' orders apart under one seed (the golden ratio's 64 bits).
const SOURCE_STRIDE: u64 = 0x9e37_79b9_7f4a_7c15;

/// One reading of a source within an epoch of a mixture: `first` places of the source's
/// order drawn from `seed` and `epoch`, from its place `offset` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// The source, by its number.
    pub source: usize,
    /// The seed of the source's order.
    pub seed: u64,
    /// The epoch of the source's order.
    pub epoch: u64,
    /// Places of that order the reading reads.
    pub first: u64,
    /// The place of the order it starts at: 0, but for a reading added when the weights
    /// changed, which goes on where the source's last reading of that order stopped.
    pub offset: u64,
}

/// The seed of source `source`'s orders in a mixture of seed `seed`.
fn source_seed(seed: u64, source: usize) -> u64 {
    seed.wrapping_add((source as u64 + 1).wrapping_mul(SOURCE_STRIDE))
}

/// `size` records cut by `weights` into whole numbers that add up to it: each its floor,
/// the records left to the largest remainders (the first source first on a tie). The
/// weights are summed as Python's `sum` sums floats since 3.12 (compensated), which the
/// shares of states saved by earlier releases were cut with there.
pub fn shares(size: u64, weights: &[f64]) -> Vec<u64> {
    let total = compensated_sum(weights);
    let exact: Vec<f64> = weights
        .iter()
        .map(|weight| size as f64 * weight / total)
        .collect();
    let mut out: Vec<u64> = exact.iter().map(|value| value.floor() as u64).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let rest = |at: usize| exact[at] - out[at] as f64;
        rest(b).total_cmp(&rest(a)).then(a.cmp(&b))
    });
    let given: u64 = out.iter().sum();
    for &at in order.iter().take(size.saturating_sub(given) as usize) {
        out[at] += 1;
    }
    out
}

/// The sum of `values`, with the error of each addition carried (Neumaier's), as CPython's
/// `sum` of floats does it.
fn compensated_sum(values: &[f64]) -> f64 {
    let (mut sum, mut carried) = (0.0f64, 0.0f64);
    for &value in values {
        let next = sum + value;
        carried += if sum.abs() >= value.abs() {
            (sum - next) + value
        } else {
            (value - next) + sum
        };
        sum = next;
    }
    if carried != 0.0 && carried.is_finite() {
        sum += carried;
    }
    sum
}

/// The readings of epoch `epoch` of a mixture of sources of `lengths` records whose shares
/// of the epoch are `shares`: each source read whole as many times as its share holds, each
/// time in an order of its own, then the first places of one more.
pub fn readings(lengths: &[u64], shares: &[u64], seed: u64, epoch: u64) -> Vec<Reading> {
    let mut out = Vec::new();
    for (source, (&length, &share)) in lengths.iter().zip(shares).enumerate() {
        if length == 0 {
            continue;
        }
        for repeat in 0..share.div_ceil(length) {
            out.push(Reading {
                source,
                seed: source_seed(seed, source),
                epoch: epoch.wrapping_mul(REPEATS).wrapping_add(repeat),
                first: length.min(share - repeat * length),
                offset: 0,
            });
        }
    }
    out
}

/// The order a lane takes its items from its readings in: `counts` items of each.
#[derive(Clone, Debug)]
pub struct Schedule {
    counts: Vec<u64>,
    /// When shuffled: a permutation of the lane's items, and where each reading's items
    /// start among them (an item comes from the reading whose run its place falls in).
    shuffled: Option<(Permutation, Vec<u64>)>,
}

impl Schedule {
    /// A lane's schedule of `counts` items of each reading, drawn from `key` when shuffled.
    fn new(counts: Vec<u64>, shuffled: bool, key: (u64, u64)) -> Schedule {
        let shuffled = shuffled.then(|| {
            let mut starts = Vec::with_capacity(counts.len());
            let mut total = 0;
            for &count in &counts {
                starts.push(total);
                total += count;
            }
            (Permutation::new(total, key.0, key.1), starts)
        });
        Schedule { counts, shuffled }
    }

    /// Items in all.
    pub fn len(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Whether the lane has no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The readings of the lane's items, in turn.
    pub fn turns(&self) -> Turns {
        Turns {
            total: self.len(),
            schedule: self.clone(),
            at: 0,
            taken: vec![0; self.counts.len()],
        }
    }

    /// Items of each reading among the lane's first `items`.
    pub fn prefix(&self, items: u64) -> Vec<u64> {
        let mut turns = self.turns();
        for _ in 0..items.min(self.len()) {
            turns.next();
        }
        turns.taken
    }
}

/// The readings of a lane's items, in turn ([`Schedule::turns`]).
pub struct Turns {
    schedule: Schedule,
    total: u64,
    at: u64,
    taken: Vec<u64>,
}

impl Iterator for Turns {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let counts = &self.schedule.counts;
        if self.at >= self.total {
            return None;
        }
        let reading = match &self.schedule.shuffled {
            Some((permutation, starts)) => {
                let place = permutation.apply(self.at);
                starts.partition_point(|&start| start <= place) - 1
            }
            // The reading furthest behind its share: the least (taken + 1/2) / count, the
            // first on a tie, compared exactly.
            None => (0..counts.len())
                .filter(|&at| self.taken[at] < counts[at])
                .min_by(|&a, &b| {
                    let key = |at: usize, other: usize| {
                        u128::from(2 * self.taken[at] + 1) * u128::from(counts[other])
                    };
                    key(a, b).cmp(&key(b, a)).then(a.cmp(&b))
                })?,
        };
        self.at += 1;
        self.taken[reading] += 1;
        Some(reading)
    }
}

/// A pass of a mixture: its readings, the passes of the epoch that stopped before it, and
/// how it deals them.
#[derive(Clone, Debug)]
pub struct Mixture {
    /// Each reading's order and the places of it the reading reads.
    readings: Vec<(Order, u64)>,
    /// How this pass deals: ranks, their loader workers, units.
    layout: Layout,
    shuffled: bool,
    /// What the schedules are drawn from: the mixture's seed and epoch.
    key: (u64, u64),
    /// Each reading's passes before this one, in its lanes' units.
    befores: Vec<Vec<Pass>>,
    /// Each reading's caps: the most each of its passes, then this one, dealt of what the
    /// passes before it left, where the weights ask for fewer places of it than are left
    /// ([`Share::capped`]).
    caps: Vec<Vec<Option<u64>>>,
    /// Each reading's source, order and first place ([`Reading`]).
    planned: Vec<Reading>,
    /// Each reading's positions this pass deals: what the passes before it left.
    lens: Vec<u64>,
}

/// What a mixture's readings are of, for a change of weights to plan more of them: each
/// source's length, and the mixture's seed and epoch.
pub struct Sources<'a> {
    /// Records each source holds.
    pub lengths: &'a [u64],
    /// The mixture's seed.
    pub seed: u64,
    /// The epoch.
    pub epoch: u64,
}

/// The layout each reading is dealt with: one lane a process, `(rank, worker)` rank-major.
fn lanes(layout: Layout) -> Layout {
    Layout {
        world: layout.world.max(1) * layout.workers.max(1),
        workers: 1,
        ..layout
    }
}

impl Mixture {
    /// A pass of `layout` over `readings` (each an order and the places of it read), after
    /// the mixture's passes `before` (of this epoch, the first first, each the units its
    /// ranks took) stopped; `key` (the mixture's seed and epoch) draws shuffled schedules.
    pub fn new(
        readings: Vec<(Order, u64)>,
        before: &[Pass],
        layout: Layout,
        shuffled: bool,
        key: (u64, u64),
    ) -> Mixture {
        let planned: Vec<Reading> = readings
            .iter()
            .map(|&(_, first)| Reading {
                source: 0,
                seed: 0,
                epoch: 0,
                first,
                offset: 0,
            })
            .collect();
        let sources = Sources {
            lengths: &[],
            seed: 0,
            epoch: 0,
        };
        let never = |_: &Reading| -> Result<Order, std::convert::Infallible> {
            unreachable!("no weights change")
        };
        match Mixture::reweighted(
            readings.into_iter().zip(planned).collect(),
            &sources,
            before,
            &[],
            layout,
            shuffled,
            key,
            never,
        ) {
            Ok(mixture) => mixture,
            Err(never) => match never {},
        }
    }

    /// [`Mixture::new`] over `readings` (each with its plan, as [`readings`] drew them from
    /// `sources`), where the weights changed as some passes began: `weights[i]`, where it
    /// is given, are the weights from pass `i` on (`before.len()`: this pass). The positions
    /// the passes before it left are then cut by those weights into each source's share of
    /// the rest of the epoch: a source's readings are read on to their share's end and no
    /// further, and a source whose share is more than its readings left reads on in the
    /// order of its last reading, then (drawn beyond its length) in orders of its own, which
    /// `make` makes.
    ///
    /// # Errors
    ///
    /// What `make` returns.
    #[allow(clippy::too_many_arguments)]
    pub fn reweighted<E>(
        readings: Vec<((Order, u64), Reading)>,
        sources: &Sources<'_>,
        before: &[Pass],
        weights: &[Option<Vec<f64>>],
        layout: Layout,
        shuffled: bool,
        key: (u64, u64),
        mut make: impl FnMut(&Reading) -> Result<Order, E>,
    ) -> Result<Mixture, E> {
        let count = readings.len();
        let (readings, planned) = readings.into_iter().unzip();
        let mut mixture = Mixture {
            befores: vec![Vec::new(); count],
            caps: vec![vec![None]; count],
            planned,
            lens: Vec::new(),
            readings,
            layout,
            shuffled,
            key,
        };
        // Places each reading is still to give this epoch, where its weights ask for fewer
        // than it has left; and what each had left as the last pass began.
        let mut wants: Vec<Option<u64>> = vec![None; count];
        let mut lefts_before: Vec<u64> = Vec::new();
        for number in 0..=before.len() {
            mixture.layout = before.get(number).map_or(layout, |pass| pass.layout);
            // What the passes so far left of each reading (this pass not capped yet).
            let mut lefts = mixture.dealt();
            for ((want, &was), &left) in wants.iter_mut().zip(&lefts_before).zip(&lefts) {
                if let Some(want) = want {
                    *want = want.saturating_sub(was - left);
                }
            }
            if let Some(weights) = weights.get(number).and_then(Option::as_ref) {
                mixture.replan(sources, weights, &mut lefts, &mut wants, &mut make)?;
            }
            for ((caps, want), &left) in mixture.caps.iter_mut().zip(&wants).zip(&lefts) {
                let last = caps.last_mut().expect("a cap a pass");
                *last = want.filter(|&want| want < left);
            }
            mixture.lens = mixture.dealt();
            lefts_before = lefts;
            let Some(pass) = before.get(number) else {
                break;
            };
            let dealt = lanes(pass.layout);
            let mut taken = vec![vec![0; dealt.world as usize]; mixture.readings.len()];
            for rank in 0..pass.layout.world.max(1) {
                let workers = pass.layout.workers.max(1);
                let schedules: Vec<Schedule> = (0..workers)
                    .map(|worker| mixture.schedule_of(number as u64, rank, worker))
                    .collect();
                let counts: Vec<u64> = schedules.iter().map(Schedule::len).collect();
                let items = taken_in_turn(&counts, pass.steps);
                for (worker, schedule) in schedules.iter().enumerate() {
                    let lane = (rank * workers) as usize + worker;
                    for (at, count) in schedule.prefix(items[worker]).into_iter().enumerate() {
                        taken[at][lane] = count;
                    }
                }
            }
            for ((befores, caps), lanes_taken) in
                mixture.befores.iter_mut().zip(&mut mixture.caps).zip(taken)
            {
                befores.push(Pass {
                    layout: dealt,
                    steps: 0,
                    lanes: Some(lanes_taken),
                });
                caps.push(None);
            }
        }
        Ok(mixture)
    }

    /// Cuts what the passes so far left of each reading (`lefts`, of which each is to give
    /// `wants` where that is less) by `weights` into each source's share of the rest of the
    /// epoch: each source's readings give it in turn, then more are added (see
    /// [`Mixture::reweighted`]), their `lefts` and `wants` with them.
    fn replan<E>(
        &mut self,
        sources: &Sources<'_>,
        weights: &[f64],
        lefts: &mut Vec<u64>,
        wants: &mut Vec<Option<u64>>,
        make: &mut impl FnMut(&Reading) -> Result<Order, E>,
    ) -> Result<(), E> {
        let rest: u64 = lefts
            .iter()
            .zip(wants.iter())
            .map(|(&left, want)| want.map_or(left, |want| want.min(left)))
            .sum();
        let wanted = shares(rest, weights);
        for (source, (&length, mut want)) in sources.lengths.iter().zip(wanted).enumerate() {
            let mut last = None;
            for at in 0..self.readings.len() {
                if self.planned[at].source != source {
                    continue;
                }
                let give = lefts[at].min(want);
                want -= give;
                wants[at] = Some(give);
                last = Some(at);
            }
            while want > 0 && length > 0 {
                let next = match last.map(|at| (at, self.planned[at])) {
                    // On in the order of its last reading, where that stopped.
                    Some((at, reading)) if reading.offset + reading.first < length => {
                        let offset = reading.offset + reading.first;
                        let first = want.min(length - offset);
                        let order = self.readings[at].0;
                        (
                            order,
                            Reading {
                                first,
                                offset,
                                ..reading
                            },
                        )
                    }
                    // In an order of its own: the next repeat.
                    found => {
                        let reading = Reading {
                            source,
                            seed: source_seed(sources.seed, source),
                            epoch: match found {
                                Some((_, reading)) => reading.epoch.wrapping_add(1),
                                None => sources.epoch.wrapping_mul(REPEATS),
                            },
                            first: want.min(length),
                            offset: 0,
                        };
                        (make(&reading)?, reading)
                    }
                };
                want -= next.1.first;
                last = Some(self.readings.len());
                self.readings.push((next.0, next.1.first));
                self.planned.push(next.1);
                self.befores.push(Vec::new());
                self.caps.push(vec![None]);
                lefts.push(next.1.first);
                wants.push(Some(next.1.first));
            }
        }
        Ok(())
    }

    /// Each reading's positions after its passes so far.
    fn dealt(&self) -> Vec<u64> {
        (0..self.readings.len())
            .map(|at| self.reading_share(at, lanes(self.layout), 0).len())
            .collect()
    }

    /// What lane `lane` of `dealt` (one lane a process) reads of reading `at` in this pass.
    fn reading_share(&self, at: usize, dealt: Layout, lane: u64) -> Share {
        let (order, first) = self.readings[at];
        Share::capped(
            order,
            first,
            &self.befores[at],
            &self.caps[at],
            dealt,
            lane,
            0,
        )
        .starting_at(self.planned[at].offset)
    }

    /// Each reading's plan: its source, order and places.
    pub fn planned(&self) -> &[Reading] {
        &self.planned
    }

    /// The layout of this pass.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Readings this pass deals from.
    pub fn readings(&self) -> usize {
        self.readings.len()
    }

    /// Units of each reading the lane of `(rank, worker)` holds in this pass.
    pub fn lane_counts(&self, rank: u64, worker: u64) -> Vec<u64> {
        let dealt = lanes(self.layout);
        let lane = rank * self.layout.workers.max(1) + worker;
        self.lens
            .iter()
            .map(|&len| dealt.lane(len, lane, 0).1)
            .collect()
    }

    /// Units the lane of `(rank, worker)` yields in this pass.
    pub fn lane_units(&self, rank: u64, worker: u64) -> u64 {
        self.lane_counts(rank, worker).iter().sum()
    }

    /// Units rank `rank` yields in this pass, all its workers together.
    pub fn rank_units(&self, rank: u64) -> u64 {
        (0..self.layout.workers.max(1))
            .map(|worker| self.lane_units(rank, worker))
            .sum()
    }

    /// Positions of the epoch this pass deals, every reading's together: what the passes
    /// before it left.
    pub fn left(&self) -> u64 {
        self.lens.iter().sum()
    }

    /// Whether no rank has a unit to read in this pass (see [`Share::is_spent`]).
    pub fn is_spent(&self) -> bool {
        let dealt = lanes(self.layout);
        self.lens.iter().all(|&len| dealt.most_units(len) == 0)
    }

    /// This pass, stopped once rank `rank` took `steps` units of it, ranks in step. A rank
    /// that took its whole share ends the pass (see [`Share::stopped_after`]).
    pub fn stopped_after(&self, rank: u64, steps: u64) -> Pass {
        let steps = if steps >= self.rank_units(rank) {
            (0..self.layout.world.max(1))
                .map(|rank| self.rank_units(rank))
                .max()
                .unwrap_or(0)
        } else {
            steps
        };
        Pass {
            layout: self.layout,
            steps,
            lanes: None,
        }
    }

    /// What the lane of `(rank, worker)` reads of reading `reading` in this pass.
    pub fn share(&self, reading: usize, rank: u64, worker: u64) -> Share {
        let lane = rank * self.layout.workers.max(1) + worker;
        self.reading_share(reading, lanes(self.layout), lane)
    }

    /// The order the lane of `(rank, worker)` takes its items from the readings in.
    pub fn schedule(&self, rank: u64, worker: u64) -> Schedule {
        let number = self.befores.first().map_or(0, Vec::len) as u64;
        self.schedule_of(number, rank, worker)
    }

    /// The schedule of `(rank, worker)`'s lane in the epoch's `number`th pass, this one.
    fn schedule_of(&self, number: u64, rank: u64, worker: u64) -> Schedule {
        let lane = rank * self.layout.workers.max(1) + worker;
        let (seed, epoch) = self.key;
        let lane_seed = mix(seed ^ mix(number.wrapping_add(1) ^ mix(lane ^ 0x6d69_7874)));
        Schedule::new(
            self.lane_counts(rank, worker),
            self.shuffled,
            (lane_seed, epoch),
        )
    }
}

#[cfg(test)]
mod reweighted;
#[cfg(test)]
mod tests;
