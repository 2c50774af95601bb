//! What a dataset's manifest vouches for: the CRC-32C of each part, as written.

use std::fs;
use std::path::Path;

use ofconvert_tfrecord::crc::crc32c;

use crate::util::*;

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
