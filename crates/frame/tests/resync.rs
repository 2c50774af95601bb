//! The bounded-window scan both framings resynchronise with, and the reader state machine.

use std::io::BufRead;

use ofconvert_frame::input::{BufInput, Verdict};
use ofconvert_frame::{Position, ReaderState, Resync, Stop};

fn bytes(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 200) as u8).collect()
}

#[test]
fn the_scan_stops_at_the_first_accepted_offset_past_the_start() {
    let data = bytes(100);
    let mut input = BufInput::with_capacity(16, data.as_slice());
    let mut gaps = Vec::new();
    let passed = input
        .resync(|candidate| {
            gaps.push(candidate.gap.map(<[u8]>::len));
            if candidate.bytes.first() == Some(&57) {
                Verdict::Accept
            } else {
                Verdict::Reject
            }
        })
        .unwrap();
    assert_eq!(passed, 57);
    assert_eq!(input.fill_buf().unwrap()[0], 57);
    // The gap from the start is shown while it is in the window, not after.
    assert_eq!(gaps[0], Some(1));
    assert!(gaps.contains(&None));
    assert!(gaps.iter().flatten().all(|&len| len < 16));
}

#[test]
fn a_candidate_that_needs_more_gets_the_window_and_must_then_decide() {
    let data = bytes(100);
    let mut input = BufInput::with_capacity(16, data.as_slice());
    let mut seen = Vec::new();
    let passed = input
        .resync(|candidate| {
            if candidate.bytes.first() != Some(&10) {
                return Verdict::Reject;
            }
            seen.push((candidate.bytes.len(), candidate.complete));
            if candidate.bytes.len() >= 20 {
                Verdict::Accept
            } else {
                Verdict::NeedMore
            }
        })
        .unwrap();
    // Offset 10 wanted 20 bytes, got the whole window (16) and, complete, was passed over.
    assert_eq!(seen, [(6, false), (16, true)]);
    assert_eq!(passed, data.len() as u64);
}

#[test]
fn rejecting_everything_passes_over_the_whole_stream_and_sees_its_end() {
    for len in [0, 1, 15, 16, 17, 100] {
        let data = bytes(len);
        let mut input = BufInput::with_capacity(16, data.as_slice());
        let mut ends = 0;
        let passed = input
            .resync(|candidate| {
                if candidate.bytes.is_empty() {
                    assert!(candidate.end_of_stream && candidate.complete);
                    ends += 1;
                }
                Verdict::Reject
            })
            .unwrap();
        assert_eq!(passed, len as u64);
        assert_eq!(ends, 1, "{len} bytes");
        assert!(input.fill_buf().unwrap().is_empty());
    }
}

#[test]
fn a_stopped_reader_goes_on_only_the_way_its_error_allows() {
    let mut state = ReaderState::default();
    assert!(state.is_ready() && state.recover());

    state.stop(Stop::Recoverable, 0);
    assert!(!state.is_ready());
    let mut position = Position {
        offset: 40,
        index: 3,
    };
    assert_eq!(state.resynced(&mut position, 10, false), None);
    assert!(state.recover() && state.is_ready());

    state.stop(Stop::Damaged, 12);
    assert!(!state.recover());
    assert_eq!(
        state.resynced(&mut position, 30, true),
        Some(Resync {
            index: 3,
            damaged: 40..82,
            recovered: true
        })
    );
    assert_eq!(
        position,
        Position {
            offset: 82,
            index: 4
        }
    );
    assert!(state.is_ready());

    state.stop(Stop::Fused, 0);
    assert!(!state.recover());
    assert_eq!(state.resynced(&mut position, 1, false), None);
}
