//! Several URL inputs for one conversion, as several local paths are taken: objects named
//! one by one as their prefix holding only them, each prefix as `OUT/<its name>`, a URL
//! beside a local directory, files of an HTTP server that lists nothing.

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
