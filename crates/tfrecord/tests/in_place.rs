//! Records read or written in place, one at a time or by runs, are those read or written
//! through a caller's buffer: the same data, positions and errors, for records that fit the
//! buffers and records that do not, plain or compressed, damaged or not.

use ofconvert_tfrecord::{Compression, Reader, ReaderOptions, Writer};
use proptest::prelude::*;

fn sizes() -> impl Strategy<Value = Vec<usize>> {
    // Small records, and some past the size read directly and past the 256 KiB buffer.
    prop::collection::vec(
        prop_oneof![4 => 0..300usize, 1 => 16_000..20_000usize, 1 => 250_000..270_000usize],
        1..16,
    )
}

/// Records of `sizes` (bytes that differ from record to record) and the stream that holds
/// them, compressed as asked, one byte flipped where `damage` says when it is not.
fn written(
    sizes: &[usize],
    compression: Compression,
    damage: Option<(prop::sample::Index, u8)>,
) -> (Vec<Vec<u8>>, Vec<u8>) {
    let records: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| (0..len).map(|j| (i * 7 + j * 13) as u8).collect())
        .collect();
    let mut writer = Writer::with_compression(Vec::new(), compression);
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let mut stream = writer.finish().unwrap();
    if let Some((at, flip)) = damage.filter(|_| compression == Compression::None) {
        let at = at.index(stream.len());
        stream[at] ^= flip;
    }
    (records, stream)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn reading_in_place_gives_what_reading_into_a_buffer_gives(
        sizes in sizes(),
        compressed in any::<bool>(),
        damage in prop::option::of((any::<prop::sample::Index>(), 1..=255u8)),
    ) {
        let compression = if compressed { Compression::Gzip } else { Compression::None };
        let (records, stream) = written(&sizes, compression, damage);
        let options = ReaderOptions { compression, ..ReaderOptions::default() };
        let mut copying = Reader::with_options(stream.as_slice(), options);
        let mut in_place = Reader::with_options(stream.as_slice(), options);
        let (mut copied, mut buf) = (Vec::new(), Vec::new());
        for _ in 0..=records.len() {
            let expected = copying.read_record(&mut copied);
            let got = in_place.read_record_in_place(&mut buf);
            prop_assert_eq!(copying.position(), in_place.position());
            match (expected, got) {
                (Ok(more), Ok(got_more)) => {
                    prop_assert_eq!(more, got_more);
                    if !more {
                        break;
                    }
                    prop_assert_eq!(in_place.last_record(&buf), copied.as_slice());
                }
                (Err(expected), Err(got)) => {
                    prop_assert_eq!(expected.to_string(), got.to_string());
                    // After a data checksum both go on; after damage to the framing neither.
                    prop_assert_eq!(copying.recover(), in_place.recover());
                }
                (expected, got) => prop_assert!(false, "{:?} vs {:?}", expected, got),
            }
        }
        // Any other read forgets the record left in place.
        let _ = in_place.skip_record();
        prop_assert_eq!(in_place.last_record(b"given"), b"given");
    }

    #[test]
    fn reading_by_runs_gives_what_reading_one_record_at_a_time_gives(
        sizes in sizes(),
        compressed in any::<bool>(),
        damage in prop::option::of((any::<prop::sample::Index>(), 1..=255u8)),
        maxima in prop::collection::vec(0..6u64, 1..8),
        stops in prop::collection::vec(any::<bool>(), 1..8),
    ) {
        let compression = if compressed { Compression::Gzip } else { Compression::None };
        let (records, stream) = written(&sizes, compression, damage);
        let options = ReaderOptions { compression, ..ReaderOptions::default() };
        // One record at a time, copied: each record's position and data, or the error.
        let mut copying = Reader::with_options(stream.as_slice(), options);
        let (mut expected, mut copied) = (Vec::new(), Vec::new());
        for _ in 0..=records.len() {
            let at = copying.position();
            match copying.read_record(&mut copied) {
                Ok(true) => expected.push(Ok((at, copied.clone()))),
                Ok(false) => break,
                Err(err) => {
                    expected.push(Err(err.to_string()));
                    if !copying.recover() {
                        break;
                    }
                }
            }
        }
        // Runs of at most `maxima[i]` records, each stopped early where `stops` says, with a
        // record read in place between two runs.
        let mut runs = Reader::with_options(stream.as_slice(), options);
        let (mut got, mut buf) = (Vec::new(), Vec::new());
        let mut stop = stops.iter().cycle();
        for step in 0..=2 * records.len() {
            let max = maxima[step % maxima.len()];
            let before = got.len();
            let handed = runs.take_run(max, |at, data| {
                got.push(Ok((at, data.to_vec())));
                !stop.next().unwrap()
            });
            prop_assert!(handed <= max);
            prop_assert_eq!(handed as usize, got.len() - before);
            if let Some(Ok((_, last))) = got.last().filter(|_| handed > 0) {
                prop_assert_eq!(runs.last_record(b"given"), last.as_slice());
            }
            let at = runs.position();
            match runs.read_record_in_place(&mut buf) {
                Ok(true) => got.push(Ok((at, runs.last_record(&buf).to_vec()))),
                Ok(false) => break,
                Err(err) => {
                    got.push(Err(err.to_string()));
                    if !runs.recover() {
                        break;
                    }
                }
            }
        }
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn writing_in_place_gives_the_bytes_writing_a_slice_gives(
        sizes in sizes(),
        compression in prop_oneof![Just(Compression::None), Just(Compression::Gzip)],
    ) {
        let mut from_slices = Writer::with_compression(Vec::new(), compression);
        let mut in_place = Writer::with_compression(Vec::new(), compression);
        for (i, &len) in sizes.iter().enumerate() {
            let record: Vec<u8> = (0..len).map(|j| (i * 7 + j * 13) as u8).collect();
            from_slices.write_record(&record).unwrap();
            // A fill that fails leaves nothing behind.
            prop_assert_eq!(in_place.write_record_with(|buf| {
                buf.extend_from_slice(b"partial");
                Err(())
            }).unwrap(), Err(()));
            in_place.write_record_with(|buf| {
                buf.extend_from_slice(&record);
                Ok::<_, ()>(())
            }).unwrap().unwrap();
            prop_assert_eq!(in_place.bytes_written(), from_slices.bytes_written());
        }
        prop_assert_eq!(in_place.finish().unwrap(), from_slices.finish().unwrap());
    }
}
