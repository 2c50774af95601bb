use super::*;
use crate::stream::order::Shuffle;
use crate::stream::share::{Layout, Pass};
use crate::stream::testing::numbered;
use ofconvert_engine::Checksums;

#[test]
fn a_cache_must_hold_a_group_of_chunks_and_the_spans_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let files = numbered(dir.path(), 40);
    let chunk = 2 * 19;
    // In order: 8 chunks a group, 8 in flight.
    let order = Order::new(40, Shuffle::None, 0, 0);
    assert_eq!(cache_needed(&files, &order, 2), 16 * chunk);
    // A window of 4 chunks, 8 in flight.
    let block = Shuffle::Block {
        chunk: 2,
        window: 4,
    };
    assert_eq!(
        cache_needed(&files, &Order::new(40, block, 0, 0), 2),
        12 * chunk
    );
    // Never more than the dataset.
    assert_eq!(cache_needed(&files, &order, 4), 40 * 19);
}

fn layout(workers: u64) -> Layout {
    Layout {
        world: 1,
        workers,
        unit: 3,
        drop_last: false,
    }
}

fn share(order: Order, before: &[Pass], worker: u64, workers: u64) -> Share {
    Share::new(order, before, layout(workers), 0, worker)
}

/// Reads every unit of every worker of `order` after the passes `before` through the
/// prefetch `start` makes, checking each unit's records are its own, in its order, and
/// that nothing follows the last; the records read, all workers together.
fn every_unit(
    files: &Files,
    order: Order,
    before: &[Pass],
    workers: u64,
    start: impl Fn(Share) -> Prefetch,
) -> Vec<u64> {
    let mut seen = Vec::new();
    for worker in 0..workers {
        let share = share(order, before, worker, workers);
        let mut prefetch = start(share.clone());
        let mut indices = Vec::new();
        for unit in 0..share.units() {
            share.unit_records(unit, &mut indices);
            let scratch = prefetch.next_unit().unwrap();
            let mut got = Vec::new();
            files
                .each::<Error>(&scratch, Checksums::Verify, |_, _, payload| {
                    got.push(String::from_utf8(payload.to_vec()).unwrap());
                    Ok(())
                })
                .unwrap();
            let expected: Vec<String> = indices
                .iter()
                .map(|record| format!("r{record:02}"))
                .collect();
            assert_eq!(got, expected, "{order:?}, unit {unit}");
            seen.extend_from_slice(&indices);
        }
        assert!(prefetch.next_unit().is_err());
    }
    seen
}

#[test]
fn a_unit_in_order_waits_for_its_own_chunks_only_and_each_chunk_is_fetched_once() {
    // Chunks of 2 records, groups of 16: the first unit (records 0..3) needs chunks 0
    // and 1, not the whole group.
    let order = Order::new(40, Shuffle::None, 0, 0);
    let mut plan = Plan::new(share(order, &[], 0, 1), 0, 2, None);
    let first = plan.next().unwrap();
    assert_eq!(first.wanted, vec![0, 1]);
    assert_eq!(
        first.group.as_deref(),
        Some(&(0..8).collect::<Vec<_>>()[..])
    );
    let mut wanted = first.wanted;
    while let Some(step) = plan.next() {
        wanted.extend(step.wanted);
    }
    assert_eq!(wanted, (0..20).collect::<Vec<_>>());
}

#[test]
fn a_lane_fetches_only_the_records_of_its_chunks_it_reads() {
    // Two workers of 7 units of 3 records over 41 records: the first's lane ends inside
    // chunk 10 (records 20 and 21 of 20..22), where the second's begins.
    let order = Order::new(41, Shuffle::None, 0, 0);
    let (first, second) = (share(order, &[], 0, 2), share(order, &[], 1, 2));
    assert_eq!((first.lane(), second.lane()), (0..21, 21..41));
    let plan = Plan::new(first.clone(), 0, 2, None);
    assert_eq!(plan.records_of(10), 20..21);
    assert_eq!(plan.records_of(3), 6..8);
    assert_eq!(Plan::new(second.clone(), 0, 2, None).records_of(10), 21..22);
    // Through a cache, whole chunks, which any lane can read from it.
    assert_eq!(
        Plan::new(first.clone(), 0, 2, Some(&[0, 41])).records_of(10),
        20..22
    );
    // In the files the lane reads records of alone. Files of 20 and 21 records: the first
    // lane's record of chunk 10 (20) is in the second file, with the rest of the chunk.
    let two = Some(&[0, 20, 41][..]);
    assert_eq!(Plan::new(first.clone(), 0, 2, two).records_of(10), 20..22);
    // Files of 21 and 20: chunk 10 is cut where the lanes are, at the files' boundary.
    let two = Some(&[0, 21, 41][..]);
    assert_eq!(Plan::new(first, 0, 2, two).records_of(10), 20..21);
    assert_eq!(Plan::new(second, 0, 2, two).records_of(10), 21..22);
}

