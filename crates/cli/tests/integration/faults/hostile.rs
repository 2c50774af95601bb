//! Hostile length prefixes

use super::*;

/// Half a gigabyte of address space: far less than any length below asks for, enough for
/// the binary with its threads and buffers.
const ADDRESS_SPACE: u64 = 512 << 20;

fn small_memory() -> Confine {
    Confine {
        address_space: Some(ADDRESS_SPACE),
        ..Confine::default()
    }
}

/// Three good records, then a TFRecord header announcing `length` bytes (its checksum
/// right), then `tail` bytes. Returns the header's offset.
fn hostile_tfrecord(path: &Path, length: u64, tail: u64) -> u64 {
    let mut bytes: Vec<u8> = examples(0, 3, 100)
        .iter()
        .flat_map(|r| tf_frame(r))
        .collect();
    let offset = bytes.len() as u64;
    bytes.extend(tf_header(length));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, &bytes).unwrap();
    // Sparse: a long tail costs no disk.
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(offset + 12 + tail)
        .unwrap();
    offset
}

/// The same in OFRecord framing: an 8-byte signed length.
fn hostile_ofrecord(path: &Path, length: u64, tail: u64) -> u64 {
    let mut bytes = Vec::new();
    for record in to_of(&examples(0, 3, 100)) {
        bytes.extend(of_frame(&record));
    }
    let offset = bytes.len() as u64;
    bytes.extend(length.to_le_bytes());
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, &bytes).unwrap();
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(offset + 8 + tail)
        .unwrap();
    offset
}

/// Runs `args` in small memory and checks for exit 1 and `expected` on stdout or stderr.
fn fails_in_small_memory(args: Vec<OsString>, expected: &str) {
    let run = run_confined(the_binary(), small_memory(), &args).expect_code(1);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains(expected), "{args:?}: {expected}\n{all}");
}

#[test]
fn length_prefixes_of_2_60_and_2_63_fail_at_their_offset_in_small_memory() {
    let work = tempdir();
    for length in [1u64 << 60, (1u64 << 63) - 1] {
        let tf = work.path().join(format!("tf-{length}/x.tfrecord"));
        let offset = hostile_tfrecord(&tf, length, 100);
        let place = format!("{}: offset {offset} (record #3): ", tf.display());
        let what = format!(
            "{place}truncated record (the header announces {length} data bytes and a 4-byte \
             checksum, only 100 bytes follow)"
        );
        for command in ["count", "verify", "cat"] {
            fails_in_small_memory(args([os(command), tf.as_os_str()]), &what);
        }
        let output = work.path().join(format!("of-out-{length}"));
        let input = tf.parent().unwrap();
        fails_in_small_memory(
            args([os("tf2of"), input.as_os_str(), output.as_os_str()]),
            &what,
        );
        assert!(files_under(&output).is_empty());

        let of = work.path().join(format!("of-{length}/part-0"));
        let offset = hostile_ofrecord(&of, length, 100);
        let what = format!(
            "{}: offset {offset} (record #3): truncated record (length {length}, only 100 \
             payload bytes follow)",
            of.display()
        );
        for command in ["count", "verify", "cat"] {
            fails_in_small_memory(args([os(command), of.as_os_str()]), &what);
        }
        let output = work.path().join(format!("tf-out-{length}"));
        let input = of.parent().unwrap();
        fails_in_small_memory(
            args([os("of2tf"), input.as_os_str(), output.as_os_str()]),
            &what,
        );
        assert!(files_under(&output).is_empty());
    }

    // Past 2^63 an OFRecord length is negative, as OneFlow reads it.
    let of = work.path().join("negative/part-0");
    let offset = hostile_ofrecord(&of, 1 << 63, 100);
    fails_in_small_memory(
        args([os("verify"), of.as_os_str()]),
        &format!(
            "{}: offset {offset} (record #3): negative record length {}",
            of.display(),
            i64::MIN
        ),
    );
}

/// A hostile length followed by a gigabyte of (sparse) file: more than the address space
/// the process has. Counting steps over it; reading has to hold what it reads, and the
/// allocation failing is an error at the record, not an abort.
#[test]
fn a_hostile_length_over_a_tail_bigger_than_memory_is_an_error_not_an_abort() {
    let work = tempdir();
    let tail = 1 << 30;
    let tf = work.path().join("tf/x.tfrecord");
    let offset = hostile_tfrecord(&tf, 1 << 60, tail);
    let place = format!("{}: offset {offset} (record #3): ", tf.display());
    fails_in_small_memory(
        args([os("count"), tf.as_os_str()]),
        &format!("{place}truncated record"),
    );
    fails_in_small_memory(args([os("verify"), tf.as_os_str()]), &place);
    let output = work.path().join("of-out");
    fails_in_small_memory(
        args([
            os("tf2of"),
            tf.parent().unwrap().as_os_str(),
            output.as_os_str(),
        ]),
        &place,
    );

    let of = work.path().join("of/part-0");
    let offset = hostile_ofrecord(&of, 1 << 60, tail);
    let place = format!("{}: offset {offset} (record #3): ", of.display());
    fails_in_small_memory(
        args([os("count"), of.as_os_str()]),
        &format!("{place}truncated record"),
    );
    fails_in_small_memory(args([os("verify"), of.as_os_str()]), &place);
}
