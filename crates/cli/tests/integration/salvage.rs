//! `--on-corrupt skip` after a damaged length: reading resumes at the next good record, the
//! damaged record comes back when its checksum vouches for it, and the skip is reported by
//! offset.

use std::fs;
use std::path::Path;

use crate::util::*;

const RECORDS: usize = 50;
const DAMAGED: usize = 20;

/// 50 Examples framed as TFRecords, and where each record starts.
fn tfrecord_file(path: &Path) -> (Vec<Vec<u8>>, Vec<usize>, Vec<u8>) {
    let records: Vec<Vec<u8>> = (0..RECORDS).map(|i| example(i as i64, 40 + i)).collect();
    let (mut bytes, mut starts) = (Vec::new(), Vec::new());
    for record in &records {
        starts.push(bytes.len());
        ofconvert_tfrecord::frame::encode_record(record, &mut bytes);
    }
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    (records, starts, bytes)
}

fn tf2of_skip(input: &Path, out: &Path) -> Run {
    ofconvert()
        .arg("tf2of")
        .args([input, out])
        .args(["--on-corrupt", "skip"])
        .ok()
}

fn converted(out: &Path) -> Vec<Vec<u8>> {
    files_starting(out, "part-")
        .iter()
        .flat_map(|part| of_records(part))
        .collect()
}

#[test]
fn a_flipped_length_byte_loses_nothing() {
    let work = tempdir();
    let file = work.path().join("in/data.tfrecord");
    let (records, starts, mut bytes) = tfrecord_file(&file);
    bytes[starts[DAMAGED] + 1] ^= 0x04;
    fs::write(&file, bytes).unwrap();
    let out = work.path().join("out");
    tf2of_skip(&file.with_file_name(""), &out);
    assert_eq!(converted(&out), to_of(&records));
    assert_eq!(manifest(&out)["records"], RECORDS as u64);
    assert_eq!(manifest(&out)["skipped"]["corrupt"], 0);
}

#[test]
fn a_damaged_length_and_data_skip_one_record_reported_by_offset() {
    let work = tempdir();
    let file = work.path().join("in/data.tfrecord");
    let (mut records, starts, mut bytes) = tfrecord_file(&file);
    bytes[starts[DAMAGED] + 1] ^= 0x04;
    bytes[starts[DAMAGED] + 14] ^= 0x04;
    fs::write(&file, bytes).unwrap();
    let out = work.path().join("out");
    tf2of_skip(&file.with_file_name(""), &out);
    records.remove(DAMAGED);
    assert_eq!(converted(&out), to_of(&records));
    let manifest = manifest(&out);
    assert_eq!(manifest["records"], (RECORDS - 1) as u64);
    assert_eq!(manifest["skipped"]["corrupt"], 1);
    let detail = manifest["skipped"]["details"][0].as_str().unwrap();
    let (start, end) = (starts[DAMAGED], starts[DAMAGED + 1]);
    assert!(
        detail.contains(&format!("offset {start} (record #{DAMAGED})")),
        "{detail}"
    );
    assert!(
        detail.contains(&format!("bytes {start}..{end} skipped")),
        "{detail}"
    );
}

/// 50 OFRecords framed in `dir/part-00000` with one byte of record 20's length XORed with
/// `flip`; the payloads.
fn damaged_oneflow_part(dir: &Path, byte: usize, flip: u8) -> Vec<Vec<u8>> {
    fs::create_dir_all(dir).unwrap();
    let examples: Vec<Vec<u8>> = (0..RECORDS).map(|i| example(i as i64, 40 + i)).collect();
    let payloads = to_of(&examples);
    let (mut bytes, mut starts) = (Vec::new(), Vec::new());
    for payload in &payloads {
        starts.push(bytes.len());
        ofconvert_ofrecord::frame::encode_record(payload, &mut bytes);
    }
    bytes[starts[DAMAGED] + byte] ^= flip;
    fs::write(dir.join("part-00000"), bytes).unwrap();
    payloads
}

