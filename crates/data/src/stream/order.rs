//! An epoch's order: which record each position of the epoch reads. The records' own order,
//! a global permutation of every record, or a block shuffle (chunks of neighbouring records
//! permuted, each window of chunks' records permuted among themselves), each computed
//! position by position (memory does not grow with the dataset) from the seed, the epoch and
//! the dataset's size alone. A block shuffle's windows are counted from the start of each
//! lane (the positions one process reads, see `share`), so that a process's records are its
//! lane's alone; read as one lane, an epoch's order depends on nothing else.

use std::ops::Range;

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
pub(crate) fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

const ROUNDS: u64 = 6;

impl Permutation {
    /// The permutation of `0..len` for `seed` and `epoch`.
    pub fn new(len: u64, seed: u64, epoch: u64) -> Permutation {
        Permutation::keyed(
            len,
            mix(mix(seed ^ 0x6f66_636f_6e76_6572).wrapping_add(epoch)),
        )
    }

    fn keyed(len: u64, key: u64) -> Permutation {
        let bits = 64 - len.saturating_sub(1).leading_zeros();
        Permutation {
            len,
            half_bits: bits.div_ceil(2).max(1),
            key,
        }
    }

    /// One pass of the network over each of `x`: the lanes are independent, so the
    /// processor works on them side by side (a round of one waits on the last round's mix).
    fn step<const N: usize>(&self, x: [u64; N]) -> [u64; N] {
        let mask = (1u64 << self.half_bits) - 1;
        let mut left = x.map(|x| x >> self.half_bits);
        let mut right = x.map(|x| x & mask);
        for round in 0..ROUNDS {
            let key = self
                .key
                .wrapping_add(round.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            for lane in 0..N {
                let f = mix(right[lane] ^ key);
                (left[lane], right[lane]) = (right[lane], (left[lane] ^ f) & mask);
            }
        }
        std::array::from_fn(|lane| (left[lane] << self.half_bits) | right[lane])
    }

    /// Where position `at` (below `len`) goes.
    pub fn apply(&self, at: u64) -> u64 {
        self.apply_lanes([at])[0]
    }

    /// Where each of the positions `at` (below `len`) goes, worked on side by side.
    fn apply_lanes<const N: usize>(&self, at: [u64; N]) -> [u64; N] {
        let mut x = self.step(at);
        // A lane that left 0..len walks on (a few steps at most on average); the others'
        // further steps are thrown away.
        while x.iter().any(|&x| x >= self.len) {
            let next = self.step(x);
            for lane in 0..N {
                if x[lane] >= self.len {
                    x[lane] = next[lane];
                }
            }
        }
        x
    }
}

/// Positions of an order computed side by side.
const LANES: usize = 4;

/// How an epoch orders its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shuffle {
    /// The records' own order.
    None,
    /// A permutation of every record.
    Global,
    /// Chunks of `chunk` neighbouring records permuted, and the records of each `window`
    /// chunks in a row of that order permuted among themselves.
    Block {
        /// Records a chunk holds.
        chunk: u64,
        /// Chunks a window holds.
        window: u64,
    },
}

/// Bytes a chunk of a block shuffle aims at: a read large enough that a store's latency is
/// small beside its transfer.
pub(crate) const CHUNK_BYTES: u64 = 4 << 20;
/// Bytes a window aims at by default: the bytes a reader holds to serve it (records spread
/// over the whole window need all its chunks at once).
pub(crate) const WINDOW_BYTES: u64 = 256 << 20;
/// Records a window holds at most by default: MosaicML Streaming's block.
pub(crate) const WINDOW_RECORDS: u64 = 1 << 18;
/// Chunks a window holds at least, so that a batch mixes that many places of the data.
pub(crate) const WINDOW_CHUNKS: u64 = 16;

impl Shuffle {
    /// A block shuffle of a dataset of `records` records of `bytes` bytes in all, with
    /// windows of `block` records (`None`: 256 MiB of records, at most 262,144: the
    /// `WINDOW_BYTES` and `WINDOW_RECORDS` of this module); chunks of 4 MiB (`CHUNK_BYTES`),
    /// at most a sixteenth (`WINDOW_CHUNKS`) of the window.
    pub fn block(records: u64, bytes: u64, block: Option<u64>) -> Shuffle {
        let mean = bytes.checked_div(records).unwrap_or(1).max(1);
        let window = block
            .unwrap_or_else(|| (WINDOW_BYTES / mean).min(WINDOW_RECORDS))
            .max(1);
        let chunk = (CHUNK_BYTES / mean).min(window / WINDOW_CHUNKS).max(1);
        Shuffle::Block {
            chunk,
            window: window.div_ceil(chunk),
        }
    }
}

