//! Who reads which positions of an epoch. The positions a pass deals are cut into one
//! *lane* of neighbouring positions for each process, `(rank, worker)`: each rank a run of
//! them (the same number of whole units with `drop_last`, else counts one record apart at
//! most), each run cut into the rank's units (a batch, or a record), and each of the rank's
//! loader workers a run of those units. A process reads its lane's records alone (a block
//! shuffle's windows are counted from the lane's start), so that processes need different
//! bytes: a job fetches the dataset about once, not once a process.
//!
//! A loader takes one unit from each worker in turn, so when every rank has consumed `steps`
//! units, worker `w`'s lane has given its first `ceil((steps - w) / workers)`. A stopped pass
//! is a few integers ([`Pass`]: its layout and its steps); what it left, each lane's rest in
//! turn and then what `drop_last` set aside, is what the next pass deals, on any layout. A
//! state is the passes of the epoch so far, each a few integers.

use std::ops::Range;
use std::sync::Arc;

use crate::stream::order::Order;

/// How a pass deals its positions: to `world` ranks of `workers` loader workers each, in
/// units of `unit` records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Ranks reading the epoch.
    pub world: u64,
    /// Loader workers of a rank.
    pub workers: u64,
    /// Records a unit holds (a batch, or 1).
    pub unit: u64,
    /// Whether every rank yields the same number of whole units, the rest of the pass left
    /// for another epoch; else every position comes once, a rank's last unit maybe shorter.
    pub drop_last: bool,
}

/// A pass that stopped: its layout, and the units each rank consumed of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pass {
    /// The layout that read it.
    pub layout: Layout,
    /// Units each rank consumed, its workers' in turn.
    pub steps: u64,
    /// Units each lane gave, `(rank, worker)` in turn (rank-major), where the lanes were not
    /// taken in turn (a mixture's, whose workers each read their sources in an order of
    /// their own); `None`: as `steps` says.
    pub lanes: Option<Vec<u64>>,
}

impl Layout {
    fn world(&self) -> u64 {
        self.world.max(1)
    }

    fn workers(&self) -> u64 {
        self.workers.max(1)
    }

    fn unit(&self) -> u64 {
        self.unit.max(1)
    }

    /// The positions of `len` rank `rank` reads, and how many units they make.
    pub(crate) fn rank(&self, len: u64, rank: u64) -> (Range<u64>, u64) {
        let (world, unit) = (self.world(), self.unit());
        let region = if self.drop_last {
            let whole = len / (world * unit) * unit;
            rank * whole..(rank + 1) * whole
        } else {
            // The first `len % world` ranks a record more: rank 0 holds the most units, so
            // that its state is exact after any step (see `stopped_after`).
            let (each, more) = (len / world, len % world);
            let at = |rank: u64| rank * each + rank.min(more);
            at(rank)..at(rank + 1)
        };
        let units = (region.end - region.start).div_ceil(unit);
        (region, units)
    }

    /// Units worker `worker` of a rank of `units` units reads.
    fn worker_units(&self, units: u64, worker: u64) -> u64 {
        units.saturating_sub(worker).div_ceil(self.workers())
    }

    /// The lane of `(rank, worker)` over `len` positions, and the units it holds.
    pub(crate) fn lane(&self, len: u64, rank: u64, worker: u64) -> (Range<u64>, u64) {
        let (region, units) = self.rank(len, rank);
        let before: u64 = (0..worker).map(|w| self.worker_units(units, w)).sum();
        let mine = self.worker_units(units, worker);
        let at = |unit: u64| (region.start + unit * self.unit()).min(region.end);
        (at(before)..at(before + mine), mine)
    }

    /// Units a rank consumed of `units` once the ranks stepped `steps` times.
    fn taken(&self, units: u64, worker: u64, steps: u64) -> u64 {
        let steps = steps.min(units);
        self.worker_units(steps, worker)
    }

