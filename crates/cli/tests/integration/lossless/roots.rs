//! The files of a tree outside its datasets' folders (a README and a licence at its top, a
//! folder of notes) travel to the same place in the output and back, on a disk and in a
//! bucket, unless `--no-side-files` leaves them out; a tree of no records is still refused.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{contents, json_run};
use crate::objects::S3Server;
use crate::util::*;

const README: &[u8] = b"Two splits of ten-byte examples.\n";
const LICENSE: &[u8] = b"CC BY 4.0\n";
const NOTES: &[u8] = &[b'n', 0, 159, 146, 150, 255, b'\n'];

/// Two datasets in folders of their own, with a README and a licence above them and a
/// folder of notes without records beside them.
fn tree_with_root_files(root: &Path) -> PathBuf {
    let input = root.join("in");
    for (split, first) in [("train", 0), ("validation", 8)] {
        fs::create_dir_all(input.join(split)).unwrap();
        let shard = input.join(split).join(format!("{split}-00000-of-00001"));
        write_tfrecord(&shard, &examples(first, 4, 10));
    }
    fs::create_dir_all(input.join("docs")).unwrap();
    fs::write(input.join("README.txt"), README).unwrap();
    fs::write(input.join("LICENSE"), LICENSE).unwrap();
    fs::write(input.join("docs/notes.bin"), NOTES).unwrap();
    input
}