/// Places of a block shuffle's chunks already computed (slot, chunk), a few dozen at most:
/// a unit of positions reads the chunks of one window or two, each many times.
struct Slots {
    known: [(u64, u64); SLOTS_KNOWN],
}

const SLOTS_KNOWN: usize = 64;

impl Default for Slots {
    fn default() -> Slots {
        // No slot is `u64::MAX`: a slot is below the dataset's number of chunks.
        Slots {
            known: [(u64::MAX, 0); SLOTS_KNOWN],
        }
    }
}

impl Slots {
    fn get(&mut self, slot: u64, compute: impl FnOnce(u64) -> u64) -> u64 {
        let entry = &mut self.known[slot as usize % SLOTS_KNOWN];
        if entry.0 != slot {
            *entry = (slot, compute(slot));
        }
        entry.1
    }
}

/// An epoch's order of `len` records.
#[derive(Clone, Copy, Debug)]
pub struct Order {
    len: u64,
    kind: Kind,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    InOrder,
    Global(Permutation),
    Block {
        /// Records a chunk holds (the last one of the dataset fewer).
        chunk: u64,
        /// Chunks a window holds.
        window: u64,
        /// The order of the whole chunks (the short last one, if any, stays last).
        chunks: Permutation,
        /// The key each window's permutation is drawn from.
        key: u64,
    },
}

impl Order {
    /// The order of epoch `epoch` over `len` records.
    pub fn new(len: u64, shuffle: Shuffle, seed: u64, epoch: u64) -> Order {
        let kind = match shuffle {
            Shuffle::None => Kind::InOrder,
            Shuffle::Global => Kind::Global(Permutation::new(len, seed, epoch)),
            Shuffle::Block { chunk, window } => {
                let chunk = chunk.max(1);
                Kind::Block {
                    chunk,
                    window: window.max(1),
                    chunks: Permutation::new(len / chunk, seed, epoch),
                    key: mix(mix(seed ^ 0x626c_6f63_6b73).wrapping_add(epoch)),
                }
            }
        };
        Order { len, kind }
    }

    /// Records in the epoch.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the epoch has no record.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The record at position `at` (below [`len`](Order::len)) of the epoch read as one
    /// lane (one process reading all of it).
    pub fn record(&self, at: u64) -> u64 {
        let mut out = Vec::new();
        self.records(at..at + 1, &mut out);
        out[0]
    }

    /// The records at `positions` (below [`len`](Order::len)) of the epoch read as one lane,
    /// in order, into `out` (cleared first): as [`record`](Order::record) gives them one by one.
    pub fn records(&self, positions: Range<u64>, out: &mut Vec<u64>) {
        self.spread(0..self.len, positions, out);
        self.place(out);
    }

    /// Positions a window of a block shuffle holds; `None` for the other orders.
    pub fn window_len(&self) -> Option<u64> {
        match self.kind {
            Kind::Block { chunk, window, .. } => Some(chunk * window),
            _ => None,
        }
    }

    /// The positions of `lane` that its positions `positions` read, into `out` (cleared
    /// first): a block shuffle spreads each window of the lane (counted from the lane's start,
    /// the last one cut at its end) over itself; the other orders read the positions as they
    /// are. A lane's positions read the lane's positions and no other, so that a process
    /// given a lane needs its bytes alone.
    pub fn spread(&self, lane: Range<u64>, positions: Range<u64>, out: &mut Vec<u64>) {
        out.clear();
        let Kind::Block { key, .. } = self.kind else {
            out.extend(positions);
            return;
        };
        let per_window = self.window_len().unwrap_or(1).max(1);
        // Windows of lanes other than the first are drawn apart from theirs (`mix(0)` is 0:
        // an epoch read as one lane spreads as it always has).
        let lane_key = key ^ mix(lane.start);
        debug_assert!(positions.start >= lane.start && positions.end <= lane.end);
        let mut at = positions.start;
        while at < positions.end {
            let number = (at - lane.start) / per_window;
            let first = lane.start + number * per_window;
            let end = (first + per_window).min(lane.end);
            let permutation = Permutation::keyed(end - first, mix(lane_key ^ number));
            let stop = end.min(positions.end);
            // `LANES` positions at a time, worked on side by side.
            while at + LANES as u64 <= stop {
                let lanes: [u64; LANES] = std::array::from_fn(|lane| at - first + lane as u64);
                out.extend(permutation.apply_lanes(lanes).map(|spread| first + spread));
                at += LANES as u64;
            }
            out.extend((at..stop).map(|at| first + permutation.apply(at - first)));
            at = stop;
        }
    }

