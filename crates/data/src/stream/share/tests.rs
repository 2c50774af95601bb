use super::*;
use crate::stream::order::Shuffle;

fn layout(world: u64, workers: u64, unit: u64, drop_last: bool) -> Layout {
    Layout {
        world,
        workers,
        unit,
        drop_last,
    }
}

/// Each rank's records in the order its loader yields them (a unit from each worker in
/// turn), for at most `steps` steps (`None`: the whole pass).
fn read(order: Order, before: &[Pass], layout: Layout, steps: Option<u64>) -> Vec<Vec<u64>> {
    (0..layout.world)
        .map(|rank| {
            let shares: Vec<Share> = (0..layout.workers)
                .map(|worker| Share::new(order, before, layout, rank, worker))
                .collect();
            let units = shares[0].rank_units();
            let mut records = Vec::new();
            let mut got = Vec::new();
            for step in 0..units.min(steps.unwrap_or(u64::MAX)) {
                let share = &shares[(step % layout.workers) as usize];
                share.unit_records(step / layout.workers, &mut got);
                records.extend_from_slice(&got);
            }
            records
        })
        .collect()
}

fn orders(total: u64) -> [Order; 3] {
    let block = Shuffle::Block {
        chunk: 4,
        window: 3,
    };
    [Shuffle::None, Shuffle::Global, block].map(|shuffle| Order::new(total, shuffle, 9, 1))
}