    /// The most units a rank of this layout holds over `len` positions.
    pub(crate) fn most_units(&self, len: u64) -> u64 {
        (0..self.world())
            .map(|rank| self.rank(len, rank).1)
            .max()
            .unwrap_or(0)
    }
}

/// Units each of a rank's loader workers gave once the rank took `steps` units, when its
/// workers hold `counts` units: a loader takes one unit from each worker in turn and passes
/// over a worker once it is exhausted, as PyTorch's and OneFlow's do. Round `k` takes the
/// `k`th unit of every worker that holds more than `k`.
pub fn taken_in_turn(counts: &[u64], steps: u64) -> Vec<u64> {
    let within = |rounds: u64| counts.iter().map(|&count| count.min(rounds)).sum::<u64>();
    // The whole rounds taken: the most `rounds` whose units are at most `steps`.
    let most = counts.iter().copied().max().unwrap_or(0);
    let (mut low, mut high) = (0, most);
    while low < high {
        let middle = low + (high - low).div_ceil(2);
        if within(middle) <= steps {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    let mut more = steps.saturating_sub(within(low));
    counts
        .iter()
        .map(|&count| {
            let taken = count.min(low);
            if count > low && more > 0 {
                more -= 1;
                return taken + 1;
            }
            taken
        })
        .collect()
}

/// A lane's rest after a pass stopped, as the next pass finds it.
#[derive(Clone, Debug)]
struct Rest {
    /// Where it starts among the positions the next pass deals.
    from: u64,
    /// Its first position, and its end, in the stopped pass's positions.
    positions: Range<u64>,
    /// The lane it is the rest of, whose windows spread it; `None` for what `drop_last`
    /// set aside, read as it lies.
    lane: Option<Range<u64>>,
}

/// A stopped pass, with what it left.
#[derive(Clone, Debug)]
struct Level {
    rests: Vec<Rest>,
}

impl Level {
    /// `pass`, which dealt the first `len` of the `left` positions the passes before it
    /// left (all of them but where a mixture's weights capped it): those past `len` are
    /// left as they lie, after what `drop_last` set aside.
    fn new(pass: &Pass, len: u64, left: u64) -> Level {
        let layout = pass.layout;
        let mut rests = Vec::new();
        let mut from = 0;
        let mut dealt = 0;
        for rank in 0..layout.world() {
            let (_, units) = layout.rank(len, rank);
            for worker in 0..layout.workers() {
                let (lane, _) = layout.lane(len, rank, worker);
                dealt = dealt.max(lane.end);
                let taken = match &pass.lanes {
                    Some(lanes) => {
                        let at = (rank * layout.workers() + worker) as usize;
                        lanes
                            .get(at)
                            .copied()
                            .unwrap_or(0)
                            .min(layout.worker_units(units, worker))
                    }
                    None => layout.taken(units, worker, pass.steps),
                } * layout.unit();
                let start = (lane.start + taken).min(lane.end);
                if start < lane.end {
                    rests.push(Rest {
                        from,
                        positions: start..lane.end,
                        lane: Some(lane.clone()),
                    });
                    from += lane.end - start;
                }
            }
        }
        if dealt < left.max(len) {
            rests.push(Rest {
                from,
                positions: dealt..left.max(len),
                lane: None,
            });
        }
        Level { rests }
    }

    fn len(&self) -> u64 {
        self.rests.last().map_or(0, |rest| {
            rest.from + (rest.positions.end - rest.positions.start)
        })
    }

    /// The stopped pass's position that position `at` of what it left is.
    fn resolve(&self, order: &Order, at: u64) -> u64 {
        let rest = &self.rests[self.rests.partition_point(|rest| rest.from <= at) - 1];
        let position = rest.positions.start + (at - rest.from);
        match &rest.lane {
            Some(lane) => order.spread_at(lane.clone(), position),
            None => position,
        }
    }

    /// The stopped pass's positions that `positions` of what it left read, as ranges: a
    /// window that a lane's rest starts inside stands whole for the part of it left.
    fn ranges(&self, order: &Order, positions: Range<u64>, out: &mut Vec<Range<u64>>) {
        let first = self
            .rests
            .partition_point(|rest| rest.from <= positions.start)
            .saturating_sub(1);
        for rest in &self.rests[first..] {
            if rest.from >= positions.end {
                break;
            }
            let start = rest.positions.start + positions.start.saturating_sub(rest.from);
            let end = rest.positions.start + (positions.end - rest.from);
            let (start, end) = (start, end.min(rest.positions.end));
            if start >= end {
                continue;
            }
            match (&rest.lane, order.window_len()) {
                (Some(lane), Some(window)) => {
                    let from = lane.start + (start - lane.start) / window * window;
                    let to = (lane.start + (end - 1 - lane.start) / window * window + window)
                        .min(lane.end);
                    out.push(from..to);
                }
                _ => out.push(start..end),
            }
        }
    }
}

/// What one worker of one rank reads of a pass over an epoch.
#[derive(Clone, Debug)]
pub struct Share {
    /// The epoch's order.
    pub order: Order,
    /// How this pass deals its positions.
    pub layout: Layout,
    /// This rank, of `layout.world`.
    pub rank: u64,
    /// This loader worker of the rank, of `layout.workers`.
    pub worker: u64,
    /// The passes that stopped before this one, the first first.
    levels: Arc<[Level]>,
    /// Positions this pass deals: what the passes before it left.
    len: u64,
    /// This worker's lane.
    lane: Range<u64>,
    /// Units it holds.
    units: u64,
    /// The place of the order its first position is (a mixture's reading that goes on
    /// where another reading of the same order stopped): 0 for an epoch's own.
    offset: u64,
}

impl Share {
    /// The share of `(rank, worker)` of a pass of `layout` over `order`, after the passes
    /// `before` (of this epoch, the first first) stopped.
    pub fn new(order: Order, before: &[Pass], layout: Layout, rank: u64, worker: u64) -> Share {
        Share::of_first(order, order.len(), before, layout, rank, worker)
    }

    /// [`Share::new`] of an epoch of the first `len` places of `order` alone (a source of a
    /// mixture whose share of an epoch is less than its length).
    pub fn of_first(
        order: Order,
        len: u64,
        before: &[Pass],
        layout: Layout,
        rank: u64,
        worker: u64,
    ) -> Share {
        Share::capped(order, len, before, &[], layout, rank, worker)
    }

    /// [`Share::of_first`], where some passes (a mixture's, whose weights ask for less of a
    /// reading than is left of it) dealt fewer positions than the passes before them left:
    /// `caps[i]`, where it is given, is the most pass `i` dealt (the first of what was
    /// left; the rest is left for later passes, as it lies), and `caps[before.len()]` the
    /// most this pass deals.
    pub fn capped(
        order: Order,
        len: u64,
        before: &[Pass],
        caps: &[Option<u64>],
        layout: Layout,
        rank: u64,
        worker: u64,
    ) -> Share {
        let cap = |len: u64, at: usize| {
            caps.get(at)
                .copied()
                .flatten()
                .map_or(len, |cap| cap.min(len))
        };
        let mut len = len.min(order.len());
        let mut levels = Vec::with_capacity(before.len());
        for (at, pass) in before.iter().enumerate() {
            let level = Level::new(pass, cap(len, at), len);
            len = level.len();
            levels.push(level);
        }
        let len = cap(len, before.len());
        let (lane, units) = layout.lane(len, rank, worker);
        Share {
            order,
            layout,
            rank,
            worker,
            levels: levels.into(),
            len,
            lane,
            units,
            offset: 0,
        }
    }

    /// This share, of places of the order from `offset` on rather than from its start.
    pub fn starting_at(self, offset: u64) -> Share {
        Share { offset, ..self }
    }

    /// Positions this pass deals, all ranks together.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether passes of this epoch stopped before this one.
    pub fn is_resumed(&self) -> bool {
        !self.levels.is_empty()
    }

    /// Whether this pass deals nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether no rank has a unit to read in this pass: what the passes before it left is
    /// nothing, or (`drop_last`) too little for every rank to take a whole unit. A pass
    /// started on its own after such a one reads the epoch again; the pass a loaded state
    /// resumes reads what is left, nothing here.
    pub fn is_spent(&self) -> bool {
        self.layout.most_units(self.len) == 0
    }

    /// Units the rank yields in this pass, all its workers together.
    pub fn rank_units(&self) -> u64 {
        self.layout.rank(self.len, self.rank).1
    }

    /// Units this worker yields.
    pub fn units(&self) -> u64 {
        self.units
    }

    /// This worker's lane, in the positions of this pass.
    pub fn lane(&self) -> Range<u64> {
        self.lane.clone()
    }

    /// The positions of this worker's `unit`th unit, in the positions of this pass.
    pub fn positions(&self, unit: u64) -> Range<u64> {
        let at = |unit: u64| (self.lane.start + unit * self.layout.unit()).min(self.lane.end);
        at(unit)..at(unit + 1)
    }

    /// The records of this worker's `unit`th unit, in the order it yields them, into `out`
    /// (cleared first).
    pub fn unit_records(&self, unit: u64, out: &mut Vec<u64>) {
        self.order.spread(self.lane(), self.positions(unit), out);
        for level in self.levels.iter().rev() {
            out.iter_mut()
                .for_each(|at| *at = level.resolve(&self.order, *at));
        }
        if self.offset > 0 {
            out.iter_mut().for_each(|at| *at += self.offset);
        }
        self.order.place(out);
    }

    /// The records the positions `positions` of this pass read (a whole window of its lane
    /// in a block shuffle, any positions in the records' own order), as runs of neighbouring
    /// records, into `out` (cleared first), more where a resumed pass's window was begun
    /// before; `None` in a global shuffle, whose records lie anywhere.
    pub fn runs(&self, positions: Range<u64>, out: &mut Vec<Range<u64>>) -> Option<()> {
        out.clear();
        let mut ranges = vec![positions];
        let mut below = Vec::new();
        for level in self.levels.iter().rev() {
            below.clear();
            for range in &ranges {
                level.ranges(&self.order, range.clone(), &mut below);
            }
            std::mem::swap(&mut ranges, &mut below);
        }
        for range in ranges {
            self.order
                .runs(range.start + self.offset..range.end + self.offset, out)?;
        }
        Some(())
    }

    /// The end of the group of this worker's lane that position `at` is in: a block
    /// shuffle's window (counted from the lane's start), else `in_order` positions.
    pub fn group_end(&self, at: u64, in_order: u64) -> u64 {
        let group = self.order.window_len().unwrap_or(in_order).max(1);
        (self.lane.start + ((at - self.lane.start) / group + 1) * group).min(self.lane.end)
    }

    /// This pass stopped once each rank consumed `records` records of it (whole units, ranks
    /// in step). A rank that consumed its whole share ends the pass: ranks in step end
    /// together, those holding a unit more taking it in the last step. Rank 0 holds the most
    /// units, so its state is exact after any step; a rank holding one fewer cannot tell
    /// its last step from the pass's, and takes it for the pass's.
    pub fn stopped_after(&self, records: u64) -> Pass {
        let (region, _) = self.layout.rank(self.len, self.rank);
        let steps = if records >= region.end - region.start {
            self.layout.most_units(self.len)
        } else {
            records.div_ceil(self.layout.unit())
        };
        Pass {
            layout: self.layout,
            steps,
            lanes: None,
        }
    }

    /// Positions of this pass that `pass` (this pass, stopped) consumed, all ranks together.
    pub fn consumed(&self, pass: &Pass) -> u64 {
        self.len - Level::new(pass, self.len, self.len).len()
    }
}

#[cfg(test)]
mod tests;