    /// The position of `lane` that its position `at` reads: [`spread`](Order::spread) of one.
    pub fn spread_at(&self, lane: Range<u64>, at: u64) -> u64 {
        let Kind::Block { key, .. } = self.kind else {
            return at;
        };
        let per_window = self.window_len().unwrap_or(1).max(1);
        let number = (at - lane.start) / per_window;
        let first = lane.start + number * per_window;
        let end = (first + per_window).min(lane.end);
        let permutation = Permutation::keyed(end - first, mix(key ^ mix(lane.start) ^ number));
        first + permutation.apply(at - first)
    }

    /// The record each of `positions` (of the epoch's order before a block shuffle's windows
    /// spread them) reads, in place: the position itself in the records' own order, its
    /// place in the permutation of a global shuffle, its place in its chunk's place in the
    /// chunks' order of a block shuffle (the short last chunk, if any, stays last).
    pub fn place(&self, positions: &mut [u64]) {
        match &self.kind {
            Kind::InOrder => {}
            Kind::Global(permutation) => {
                let mut groups = positions.chunks_exact_mut(LANES);
                for group in &mut groups {
                    let lanes: [u64; LANES] = std::array::from_fn(|lane| group[lane]);
                    group.copy_from_slice(&permutation.apply_lanes(lanes));
                }
                for at in groups.into_remainder() {
                    *at = permutation.apply(*at);
                }
            }
            Kind::Block { chunk, chunks, .. } => {
                let mut slots = Slots::default();
                for at in positions {
                    *at = self.chunk_of(*at / chunk, &mut slots, chunks) * chunk + *at % chunk;
                }
            }
        }
    }

    /// The chunk that slot `slot` of a block shuffle's chunks' order holds.
    fn chunk_of(&self, slot: u64, slots: &mut Slots, chunks: &Permutation) -> u64 {
        // The whole chunks are those the chunks' order permutes.
        if slot < chunks.len {
            slots.get(slot, |slot| chunks.apply(slot))
        } else {
            chunks.len
        }
    }

