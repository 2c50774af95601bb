//! Side files as part of a dataset's publication: never left by a failed dataset, redone
//! by `--resume` when not whole or changed, replaced by `--overwrite`, written once by
//! `commit` (never by the workers) in a sharded run, on a disk and in a bucket.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::contents;
use crate::objects::S3Server;
use crate::util::*;

/// A folder holding two families, `good` and `bad`, and `labels.txt`.
fn two_families(root: &Path) -> PathBuf {
    let input = root.join("in");
    fs::create_dir_all(&input).unwrap();
    write_tfrecord(&input.join("good-00000-of-00001"), &examples(0, 5, 40));
    write_tfrecord(&input.join("bad-00000-of-00001"), &examples(5, 5, 40));
    fs::write(input.join("labels.txt"), "cat\ndog\nbird\n").unwrap();
    input
}

/// The status of each dataset of a `--json` summary, by name.
fn statuses(stdout: &str) -> Vec<(String, String)> {
    let summary: Value = serde_json::from_str(stdout).unwrap();
    summary["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|dataset| {
            (
                dataset["name"].as_str().unwrap().to_owned(),
                dataset["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_failed_dataset_leaves_no_side_file_and_its_sibling_keeps_its_copy() {
    let work = tempdir();
    let input = two_families(work.path());
    let bad = input.join("bad-00000-of-00001");
    let mut bytes = fs::read(&bad).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&bad, bytes).unwrap();
    let out = work.path().join("out");
    ofconvert().arg("tf2of").args([&input, &out]).expect_code(1);
    assert_eq!(
        tree(&out),
        [
            "good/labels.txt",
            "good/ofconvert-manifest.json",
            "good/part-00000"
        ]
    );
}

#[test]
fn resume_redoes_a_dataset_whose_side_files_are_not_whole_or_changed() {
    let work = tempdir();
    let input = two_families(work.path());
    let out = work.path().join("out");
    ofconvert().arg("tf2of").args([&input, &out]).ok();
    let clean = contents(&out);
    let resume = || {
        let run = ofconvert()
            .arg("tf2of")
            .args([&input, &out])
            .args(["--resume", "--json"])
            .ok();
        statuses(&run.stdout)
    };
    let both = |good: &str, bad: &str| {
        vec![
            ("bad".to_owned(), bad.to_owned()),
            ("good".to_owned(), good.to_owned()),
        ]
    };
    assert_eq!(resume(), both("kept", "kept"));

    // A side file gone from the output: the dataset is not whole.
    fs::remove_file(out.join("good/labels.txt")).unwrap();
    assert_eq!(resume(), both("converted", "kept"));
    assert_eq!(contents(&out), clean);

    // What a run killed before the manifest leaves: parts and a side file under temporary
    // names.
    fs::remove_file(out.join("bad/ofconvert-manifest.json")).unwrap();
    fs::rename(
        out.join("bad/labels.txt"),
        out.join("bad/.ofconvert-copy.labels.txt.tmp-4000000"),
    )
    .unwrap();
    fs::rename(
        out.join("bad/part-00000"),
        out.join("bad/.ofconvert-part-0-0.tmp-4000000"),
    )
    .unwrap();
    assert_eq!(resume(), both("kept", "converted"));
    assert_eq!(contents(&out), clean);

    // A side file changed in the input: both datasets of its folder are redone.
    fs::write(input.join("labels.txt"), "cat\ndog\nbird\nfish\n").unwrap();
    assert_eq!(resume(), both("converted", "converted"));
    for family in ["good", "bad"] {
        assert_eq!(
            fs::read_to_string(out.join(family).join("labels.txt")).unwrap(),
            "cat\ndog\nbird\nfish\n"
        );
    }

    // Overwriting rewrites them, whatever they hold.
    fs::write(out.join("good/labels.txt"), "x").unwrap();
    ofconvert()
        .arg("tf2of")
        .args([&input, &out])
        .arg("--overwrite")
        .ok();
    assert_eq!(
        fs::read_to_string(out.join("good/labels.txt")).unwrap(),
        "cat\ndog\nbird\nfish\n"
    );
}

#[test]
fn families_bringing_different_copies_of_a_file_to_one_folder_clash() {
    let work = tempdir();
    let input = two_families(work.path());
    let of = work.path().join("of");
    ofconvert().arg("tf2of").args([&input, &of]).ok();
    fs::write(of.join("bad/labels.txt"), "other\n").unwrap();
    let back = work.path().join("back");
    let run = ofconvert().arg("of2tf").args([&of, &back]).expect_code(1);
    assert!(
        run.stderr
            .contains("its labels.txt and that of bad, which goes back to the same folder, differ"),
        "{}",
        run.stderr
    );
    assert!(!back.join("labels.txt").exists());
}

#[test]
fn workers_write_no_side_file_and_commit_copies_each_once() {
    let work = tempdir();
    let input = two_families(work.path());
    let single = work.path().join("single");
    ofconvert().arg("tf2of").args([&input, &single]).ok();
    let sharded = work.path().join("sharded");
    for k in 0..2 {
        ofconvert()
            .arg("tf2of")
            .args([&input, &sharded])
            .args(["--shard", &format!("{k}/2")])
            .ok();
    }
    // Parts under temporary names, receipts, the plan: nothing that came with the records.
    assert!(
        tree(&sharded)
            .iter()
            .all(|file| !file.contains("labels.txt")),
        "{:?}",
        tree(&sharded)
    );
    let plan: Value =
        serde_json::from_str(&fs::read_to_string(sharded.join(".ofconvert/plan.json")).unwrap())
            .unwrap();
    assert_eq!(plan["datasets"][0]["side_files"][0]["path"], "labels.txt");
    ofconvert().arg("commit").arg(&sharded).ok();
    assert_eq!(contents(&sharded), contents(&single));

    // A side file changed after the plan was stored fails its datasets in commit, which
    // names it.
    let late = work.path().join("late");
    for k in 0..2 {
        ofconvert()
            .arg("tf2of")
            .args([&input, &late])
            .args(["--shard", &format!("{k}/2")])
            .ok();
    }
    fs::write(input.join("labels.txt"), "changed\n").unwrap();
    let run = ofconvert().arg("commit").arg(&late).expect_code(1);
    assert!(
        run.stderr
            .contains("labels.txt changed since the plan was stored"),
        "{}",
        run.stderr
    );
    assert!(!late.join("good/labels.txt").exists());
    assert!(!late.join("good/ofconvert-manifest.json").exists());
}

#[test]
fn in_a_bucket_commit_uploads_the_side_files_and_the_names_come_back() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    let input = two_families(work.path());
    let local = work.path().join("of");
    ofconvert().arg("tf2of").args([&input, &local]).ok();
    for k in 0..2 {
        s3.ofconvert()
            .arg("tf2of")
            .arg(&input)
            .arg("s3://data/of")
            .args(["--shard", &format!("{k}/2")])
            .ok();
    }
    assert!(!s3.file("data", "of/good/labels.txt").exists());
    s3.ofconvert().args(["commit", "s3://data/of"]).ok();
    assert_eq!(
        fs::read(s3.file("data", "of/good/labels.txt")).unwrap(),
        fs::read(local.join("good/labels.txt")).unwrap()
    );

    // Back from the bucket into the bucket: the folder as it was.
    s3.ofconvert()
        .args(["of2tf", "s3://data/of", "s3://data/back"])
        .ok();
    let back = s3.file("data", "back");
    let files: Vec<String> = tree(&back)
        .into_iter()
        .filter(|file| !file.ends_with("ofconvert-manifest.json"))
        .collect();
    assert_eq!(
        files,
        ["bad-00000-of-00001", "good-00000-of-00001", "labels.txt"]
    );
    for file in files {
        assert_eq!(
            fs::read(back.join(&file)).unwrap(),
            fs::read(input.join(&file)).unwrap(),
            "{file}"
        );
    }
}

#[test]
fn a_file_named_like_a_part_is_not_carried_over_the_parts() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir_all(&input).unwrap();
    let records = examples(0, 3, 10);
    write_tfrecord(&input.join("train.tfrecord"), &records);
    fs::write(input.join("part-00000"), "not records").unwrap();
    fs::write(input.join("shard_0"), "not records either").unwrap();
    let out = work.path().join("out");
    let run = ofconvert().arg("tf2of").args([&input, &out]).ok();
    assert_eq!(of_records(&out.join("part-00000")), to_of(&records));
    assert!(
        run.stdout
            .contains("part-00000: named like a OneFlow part: not carried beside the parts"),
        "{}",
        run.stdout
    );
    // With another prefix, the other one is the part-like name.
    let shards = work.path().join("shards");
    ofconvert()
        .arg("tf2of")
        .args([&input, &shards])
        .args(["--part-prefix", "shard_", "--part-digits", "0"])
        .ok();
    assert_eq!(
        tree(&shards),
        ["ofconvert-manifest.json", "part-00000", "shard_0"]
    );
    assert_eq!(fs::read(shards.join("part-00000")).unwrap(), b"not records");
    assert_eq!(of_records(&shards.join("shard_0")), to_of(&records));
}