fn of2tf_skip(input: &Path, out: &Path) -> Vec<Vec<u8>> {
    ofconvert()
        .arg("of2tf")
        .args([input, out])
        .args(["--on-corrupt", "skip"])
        .ok();
    fs::read_dir(out)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "tfrecord"))
        .flat_map(|path| tf_records(&path))
        .collect()
}

#[test]
fn a_damaged_oneflow_length_resyncs_at_the_next_record_that_parses() {
    let work = tempdir();
    let dir = work.path().join("in");
    // The length's most significant byte: a negative length.
    let payloads = damaged_oneflow_part(&dir, 7, 0x80);
    let written = of2tf_skip(&dir, &work.path().join("out"));
    assert_eq!(written, to_tf(&payloads));
}

#[test]
fn a_oneflow_length_off_by_one_loses_nothing() {
    let work = tempdir();
    let dir = work.path().join("in");
    // A length one byte short still frames: only the payload that no longer parses shows it.
    let payloads = damaged_oneflow_part(&dir, 0, 0x01);
    let out = work.path().join("out");
    let written = of2tf_skip(&dir, &out);
    assert_eq!(written, to_tf(&payloads));
    assert_eq!(manifest(&out)["skipped"]["corrupt"], 0);
}

#[test]
fn a_truncated_input_fails_with_a_hint_to_salvage_it_which_converts_the_rest() {
    let work = tempdir();
    let dir = work.path().join("in");
    let file = dir.join("data.tfrecord");
    let (records, starts, mut bytes) = tfrecord_file(&file);
    // Cut inside the last record, as a copy that stopped short leaves it.
    bytes.truncate(starts[RECORDS - 1] + 20);
    fs::write(&file, bytes).unwrap();

    let out = work.path().join("out");
    let failed = ofconvert()
        .arg("tf2of")
        .args([&dir, &out])
        .arg("--json")
        .expect_code(1);
    assert!(
        failed
            .stderr
            .contains("hint: damaged input fails its dataset: pass --on-corrupt skip"),
        "{}",
        failed.stderr
    );
    // Known as damage by its kind, not by its message.
    let summary: serde_json::Value = serde_json::from_str(&failed.stdout).unwrap();
    assert_eq!(summary["datasets"][0]["error_kind"], "damaged");

    tf2of_skip(&dir, &out);
    assert_eq!(converted(&out), to_of(&records[..RECORDS - 1]));
    assert_eq!(manifest(&out)["skipped"]["corrupt"], 1);

    // A failure that skipping damage would not fix gets no such hint.
    let whole = work.path().join("whole");
    fs::create_dir(&whole).unwrap();
    write_tfrecord(&whole.join("data.tfrecord"), &records);
    let mapped = ofconvert()
        .arg("tf2of")
        .args([&whole, &work.path().join("mapped")])
        .args(["--cast", "payload=int32", "--json"])
        .expect_code(1);
    let summary: serde_json::Value = serde_json::from_str(&mapped.stdout).unwrap();
    assert_eq!(summary["datasets"][0]["error_kind"], "other");
    assert!(!mapped.stderr.contains("--on-corrupt"), "{}", mapped.stderr);
}

/// The file: 10,000 records, one bit of record #2's length flipped and one byte of
/// record #49's data.
fn twice_damaged(path: &Path) -> (Vec<Vec<u8>>, Vec<usize>) {
    let records: Vec<Vec<u8>> = (0..10_000).map(|i| example(i as i64, 8)).collect();
    let (mut bytes, mut starts) = (Vec::new(), Vec::new());
    for record in &records {
        starts.push(bytes.len());
        ofconvert_tfrecord::frame::encode_record(record, &mut bytes);
    }
    bytes[starts[2]] ^= 0x01;
    bytes[starts[49] + 14] ^= 0x10;
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
    (records, starts)
}

