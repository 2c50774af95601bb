//! A record file damaged at its start is still a record file, named with where the damage
//! is, whatever reads it: a OneFlow part by its name, a file its manifest lists, a TFRecord
//! file by the sound records further in. Only a file with no record anywhere is a side file.

use std::fs;

use super::{eight_parts, flip};
use crate::util::*;

#[test]
fn a_part_whose_first_length_runs_past_the_file_is_named_by_every_command() {
    let work = tempdir();
    let of = eight_parts(work.path());
    // The length's fifth byte: the length now runs 2^32 bytes and more past the file.
    flip(&of.join("part-00000"), 4);
    let place = format!(
        "{}: offset 0 (record #0): truncated record",
        of.join("part-00000").display()
    );

    let verify = ofconvert().arg("verify").arg(&of).expect_code(1);
    assert!(
        verify
            .stdout
            .contains(&format!("FAILED  {}", of.join("part-00000").display())),
        "{}",
        verify.stdout
    );
    assert!(verify.stdout.contains(&place), "{}", verify.stdout);
    assert!(
        verify
            .stdout
            .contains("verified 8 files: 438 good records, 1 problem"),
        "{}",
        verify.stdout
    );

    for command in [
        &["count"][..],
        &["cat"],
        &["schema"],
        &["cat", "--format", "of"],
    ] {
        let run = ofconvert().args(command).arg(&of).expect_code(1);
        assert!(run.stderr.contains(&place), "{command:?}: {}", run.stderr);
    }
    let diff = ofconvert()
        .arg("diff")
        .arg(&of)
        .arg(work.path().join("tf"))
        .expect_code(2);
    assert!(diff.stderr.contains(&place), "{}", diff.stderr);
    let back = ofconvert()
        .arg("of2tf")
        .arg(&of)
        .arg(work.path().join("back"))
        .expect_code(1);
    assert!(back.stderr.contains(&place), "{}", back.stderr);
}

#[test]
fn a_part_its_manifest_lists_is_a_record_file_whatever_its_name_and_one_missing_is_named() {
    let work = tempdir();
    let tf = work.path().join("tf");
    fs::create_dir_all(&tf).unwrap();
    write_tfrecord(&tf.join("train.tfrecord"), &examples(0, 20, 10));
    let of = work.path().join("of");
    ofconvert()
        .arg("tf2of")
        .args([&tf, &of])
        .args(["--parts", "2", "--part-prefix", "shard_"])
        .ok();
    // Nothing at all of a record left in the first part, nor any sign of one.
    let first = of.join("shard_00000");
    fs::write(
        &first,
        vec![0xa5; fs::metadata(&first).unwrap().len() as usize],
    )
    .unwrap();
    let count = ofconvert().arg("count").arg(&of).expect_code(1);
    assert!(
        count
            .stderr
            .contains(&format!("{}: offset 0 (record #0): ", first.display())),
        "{}",
        count.stderr
    );

    fs::remove_file(of.join("shard_00001")).unwrap();
    let count = ofconvert().arg("count").arg(&of).expect_code(1);
    assert!(
        count.stderr.contains(&format!(
            "{}: missing, yet ofconvert-manifest.json lists it (10 records, ",
            of.join("shard_00001").display()
        )),
        "{}",
        count.stderr
    );
}

