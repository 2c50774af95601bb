//! Compressed TFRecord files go back compressed: without `--compression`, of2tf writes each
//! dataset of a tree as its manifest records its inputs, in one run, file by file under
//! their names and with TensorFlow's very bytes; `--compression` still says one compression
//! (or none) for every file.

use std::fs;
use std::path::{Path, PathBuf};

use ofconvert_tfrecord::Compression;

use crate::util::*;

/// A tree of TensorFlow's golden tutorial files: one dataset plain, one GZIP, one ZLIB, and
/// one folder holding a plain file and a GZIP one.
fn compressed_tree(root: &Path) -> PathBuf {
    let input = root.join("in");
    let golden = testdata().join("golden");
    for (dir, file) in [
        ("plain", "tutorial.tfrecord"),
        ("gzip", "tutorial.tfrecord.gz"),
        ("zlib", "tutorial.tfrecord.zz"),
        ("mixed", "tutorial.tfrecord"),
        ("mixed", "tutorial.tfrecord.gz"),
    ] {
        copy_into(&golden.join(file), &input.join(dir));
    }
    input
}

/// `tf2of` of [`compressed_tree`] into `root/of`.
fn to_oneflow(root: &Path) -> (PathBuf, PathBuf) {
    let input = compressed_tree(root);
    let of = root.join("of");
    ofconvert().arg("tf2of").args([&input, &of]).ok();
    (input, of)
}

/// The files under `dir` but ofconvert's manifests.
fn record_files(dir: &Path) -> Vec<String> {
    tree(dir)
        .into_iter()
        .filter(|file| !file.ends_with("ofconvert-manifest.json"))
        .collect()
}

/// The compression a file's first bytes say it has.
fn compression_of(path: &Path) -> Compression {
    let bytes = fs::read(path).unwrap();
    Compression::sniff(&bytes[..bytes.len().min(12)])
}

#[test]
fn a_tree_of_plain_gzip_and_zlib_datasets_goes_back_as_it_came_in_one_run() {
    let work = tempdir();
    let (input, of) = to_oneflow(work.path());
    let back = work.path().join("back");
    ofconvert().arg("of2tf").args([&of, &back]).ok();

    assert_eq!(record_files(&back), tree(&input));
    for file in tree(&input) {
        let (was, is) = (input.join(&file), back.join(&file));
        assert_eq!(compression_of(&is), compression_of(&was), "{file}");
        assert_eq!(tf_records(&is), tf_records(&was), "{file}");
    }
    // Deflated as TensorFlow deflates: its very GZIP and ZLIB bytes.
    assert!(super::contents(&back) == super::contents(&input));
    for (dir, compression_type) in [("plain", ""), ("gzip", "GZIP"), ("zlib", "ZLIB")] {
        let reader = &manifest(&back.join(dir))["tensorflow"];
        assert_eq!(reader["compression_type"], compression_type, "{dir}");
    }
    // One compression_type cannot read the mixed folder: no reading line says it can.
    let mixed = manifest(&back.join("mixed"));
    assert!(mixed.get("tensorflow").is_none(), "{mixed}");
    assert!(
        mixed["warnings"].to_string().contains("more than one way"),
        "{mixed}"
    );
}

#[test]
fn compression_none_or_gzip_still_writes_every_file_so() {
    let work = tempdir();
    let (input, of) = to_oneflow(work.path());
    let records = tf_records(&input.join("plain/tutorial.tfrecord"));

    // Files that had another compression are named anew, after their dataset.
    for (kind, compression, names) in [
        (
            "none",
            Compression::None,
            [
                "gzip/gzip.tfrecord",
                "mixed/mixed-00000-of-00002.tfrecord",
                "mixed/mixed-00001-of-00002.tfrecord",
                "plain/tutorial.tfrecord",
                "zlib/zlib.tfrecord",
            ],
        ),
        (
            "gzip",
            Compression::Gzip,
            [
                "gzip/tutorial.tfrecord.gz",
                "mixed/mixed-00000-of-00002.tfrecord.gz",
                "mixed/mixed-00001-of-00002.tfrecord.gz",
                "plain/plain.tfrecord.gz",
                "zlib/zlib.tfrecord.gz",
            ],
        ),
    ] {
        let back = work.path().join(kind);
        ofconvert()
            .arg("of2tf")
            .args([&of, &back])
            .args(["--compression", kind])
            .ok();
        assert_eq!(record_files(&back), names, "--compression {kind}");
        for file in names {
            let path = back.join(file);
            assert_eq!(compression_of(&path), compression, "{file}");
            assert_eq!(tf_records(&path), records, "{file}");
        }
    }

    // Asked for plain files, a resumed run does not keep the files given back compressed.
    let back = work.path().join("back");
    ofconvert().arg("of2tf").args([&of, &back]).ok();
    assert_eq!(record_files(&back.join("gzip")), ["tutorial.tfrecord.gz"]);
    ofconvert()
        .arg("of2tf")
        .args([&of, &back])
        .args(["--resume", "--compression", "none"])
        .ok();
    assert_eq!(
        record_files(&back.join("gzip")),
        ["gzip.tfrecord"],
        "{:?}",
        tree(&back)
    );
}
