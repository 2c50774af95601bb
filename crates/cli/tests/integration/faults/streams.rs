//! Right checksums over garbage, damaged and unusual compressed streams

use super::*;

fn damaged_fixture(name: &str) -> PathBuf {
    testdata().join("damaged").join(name)
}

/// The uncompressed framed stream of the 500 tutorial records.
fn tutorial_stream() -> Vec<u8> {
    fs::read(testdata().join("golden/tutorial.tfrecord")).unwrap()
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// The lines of `--json` output of `cat`: one per record printed.
fn cat_json(path: &Path) -> Run {
    invoke(args([os("cat"), os("--json"), path.as_os_str()]))
}

#[test]
fn gzip_members_that_split_a_record_anywhere_still_give_every_record() {
    let work = tempdir();
    let stream = tutorial_stream();
    let starts = record_starts(&stream);
    let expected = tf_records(&testdata().join("golden/tutorial.tfrecord"));
    // Cuts inside a length, its checksum, a payload and a data checksum, and between records.
    let third = starts[3] as usize;
    for cut in [
        third + 3,
        third + 10,
        third + 30,
        starts[4] as usize - 2,
        third,
    ] {
        let input = work.path().join(format!("in-{cut}"));
        fs::create_dir(&input).unwrap();
        let file = input.join("split.tfrecord.gz");
        let mut members = gzip(&stream[..cut]);
        members.extend(gzip(&stream[cut..]));
        fs::write(&file, members).unwrap();

        let counted = invoke(args([os("count"), file.as_os_str()])).ok();
        assert!(
            counted.stdout.starts_with("    500  "),
            "{}",
            counted.stdout
        );
        invoke(args([os("verify"), file.as_os_str()])).ok();
        assert_eq!(cat_json(&file).ok().stdout.lines().count(), 500);
        let output = work.path().join(format!("out-{cut}"));
        invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).ok();
        assert_eq!(of_records(&output.join("part-00000")), to_of(&expected));
    }
}

/// Checks that `count`, `verify`, `cat` and `tf2of` all fail on `file` with
/// `path: offset OFFSET (record #INDEX): what`, and that tf2of leaves nothing.
fn every_reader_fails_at(file: &Path, offset: u64, index: u64, what: &str) {
    let expected = format!(
        "{}: offset {offset} (record #{index}): {what}",
        file.display()
    );
    for command in ["count", "verify", "cat"] {
        let run = invoke(args([os(command), file.as_os_str()])).expect_code(1);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains(&expected), "{command}: {expected}\n{all}");
    }
    let work = tempdir();
    let input = work.path().join("in");
    copy_into(file, &input);
    let output = work.path().join("out");
    let run = invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).expect_code(1);
    let expected = expected.replace(
        &file.display().to_string(),
        &input.join(file.file_name().unwrap()).display().to_string(),
    );
    assert!(run.stderr.contains(&expected), "{expected}\n{}", run.stderr);
    assert!(files_under(&output).is_empty(), "{:?}", tree(&output));
}

