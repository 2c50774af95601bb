//! Resynchronising after damage to the framing, a heuristic without checksums: the caller's
//! payload check decides where records start again.

use ofconvert_ofrecord::{frame, ErrorKind, Reader, Resync};
use proptest::prelude::*;

/// `count` payloads that the test's check recognises: a marker byte, a length byte, and that
/// many bytes of content.
fn payloads(count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            let len = 5 + i * 13 % 90;
            let mut payload = vec![0x0a, len as u8];
            payload.extend((0..len).map(|j| (i * 31 + j * 7) as u8));
            payload
        })
        .collect()
}

/// The test's stand-in for "parses as an OFRecord".
fn is_payload(payload: &[u8]) -> bool {
    matches!(payload, [0x0a, len, rest @ ..] if usize::from(*len) == rest.len())
}

fn framed(payloads: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    let mut bytes = Vec::new();
    let mut starts = Vec::new();
    for payload in payloads {
        starts.push(bytes.len() as u64);
        frame::encode_record(payload, &mut bytes);
    }
    (bytes, starts)
}

/// Reads everything, checking each payload as a caller would and resynchronising after
/// damage to the framing or a payload that fails the check.
fn salvage(bytes: &[u8]) -> (Vec<Vec<u8>>, Vec<Resync>) {
    let mut reader = Reader::new(bytes);
    let (mut good, mut resyncs, mut buf) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..bytes.len() + 1 {
        match reader.read_record(&mut buf) {
            Ok(true) if is_payload(&buf) => good.push(buf.clone()),
            // A misframed payload: the framing's own checks cannot see it, so only later
            // damage stops the reader.
            Ok(true) => {}
            Ok(false) => break,
            Err(err) if reader.recover() => assert!(err.is_recoverable()),
            Err(err) => {
                assert!(!matches!(err.kind(), ErrorKind::Io(_)), "{err}");
                let resync = reader
                    .resync(&mut buf, is_payload)
                    .unwrap()
                    .expect("resyncs");
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
fn a_length_made_absurd_loses_nothing_and_reports_the_skip() {
    let originals = payloads(50);
    let (clean, starts) = framed(&originals);
    for damaged in [0, 1, 25, 48, 49] {
        // A high byte of the length: negative or far past the end.
        for (byte, flip) in [(7, 0x80), (5, 0x01), (3, 0x10)] {
            let mut bytes = clean.clone();
            bytes[starts[damaged] as usize + byte] ^= flip;
            let (good, resyncs) = salvage(&bytes);
            let next = starts
                .get(damaged + 1)
                .copied()
                .unwrap_or(clean.len() as u64);
            assert_eq!(
                resyncs,
                [Resync {
                    index: damaged as u64,
                    damaged: starts[damaged]..next,
                    recovered: true
                }],
                "record {damaged}, byte {byte}"
            );
            assert_eq!(good, originals);
        }
    }
}

#[test]
fn a_damaged_record_that_fails_the_check_is_skipped_alone() {
    let originals = payloads(50);
    let (mut bytes, starts) = framed(&originals);
    bytes[starts[30] as usize + 6] ^= 0x40;
    bytes[starts[30] as usize + frame::HEADER_LEN] ^= 0x01;
    let (good, resyncs) = salvage(&bytes);
    assert_eq!(resyncs.len(), 1);
    assert_eq!(resyncs[0].damaged, starts[30]..starts[31]);
    assert!(!resyncs[0].recovered);
    let mut expected = originals.clone();
    expected.remove(30);
    assert_eq!(good, expected);
}

#[test]
fn resync_is_a_no_op_unless_the_framing_is_damaged() {
    let (mut bytes, _) = framed(&payloads(2));
    bytes.extend_from_slice(&[0; frame::HEADER_LEN]);
    let mut reader = Reader::new(bytes.as_slice());
    let mut buf = Vec::new();
    assert_eq!(reader.resync(&mut buf, is_payload).unwrap(), None);
    assert!(reader.read_record(&mut buf).unwrap());
    assert!(reader.read_record(&mut buf).unwrap());
    assert!(matches!(
        reader.read_record(&mut buf).unwrap_err().kind(),
        ErrorKind::ZeroLength
    ));
    assert_eq!(reader.resync(&mut buf, is_payload).unwrap(), None);
    assert!(reader.recover());
    assert!(!reader.read_record(&mut buf).unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// One flipped byte anywhere gives back the written payloads in order, but for the one
    /// whose content holds the flip (no checksum can tell) and those a misframing ran
    /// through before the framing broke.
    #[test]
    fn any_single_flip_keeps_the_other_payloads(at in any::<prop::sample::Index>(), mask in 1u8..) {
        let originals = payloads(50);
        let (mut bytes, _) = framed(&originals);
        let at = at.index(bytes.len());
        bytes[at] ^= mask;
        let (good, _) = salvage(&bytes);
        let (mut next, mut changed, mut intact) = (0, 0, 0);
        for payload in &good {
            match originals[next..].iter().position(|original| original == payload) {
                Some(found) => {
                    next += found + 1;
                    intact += 1;
                }
                None => changed += 1,
            }
        }
        prop_assert!(changed <= 1, "{changed} payloads never written");
        prop_assert!(intact >= 45, "{intact} payloads back");
    }
}
