//! Resynchronising after damage to the framing, a heuristic without checksums: the caller's
//! payload check decides where records start again.

use ofconvert_ofrecord::{frame, ErrorKind, Reader, Resync};

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

/// Reads everything, checking each payload as a caller would, rejecting those that fail
/// the check, and resynchronising after damage to the framing.
fn salvage(bytes: &[u8]) -> (Vec<Vec<u8>>, Vec<Resync>) {
    let mut reader = Reader::new(bytes);
    let (mut good, mut resyncs, mut buf) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..bytes.len() + 1 {
        match reader.read_record(&mut buf) {
            Ok(true) if is_payload(&buf) => {
                good.push(buf.clone());
                continue;
            }
            // A payload that fails the check: perhaps its length is wrong, which only the
            // check can tell.
            Ok(true) => assert!(reader.reject()),
            Ok(false) => break,
            Err(err) if reader.recover() => {
                assert!(err.is_recoverable());
                continue;
            }
            Err(err) => assert!(!matches!(err.kind(), ErrorKind::Io(_)), "{err}"),
        }
        let resync = reader
            .resync(&mut buf, is_payload)
            .unwrap()
            .expect("resyncs");
        if resync.recovered {
            good.push(buf.clone());
        }
        resyncs.push(resync);
    }
    (good, resyncs)
}

#[test]
fn a_length_made_absurd_loses_nothing_but_a_last_record_and_reports_the_skip() {
    let originals = payloads(50);
    let (clean, starts) = framed(&originals);
    for damaged in [0, 1, 25, 48, 49] {
        // A high byte of the length: negative or far past the end.
        for (byte, flip) in [(7, 0x80), (5, 0x01), (3, 0x10)] {
            let mut bytes = clean.clone();
            bytes[starts[damaged] as usize + byte] ^= flip;
            let (good, resyncs) = salvage(&bytes);
            // The last record has no next one to bound it, and is lost.
            let next = starts.get(damaged + 1).copied();
            assert_eq!(
                resyncs,
                [Resync {
                    index: damaged as u64,
                    damaged: starts[damaged]..next.unwrap_or(clean.len() as u64),
                    recovered: next.is_some()
                }],
                "record {damaged}, byte {byte}"
            );
            let mut expected = originals.clone();
            if next.is_none() {
                expected.pop();
            }
            assert_eq!(good, expected);
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

/// Counts the payloads of `good` that come back intact, in order, and those never written.
fn compare(originals: &[Vec<u8>], good: &[Vec<u8>]) -> (usize, usize) {
    let (mut next, mut changed, mut intact) = (0, 0, 0);
    for payload in good {
        match originals[next..]
            .iter()
            .position(|original| original == payload)
        {
            Some(found) => {
                next += found + 1;
                intact += 1;
            }
            None => changed += 1,
        }
    }
    (intact, changed)
}

/// Every single flip of one, one high or all bits of any byte loses at most one record: a
/// wrong length shows as a payload that fails the check, rejecting it resyncs from its start,
/// and the record comes back with its true length. Only a flip in a payload's content can
/// give back a payload that was never written (no checksum can tell).
#[test]
fn any_single_flip_keeps_the_other_payloads() {
    let originals = payloads(50);
    let (clean, starts) = framed(&originals);
    let mut worst = usize::MAX;
    for at in 0..clean.len() {
        let in_length = starts
            .iter()
            .any(|&start| (start as usize..start as usize + 8).contains(&at));
        for mask in [0x01, 0x80, 0xff] {
            let mut bytes = clean.clone();
            bytes[at] ^= mask;
            let (good, _) = salvage(&bytes);
            let (intact, changed) = compare(&originals, &good);
            assert!(
                changed <= usize::from(!in_length),
                "byte {at} ^ {mask:#x}: {changed} changed"
            );
            worst = worst.min(intact);
        }
    }
    assert!(worst >= 49, "{worst} payloads back at worst");
}

#[test]
fn with_the_stream_length_known_an_absurd_length_costs_no_memory_and_no_records() {
    // Far more than the reader's window, so that the end cannot be seen from the damage.
    let originals: Vec<Vec<u8>> = payloads(50).into_iter().cycle().take(12_000).collect();
    let (mut bytes, starts) = framed(&originals);
    assert!(bytes.len() > 512 * 1024);
    bytes[starts[5] as usize + 5] ^= 0x01;
    let mut reader = Reader::new(bytes.as_slice()).with_stream_len(bytes.len() as u64);
    let (mut good, mut buf) = (0, Vec::new());
    loop {
        match reader.read_record(&mut buf) {
            Ok(true) => good += 1,
            Ok(false) => break,
            Err(err) => {
                assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");
                assert!(buf.capacity() <= 1 << 20, "capacity {}", buf.capacity());
                let resync = reader.resync(&mut buf, is_payload).unwrap().unwrap();
                assert_eq!(resync.damaged, starts[5]..starts[6]);
                assert!(resync.recovered);
                good += 1;
            }
        }
    }
    assert_eq!(good, originals.len());
}
