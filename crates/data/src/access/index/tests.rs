//! The index's tests: found, made, kept where asked, and damage.

use super::*;
use ofconvert_tfrecord::Writer;

fn tfrecord(path: &Path, records: &[&[u8]], compression: Compression) {
    let mut writer = Writer::with_compression(fs::File::create(path).unwrap(), compression);
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap();
}

fn options(cache: &Path) -> IndexOptions {
    IndexOptions {
        cache_dir: Some(cache.to_path_buf()),
        ..IndexOptions::default()
    }
}

#[test]
fn an_index_is_built_once_kept_in_the_cache_and_found_there_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord");
    tfrecord(&path, &[b"one", b"three", b""], Compression::None);
    let cache = dir.path().join("cache");
    let opened = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
    assert_eq!(opened.index, RecordIndex::new(vec![0, 19, 40], 56));
    assert!(opened.made);
    let stored = opened.stored.clone().unwrap();
    assert!(stored.starts_with(&cache), "{stored:?}");
    assert_eq!(fs::read(&stored).unwrap(), b"0 19\n19 21\n40 16\n");
    // Nothing is written into the data's folder.
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let again = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
    assert_eq!((again.index, again.made), (opened.index, false));
}

#[test]
fn an_index_is_kept_beside_the_file_when_asked_and_found_there_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord");
    tfrecord(&path, &[b"one", b"three", b""], Compression::None);
    let cache = dir.path().join("cache");
    let beside_asked = IndexOptions {
        beside: true,
        ..options(&cache)
    };
    let opened = open_indexed(&path, Format::Tf, &beside_asked).unwrap();
    assert_eq!(opened.index, RecordIndex::new(vec![0, 19, 40], 56));
    let beside = dir.path().join("a.tfrecord.idx");
    assert_eq!(opened.stored.as_deref(), Some(beside.as_path()));
    assert_eq!(fs::read(&beside).unwrap(), b"0 19\n19 21\n40 16\n");
    assert!(!cache.exists());

    // Found again, asked or not; one that no longer fits the file is made anew.
    fs::write(&beside, b"0 56\n").unwrap();
    let found = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
    assert_eq!((found.index.len(), found.made), (1, false));
    fs::write(&beside, b"0 19\n").unwrap();
    let opened = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
    assert_eq!((opened.index.len(), opened.made), (3, true));
    // Not asked, the stale one is left as it was, and the one made is in the cache.
    assert_eq!(fs::read(&beside).unwrap(), b"0 19\n");
    assert!(opened.stored.unwrap().starts_with(&cache));
}

#[cfg(unix)]
#[test]
fn a_read_only_place_keeps_its_index_in_the_cache() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("ro");
    fs::create_dir(&data).unwrap();
    let path = data.join("part-00000");
    let mut bytes = Vec::new();
    for payload in [&b"\x0a\x00"[..], b"\x0a\x01\x0a"] {
        bytes.extend_from_slice(&(payload.len() as i64).to_le_bytes());
        bytes.extend_from_slice(payload);
    }
    fs::write(&path, &bytes).unwrap();
    fs::set_permissions(&data, fs::Permissions::from_mode(0o555)).unwrap();
    let cache = dir.path().join("cache");
    let asked = IndexOptions {
        beside: true,
        ..options(&cache)
    };
    let opened = open_indexed(&path, Format::Of, &asked);
    fs::set_permissions(&data, fs::Permissions::from_mode(0o755)).unwrap();
    let opened = opened.unwrap();
    assert_eq!(opened.index, RecordIndex::new(vec![0, 10], 21));
    // Running as root writes anyway; either way the index is kept somewhere.
    let stored = opened.stored.unwrap();
    assert!(
        stored.starts_with(&cache) || stored.starts_with(&data),
        "{stored:?}"
    );
    let again = open_indexed(&path, Format::Of, &asked).unwrap();
    assert_eq!(again.index, opened.index);
}