/// The `side_files` a manifest lists: name, bytes and CRC32C.
fn listed(manifest: &Value) -> Vec<(String, u64, String)> {
    manifest["side_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|side| {
            (
                side["name"].as_str().unwrap().to_owned(),
                side["bytes"].as_u64().unwrap(),
                side["crc32c"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn side(name: &str, bytes: &[u8]) -> (String, u64, String) {
    let crc = format!("{:08x}", ofconvert_tfrecord::crc::crc32c(bytes));
    (name.to_owned(), bytes.len() as u64, crc)
}

#[test]
fn files_above_the_datasets_are_carried_to_the_same_place_and_listed() {
    let work = tempdir();
    let input = tree_with_root_files(work.path());
    let of = work.path().join("of");
    let summary = json_run(ofconvert().arg("tf2of").args([&input, &of]));
    assert_eq!(summary["skipped_files"], serde_json::json!([]));
    assert_eq!(summary["side_files"], 3);
    assert_eq!(
        tree(&of),
        [
            "LICENSE",
            "README.txt",
            "docs/notes.bin",
            "docs/ofconvert-manifest.json",
            "ofconvert-manifest.json",
            "train/ofconvert-manifest.json",
            "train/part-00000",
            "validation/ofconvert-manifest.json",
            "validation/part-00000",
        ]
    );
    assert_eq!(fs::read(of.join("README.txt")).unwrap(), README);
    assert_eq!(fs::read(of.join("LICENSE")).unwrap(), LICENSE);
    assert_eq!(fs::read(of.join("docs/notes.bin")).unwrap(), NOTES);
    let top = manifest(&of);
    assert_eq!(
        listed(&top),
        [side("LICENSE", LICENSE), side("README.txt", README)]
    );
    assert_eq!(top["parts"], serde_json::json!([]));
    assert_eq!(top["warnings"], serde_json::json!([]));
    assert_eq!(
        listed(&manifest(&of.join("docs"))),
        [side("notes.bin", NOTES)]
    );

    // The report names them, and counts the datasets of records only.
    let report = ofconvert()
        .arg("tf2of")
        .args([&input, &of])
        .arg("--overwrite")
        .ok();
    assert!(
        report.stdout.contains("with LICENSE, README.txt"),
        "{}",
        report.stdout
    );
    assert!(
        report.stdout.contains("Carried 3 side files"),
        "{}",
        report.stdout
    );
    assert!(
        report.stdout.contains("Converted 2 datasets"),
        "{}",
        report.stdout
    );
    assert!(
        report.stderr.contains("converting 2 datasets"),
        "{}",
        report.stderr
    );
    assert!(!report.stdout.contains("Skipped"), "{}", report.stdout);
    assert!(!report.stderr.contains("no records"), "{}", report.stderr);

    // A resumed run keeps them, and redoes a folder whose file is gone.
    fs::remove_file(of.join("docs/notes.bin")).unwrap();
    ofconvert()
        .arg("tf2of")
        .args([&input, &of])
        .arg("--resume")
        .ok();
    assert_eq!(fs::read(of.join("docs/notes.bin")).unwrap(), NOTES);
}

#[test]
fn tf_to_of_to_tf_gives_back_the_files_above_the_datasets() {
    let work = tempdir();
    let input = tree_with_root_files(work.path());
    let of = work.path().join("of");
    ofconvert().arg("tf2of").args([&input, &of]).ok();
    let back = work.path().join("back");
    let summary = json_run(ofconvert().arg("of2tf").args([&of, &back]));
    assert_eq!(summary["side_files"], 3);
    assert_eq!(contents(&back), contents(&input));
    assert_eq!(fs::read(back.join("LICENSE")).unwrap(), LICENSE);

    // A OneFlow tree made by hand, without manifests: its top files travel the same way.
    let bare = work.path().join("bare");
    fs::create_dir_all(bare.join("train")).unwrap();
    fs::copy(of.join("train/part-00000"), bare.join("train/part-00000")).unwrap();
    fs::write(bare.join("README.txt"), README).unwrap();
    let tf = work.path().join("tf");
    ofconvert().arg("of2tf").args([&bare, &tf]).ok();
    assert_eq!(fs::read(tf.join("README.txt")).unwrap(), README);
}

#[test]
fn a_sharded_run_publishes_the_files_above_the_datasets_in_commit() {
    let work = tempdir();
    let input = tree_with_root_files(work.path());
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
    assert!(!sharded.join("README.txt").exists());
    ofconvert().arg("commit").arg(&sharded).ok();
    assert_eq!(contents(&sharded), contents(&single));
}

#[test]
fn without_side_files_the_files_above_the_datasets_stay_behind() {
    let work = tempdir();
    let input = tree_with_root_files(work.path());
    let of = work.path().join("of");
    let summary = json_run(
        ofconvert()
            .arg("tf2of")
            .args([&input, &of])
            .arg("--no-side-files"),
    );
    assert_eq!(summary["side_files"], 0);
    assert_eq!(summary["skipped_files"].as_array().unwrap().len(), 3);
    assert!(tree(&of)
        .iter()
        .all(|file| file.starts_with("train/") || file.starts_with("validation/")));

    let with = work.path().join("with");
    ofconvert().arg("tf2of").args([&input, &with]).ok();
    assert_eq!(fs::read(with.join("README.txt")).unwrap(), README);
    let back = work.path().join("back");
    ofconvert()
        .arg("of2tf")
        .args([&with, &back])
        .arg("--no-side-files")
        .ok();
    assert!(!back.join("README.txt").exists(), "{:?}", tree(&back));
    assert!(!back.join("docs").exists(), "{:?}", tree(&back));
}

#[test]
fn a_tree_of_no_records_is_refused_and_its_files_are_not_copied() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir_all(input.join("docs")).unwrap();
    fs::write(input.join("README.txt"), README).unwrap();
    fs::write(input.join("docs/notes.bin"), NOTES).unwrap();
    let of = work.path().join("of");
    let run = ofconvert().arg("tf2of").args([&input, &of]).run();
    assert!(
        run.stdout.contains("No TFRecord files found"),
        "{}",
        run.stdout
    );
    assert!(!of.join("README.txt").exists());
}

#[test]
fn in_a_bucket_the_files_above_the_datasets_go_there_and_back() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    let input = tree_with_root_files(work.path());
    s3.ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .ok();
    assert_eq!(fs::read(s3.file("data", "of/README.txt")).unwrap(), README);
    assert_eq!(
        fs::read(s3.file("data", "of/docs/notes.bin")).unwrap(),
        NOTES
    );
    let listed_top: Value =
        serde_json::from_slice(&fs::read(s3.file("data", "of/ofconvert-manifest.json")).unwrap())
            .unwrap();
    assert_eq!(
        listed(&listed_top),
        [side("LICENSE", LICENSE), side("README.txt", README)]
    );

    // Read from the bucket, written into it.
    s3.ofconvert()
        .args(["of2tf", "s3://data/of", "s3://data/back"])
        .ok();
    assert_eq!(contents(&s3.file("data", "back")), contents(&input));
    // No temporary name left behind.
    assert!(tree(&s3.file("data", "back"))
        .iter()
        .all(|file| !file.split('/').any(|part| part.starts_with('.'))));
}
