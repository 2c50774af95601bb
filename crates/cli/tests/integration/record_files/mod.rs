//! Record files told from the files that come with them, damaged or not, and checked
//! against what their dataset's manifest lists: the CRC-32C of each part, as written.

mod damaged;
mod listed;

use std::fs;
use std::path::{Path, PathBuf};

use ofconvert_tfrecord::crc::crc32c;

use crate::util::*;

/// A OneFlow dataset of 8 parts holding 500 records (62 a part, 66 in the last), converted
/// from as many TFRecord files in `root/tf`, in `root/of`.
pub(crate) fn eight_parts(root: &Path) -> PathBuf {
    let tf = root.join("tf");
    fs::create_dir_all(&tf).unwrap();
    for shard in 0..8 {
        let count = if shard < 7 { 62 } else { 66 };
        write_tfrecord(
            &tf.join(format!("train-{shard:05}-of-00008")),
            &examples(shard * 62, count, 40),
        );
    }
    let of = root.join("of");
    ofconvert().arg("tf2of").args([&tf, &of]).ok();
    of
}

/// Flips every bit of byte `at` of `path`.
pub(crate) fn flip(path: &Path, at: usize) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at] ^= 0xff;
    fs::write(path, bytes).unwrap();
}

/// Asserts that the manifest in `dir` (of the name `manifest`) lists the CRC-32C of each of
/// its parts' bytes.
fn assert_parts_summed(dir: &Path, manifest: &str) {
    let text = fs::read_to_string(dir.join(manifest)).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    let parts = manifest["parts"].as_array().unwrap();
    assert!(!parts.is_empty(), "{text}");
    for part in parts {
        let bytes = fs::read(dir.join(part["name"].as_str().unwrap())).unwrap();
        assert_eq!(
            part["crc32c"],
            format!("{:08x}", crc32c(&bytes)),
            "{}",
            part["name"]
        );
    }
}

#[test]
fn manifests_list_the_crc32c_of_every_part_both_ways() {
    let work = tempdir();
    let of = work.path().join("of");
    ofconvert()
        .arg("tf2of")
        .arg(testdata().join("datasets/imagenet"))
        .arg(&of)
        .args(["--parts", "3"])
        .ok();
    assert_parts_summed(&of.join("train"), "ofconvert-manifest.json");
    // Compressed files and ArrayRecord files are summed as they are stored.
    for (name, flags) in [
        ("gzip", &["--compression", "gzip"][..]),
        ("array", &["--to", "array_record"][..]),
    ] {
        let tf = work.path().join(name);
        ofconvert()
            .arg("of2tf")
            .args([&of, &tf])
            .args(flags)
            .args(["--parts", "2"])
            .ok();
        assert_parts_summed(&tf.join("train"), "ofconvert-manifest.json");
    }
}