#[test]
fn verify_reads_past_a_damaged_length_as_the_converter_does() {
    let work = tempdir();
    let file = work.path().join("in/data.tfrecord");
    let (records, starts) = twice_damaged(&file);

    let text = ofconvert().arg("verify").arg(&file).expect_code(1);
    assert!(
        text.stdout.contains("2 problems, 9998 good records"),
        "{}",
        text.stdout
    );
    // A data checksum mismatch is placed at the record's data, past its 12-byte header.
    for (index, offset) in [(2, starts[2]), (49, starts[49] + 12)] {
        let place = format!("offset {offset} (record #{index})");
        assert!(text.stdout.contains(&place), "{place}\n{}", text.stdout);
    }
    let json = ofconvert()
        .args(["verify", "--json"])
        .arg(&file)
        .expect_code(1);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["good_records"], 9998);
    assert_eq!(report["problems"], 2);
    let problems = report["files"][0]["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].as_str().unwrap().contains("recovered"),
        "{problems:?}"
    );

    // The converter keeps the record its data checksum vouches for, and says so.
    let out = work.path().join("out");
    let run = ofconvert()
        .arg("tf2of")
        .args([&file.with_file_name(""), &out])
        .args(["--on-corrupt", "skip"])
        .ok();
    let mut kept = records.clone();
    kept.remove(49);
    assert_eq!(converted(&out), to_of(&kept));
    let manifest = manifest(&out);
    assert_eq!(manifest["records"], 9999);
    assert_eq!(manifest["skipped"]["corrupt"], 1);
    assert_eq!(manifest["skipped"]["recovered"], 1);
    assert!(
        run.stdout
            .contains("recovered 1 record after a damaged length"),
        "{}",
        run.stdout
    );
}

#[test]
fn tf2of_help_does_not_say_a_damaged_length_ends_the_file() {
    let help = ofconvert().args(["tf2of", "--help"]).ok();
    assert!(
        !help
            .stdout
            .contains("a damaged length or a truncated tail ends the file"),
        "{}",
        help.stdout
    );
    assert!(
        help.stdout
            .contains("reading resumes after a damaged length"),
        "{}",
        help.stdout
    );
}

/// Google's `padded.array_record` (`pad_to_block_boundary:true`: records 0-7 in a chunk at 64,
/// a padding chunk from 693 to the block's end, records 8-11 in a chunk at 65536), with a byte
/// flipped in that padding: `verify` goes on at the first chunk past the damage and loses no
/// record (it went on past the chunk of the record after the damage, the sound one, and so
/// lost records 8-11). Flipped in a chunk of records instead, it loses that chunk's records.
/// The damage is named by its offset. Of the file's records, only 3 and 5 are Examples: each
/// other one read is a problem of its own, named by its index.
#[test]
fn damage_in_an_array_records_padding_loses_no_record() {
    let work = tempdir();
    let bytes = fs::read(testdata().join("arrayrecord/padded.array_record")).unwrap();
    // Where the byte is flipped, the offset and record the damage is named by, where reading
    // resumes, the records lost.
    for (at, damage, index, resumed, lost) in
        [(5733, 693, 8, 65536, 0..0), (64 + 45, 64, 0, 65536, 0..8)]
    {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x20;
        let file = work.path().join(format!("flipped-{at}.array_record"));
        fs::write(&file, damaged).unwrap();
        let run = ofconvert()
            .args(["verify", "--json"])
            .arg(&file)
            .expect_code(1);
        let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let problems: Vec<&str> = report["files"][0]["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|problem| problem.as_str().unwrap())
            .collect();
        let damages: Vec<&&str> = problems
            .iter()
            .filter(|problem| problem.contains("hash mismatch"))
            .collect();
        assert_eq!(damages.len(), 1, "flip at {at}: {problems:#?}");
        let named = format!("offset {damage} (record #{index}): ");
        assert!(damages[0].contains(&named), "flip at {at}: {problems:#?}");
        let skipped = format!("(bytes {damage}..{resumed} skipped");
        assert!(damages[0].contains(&skipped), "flip at {at}: {problems:#?}");
        for index in 0..12 {
            let named = format!("(record #{index}): record is not a tf.train.Example");
            let expected = !lost.contains(&index) && index != 3 && index != 5;
            assert_eq!(
                problems.iter().any(|problem| problem.contains(&named)),
                expected,
                "flip at {at}, record {index}: {problems:#?}"
            );
        }
        let good = [3, 5].into_iter().filter(|i| !lost.contains(i)).count();
        assert_eq!(report["good_records"], good, "flip at {at}");
    }
}
