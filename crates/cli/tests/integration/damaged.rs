//! Every kind of damaged input in `testdata/damaged`: it fails its dataset with the file,
//! offset and record named, leaves nothing of that dataset, and lets the others convert;
//! `--on-corrupt skip` salvages and counts.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::*;
use serde_json::Value;

struct Damaged {
    file: String,
    kind: String,
    offset: Option<u64>,
    index: Option<u64>,
    /// Records that convert when salvaging.
    salvaged: u64,
}

fn damaged() -> Vec<Damaged> {
    let text = fs::read_to_string(testdata().join("damaged/expected.json")).unwrap();
    let expected: Value = serde_json::from_str(&text).unwrap();
    let files = expected["files"].as_object().unwrap();
    assert!(files.len() >= 10, "{files:?}");
    files
        .iter()
        .map(|(file, facts)| {
            let kind = facts["kind"].as_str().unwrap().to_owned();
            // Damage that leaves the framing intact costs one record; the rest ends the file
            // where the good records end. The damaged TFRecords are copies of the 500-record
            // tutorial file unless they say otherwise.
            let total = facts["records"].as_u64().unwrap_or(500);
            let salvaged = match kind.as_str() {
                "ok" => total,
                "DataCrcMismatch" | "NotAnExample" => total - 1,
                // A damaged length resyncs at the next header, whose CRC confirms it, and the
                // record comes back whole: its data CRC vouches for the only length that fits.
                "LengthCrcMismatch" if file.starts_with("flipped_length") => total,
                _ => facts["good_records"].as_u64().unwrap(),
            };
            Damaged {
                file: file.clone(),
                kind,
                offset: facts["offset"].as_u64(),
                index: facts["index"].as_u64(),
                salvaged,
            }
        })
        .collect()
}

/// An input tree with each damaged file as a dataset of its own, plus a healthy one.
fn input_tree(root: &Path) -> PathBuf {
    let input = root.join("in");
    for case in damaged() {
        let name = case.file.split('.').next().unwrap();
        copy_into(
            &testdata().join("damaged").join(&case.file),
            &input.join(name),
        );
    }
    copy_into(
        &testdata().join("datasets/tutorial/tutorial.tfrecord"),
        &input.join("healthy"),
    );
    input
}

#[test]
fn damage_fails_its_dataset_only_and_names_file_offset_and_record() {
    let work = tempdir();
    let input = input_tree(work.path());
    let out = work.path().join("out");
    let run = ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), out.as_os_str()])
        .expect_code(1);

    assert_eq!(of_records(&out.join("healthy/part-00000")).len(), 100);
    for case in damaged() {
        let name = case.file.split('.').next().unwrap();
        let dataset = out.join(name);
        if case.kind == "ok" {
            let parts = files_starting(&dataset, "part-");
            let records: usize = parts.iter().map(|part| of_records(part).len()).sum();
            assert_eq!(records as u64, case.salvaged, "{}", case.file);
            continue;
        }
        assert!(
            !dataset.exists(),
            "{}: {:?} left behind",
            case.file,
            tree(&dataset)
        );
        let path = input.join(name).join(&case.file);
        let place = format!(
            "{}: offset {} (record #{}): ",
            path.display(),
            case.offset.unwrap(),
            case.index.unwrap()
        );
        assert!(
            run.stderr.contains(&place),
            "{}: {place}\n{}",
            case.kind,
            run.stderr
        );
    }
    // Where TensorFlow asks "Is this even a TFRecord file?", the whole file was looked at:
    // no record is framed anywhere in it.
    assert!(
        run.stderr.contains(
            "garbage.tfrecord: offset 0 (record #0): not a TFRecord file: no TFRecord record"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("9 datasets failed"), "{}", run.stderr);
}

