//! Resynchronising after damage to the framing: the records after a damaged length come back,
//! the damaged record too when its data CRC vouches for it, and the skip is reported by offset.

use ofconvert_tfrecord::{frame, ErrorKind, Reader, ReaderOptions, Resync};
use proptest::prelude::*;

/// `count` records of varied sizes and contents, none of them empty.
fn records(count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            (0..(7 + i * 13 % 97))
                .map(|j| (i * 31 + j * 7) as u8)
                .collect()
        })
        .collect()
}

fn framed(records: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    let mut bytes = Vec::new();
    let mut starts = Vec::new();
    for record in records {
        starts.push(bytes.len() as u64);
        frame::encode_record(record, &mut bytes);
    }
    (bytes, starts)
}

/// Reads everything, recovering and resynchronising as needed.
fn salvage(bytes: &[u8]) -> (Vec<Vec<u8>>, Vec<Resync>) {
    let mut reader = Reader::new(bytes);
    let (mut good, mut resyncs, mut buf) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..bytes.len() + 1 {
        match reader.read_record(&mut buf) {
            Ok(true) => good.push(buf.clone()),
            Ok(false) => break,
            Err(err) if reader.recover() => assert!(err.is_recoverable()),
            Err(err) => {
                assert!(
                    matches!(
                        err.kind(),
                        ErrorKind::LengthCrcMismatch { .. }
                            | ErrorKind::Truncated { .. }
                            | ErrorKind::TruncatedHeader { .. }
                    ),
                    "{err}"
                );
                let resync = reader.resync(&mut buf).unwrap().expect("damage resyncs");
                if resync.recovered {
                    good.push(buf.clone());
                }
                resyncs.push(resync);
            }
        }
    }
    (good, resyncs)
}

#[test]
fn a_damaged_length_loses_at_most_its_own_record_and_reports_the_skip() {
    let originals = records(50);
    let (clean, starts) = framed(&originals);
    for damaged in [0, 1, 17, 48, 49] {
        for byte in 0..frame::HEADER_LEN {
            let mut bytes = clean.clone();
            bytes[starts[damaged] as usize + byte] ^= 0x5a;
            let (good, resyncs) = salvage(&bytes);
            assert_eq!(resyncs.len(), 1, "record {damaged}, byte {byte}");
            let resync = &resyncs[0];
            let next = starts
                .get(damaged + 1)
                .copied()
                .unwrap_or(clean.len() as u64);
            assert_eq!(resync.damaged, starts[damaged]..next);
            assert_eq!(resync.index, damaged as u64);
            // The only length that reaches the next header gives data that matches its CRC.
            assert!(resync.recovered, "record {damaged}, byte {byte}");
            assert_eq!(good, originals);
        }
    }
}

#[test]
fn a_damaged_record_whose_data_is_damaged_too_is_skipped_alone() {
    let originals = records(50);
    let (mut bytes, starts) = framed(&originals);
    bytes[starts[20] as usize + 3] ^= 0x01;
    bytes[starts[20] as usize + frame::HEADER_LEN] ^= 0x01;
    let (good, resyncs) = salvage(&bytes);
    assert_eq!(
        resyncs,
        [Resync {
            index: 20,
            damaged: starts[20]..starts[21],
            recovered: false
        }]
    );
    let mut expected = originals.clone();
    expected.remove(20);
    assert_eq!(good, expected);
}

#[test]
fn a_record_larger_than_the_window_after_the_damage_is_kept() {
    let mut originals = records(3);
    originals.insert(2, vec![9; 600 * 1024]);
    let (mut bytes, starts) = framed(&originals);
    bytes[starts[1] as usize] ^= 0x80;
    bytes[starts[1] as usize + frame::HEADER_LEN] ^= 0x80;
    let (good, resyncs) = salvage(&bytes);
    assert_eq!(resyncs.len(), 1);
    assert_eq!(resyncs[0].damaged, starts[1]..starts[2]);
    assert_eq!(
        good,
        [
            originals[0].clone(),
            originals[2].clone(),
            originals[3].clone()
        ]
    );
}

#[test]
fn damage_with_nothing_good_after_it_skips_to_the_end() {
    let originals = records(4);
    let (mut bytes, starts) = framed(&originals);
    bytes.truncate(bytes.len() - 1);
    bytes[starts[3] as usize] ^= 0xff;
    let (good, resyncs) = salvage(&bytes);
    assert_eq!(good, &originals[..3]);
    assert_eq!(resyncs.len(), 1);
    assert_eq!(resyncs[0].damaged, starts[3]..bytes.len() as u64);
    assert!(!resyncs[0].recovered);
}

#[test]
fn resync_is_a_no_op_unless_the_framing_is_damaged() {
    let (bytes, _) = framed(&records(2));
    let mut reader = Reader::new(bytes.as_slice());
    let mut buf = Vec::new();
    assert_eq!(reader.resync(&mut buf).unwrap(), None);
    assert!(reader.read_record(&mut buf).unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// One flipped byte anywhere loses at most one record, and never yields a wrong one.
    #[test]
    fn any_single_flip_loses_at_most_one_record(at in any::<prop::sample::Index>(), mask in 1u8..) {
        let originals = records(50);
        let (mut bytes, _) = framed(&originals);
        let at = at.index(bytes.len());
        bytes[at] ^= mask;
        let (good, _) = salvage(&bytes);
        prop_assert!(good.len() >= 49, "{} records back", good.len());
        let mut rest = originals.iter();
        for record in &good {
            prop_assert!(rest.any(|original| original == record), "a record that was never written");
        }
    }
}

#[test]
fn without_checksums_a_length_past_the_known_end_resyncs_from_the_record_start() {
    let originals: Vec<Vec<u8>> = records(50).into_iter().cycle().take(8000).collect();
    let (mut bytes, starts) = framed(&originals);
    assert!(bytes.len() > 512 * 1024);
    bytes[starts[7] as usize + 5] ^= 0x01;
    let options = ReaderOptions {
        verify_length_crc: false,
        verify_data_crc: false,
        ..ReaderOptions::default()
    };
    let mut reader =
        Reader::with_options(bytes.as_slice(), options).with_stream_len(bytes.len() as u64);
    let (mut good, mut buf) = (0, Vec::new());
    loop {
        match reader.read_record(&mut buf) {
            Ok(true) => good += 1,
            Ok(false) => break,
            Err(err) => {
                assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");
                assert!(buf.capacity() <= 1 << 20, "capacity {}", buf.capacity());
                let resync = reader.resync(&mut buf).unwrap().unwrap();
                assert_eq!(resync.damaged, starts[7]..starts[8]);
                assert!(resync.recovered);
                good += 1;
            }
        }
    }
    assert_eq!(good, originals.len());
}