#[test]
fn a_compressed_file_is_decompressed_into_the_cache_once_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord.gz");
    tfrecord(&path, &[b"one", b"three"], Compression::Gzip);
    let cache = dir.path().join("cache");
    let opened = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
    assert_eq!(opened.decompressed, Some(Compression::Gzip));
    assert!(opened.made);
    assert!(opened.data.starts_with(&cache));
    let mut plain = Vec::new();
    frame::encode_record(b"one", &mut plain);
    frame::encode_record(b"three", &mut plain);
    assert_eq!(fs::read(&opened.data).unwrap(), plain);
    assert_eq!(opened.index, RecordIndex::new(vec![0, 19], 40));
    assert!(!dir.path().join("a.tfrecord.gz.idx").exists());

    let modified = fs::metadata(&opened.data).unwrap().modified().unwrap();
    let again = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
    assert_eq!(
        fs::metadata(&again.data).unwrap().modified().unwrap(),
        modified
    );

    let refused = IndexOptions {
        decompress: false,
        ..options(&cache)
    };
    let err = open_indexed(&path, Format::Tf, &refused).unwrap_err();
    assert!(err.to_string().contains("GZIP TFRecord"), "{err}");
}

#[test]
fn processes_opening_a_compressed_file_at_once_copy_it_once_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord.gz");
    let records: Vec<Vec<u8>> = (0..20_000u32).map(|i| i.to_le_bytes().repeat(8)).collect();
    let records: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    tfrecord(&path, &records, Compression::Gzip);
    let cache = dir.path().join("cache");
    let start = std::sync::Barrier::new(4);
    // Threads stand for processes: each takes the lock through a file of its own.
    let made: Vec<bool> = std::thread::scope(|scope| {
        let opening: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    let opened = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
                    assert_eq!(opened.index.len(), 20_000);
                    opened.made
                })
            })
            .collect();
        opening.into_iter().map(|one| one.join().unwrap()).collect()
    });
    assert_eq!(made.iter().filter(|&&made| made).count(), 1, "{made:?}");
}

#[test]
fn damage_stops_the_pass_with_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord");
    tfrecord(&path, &[b"one", b"three"], Compression::None);
    let mut bytes = fs::read(&path).unwrap();
    bytes.truncate(30);
    fs::write(&path, bytes).unwrap();
    let err = open_indexed(&path, Format::Tf, &options(&dir.path().join("c"))).unwrap_err();
    assert_eq!((err.offset(), err.record()), (Some(19), Some(1)), "{err}");
    assert!(!dir.path().join("a.tfrecord.idx").exists());
}

fn salvaging(cache: &Path) -> IndexOptions {
    IndexOptions {
        salvage: true,
        ..options(cache)
    }
}

/// The payloads of the records `index` holds in `bytes` (a TFRecord file), each checked.
fn payloads(bytes: &[u8], index: &RecordIndex) -> Vec<Vec<u8>> {
    (0..index.len())
        .map(|record| {
            let range = index.range(record);
            let framed = &bytes[range.start as usize..range.end as usize];
            let at = ofconvert_engine::RecordAt {
                offset: range.start,
                index: record,
            };
            let payload = crate::access::framed::payload(
                framed,
                Format::Tf,
                Checksums::Verify,
                Path::new("f"),
                at,
            );
            payload.unwrap().to_vec()
        })
        .collect()
}

/// Five records of different lengths, and the file they make.
fn five_records(path: &Path) -> (Vec<Vec<u8>>, Vec<u8>) {
    let records: Vec<Vec<u8>> = (0..5u8).map(|i| vec![b'a' + i; 3 + i as usize]).collect();
    let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    tfrecord(path, &refs, Compression::None);
    (records, fs::read(path).unwrap())
}

#[test]
fn a_salvaging_open_steps_over_a_damaged_byte_wherever_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord");
    let (records, whole) = five_records(&path);
    let mut starts = vec![0usize];
    for record in &records {
        starts.push(starts.last().unwrap() + record.len() + 16);
    }
    let mut tried = 0;
    for at in 0..whole.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bytes = whole.clone();
            bytes[at] ^= flip;
            fs::write(&path, &bytes).unwrap();
            let cache = dir.path().join(format!("c{at}-{flip}"));
            let opened = open_indexed(&path, Format::Tf, &salvaging(&cache)).unwrap();
            let damaged = starts.iter().rposition(|&start| start <= at).unwrap();
            let mut kept = records.clone();
            kept.remove(damaged);
            let case = format!("byte {at} ^ {flip:#x}");
            assert_eq!(payloads(&bytes, opened.index.made()), kept, "{case}");
            assert_eq!(
                (opened.skipped.corrupt, opened.skipped.recovered),
                (1, 0),
                "{case}"
            );
            assert_eq!(opened.skipped.details.len(), 1, "{case}");
            assert!(opened.made, "{case}");
            // Found again, counts and all, without a pass.
            let again = open_indexed(&path, Format::Tf, &salvaging(&cache)).unwrap();
            assert_eq!(
                (&again.index, &again.skipped, again.made),
                (&opened.index, &opened.skipped, false)
            );
            // A reader that does not skip takes nothing from the salvaged index: it makes its
            // own, of the whole file, or fails where the framing is damaged (its pass steps
            // over the data; the data's checksum is checked at the read).
            if let Ok(strict) = open_indexed(&path, Format::Tf, &options(&cache)) {
                assert_eq!((strict.index.len(), strict.made), (5, true), "{case}");
                assert_eq!(strict.index.span(0..5), 0..whole.len() as u64, "{case}");
            }
            tried += 1;
        }
    }
    assert_eq!(tried, 3 * whole.len());
}

