use super::*;

#[test]
fn a_loader_takes_from_each_worker_in_turn_passing_over_the_exhausted() {
    // Workers of 6 and 3 units: after 6 steps each gave 3, then the first alone.
    assert_eq!(taken_in_turn(&[6, 3], 0), vec![0, 0]);
    assert_eq!(taken_in_turn(&[6, 3], 5), vec![3, 2]);
    assert_eq!(taken_in_turn(&[6, 3], 6), vec![3, 3]);
    assert_eq!(taken_in_turn(&[6, 3], 8), vec![5, 3]);
    assert_eq!(taken_in_turn(&[6, 3], 9), vec![6, 3]);
    assert_eq!(taken_in_turn(&[6, 3], 99), vec![6, 3]);
    assert_eq!(taken_in_turn(&[0, 2, 1], 2), vec![0, 1, 1]);
    assert_eq!(taken_in_turn(&[], 4), Vec::<u64>::new());
    // Against a loader's round robin: the workers visited in turn, each giving a unit
    // while it has one.
    for counts in [
        vec![4, 1, 3],
        vec![2, 2],
        vec![0, 0, 5],
        vec![1],
        vec![3, 7, 0, 2],
    ] {
        let mut given = vec![0; counts.len()];
        let mut worker = 0;
        let mut steps = 0;
        while given != counts {
            if given[worker] < counts[worker] {
                given[worker] += 1;
                steps += 1;
                assert_eq!(
                    taken_in_turn(&counts, steps),
                    given,
                    "{counts:?} after {steps}"
                );
            }
            worker = (worker + 1) % counts.len();
        }
    }
}

#[test]
fn a_schedule_takes_each_readings_items_in_proportion() {
    let unshuffled = Schedule::new(vec![2, 4, 0], false, (1, 2));
    let turns: Vec<usize> = unshuffled.turns().collect();
    assert_eq!(turns, vec![1, 0, 1, 1, 0, 1]);
    assert_eq!(unshuffled.prefix(3), vec![1, 2, 0]);
    for key in 0..20 {
        let shuffled = Schedule::new(vec![5, 0, 3, 1], true, (key, 7));
        let turns: Vec<usize> = shuffled.turns().collect();
        for (reading, count) in [(0, 5), (1, 0), (2, 3), (3, 1)] {
            assert_eq!(turns.iter().filter(|&&at| at == reading).count(), count);
        }
        for items in 0..=10 {
            let mut counted = vec![0; 4];
            turns.iter().take(items).for_each(|&at| counted[at] += 1);
            assert_eq!(shuffled.prefix(items as u64), counted);
        }
    }
}

#[test]
fn readings_repeat_a_source_drawn_above_its_length_in_orders_of_their_own() {
    let got = readings(&[5, 3], &[12, 2], 4, 1);
    let shape: Vec<(usize, u64)> = got.iter().map(|r| (r.source, r.first)).collect();
    assert_eq!(shape, vec![(0, 5), (0, 5), (0, 2), (1, 2)]);
    assert_ne!(got[0].epoch, got[1].epoch);
    assert_eq!(got[0].seed, got[1].seed);
    assert_ne!(got[0].seed, got[3].seed);
}
