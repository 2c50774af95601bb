//! Who reads which positions of an epoch. The positions left (from where the epoch stands on,
//! a count of records of its order every rank together has consumed) are cut into units (a
//! batch, or a record); unit `u` goes to rank `u % world`, and a rank's units to its loader's
//! workers in turn. Ranks that step together have then consumed a prefix of the epoch's
//! order, whatever their number: a state saved by any rank of any layout is that prefix's
//! length, and resumes on any other layout with the rest read exactly once.

use crate::stream::order::Order;

/// What one worker of one rank reads of an epoch.
#[derive(Clone, Copy, Debug)]
pub struct Share {
    /// The epoch's order.
    pub order: Order,
    /// Positions of the order consumed before this share's start (by every rank together).
    pub start: u64,
    /// This rank, of `world`.
    pub rank: u64,
    /// Ranks reading the epoch.
    pub world: u64,
    /// This loader worker of the rank, of `workers`.
    pub worker: u64,
    /// Loader workers of the rank.
    pub workers: u64,
    /// Records a unit holds (a batch, or 1).
    pub unit: u64,
    /// Whether every rank yields the same number of whole units, the rest of the epoch
    /// dropped; else every position comes once, the last unit maybe shorter.
    pub drop_last: bool,
}

impl Share {
    /// Whole rounds left (a unit for each rank), and the positions left after them.
    fn rounds(&self) -> (u64, u64) {
        let left = self.order.len().saturating_sub(self.start);
        let round = self.unit.max(1) * self.world.max(1);
        (left / round, if self.drop_last { 0 } else { left % round })
    }

    /// The positions of the last, short round this rank reads: its remainder split as
    /// evenly as it goes, so that ranks' counts differ by one record at most.
    fn tail(&self) -> std::ops::Range<u64> {
        let (rounds, rest) = self.rounds();
        let first = self.start + rounds * self.unit.max(1) * self.world.max(1);
        let at = |rank: u64| first + rest * rank / self.world.max(1);
        at(self.rank)..at(self.rank + 1)
    }

    /// How many units the rank yields, all its workers together.
    pub fn units(&self) -> u64 {
        self.rounds().0 + u64::from(!self.tail().is_empty())
    }

    /// The positions of the rank's `unit`th unit, in the epoch's order.
    pub fn positions(&self, unit: u64) -> std::ops::Range<u64> {
        if unit >= self.rounds().0 {
            return self.tail();
        }
        let global = unit * self.world + self.rank;
        let first = self.start + global * self.unit;
        first..first + self.unit
    }

    /// The records of the rank's `unit`th unit. A rank's units are dealt to its workers in
    /// turn, unit `k` to worker `k % workers`, so that a loader that takes one unit from each
    /// worker in turn yields them in the rank's order.
    pub fn unit_records(&self, unit: u64, out: &mut Vec<u64>) {
        self.order.records(self.positions(unit), out);
    }

    /// The units of this worker, in order.
    pub fn worker_units(&self) -> impl Iterator<Item = u64> {
        (self.worker..self.units()).step_by(self.workers.max(1) as usize)
    }

    /// Where the epoch stands once every rank has consumed `records` records of its share
    /// (whole units, ranks in step): the count of positions consumed from the epoch's start.
    pub fn consumed_after(&self, records: u64) -> u64 {
        (self.start + records * self.world).min(self.order.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::order::Shuffle;

    fn read(
        order: Order,
        start: u64,
        world: u64,
        workers: u64,
        unit: u64,
        drop_last: bool,
    ) -> Vec<Vec<u64>> {
        (0..world)
            .map(|rank| {
                let mut records = Vec::new();
                for worker in 0..workers {
                    let share = Share {
                        order,
                        start,
                        rank,
                        world,
                        worker,
                        workers,
                        unit,
                        drop_last,
                    };
                    let mut got = Vec::new();
                    for unit in share.worker_units() {
                        share.unit_records(unit, &mut got);
                        records.extend_from_slice(&got);
                    }
                }
                records
            })
            .collect()
    }

    #[test]
    fn ranks_and_workers_share_every_record_once() {
        for shuffle in [
            Shuffle::None,
            Shuffle::Global,
            Shuffle::Block {
                chunk: 4,
                window: 3,
            },
        ] {
            for (total, world, workers, unit, drop_last) in [
                (103, 2, 2, 1, false),
                (103, 3, 2, 8, true),
                (5, 4, 3, 2, false),
                (0, 2, 2, 4, false),
            ] {
                let order = Order::new(total, shuffle, 9, 0);
                let ranks = read(order, 0, world, workers, unit, drop_last);
                let counts: Vec<usize> = ranks.iter().map(Vec::len).collect();
                let mut all: Vec<u64> = ranks.concat();
                all.sort_unstable();
                let before = all.len();
                all.dedup();
                assert_eq!(all.len(), before, "a record read twice");
                if drop_last {
                    assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
                    assert_eq!(all.len() as u64, total / (unit * world) * unit * world);
                } else {
                    assert_eq!(all.len() as u64, total);
                    let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
                    assert!(max - min <= 1, "{counts:?}");
                }
            }
        }
    }

    #[test]
    fn a_state_saved_on_two_ranks_resumes_on_four_or_one_with_the_rest_once() {
        let order = Order::new(
            1000,
            Shuffle::Block {
                chunk: 16,
                window: 4,
            },
            3,
            2,
        );
        let two = Share {
            order,
            start: 0,
            rank: 0,
            world: 2,
            worker: 0,
            workers: 1,
            unit: 8,
            drop_last: false,
        };
        // Two ranks have each consumed 5 batches of 8: the first 80 positions.
        let state = two.consumed_after(40);
        let mut read_before: Vec<u64> = (0..2)
            .flat_map(|rank| {
                let share = Share { rank, ..two };
                (0..5)
                    .flat_map(move |unit| share.positions(unit))
                    .map(|at| order.record(at))
            })
            .collect();
        for (world, workers, unit) in [(4, 2, 4), (1, 3, 16), (3, 1, 1)] {
            let rest = read(order, state, world, workers, unit, false).concat();
            let mut all: Vec<u64> = rest
                .into_iter()
                .chain(read_before.iter().copied())
                .collect();
            all.sort_unstable();
            assert_eq!(
                all,
                (0..1000).collect::<Vec<_>>(),
                "{world} {workers} {unit}"
            );
        }
        read_before.sort_unstable();
        assert_eq!(read_before.len(), 80);
    }
}