#[test]
fn a_salvaging_open_keeps_the_whole_records_before_a_cut_at_every_length() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord");
    let (records, whole) = five_records(&path);
    let mut ends = vec![0usize];
    for record in &records {
        ends.push(ends.last().unwrap() + record.len() + 16);
    }
    for length in 0..=whole.len() {
        fs::write(&path, &whole[..length]).unwrap();
        let cache = dir.path().join(format!("c{length}"));
        let full = ends.iter().rposition(|&end| end <= length).unwrap();
        let opened = open_indexed(&path, Format::Tf, &salvaging(&cache));
        if full == 0 && length > 0 {
            // Not one record framed: not taken for a record file, as `tf2of` does not.
            let err = opened.unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::NoRecordFramed { .. }),
                "{err}"
            );
            continue;
        }
        let opened = opened.unwrap();
        assert_eq!(
            payloads(&whole, opened.index.made()),
            records[..full],
            "cut at {length}"
        );
        let cut = u64::from(!ends.contains(&length));
        assert_eq!(opened.skipped.corrupt, cut, "cut at {length}");
        let strict = open_indexed(&path, Format::Tf, &options(&cache));
        assert_eq!(strict.is_ok(), cut == 0, "cut at {length}");
    }
}

#[test]
fn a_salvaging_open_of_a_sound_file_finds_every_record_and_no_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord");
    let (records, whole) = five_records(&path);
    let cache = dir.path().join("c");
    let strict = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
    let opened = open_indexed(&path, Format::Tf, &salvaging(&cache)).unwrap();
    assert_eq!(opened.index, strict.index);
    assert_eq!(payloads(&whole, opened.index.made()), records);
    assert_eq!(opened.skipped, SkippedRecords::default());
}

#[test]
fn a_damaged_compressed_file_is_copied_without_its_damage_when_skipping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord.gz");
    let records: Vec<Vec<u8>> = (0..200u32).map(|i| i.to_le_bytes().repeat(5)).collect();
    let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    tfrecord(&path, &refs, Compression::Gzip);
    let whole = fs::read(&path).unwrap();
    for length in [whole.len() - 9, whole.len() / 2, 30] {
        fs::write(&path, &whole[..length]).unwrap();
        let cache = dir.path().join(format!("c{length}"));
        assert!(open_indexed(&path, Format::Tf, &options(&cache)).is_err());
        let opened = open_indexed(&path, Format::Tf, &salvaging(&cache)).unwrap();
        assert_eq!(opened.decompressed, Some(Compression::Gzip));
        let copy = fs::read(&opened.data).unwrap();
        let read = payloads(&copy, opened.index.made());
        assert!(read.len() <= records.len(), "cut at {length}");
        assert_eq!(read, records[..read.len()], "cut at {length}");
        assert!(
            opened.skipped.corrupt >= 1,
            "cut at {length}: {:?}",
            opened.skipped
        );
        let again = open_indexed(&path, Format::Tf, &salvaging(&cache)).unwrap();
        assert_eq!(
            (again.index, again.skipped, again.made),
            (opened.index, opened.skipped, false)
        );
        // The copy's index says it was salvaged: a reader that does not skip fails anew.
        assert!(open_indexed(&path, Format::Tf, &options(&cache)).is_err());
    }
}

