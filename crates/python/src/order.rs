//! The order records are read in for training: an epoch's permutation of every record
//! (computed index by index, so memory does not grow with the dataset), each rank's share of
//! it and each data-loader worker's share of that.

/// A pseudorandom permutation of `0..len`, a different one for each key: a balanced Feistel
/// network over the smallest even number of bits that holds `len`, walked until it lands
/// inside `0..len` (the domain is at most four times `len`, so a few steps at most on
/// average). Six rounds of a 64-bit mixer: what a shuffle needs, not cryptography.
#[derive(Clone, Copy, Debug)]
pub struct Permutation {
    len: u64,
    half_bits: u32,
    key: u64,
}

/// SplitMix64's finaliser: every input bit moves every output bit.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

const ROUNDS: u64 = 6;

impl Permutation {
    /// The permutation of `0..len` for `seed` and `epoch`.
    pub fn new(len: u64, seed: u64, epoch: u64) -> Permutation {
        let bits = 64 - len.saturating_sub(1).leading_zeros();
        Permutation {
            len,
            half_bits: bits.div_ceil(2).max(1),
            key: mix(mix(seed ^ 0x6f66_636f_6e76_6572).wrapping_add(epoch)),
        }
    }

    fn step(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for round in 0..ROUNDS {
            let f = mix(right
                ^ self
                    .key
                    .wrapping_add(round.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
            (left, right) = (right, (left ^ f) & mask);
        }
        (left << self.half_bits) | right
    }

    /// Where position `at` (below `len`) goes.
    pub fn apply(&self, at: u64) -> u64 {
        let mut x = at;
        loop {
            x = self.step(x);
            if x < self.len {
                return x;
            }
        }
    }
}

/// What one worker of one rank reads in an epoch.
#[derive(Clone, Copy, Debug)]
pub struct Share {
    /// The epoch's order: `None` for the records' own.
    pub permutation: Option<Permutation>,
    /// The rank's positions in the epoch's order.
    pub rank_start: u64,
    pub rank_end: u64,
    /// Records of the rank's share already consumed (a resumed epoch).
    pub skip: u64,
    /// Records a unit holds (a batch, or 1).
    pub unit: u64,
    /// Whether a last unit shorter than `unit` is dropped.
    pub drop_partial: bool,
    pub worker: u64,
    pub workers: u64,
}

/// The positions of rank `rank` of `world` in an epoch of `total` records: equal counts,
/// the remainder dropped (`drop_last`), or every record once, counts differing by one.
pub fn rank_span(total: u64, rank: u64, world: u64, drop_last: bool) -> (u64, u64) {
    if drop_last {
        let each = total / world;
        (rank * each, (rank + 1) * each)
    } else {
        let at = |rank: u64| (u128::from(total) * u128::from(rank) / u128::from(world)) as u64;
        (at(rank), at(rank + 1))
    }
}

impl Share {
    /// How many units the rank yields from `skip` on, all workers together.
    pub fn units(&self) -> u64 {
        let left = (self.rank_end - self.rank_start).saturating_sub(self.skip);
        if self.drop_partial {
            left / self.unit
        } else {
            left.div_ceil(self.unit)
        }
    }

    /// The records of the rank's `unit`th unit (counted from `skip`), as indices of the
    /// dataset; the units are dealt to the workers in turn, unit `k` to worker `k % workers`,
    /// so that a loader that takes one unit from each worker in turn yields them in order.
    pub fn unit_records(&self, unit: u64, out: &mut Vec<u64>) {
        out.clear();
        let first = self.rank_start + self.skip + unit * self.unit;
        let end = (first + self.unit).min(self.rank_end);
        match &self.permutation {
            None => out.extend(first..end),
            Some(permutation) => out.extend((first..end).map(|at| permutation.apply(at))),
        }
    }

    /// The units of this worker, in order.
    #[cfg(test)]
    fn worker_units(&self) -> impl Iterator<Item = u64> {
        (self.worker..self.units()).step_by(self.workers as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permutation_is_one_and_depends_on_seed_and_epoch() {
        for len in [0, 1, 2, 3, 7, 64, 1000, 4097] {
            let permutation = Permutation::new(len, 1, 0);
            let mut seen: Vec<u64> = (0..len).map(|at| permutation.apply(at)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..len).collect::<Vec<_>>(), "{len}");
        }
        let order = |seed, epoch| -> Vec<u64> {
            let permutation = Permutation::new(1000, seed, epoch);
            (0..1000).map(|at| permutation.apply(at)).collect()
        };
        assert_eq!(order(1, 0), order(1, 0));
        assert_ne!(order(1, 0), order(1, 1));
        assert_ne!(order(1, 0), order(2, 0));
        assert_ne!(order(1, 0), (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn ranks_and_workers_share_every_record_once() {
        for (total, world, workers, unit, drop_last) in [
            (103, 2, 2, 1, false),
            (103, 3, 2, 8, true),
            (5, 4, 3, 2, false),
            (0, 2, 2, 4, false),
        ] {
            let permutation = Some(Permutation::new(total, 9, 0));
            let mut all = Vec::new();
            let mut counts = Vec::new();
            for rank in 0..world {
                let (rank_start, rank_end) = rank_span(total, rank, world, drop_last);
                let mut count = 0;
                for worker in 0..workers {
                    let share = Share {
                        permutation,
                        rank_start,
                        rank_end,
                        skip: 0,
                        unit,
                        drop_partial: false,
                        worker,
                        workers,
                    };
                    let mut records = Vec::new();
                    for unit in share.worker_units() {
                        share.unit_records(unit, &mut records);
                        count += records.len();
                        all.extend_from_slice(&records);
                    }
                }
                counts.push(count);
            }
            all.sort_unstable();
            let before = all.len();
            all.dedup();
            assert_eq!(all.len(), before, "a record read twice");
            if drop_last {
                assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
                assert_eq!(all.len() as u64, total / world * world);
            } else {
                assert_eq!(all.len() as u64, total);
                let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
                assert!(max - min <= 1, "{counts:?}");
            }
        }
    }
}