#[test]
fn a_damaged_tfrecord_file_not_named_as_one_fails_its_dataset_and_is_no_side_file() {
    let work = tempdir();
    let input = work.path().join("in");
    let damaged = input.join("damaged");
    let fine = input.join("fine");
    fs::create_dir_all(&damaged).unwrap();
    fs::create_dir_all(&fine).unwrap();
    write_tfrecord(&damaged.join("shardA"), &examples(0, 250, 30));
    // Its first length's checksum fails; the records after it are sound.
    flip(&damaged.join("shardA"), 0);
    write_tfrecord(&damaged.join("shardB.tfrecord"), &examples(250, 10, 30));
    write_tfrecord(&fine.join("train.tfrecord"), &examples(0, 10, 30));
    fs::write(fine.join("README"), "the fine dataset\n").unwrap();
    fs::write(fine.join("labels.txt"), "cat\ndog\n").unwrap();

    let out = work.path().join("out");
    let run = ofconvert().arg("tf2of").args([&input, &out]).expect_code(1);
    let shard_a = damaged.join("shardA");
    assert!(
        run.stderr.contains(&format!(
            "{}: offset 0 (record #0): corrupted record",
            shard_a.display()
        )),
        "{}",
        run.stderr
    );
    assert!(!out.join("damaged").exists(), "{:?}", tree(&out));
    // The files without records are carried, and said once.
    assert_eq!(
        tree(&out.join("fine")),
        [
            "README",
            "labels.txt",
            "ofconvert-manifest.json",
            "part-00000"
        ]
    );
    let said = run
        .stdout
        .lines()
        .chain(run.stderr.lines())
        .filter(|line| line.contains("README"))
        .count();
    assert_eq!(said, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("with README, labels.txt"),
        "{}",
        run.stdout
    );

    // Read by itself, or in its folder, it is the damaged TFRecord file it is.
    let verify = ofconvert().arg("verify").arg(&damaged).expect_code(1);
    assert!(
        verify
            .stdout
            .contains(&format!("FAILED  {}", shard_a.display())),
        "{}",
        verify.stdout
    );
    let count = ofconvert().arg("count").arg(&shard_a).expect_code(1);
    assert!(
        count
            .stderr
            .contains(&format!("{}: offset 0", shard_a.display())),
        "{}",
        count.stderr
    );
}

#[test]
fn the_parts_a_manifest_lists_are_converted_whatever_their_names_never_carried() {
    let work = tempdir();
    let tf = work.path().join("tf");
    fs::create_dir_all(&tf).unwrap();
    write_tfrecord(&tf.join("train.tfrecord"), &examples(0, 20, 10));
    let of = work.path().join("of");
    ofconvert()
        .arg("tf2of")
        .args([&tf, &of])
        .args(["--parts", "2", "--part-prefix", "shard_"])
        .ok();
    // of2tf without the prefix: the manifest says which files are the parts.
    let back = work.path().join("back");
    let run = ofconvert()
        .arg("of2tf")
        .args([&of, &back])
        .arg("--json")
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(summary["records"], 20, "{}", run.stdout);
    assert_eq!(summary["side_files"], 0, "{}", run.stdout);

    // One of them damaged from its first byte: the dataset fails, naming it.
    let first = of.join("shard_00000");
    fs::write(
        &first,
        vec![0xa5; fs::metadata(&first).unwrap().len() as usize],
    )
    .unwrap();
    let failed = ofconvert()
        .arg("of2tf")
        .args([&of, &work.path().join("failed")])
        .expect_code(1);
    assert!(
        failed
            .stderr
            .contains(&format!("{}: offset 0 (record #0): ", first.display())),
        "{}",
        failed.stderr
    );
}

#[test]
fn a_file_given_back_under_its_name_is_a_record_file_by_its_manifest() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir_all(&input).unwrap();
    write_tfrecord(&input.join("shardA"), &examples(0, 30, 10));
    write_tfrecord(&input.join("shardB"), &examples(30, 30, 10));
    let of = work.path().join("of");
    ofconvert().arg("tf2of").args([&input, &of]).ok();
    let back = work.path().join("back");
    ofconvert().arg("of2tf").args([&of, &back]).ok();
    assert_eq!(tree(&back), ["ofconvert-manifest.json", "shardA", "shardB"]);
    // No record left in it, nor a sign of one: its manifest still says what it is.
    let shard_a = back.join("shardA");
    fs::write(&shard_a, vec![0xa5; 500]).unwrap();
    let run = ofconvert()
        .arg("tf2of")
        .args([&back, &work.path().join("again")])
        .expect_code(1);
    assert!(
        run.stderr
            .contains(&format!("{}: offset 0 (record #0): ", shard_a.display())),
        "{}",
        run.stderr
    );
    let verify = ofconvert().arg("verify").arg(&back).expect_code(1);
    assert!(
        verify
            .stdout
            .contains(&format!("FAILED  {}", shard_a.display())),
        "{}",
        verify.stdout
    );
}