#[test]
fn a_sound_compressed_file_copied_by_a_skipping_reader_serves_one_that_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord.gz");
    tfrecord(&path, &[b"one", b"three"], Compression::Gzip);
    let cache = dir.path().join("c");
    let skipping = open_indexed(&path, Format::Tf, &salvaging(&cache)).unwrap();
    assert_eq!((skipping.index.len(), skipping.made), (2, true));
    let strict = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
    assert_eq!((strict.index, strict.made), (skipping.index, false));
}

/// A TFRecord file of `one`, `three` and `five` (records 0, 1 and 2 start at 0, 19 and 40)
/// with byte `at` XOR `flip`, in `dir`, and a GZIP file of it beside it.
fn damaged_gzip(dir: &Path, at: usize, flip: u8) -> (PathBuf, PathBuf) {
    let plain = dir.join("a.tfrecord");
    tfrecord(&plain, &[b"one", b"three", b"five"], Compression::None);
    let mut bytes = fs::read(&plain).unwrap();
    bytes[at] ^= flip;
    fs::write(&plain, &bytes).unwrap();
    let zipped = std::process::Command::new("gzip")
        .args(["-n", "-k"])
        .arg(&plain)
        .status()
        .unwrap();
    assert!(zipped.success());
    (plain, dir.join("a.tfrecord.gz"))
}

#[test]
fn a_compressed_copy_made_without_checking_never_serves_a_reader_that_checks() {
    let dir = tempfile::tempdir().unwrap();
    // Its byte 19 + 12 + 1 flipped: the data of record 1.
    let (_, path) = damaged_gzip(dir.path(), 19 + 12 + 1, 0x40);
    let cache = dir.path().join("c");
    let unchecked = IndexOptions {
        checksums: Checksums::Ignore,
        ..options(&cache)
    };
    let copied = open_indexed(&path, Format::Tf, &unchecked).unwrap();
    assert_eq!((copied.index.len(), copied.made), (3, true));
    // The copy is framed anew, its damage hidden: a reader that checks makes its own, and
    // fails at the damage or steps over it.
    let err = open_indexed(&path, Format::Tf, &options(&cache)).unwrap_err();
    assert_eq!(err.record(), Some(1), "{err}");
    let skipping = open_indexed(&path, Format::Tf, &salvaging(&cache)).unwrap();
    assert_eq!(skipping.index.len(), 2);
    assert_eq!(skipping.skipped.corrupt, 1);
    assert_ne!(skipping.data, copied.data);
}

#[test]
fn a_local_file_rewritten_at_the_same_size_is_indexed_anew() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tfrecord");
    tfrecord(&path, &[b"one", b"three"], Compression::None);
    let cache = dir.path().join("c");
    let first = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
    assert_eq!(first.index, RecordIndex::new(vec![0, 19], 40));
    let modified = fs::metadata(&path).unwrap().modified().unwrap();
    // As many bytes, other records: an index of the first would read across them.
    tfrecord(&path, &[b"three", b"one"], Compression::None);
    let file = fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(modified + std::time::Duration::from_secs(5))
        .unwrap();
    let again = open_indexed(&path, Format::Tf, &options(&cache)).unwrap();
    assert_eq!(
        (again.index.made(), again.made),
        (&RecordIndex::new(vec![0, 21], 40), true)
    );
}

#[test]
fn a_compressed_files_record_of_damaged_length_is_kept_in_its_copy_framed_anew() {
    let dir = tempfile::tempdir().unwrap();
    // Its byte 19 + 7 flipped: the most significant byte of record 1's length.
    let (plain, path) = damaged_gzip(dir.path(), 19 + 7, 0xff);
    let opened = open_indexed(&path, Format::Tf, &salvaging(&dir.path().join("c"))).unwrap();
    let copy = fs::read(&opened.data).unwrap();
    let want: Vec<Vec<u8>> = [&b"one"[..], b"three", b"five"].map(<[u8]>::to_vec).into();
    assert_eq!(payloads(&copy, opened.index.made()), want);
    assert_eq!((opened.skipped.corrupt, opened.skipped.recovered), (0, 1));
    // Read in place, the same damage leaves the record out.
    let in_place = open_indexed(&plain, Format::Tf, &salvaging(&dir.path().join("d"))).unwrap();
    assert_eq!(in_place.index.len(), 2);
    assert_eq!(
        (in_place.skipped.corrupt, in_place.skipped.recovered),
        (1, 0)
    );
}