    /// The records the positions `positions` (before windows spread them) read, as runs of
    /// neighbouring records (in no particular order): the positions themselves in the
    /// records' own order, the chunks they fall in (or the parts of chunks) in a block
    /// shuffle; `None` for a global shuffle, whose records lie anywhere.
    pub fn runs(&self, positions: Range<u64>, out: &mut Vec<Range<u64>>) -> Option<()> {
        match &self.kind {
            Kind::InOrder => out.push(positions),
            Kind::Global(_) => return None,
            Kind::Block { chunk, chunks, .. } => {
                let mut slots = Slots::default();
                let mut at = positions.start;
                while at < positions.end {
                    let slot = at / chunk;
                    let end = ((slot + 1) * chunk).min(positions.end);
                    let first = self.chunk_of(slot, &mut slots, chunks) * chunk;
                    out.push(first + at % chunk..first + at % chunk + (end - at));
                    at = end;
                }
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(order: &Order) -> Vec<u64> {
        (0..order.len()).map(|at| order.record(at)).collect()
    }

    /// Orders of each kind: block shuffles with windows of more chunks than the slots
    /// remembered (100 > 64) and of fewer, with and without a short last chunk.
    fn orders_of_every_kind() -> [(u64, Shuffle); 6] {
        let block = |chunk, window| Shuffle::Block { chunk, window };
        [
            (1000, Shuffle::None),
            (1000, Shuffle::Global),
            (10_007, block(7, 100)),
            (1000, block(10, 5)),
            (1003, block(10, 5)),
            (103, block(4, 3)),
        ]
    }

    fn is_permutation(mut seen: Vec<u64>) -> bool {
        seen.sort_unstable();
        seen == (0..seen.len() as u64).collect::<Vec<_>>()
    }

    #[test]
    fn a_permutation_is_one_and_depends_on_seed_and_epoch() {
        for len in [0, 1, 2, 3, 7, 64, 1000, 4097] {
            let permutation = Permutation::new(len, 1, 0);
            assert!(is_permutation(
                (0..len).map(|at| permutation.apply(at)).collect()
            ));
        }
        let order = |seed, epoch| all(&Order::new(1000, Shuffle::Global, seed, epoch));
        assert_eq!(order(1, 0), order(1, 0));
        assert_ne!(order(1, 0), order(1, 1));
        assert_ne!(order(1, 0), order(2, 0));
        assert_ne!(order(1, 0), (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_block_shuffle_reads_every_record_once_a_window_of_chunks_at_a_time() {
        for (len, chunk, window) in [(0, 4, 2), (1, 4, 2), (103, 4, 3), (100, 10, 2), (7, 10, 4)] {
            let shuffle = Shuffle::Block { chunk, window };
            let order = Order::new(len, shuffle, 5, 1);
            let records = all(&order);
            assert!(is_permutation(records.clone()), "{len} {chunk} {window}");
            // Each window's positions read exactly the records of `window` chunks.
            for (number, positions) in records.chunks((chunk * window) as usize).enumerate() {
                let mut chunks: Vec<u64> = positions.iter().map(|r| r / chunk).collect();
                chunks.sort_unstable();
                chunks.dedup();
                assert!(chunks.len() as u64 <= window, "window {number}: {chunks:?}");
            }
        }
        let order = |epoch| {
            all(&Order::new(
                1000,
                Shuffle::Block {
                    chunk: 10,
                    window: 5,
                },
                3,
                epoch,
            ))
        };
        assert_eq!(order(0), order(0));
        assert_ne!(order(0), order(1));
        // A window's first records come from several of its chunks, not one.
        let first: Vec<u64> = order(0)[..10].iter().map(|r| r / 10).collect();
        assert!(first.iter().any(|&c| c != first[0]), "{first:?}");
    }

    #[test]
    fn records_of_a_range_are_those_of_each_position() {
        for (len, shuffle) in orders_of_every_kind() {
            let order = Order::new(len, shuffle, 11, 2);
            let each = all(&order);
            let mut got = Vec::new();
            for (start, count) in [(0, len), (0, 1), (5, 256), (len - 3, 3), (97, 700)] {
                let end = (start + count).min(len);
                order.records(start..end, &mut got);
                assert_eq!(
                    got,
                    each[start as usize..end as usize],
                    "{shuffle:?} {start}"
                );
            }
        }
    }

    #[test]
    fn the_runs_of_positions_are_the_records_they_read_once_spread_over_a_lane() {
        for (len, shuffle) in orders_of_every_kind() {
            let order = Order::new(len, shuffle, 4, 1);
            // Lanes of the whole epoch and of parts of it, windows whole and cut short.
            for lane in [
                0..len,
                0..len / 3,
                len / 3..len,
                7.min(len)..(len / 2).max(7.min(len)),
            ] {
                let mut spread = Vec::new();
                order.spread(lane.clone(), lane.clone(), &mut spread);
                let mut sorted = spread.clone();
                sorted.sort_unstable();
                assert_eq!(
                    sorted,
                    lane.clone().collect::<Vec<_>>(),
                    "{shuffle:?} {lane:?}"
                );
                order.place(&mut spread);
                spread.sort_unstable();
                let mut runs = Vec::new();
                if order.runs(lane.clone(), &mut runs).is_none() {
                    assert_eq!(shuffle, Shuffle::Global);
                    continue;
                }
                let mut from_runs: Vec<u64> = runs.into_iter().flatten().collect();
                from_runs.sort_unstable();
                assert_eq!(from_runs, spread, "{shuffle:?} {lane:?}");
            }
        }
    }

    #[test]
    fn the_default_block_bounds_the_window_in_bytes_and_records() {
        // 400 k records of 100 bytes: Mosaic's 262,144 records, 16 chunks.
        let Shuffle::Block { chunk, window } = Shuffle::block(400_000, 40_000_000, None) else {
            panic!()
        };
        assert_eq!((chunk, window), (16_384, 16));
        // Records of 100 KiB: 256 MiB a window, chunks of 4 MiB.
        let Shuffle::Block { chunk, window } = Shuffle::block(2_000, 2_000 * 102_400, None) else {
            panic!()
        };
        assert_eq!(chunk * 102_400, 40 * 102_400);
        assert!(
            chunk * window * 102_400 <= (WINDOW_BYTES + CHUNK_BYTES),
            "{chunk} {window}"
        );
        assert_eq!(
            Shuffle::block(10, 10, Some(4)),
            Shuffle::Block {
                chunk: 1,
                window: 4
            }
        );
    }
}