#[test]
fn spans_give_each_worker_its_units_records_in_every_order() {
    let dir = tempfile::tempdir().unwrap();
    let files = numbered(dir.path(), 40);
    let block = Shuffle::Block {
        chunk: 2,
        window: 4,
    };
    for kind in [Shuffle::None, block] {
        for epoch in 0..2 {
            let order = Order::new(40, kind, 7, epoch);
            for workers in [1, 2, 3] {
                let mut seen = every_unit(&files, order, &[], workers, |share| {
                    Prefetch::spans(Arc::clone(&files), share, 0, 2)
                });
                seen.sort_unstable();
                assert_eq!(seen, (0..40).collect::<Vec<_>>());
            }
        }
    }
}

#[test]
fn a_unit_longer_than_a_window_reads_from_the_next_windows_fetched_whole() {
    // Windows of 2 records, units of 3: a unit's records lie all over the windows it
    // reaches into, and the chunks of those windows are held for it.
    let dir = tempfile::tempdir().unwrap();
    let files = numbered(dir.path(), 40);
    for (chunk, window) in [(1, 2), (2, 1)] {
        let order = Order::new(40, Shuffle::Block { chunk, window }, 7, 1);
        for workers in [1, 2] {
            let mut seen = every_unit(&files, order, &[], workers, |share| {
                Prefetch::spans(Arc::clone(&files), share, 0, chunk)
            });
            seen.sort_unstable();
            assert_eq!(seen, (0..40).collect::<Vec<_>>());
        }
    }
}

#[test]
fn a_block_shuffle_resumed_inside_a_window_or_at_its_edge_reads_the_rest_once() {
    let dir = tempfile::tempdir().unwrap();
    let files = numbered(dir.path(), 40);
    // Windows of 8 records; a pass of two workers stopped after 1, 2, 3 and 7 steps.
    let block = Shuffle::Block {
        chunk: 2,
        window: 4,
    };
    let order = Order::new(40, block, 7, 1);
    for steps in [1, 2, 3, 7] {
        let stopped = Pass {
            layout: layout(2),
            steps,
            lanes: None,
        };
        let mut read: Vec<u64> = (0..2)
            .flat_map(|worker| {
                let share = share(order, &[], worker, 2);
                let taken = (steps + 1 - worker) / 2;
                (0..taken.min(share.units())).flat_map(move |unit| {
                    let mut got = Vec::new();
                    share.unit_records(unit, &mut got);
                    got
                })
            })
            .collect();
        for workers in [1, 2] {
            let mut seen = every_unit(
                &files,
                order,
                std::slice::from_ref(&stopped),
                workers,
                |share| Prefetch::spans(Arc::clone(&files), share, 0, 2),
            );
            seen.append(&mut read.clone());
            seen.sort_unstable();
            assert_eq!(
                seen,
                (0..40).collect::<Vec<_>>(),
                "{steps} steps, {workers} workers"
            );
        }
        read.clear();
    }
}

#[test]
fn a_global_shuffle_read_ahead_gives_every_unit_with_more_lanes_than_units_or_fewer() {
    let dir = tempfile::tempdir().unwrap();
    let files = numbered(dir.path(), 40);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for len in [0, 3, 7, 40] {
            let order = Order::new(len, Shuffle::Global, 3, 0);
            for workers in [1, 2] {
                let mut seen = every_unit(&files, order, &[], workers, |share| {
                    Prefetch::start(Arc::clone(&files), share, 0)
                });
                seen.sort_unstable();
                assert_eq!(seen, (0..len).collect::<Vec<_>>());
            }
        }
        done.send(()).unwrap();
    });
    // The lanes wait for the first unit: none of them may wait for ever.
    finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("every stream to end");
}
