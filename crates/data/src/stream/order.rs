//! An epoch's order: which record each position of the epoch reads. The records' own order,
//! a global permutation of every record, or a block shuffle (chunks of neighbouring records
//! permuted, each window of chunks' records permuted among themselves), each computed
//! position by position (memory does not grow with the dataset) from the seed, the epoch and
//! the dataset's size alone: never from the number of ranks or workers.

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

    /// The record at position `at` (below [`len`](Order::len)) of the epoch.
    pub fn record(&self, at: u64) -> u64 {
        self.record_with(at, &mut Slots::default())
    }

    /// The records at `positions` (below [`len`](Order::len)), in order, into `out` (cleared
    /// first): as [`record`](Order::record) gives them one by one, the chunks' order of a
    /// block shuffle computed once for each chunk the positions read, not once a position.
    pub fn records(&self, positions: std::ops::Range<u64>, out: &mut Vec<u64>) {
        out.clear();
        let mut slots = Slots::default();
        let mut at = positions.start;
        // `LANES` positions at a time where they lie in one window (or one permutation).
        while at + LANES as u64 <= positions.end {
            let lanes: [u64; LANES] = std::array::from_fn(|lane| at + lane as u64);
            match &self.kind {
                Kind::InOrder => out.extend(lanes),
                Kind::Global(permutation) => out.extend(permutation.apply_lanes(lanes)),
                Kind::Block { .. } => {
                    let (number, first, permutation) = self.window(at);
                    if self.window(at + LANES as u64 - 1).0 == number {
                        let spreads = permutation.apply_lanes(lanes.map(|at| at - first));
                        out.extend(spreads.map(|spread| self.place(number, spread, &mut slots)));
                    } else {
                        out.extend(lanes.map(|at| self.record_with(at, &mut slots)));
                    }
                }
            }
            at += LANES as u64;
        }
        out.extend((at..positions.end).map(|at| self.record_with(at, &mut slots)));
    }

    fn record_with(&self, at: u64, slots: &mut Slots) -> u64 {
        match &self.kind {
            Kind::InOrder => at,
            Kind::Global(permutation) => permutation.apply(at),
            Kind::Block { .. } => {
                let (number, first, permutation) = self.window(at);
                self.place(number, permutation.apply(at - first), slots)
            }
        }
    }

    /// A block shuffle's window that position `at` is in: its number, its first position, and
    /// the permutation that spreads its records over it.
    fn window(&self, at: u64) -> (u64, u64, Permutation) {
        let Kind::Block {
            chunk, window, key, ..
        } = &self.kind
        else {
            unreachable!("only a block shuffle has windows")
        };
        let per_window = chunk * window;
        let number = at / per_window;
        let first = number * per_window;
        let size = per_window.min(self.len - first);
        (number, first, Permutation::keyed(size, mix(key ^ number)))
    }

    /// The record that place `spread` of window `number` of a block shuffle reads.
    fn place(&self, number: u64, spread: u64, slots: &mut Slots) -> u64 {
        let Kind::Block {
            chunk,
            window,
            chunks,
            ..
        } = &self.kind
        else {
            unreachable!("only a block shuffle has windows")
        };
        let slot = number * window + spread / chunk;
        // The whole chunks are those the chunks' order permutes.
        let whole = chunks.len;
        let chunk_number = if slot < whole {
            slots.get(slot, |slot| chunks.apply(slot))
        } else {
            whole
        };
        chunk_number * chunk + spread % chunk
    }

    /// The chunks of `chunk` records (sorted, each once) that the positions `positions`
    /// read. A block shuffle's whole windows, read in chunks of its own size, are their
    /// chunks' places in the chunks' order (a few dozen, not a window of records); the
    /// records' own order is a run of chunks; any other case goes position by position.
    pub fn chunks_read(&self, positions: std::ops::Range<u64>, chunk: u64) -> Vec<u64> {
        let chunk = chunk.max(1);
        let (start, end) = (positions.start, positions.end.min(self.len));
        if start >= end {
            return Vec::new();
        }
        match &self.kind {
            Kind::InOrder => return (start / chunk..(end - 1) / chunk + 1).collect(),
            Kind::Block {
                chunk: own,
                window,
                chunks,
                ..
            } if *own == chunk => {
                let per_window = chunk * window;
                if start % per_window == 0 && (end % per_window == 0 || end == self.len) {
                    let whole = chunks.len;
                    let slots = start / chunk..end.div_ceil(chunk);
                    let mut numbers: Vec<u64> = slots
                        .map(|slot| {
                            if slot < whole {
                                chunks.apply(slot)
                            } else {
                                whole
                            }
                        })
                        .collect();
                    numbers.sort_unstable();
                    return numbers;
                }
            }
            _ => {}
        }
        let mut numbers = Vec::new();
        self.records(start..end, &mut numbers);
        numbers.iter_mut().for_each(|record| *record /= chunk);
        numbers.sort_unstable();
        numbers.dedup();
        numbers
    }

    /// Whether a unit of a group reads from all over the group (a block shuffle's window
    /// spreads every chunk over it), so that its first unit needs nearly all of the group's
    /// chunks.
    pub fn spreads_groups(&self) -> bool {
        matches!(self.kind, Kind::Block { .. })
    }

    /// The first position past the group that `at` is in: the positions that read the same
    /// bytes as `at` end there (a window of a block shuffle, a chunk of `chunk` records in
    /// the records' own order, `at + 1` in a global permutation).
    pub fn group_end(&self, at: u64, chunk: u64) -> u64 {
        let end = match &self.kind {
            Kind::InOrder => (at / chunk.max(1) + 1) * chunk.max(1),
            Kind::Global(_) => at + 1,
            Kind::Block { chunk, window, .. } => (at / (chunk * window) + 1) * chunk * window,
        };
        end.min(self.len)
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
                let start = number as u64 * chunk * window;
                assert_eq!(
                    order.group_end(start, chunk),
                    (start + chunk * window).min(len)
                );
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
    fn the_chunks_a_range_reads_are_those_of_its_records() {
        for (len, shuffle) in orders_of_every_kind() {
            let order = Order::new(len, shuffle, 4, 1);
            let each = all(&order);
            // Whole windows (the last one short), parts of them, across them; chunks of the
            // order's own size and of another.
            for (start, end) in [(0, 50), (50, 100), (950, len), (0, len), (3, 40), (40, 77)] {
                let (start, end) = (start.min(len), end.min(len));
                for chunk in [4, 10, 7] {
                    let mut expected: Vec<u64> = each[start as usize..end as usize]
                        .iter()
                        .map(|record| record / chunk)
                        .collect();
                    expected.sort_unstable();
                    expected.dedup();
                    let got = order.chunks_read(start..end, chunk);
                    assert_eq!(got, expected, "{shuffle:?} {start}..{end} by {chunk}");
                }
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
