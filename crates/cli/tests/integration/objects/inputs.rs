//! Several URL inputs for one conversion, as several local paths are taken: objects named
//! one by one as their prefix holding only them, each prefix as `OUT/<its name>`, a URL
//! beside a local directory, files of an HTTP server that lists nothing.

use std::path::PathBuf;

use super::*;
use crate::http::{FileServer, Serving};

/// The imagenet sample in `s3://data/imagenet` and in a local copy.
fn imagenet(s3: &S3Server) -> PathBuf {
    let local = testdata().join("datasets").join("imagenet");
    copy_tree(&local, &s3.file("data", "imagenet"));
    local
}

#[test]
fn objects_named_one_by_one_are_converted_as_the_local_files_are() {
    let s3 = S3Server::start(&["data"]);
    let local = imagenet(&s3);
    let work = tempdir();
    let shards = ["train-00000-of-00002", "train-00001-of-00002"];
    let from_disk = work.path().join("disk");
    ofconvert()
        .arg("tf2of")
        .args(shards.map(|shard| local.join("train").join(shard)))
        .arg(&from_disk)
        .ok();
    let from_bucket = work.path().join("bucket");
    s3.ofconvert()
        .arg("tf2of")
        .args(shards.map(|shard| format!("s3://data/imagenet/train/{shard}")))
        .arg(&from_bucket)
        .ok();
    assert!(!written(&from_disk).is_empty());
    assert_eq!(written(&from_bucket), written(&from_disk));

    // Only what was named: one of the two shards, beside a prefix.
    let one_on_disk = work.path().join("one-disk");
    ofconvert()
        .arg("tf2of")
        .arg(local.join("train").join(shards[0]))
        .arg(local.join("validation"))
        .arg(&one_on_disk)
        .ok();
    let one = work.path().join("one");
    s3.ofconvert()
        .arg("tf2of")
        .arg(format!("s3://data/imagenet/train/{}", shards[0]))
        .arg("s3://data/imagenet/validation/")
        .arg(&one)
        .ok();
    assert_eq!(written(&one), written(&one_on_disk));
    assert_ne!(written(&one), written(&from_disk));

    // A missing object among them is named.
    let failed = s3
        .ofconvert()
        .arg("tf2of")
        .args([
            "s3://data/imagenet/train/train-00000-of-00002",
            "s3://data/imagenet/nothing-here",
        ])
        .arg(work.path().join("missing"))
        .expect_code(2);
    assert!(
        failed.stderr.contains("s3://data/imagenet/nothing-here"),
        "{}",
        failed.stderr
    );
}

#[test]
fn prefixes_and_a_local_directory_beside_them_go_to_their_own_folders() {
    let s3 = S3Server::start(&["data"]);
    let local = imagenet(&s3);
    let work = tempdir();
    let from_disk = work.path().join("disk");
    ofconvert()
        .arg("tf2of")
        .args([local.join("train"), local.join("validation")])
        .arg(&from_disk)
        .ok();
    let from_bucket = work.path().join("bucket");
    s3.ofconvert()
        .arg("tf2of")
        .args(["s3://data/imagenet/train", "s3://data/imagenet/validation/"])
        .arg(&from_bucket)
        .ok();
    assert!(!written(&from_disk).is_empty());
    assert_eq!(written(&from_bucket), written(&from_disk));

    let mixed = work.path().join("mixed");
    s3.ofconvert()
        .arg("tf2of")
        .arg("s3://data/imagenet/train")
        .arg(local.join("validation"))
        .arg(&mixed)
        .ok();
    assert_eq!(written(&mixed), written(&from_disk));

    // And into a bucket.
    s3.ofconvert()
        .arg("tf2of")
        .args(["s3://data/imagenet/train", "s3://data/imagenet/validation"])
        .arg("s3://data/out")
        .ok();
    assert_eq!(written(&s3.file("data", "out")), written(&from_disk));
}

#[test]
fn files_of_a_server_that_lists_nothing_are_converted_as_the_local_files_are() {
    let local = testdata().join("datasets").join("imagenet");
    let server = FileServer::start(local.clone(), Serving::default());
    let work = tempdir();
    let shards = ["train-00000-of-00002", "train-00001-of-00002"];
    let from_disk = work.path().join("disk");
    ofconvert()
        .arg("tf2of")
        .args(shards.map(|shard| local.join("train").join(shard)))
        .arg(&from_disk)
        .ok();
    let from_server = work.path().join("server");
    ofconvert()
        .arg("tf2of")
        .args(shards.map(|shard| format!("{}/train/{shard}", server.endpoint)))
        .arg(&from_server)
        .ok();
    assert!(!written(&from_disk).is_empty());
    assert_eq!(written(&from_server), written(&from_disk));
}

#[test]
fn files_named_from_several_folders_go_each_to_its_folder_s_name() {
    let s3 = S3Server::start(&["data"]);
    let local = imagenet(&s3);
    let work = tempdir();
    let by_folder = work.path().join("by-folder");
    ofconvert()
        .arg("tf2of")
        .args([local.join("train"), local.join("validation")])
        .arg(&by_folder)
        .ok();
    assert!(!written(&by_folder).is_empty());

    // What `tf2of data/*/*-of-* OUT` gives: every file of both folders, named one by one.
    let files = [
        "train/train-00000-of-00002",
        "train/train-00001-of-00002",
        "validation/validation-00000-of-00001",
    ];
    let globbed = work.path().join("globbed");
    ofconvert()
        .arg("tf2of")
        .args(files.map(|file| local.join(file)))
        .arg(&globbed)
        .ok();
    assert_eq!(written(&globbed), written(&by_folder));

    // Local and bucket alike, and only what was named.
    let mixed = work.path().join("mixed");
    s3.ofconvert()
        .arg("tf2of")
        .arg("s3://data/imagenet/train/train-00000-of-00002")
        .arg(local.join("validation/validation-00000-of-00001"))
        .arg(&mixed)
        .ok();
    let names: Vec<String> = written(&mixed).into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["train/part-00000", "validation/part-00000"]);
    assert_eq!(
        fs::read(mixed.join("validation/part-00000")).unwrap(),
        fs::read(by_folder.join("validation/part-00000")).unwrap()
    );
    assert_eq!(
        fs::read(mixed.join("train/part-00000")).unwrap(),
        fs::read(by_folder.join("train/part-00000")).unwrap()
    );

    // Two folders of one name would go to one place: refused, naming both.
    let other = work.path().join("elsewhere/train");
    fs::create_dir_all(&other).unwrap();
    fs::copy(local.join(files[1]), other.join("train-00001-of-00002")).unwrap();
    let clash = ofconvert()
        .arg("tf2of")
        .arg(local.join(files[0]))
        .arg(other.join("train-00001-of-00002"))
        .arg(work.path().join("clash"))
        .expect_code(2);
    assert!(
        clash.stderr.contains("both named train"),
        "{}",
        clash.stderr
    );
    assert!(clash.stderr.contains("elsewhere"), "{}", clash.stderr);
}