#[test]
fn ranks_and_workers_share_every_record_once() {
    for (total, world, workers, unit, drop_last) in [
        (103, 2, 2, 1, false),
        (103, 3, 2, 8, true),
        (103, 3, 2, 8, false),
        (5, 4, 3, 2, false),
        (0, 2, 2, 4, false),
        (1000, 4, 3, 7, false),
    ] {
        for order in orders(total) {
            let ranks = read(order, &[], layout(world, workers, unit, drop_last), None);
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
fn an_epoch_read_by_one_process_is_the_order_itself() {
    for order in orders(1000) {
        let ranks = read(order, &[], layout(1, 1, 16, false), None);
        let mut expected = Vec::new();
        order.records(0..1000, &mut expected);
        assert_eq!(ranks[0], expected);
    }
}

#[test]
fn each_process_reads_records_of_its_own_and_its_runs_hold_them() {
    // 4 ranks of 2 workers over 10,000 records, windows of 3 chunks of 40.
    let block = Shuffle::Block {
        chunk: 40,
        window: 3,
    };
    for shuffle in [Shuffle::None, block] {
        let order = Order::new(10_000, shuffle, 5, 2);
        let layout = layout(4, 2, 32, false);
        let mut owner = vec![None; 10_000];
        for rank in 0..4 {
            for worker in 0..2 {
                let share = Share::new(order, &[], layout, rank, worker);
                let mut runs = Vec::new();
                share.runs(share.lane(), &mut runs).unwrap();
                // A lane's records are a few runs: the chunks it crosses, parts at its ends.
                assert!(runs.len() as u64 <= share.lane().end / 40 + 2, "{runs:?}");
                for record in runs.iter().cloned().flatten() {
                    assert_eq!(owner[record as usize], None, "record {record} in two lanes");
                    owner[record as usize] = Some((rank, worker));
                }
                let mut got = Vec::new();
                for unit in 0..share.units() {
                    share.unit_records(unit, &mut got);
                    for record in &got {
                        assert_eq!(owner[*record as usize], Some((rank, worker)));
                    }
                    // A unit of a block shuffle reads from its window's chunks, within its runs.
                    let group = share.group_end(share.positions(unit).start, 1);
                    assert!(group >= share.positions(unit).start);
                }
            }
        }
        assert!(
            owner.iter().all(Option::is_some),
            "{shuffle:?}: a record in no lane"
        );
    }
}

/// Records read in the passes `before` (stopped as they say) and in a pass of `then` over
/// what they left, every rank together.
fn passes(order: Order, before: &[Pass], then: Layout) -> Vec<u64> {
    let mut all = Vec::new();
    for (at, pass) in before.iter().enumerate() {
        all.extend(read(order, &before[..at], pass.layout, Some(pass.steps)).concat());
    }
    all.extend(read(order, before, then, None).concat());
    all
}

#[test]
fn a_pass_stopped_on_one_layout_resumes_on_others_with_the_rest_once() {
    for order in orders(1000) {
        let first = Pass {
            layout: layout(2, 3, 8, false),
            steps: 7,
            lanes: None,
        };
        for then in [
            layout(2, 3, 8, false),
            layout(4, 2, 4, false),
            layout(1, 1, 16, false),
            layout(3, 1, 1, false),
        ] {
            let mut all = passes(order, std::slice::from_ref(&first), then);
            all.sort_unstable();
            assert_eq!(all, (0..1000).collect::<Vec<_>>(), "{order:?} {then:?}");
            // And stopped again there, then resumed on a third layout.
            let second = Pass {
                layout: then,
                steps: 3,
                lanes: None,
            };
            let mut all = passes(order, &[first.clone(), second], layout(3, 2, 5, false));
            all.sort_unstable();
            assert_eq!(
                all,
                (0..1000).collect::<Vec<_>>(),
                "{order:?} {then:?} twice"
            );
        }
    }
}

#[test]
fn what_a_stopped_pass_consumed_is_what_its_ranks_read_even_after_an_uneven_last_step() {
    // 2 ranks of 2 workers in units of 8: over 57 records they hold 4 units each; over 49,
    // rank 0 holds 4 (the last of one record) and rank 1 holds 3.
    for total in [2 * 3 * 8 + 9, 2 * 3 * 8 + 1] {
        for order in orders(total) {
            let (layout, one) = (layout(2, 2, 8, false), layout(1, 1, 3, false));
            let most = Share::new(order, &[], layout, 0, 0).rank_units();
            for steps in 0..=most {
                let read_so_far = read(order, &[], layout, Some(steps));
                let consumed: u64 = read_so_far.iter().map(|r| r.len() as u64).sum();
                for (rank, records) in read_so_far.iter().enumerate() {
                    let share = Share::new(order, &[], layout, rank as u64, 0);
                    // Rank 0's state is exact after any step; another's after the last.
                    if rank > 0 && steps != most && steps >= share.rank_units() {
                        continue;
                    }
                    let pass = share.stopped_after(records.len() as u64);
                    let case = format!("{total} records, rank {rank}, {steps} steps");
                    assert_eq!(share.consumed(&pass), consumed, "{case}");
                    // The rest, read on one process, is what was not read.
                    let mut all = passes(order, &[pass], one);
                    all.sort_unstable();
                    assert_eq!(all, (0..total).collect::<Vec<_>>(), "{case}");
                }
            }
        }
    }
}

#[test]
fn a_pass_with_drop_last_leaves_its_remainder_to_the_next_and_ends_when_less_is_left() {
    let order = Order::new(103, Shuffle::None, 0, 0);
    let layout = layout(2, 2, 8, true);
    let share = Share::new(order, &[], layout, 0, 0);
    assert_eq!(share.rank_units(), 6);
    let done = share.stopped_after(48);
    assert_eq!(share.consumed(&done), 96);
    let after = Share::new(order, &[done], layout, 0, 0);
    assert_eq!((after.len(), after.rank_units()), (7, 0));
}

#[test]
fn lanes_taken_each_at_its_own_pace_leave_the_rest_of_each() {
    for order in orders(500) {
        let layout = layout(2, 2, 4, false);
        let lanes = [3, 0, 5, 40];
        let mut taken = Vec::new();
        for (at, &units) in lanes.iter().enumerate() {
            let share = Share::new(order, &[], layout, at as u64 / 2, at as u64 % 2);
            let mut got = Vec::new();
            for unit in 0..units.min(share.units()) {
                share.unit_records(unit, &mut got);
                taken.extend_from_slice(&got);
            }
        }
        let stopped = Pass {
            layout,
            steps: 0,
            lanes: Some(lanes.to_vec()),
        };
        let after = Share::new(order, std::slice::from_ref(&stopped), layout, 0, 0);
        assert_eq!(after.len() as usize, 500 - taken.len());
        let mut all = passes(order, &[], layout);
        all.sort_unstable();
        let three = self::layout(3, 1, 7, false);
        let mut rest = read(order, &[stopped], three, None).concat();
        rest.extend(taken);
        rest.sort_unstable();
        assert_eq!(rest, all, "{order:?}");
    }
}

#[test]
fn an_epoch_of_the_first_places_of_an_order_reads_them_once() {
    for order in orders(500) {
        let layout = layout(2, 3, 5, false);
        let mut got: Vec<u64> = Vec::new();
        let mut unit = Vec::new();
        for rank in 0..2 {
            for worker in 0..3 {
                let share = Share::of_first(order, 123, &[], layout, rank, worker);
                assert_eq!(share.len(), 123);
                for at in 0..share.units() {
                    share.unit_records(at, &mut unit);
                    got.extend_from_slice(&unit);
                }
            }
        }
        got.sort_unstable();
        let mut first = Vec::new();
        order.records(0..123, &mut first);
        let mut places: Vec<u64> = Vec::new();
        let mut runs = Vec::new();
        if order.runs(0..123, &mut runs).is_some() {
            // The records of the first places, spread in windows of lanes of their own.
            places = runs.into_iter().flatten().collect();
        } else {
            places.extend((0..123).map(|at| {
                let mut one = vec![at];
                order.place(&mut one);
                one[0]
            }));
        }
        places.sort_unstable();
        assert_eq!(got, places, "{order:?}");
    }
}