#[test]
fn skip_salvages_and_counts_every_damaged_record() {
    let work = tempdir();
    let input = input_tree(work.path());
    let out = work.path().join("out");
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            out.as_os_str(),
            "--on-corrupt".as_ref(),
            "skip".as_ref(),
            "--json".as_ref(),
        ])
        .expect_code(1);
    let summary: Value = serde_json::from_str(&run.stdout).unwrap();
    // A file damaged from its first byte to its last holds no record to salvage: it is said
    // to be no TFRecord file, and its dataset fails.
    let no_record = |case: &Damaged| case.salvaged == 0 && case.offset == Some(0);
    let none_framed: Vec<Damaged> = damaged().into_iter().filter(no_record).collect();
    assert_eq!(none_framed.len(), 1);
    assert_eq!(summary["failed"], 1);
    for case in &none_framed {
        let place = format!("{}: offset 0 (record #0): not a TFRecord file", case.file);
        assert!(run.stderr.contains(&place), "{place}\n{}", run.stderr);
    }
    for case in damaged().into_iter().filter(|case| !no_record(case)) {
        let name = case.file.split('.').next().unwrap();
        let manifest = manifest(&out.join(name));
        assert_eq!(manifest["records"], case.salvaged, "{}", case.file);
        let parts = files_starting(&out.join(name), "part-");
        let records: usize = parts.iter().map(|part| of_records(part).len()).sum();
        assert_eq!(records as u64, case.salvaged, "{}", case.file);
        let recovered = case.salvaged == 500 && case.kind == "LengthCrcMismatch";
        let corrupt = u64::from(case.kind != "ok" && !recovered);
        assert_eq!(manifest["skipped"]["corrupt"], corrupt, "{}", case.file);
        if let (Some(offset), Some(index), 1) = (case.offset, case.index, corrupt) {
            let detail = manifest["skipped"]["details"][0].as_str().unwrap();
            let place = format!("offset {offset} (record #{index}): ");
            assert!(detail.contains(&place), "{}: {detail}", case.file);
        }
    }
}

#[test]
fn salvaged_records_are_the_undamaged_ones_in_order() {
    let work = tempdir();
    let input = work.path().join("in");
    copy_into(&testdata().join("damaged/flipped_data.tfrecord"), &input);
    let out = work.path().join("out");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            out.as_os_str(),
            "--on-corrupt".as_ref(),
            "skip".as_ref(),
            "--parts".as_ref(),
            "3".as_ref(),
        ])
        .ok();
    let mut expected = to_of(&tf_records(&testdata().join("golden/tutorial.tfrecord")));
    expected.remove(3);
    let records: Vec<Vec<u8>> = files_starting(&out, "part-")
        .iter()
        .flat_map(|part| of_records(part))
        .collect();
    assert_eq!(records, expected);
    assert_eq!(manifest(&out)["skipped"]["corrupt"], 1);
}

#[test]
fn damaged_oneflow_parts_fail_with_their_offset() {
    let work = tempdir();
    let input = work.path().join("of");
    let source = testdata().join("ofdatasets/imagenet_of/train/part-00000");
    let bytes = fs::read(&source).unwrap();
    fs::create_dir(&input).unwrap();
    // Cut inside the last record's payload.
    fs::write(input.join("part-00000"), &bytes[..bytes.len() - 10]).unwrap();
    let records = of_records(&source);
    let last_offset: usize = records[..records.len() - 1]
        .iter()
        .map(|record| record.len() + 8)
        .sum();

    let run = ofconvert()
        .args([
            "of2tf".as_ref(),
            input.as_os_str(),
            work.path().join("a").as_os_str(),
        ])
        .expect_code(1);
    let place = format!(
        "part-00000: offset {last_offset} (record #{}): truncated record",
        records.len() - 1
    );
    assert!(run.stderr.contains(&place), "{place}\n{}", run.stderr);

    let salvaged = work.path().join("b");
    ofconvert()
        .args([
            "of2tf".as_ref(),
            input.as_os_str(),
            salvaged.as_os_str(),
            "--on-corrupt".as_ref(),
            "skip".as_ref(),
        ])
        .ok();
    let written = tf_records(&salvaged.join("of.tfrecord"));
    assert_eq!(written, to_tf(&records[..records.len() - 1]));
}

#[test]
fn a_text_file_named_as_a_tfrecord_is_said_to_be_none_with_or_without_skipping() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    let text = "These are notes about the dataset; nothing here is a record.\n".repeat(40);
    fs::write(input.join("notes.tfrecord"), text).unwrap();
    for flags in [&[][..], &["--on-corrupt", "skip"][..]] {
        let output = work.path().join(format!("out-{}", flags.len()));
        let run = ofconvert()
            .arg("tf2of")
            .arg(&input)
            .arg(&output)
            .args(flags)
            .expect_code(1);
        assert!(
            run.stderr
                .contains("notes.tfrecord: offset 0 (record #0): not a TFRecord file"),
            "{flags:?}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("--on-corrupt"),
            "{flags:?}: {}",
            run.stderr
        );
        assert!(!output.join("part-00000").exists(), "{flags:?}");
    }
}