#[test]
fn damaged_compressed_streams_fail_where_the_good_records_end() {
    let work = tempdir();
    let stream = tutorial_stream();
    let starts = record_starts(&stream);
    let end = stream.len() as u64;
    let whole = gzip(&stream);

    // Cut inside the gzip header: nothing can be read.
    let file = work.path().join("header.tfrecord.gz");
    fs::write(&file, &whole[..5]).unwrap();
    every_reader_fails_at(&file, 0, 0, "I/O error: unexpected end of file");

    // The gzip trailer's CRC-32 of the data does not match: every record read, then the
    // error at the end.
    let file = work.path().join("trailer.tfrecord.gz");
    let mut damaged = whole.clone();
    let crc_at = damaged.len() - 8;
    damaged[crc_at] ^= 0xff;
    fs::write(&file, damaged).unwrap();
    every_reader_fails_at(
        &file,
        end,
        500,
        "I/O error: corrupt gzip stream does not have a matching checksum",
    );

    // Junk after the last gzip member is read as a member that is not one.
    let file = work.path().join("junk.tfrecord.gz");
    let mut junk = whole.clone();
    junk.extend_from_slice(b"not a gzip member");
    fs::write(&file, junk).unwrap();
    every_reader_fails_at(&file, end, 500, "I/O error: invalid gzip header");

    // A ZLIB stream cut in half fails at the start of the first record it cannot finish.
    let file = work.path().join("cut.tfrecord.zz");
    let compressed = zlib(&stream);
    fs::write(&file, &compressed[..compressed.len() / 2]).unwrap();
    let run = invoke(args([os("count"), file.as_os_str()])).expect_code(1);
    let place = run
        .stderr
        .split_once(": offset ")
        .and_then(|(_, rest)| rest.split_once(": I/O error: incomplete deflate stream"))
        .unwrap_or_else(|| panic!("{}", run.stderr))
        .0;
    let (offset, index) = place.split_once(" (record #").unwrap();
    let (offset, index): (u64, usize) = (
        offset.parse().unwrap(),
        index.trim_end_matches(')').parse().unwrap(),
    );
    assert!(index > 0 && index < 500, "{place}");
    assert_eq!(offset, starts[index], "{place}");
    every_reader_fails_at(
        &file,
        offset,
        index as u64,
        "I/O error: incomplete deflate stream",
    );

    // The fixtures, through the readers damaged.rs and inspect.rs do not use on them.
    let trailing = damaged_fixture("zlib_trailing.tfrecord.zz");
    every_reader_fails_at(
        &trailing,
        end,
        500,
        "I/O error: unexpected data after the end of the zlib stream",
    );
    let cut = damaged_fixture("gzip_cut.tfrecord.gz");
    every_reader_fails_at(&cut, 29243, 291, "I/O error: incomplete deflate stream");
    let concatenated = damaged_fixture("gzip_concat.tfrecord.gz");
    let counted = invoke(args([os("count"), concatenated.as_os_str()])).ok();
    assert!(
        counted.stdout.starts_with("    510  "),
        "{}",
        counted.stdout
    );
    assert_eq!(cat_json(&concatenated).ok().stdout.lines().count(), 510);
}

/// A ZLIB stream whose Adler-32 is wrong fails, and no record of it passes as good. (The
/// offset reported is where the decompressor's last read began, not the stream's end: the
/// checksum is checked inside the read that reaches the end, which then returns no data.)
#[test]
fn a_zlib_stream_with_a_wrong_adler32_fails_and_nothing_of_it_is_kept() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    let file = input.join("adler.tfrecord.zz");
    let mut compressed = zlib(&tutorial_stream());
    let last = compressed.len() - 1;
    compressed[last] ^= 0xff;
    fs::write(&file, compressed).unwrap();
    let named = format!("{}: offset ", file.display());
    for command in ["count", "verify"] {
        let run = invoke(args([os(command), file.as_os_str()])).expect_code(1);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(
            all.contains(&named) && all.contains("I/O error: corrupt deflate stream"),
            "{all}"
        );
    }
    let output = work.path().join("out");
    invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).expect_code(1);
    assert!(files_under(&output).is_empty());
}

#[test]
fn payloads_that_do_not_parse_behind_right_framing_fail_with_their_offset() {
    // TFRecord: the framing is right, so count counts all four; cat prints the three that
    // parse and names the one that does not.
    let garbage = damaged_fixture("crc_ok_garbage_payload.tfrecord");
    let counted = invoke(args([os("count"), garbage.as_os_str()])).ok();
    assert!(
        counted.stdout.starts_with("      4  "),
        "{}",
        counted.stdout
    );
    let cat = cat_json(&garbage).expect_code(1);
    assert_eq!(cat.stdout.lines().count(), 3);
    let expected = format!(
        "{}: offset 201 (record #2): record is not a tf.train.Example",
        garbage.display()
    );
    assert!(cat.stderr.contains(&expected), "{}", cat.stderr);

    // OFRecord: a payload that is not an OFRecord fails of2tf at its offset.
    let work = tempdir();
    let input = work.path().join("of");
    fs::create_dir(&input).unwrap();
    let mut records = to_of(&examples(0, 4, 10));
    records[2] = vec![0xff; 16];
    let part = input.join("part-0");
    write_ofrecord(&part, &records);
    let offset: usize = records[..2].iter().map(|record| record.len() + 8).sum();
    let output = work.path().join("tf");
    let run = invoke(args([os("of2tf"), input.as_os_str(), output.as_os_str()])).expect_code(1);
    let place = format!("{}: offset {offset} (record #2): ", part.display());
    assert!(run.stderr.contains(&place), "{place}\n{}", run.stderr);
    assert!(files_under(&output).is_empty());
    let verified = invoke(args([os("verify"), part.as_os_str()])).expect_code(1);
    assert!(verified.stdout.contains(&place), "{}", verified.stdout);
}
