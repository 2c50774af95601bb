//! TFDS folders through tf2of and back: of2tf gives every split of a TFDS dataset back in
//! one folder under TFDS's names, beside a `dataset_info.json` that lists the new shards, so
//! that `tfds.builder_from_directory` loads it; any other dataset written as one part is
//! named after its directory.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::*;

/// Splits with their shard counts.
type Splits = &'static [(&'static str, usize)];

/// The TFDS samples: folder under `testdata/datasets/tfds`, dataset name, splits.
const TFDS_SAMPLES: [(&str, &str, Splits); 2] = [
    ("mnist/3.0.1", "mnist", &[("test", 1), ("train", 2)]),
    ("cifar10/3.0.2", "cifar10", &[("test", 1), ("train", 2)]),
];

fn tfds_samples() -> PathBuf {
    testdata().join("datasets/tfds")
}

/// `tf2of` of the TFDS samples into `work/of`.
fn to_oneflow(work: &Path) -> PathBuf {
    let of = work.join("of");
    ofconvert()
        .args(["tf2of".as_ref(), tfds_samples().as_os_str(), of.as_os_str()])
        .ok();
    of
}

fn of2tf(input: &Path, output: &Path, extra: &[&str]) -> Run {
    ofconvert()
        .args(["of2tf".as_ref(), input.as_os_str(), output.as_os_str()])
        .args(extra)
        .args(["--json"])
        .run()
}

fn json(path: &Path) -> serde_json::Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Every record of the files of `split` in `folder`, in shard order.
fn split_records(folder: &Path, name: &str, split: &str) -> Vec<Vec<u8>> {
    files_starting(folder, &format!("{name}-{split}.tfrecord-"))
        .iter()
        .flat_map(|file| tf_records(file))
        .collect()
}

/// `splits[].shardLengths` of a `dataset_info.json`, by split, as written.
fn shard_lengths(info: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    info["splits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|split| {
            let name = split["name"].as_str().unwrap().to_owned();
            (name, split["shardLengths"].clone())
        })
        .collect()
}

#[test]
fn tfds_splits_go_back_to_one_folder_under_tfds_names_byte_for_byte() {
    let work = tempdir();
    let of = to_oneflow(work.path());
    let back = work.path().join("back");
    let run = of2tf(&of, &back, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();

    let mut written_metadata = Vec::new();
    for (folder, name, splits) in TFDS_SAMPLES {
        let original = tfds_samples().join(folder);
        let written = back.join(folder);
        let mut expected: Vec<String> = vec!["dataset_info.json".into(), "features.json".into()];
        for (split, shards) in splits {
            expected.push(format!("{name}-{split}.ofconvert-manifest.json"));
            for index in 0..*shards {
                let shard = format!("{name}-{split}.tfrecord-{index:05}-of-{shards:05}");
                assert_eq!(
                    fs::read(written.join(&shard)).unwrap(),
                    fs::read(original.join(&shard)).unwrap(),
                    "{folder}/{shard}"
                );
                expected.push(shard);
            }
        }
        expected.sort();
        assert_eq!(tree(&written), expected, "{folder}");
        // The same shards: the same shard lengths, and TFDS's text as it was.
        for file in ["dataset_info.json", "features.json"] {
            assert_eq!(
                fs::read_to_string(written.join(file)).unwrap(),
                fs::read_to_string(original.join(file)).unwrap(),
                "{folder}/{file}"
            );
            written_metadata.push(written.join(file).display().to_string());
        }
    }

    // The summary names the files: the metadata, and each split's shards.
    let mut listed: Vec<String> = summary["tfds_metadata"]
        .as_array()
        .unwrap()
        .iter()
        .map(|path| path.as_str().unwrap().to_owned())
        .collect();
    listed.sort();
    written_metadata.sort();
    assert_eq!(listed, written_metadata);
    let datasets = summary["datasets"].as_array().unwrap();
    assert_eq!(datasets.len(), 4);
    let mnist_train = datasets
        .iter()
        .find(|d| d["source"] == "mnist/3.0.1/mnist-train")
        .unwrap();
    assert_eq!(
        mnist_train["output_dir"].as_str().unwrap(),
        back.join("mnist/3.0.1").display().to_string()
    );
    let parts: Vec<&str> = mnist_train["manifest"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        parts,
        [
            "mnist-train.tfrecord-00000-of-00002",
            "mnist-train.tfrecord-00001-of-00002"
        ]
    );
    assert_eq!(mnist_train["manifest"]["tfds"]["name"], "mnist");
    assert_eq!(mnist_train["manifest"]["tfds"]["split"], "train");
}

#[test]
fn resharded_tfds_splits_get_their_new_shard_lengths() {
    let work = tempdir();
    let of = to_oneflow(work.path());
    let back = work.path().join("back");
    let run = of2tf(&of, &back, &["--parts", "3"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for (folder, name, splits) in TFDS_SAMPLES {
        let original = tfds_samples().join(folder);
        let written = back.join(folder);
        let info = json(&written.join("dataset_info.json"));
        let lengths = shard_lengths(&info);
        assert_eq!(lengths.len(), splits.len());
        for ((listed, lengths), (split, _)) in lengths.iter().zip(splits) {
            assert_eq!(listed, split);
            let records = split_records(&written, name, split);
            assert_eq!(
                records,
                split_records(&original, name, split),
                "{name} {split}"
            );
            let files = files_starting(&written, &format!("{name}-{split}.tfrecord-"));
            assert_eq!(files.len(), 3, "{name} {split}");
            // TFDS writes its int64 as strings; so must we, one per shard, in order.
            let expected: Vec<String> = files
                .iter()
                .map(|file| tf_records(file).len().to_string())
                .collect();
            assert_eq!(lengths, &serde_json::json!(expected), "{name} {split}");
            assert!(files[2].ends_with(format!("{name}-{split}.tfrecord-00002-of-00003")));
        }
        // Everything but the shard lengths is TFDS's, untouched.
        let mut without_splits = info.clone();
        let mut original_info = json(&original.join("dataset_info.json"));
        for info in [&mut without_splits, &mut original_info] {
            for split in info["splits"].as_array_mut().unwrap() {
                split.as_object_mut().unwrap().remove("shardLengths");
            }
        }
        assert_eq!(without_splits, original_info, "{folder}");
    }
}

#[test]
fn a_oneflow_tree_with_dataset_info_beside_it_goes_back_to_tfds() {
    let work = tempdir();
    let of = to_oneflow(work.path());
    // No manifests: OneFlow parts in directories named after the split, whole or bare,
    // with TFDS's metadata beside them.
    let bare = work.path().join("bare");
    for (from, to) in [("mnist-train", "mnist-train"), ("mnist-test", "test")] {
        fs::create_dir_all(bare.join(to)).unwrap();
        for part in files_starting(&of.join("mnist/3.0.1").join(from), "part-") {
            copy_into(&part, &bare.join(to));
        }
    }
    for file in ["dataset_info.json", "features.json"] {
        copy_into(&tfds_samples().join("mnist/3.0.1").join(file), &bare);
    }
    let back = work.path().join("back");
    let run = of2tf(&bare, &back, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        tree(&back),
        [
            "dataset_info.json",
            "features.json",
            "mnist-test.ofconvert-manifest.json",
            "mnist-test.tfrecord-00000-of-00001",
            "mnist-train.ofconvert-manifest.json",
            "mnist-train.tfrecord-00000-of-00002",
            "mnist-train.tfrecord-00001-of-00002",
        ]
    );
    let original = tfds_samples().join("mnist/3.0.1");
    for split in ["test", "train"] {
        assert_eq!(
            split_records(&back, "mnist", split),
            split_records(&original, "mnist", split)
        );
    }
    assert_eq!(
        fs::read(back.join("dataset_info.json")).unwrap(),
        fs::read(original.join("dataset_info.json")).unwrap()
    );
}

#[test]
fn a_single_part_is_named_after_its_directory_and_converts_back() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir_all(input.join("clicks")).unwrap();
    let records = examples(0, 5, 3);
    write_ofrecord(&input.join("clicks/part-00000"), &to_of(&records));
    let tf = work.path().join("tf");
    let run = of2tf(&input, &tf, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        tree(&tf),
        ["clicks/clicks.tfrecord", "clicks/ofconvert-manifest.json"]
    );
    assert_eq!(tf_records(&tf.join("clicks/clicks.tfrecord")), records);
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let files = &summary["datasets"][0]["manifest"]["tensorflow"]["files"];
    assert_eq!(
        files[0].as_str().unwrap(),
        std::path::absolute(tf.join("clicks/clicks.tfrecord"))
            .unwrap()
            .display()
            .to_string()
    );
    assert!(summary.get("tfds_metadata").is_none());

    // Back to OneFlow: the name is a record file's, and it groups as its directory.
    let of = work.path().join("of");
    ofconvert()
        .args(["tf2of".as_ref(), tf.as_os_str(), of.as_os_str()])
        .ok();
    assert_eq!(
        tree(&of),
        ["clicks/ofconvert-manifest.json", "clicks/part-00000"]
    );
    assert_eq!(of_records(&of.join("clicks/part-00000")), to_of(&records));

    // Resharding over the single part replaces it.
    let run = of2tf(&input, &tf, &["--overwrite", "--parts", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        tree(&tf),
        [
            "clicks/clicks-00000-of-00002.tfrecord",
            "clicks/clicks-00001-of-00002.tfrecord",
            "clicks/ofconvert-manifest.json"
        ]
    );
}

#[test]
fn resume_finishes_a_tfds_folder_a_killed_run_left() {
    let work = tempdir();
    let of = to_oneflow(work.path());
    let clean = work.path().join("clean");
    assert_eq!(of2tf(&of, &clean, &[]).code, 0);

    // What a run killed while writing mnist's train split leaves: test published, train's
    // parts under temporary names, no metadata yet. And one killed after publishing both
    // splits of cifar10 but before its metadata.
    let back = work.path().join("back");
    copy_tree(&clean, &back);
    let mnist = back.join("mnist/3.0.1");
    for name in ["dataset_info.json", "features.json"] {
        fs::remove_file(mnist.join(name)).unwrap();
        fs::remove_file(back.join("cifar10/3.0.2").join(name)).unwrap();
    }
    fs::remove_file(mnist.join("mnist-train.ofconvert-manifest.json")).unwrap();
    fs::rename(
        mnist.join("mnist-train.tfrecord-00000-of-00002"),
        mnist.join(".ofconvert-mnist-train.part-0-0.tmp-4000000"),
    )
    .unwrap();
    fs::remove_file(mnist.join("mnist-train.tfrecord-00001-of-00002")).unwrap();

    let run = of2tf(&of, &back, &["--resume"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let status = |source: &str| {
        summary["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["source"] == source)
            .map(|d| d["status"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(status("mnist/3.0.1/mnist-test"), "kept");
    assert_eq!(status("mnist/3.0.1/mnist-train"), "converted");
    assert_eq!(status("cifar10/3.0.2/cifar10-train"), "kept");
    assert_eq!(tree(&back), tree(&clean));
    for file in tree(&clean) {
        if !file.ends_with("ofconvert-manifest.json") {
            assert_eq!(
                fs::read(back.join(&file)).unwrap(),
                fs::read(clean.join(&file)).unwrap(),
                "{file}"
            );
        }
    }
}

#[test]
fn a_failed_split_keeps_the_other_splits_of_its_folder_from_being_published() {
    let work = tempdir();
    let of = to_oneflow(work.path());
    // mnist's train split has a truncated last record.
    let part = of.join("mnist/3.0.1/mnist-train/part-00001");
    let bytes = fs::read(&part).unwrap();
    fs::write(&part, &bytes[..bytes.len() - 10]).unwrap();
    let back = work.path().join("back");
    let run = of2tf(&of, &back, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    // The test split is whole, but it is published with its folder's other split and the
    // folder's metadata, all at once, or not at all.
    assert_eq!(summary["failed"], 2);
    let test = summary["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|dataset| dataset["source"] == "mnist/3.0.1/mnist-test")
        .unwrap();
    let error = test["error"].as_str().unwrap();
    assert!(
        error.contains("not published, nor the folder's other splits: mnist/3.0.1/mnist-train"),
        "{error}"
    );
    assert_eq!(tree(&back.join("mnist/3.0.1")), Vec::<String>::new());
    assert!(back.join("cifar10/3.0.2/dataset_info.json").is_file());
}

/// A OneFlow tree from a TFDS dataset `big` without manifests: `big-test` (one 12 MB part)
/// and `big-train` (two), with `dataset_info.json` beside them. Big enough that a debug
/// build takes a while over each part.
fn big_tfds_tree(root: &Path) -> PathBuf {
    let input = root.join("of");
    let mut id = 0;
    for (split, parts) in [("test", 1), ("train", 2)] {
        let dir = input.join(format!("big-{split}"));
        fs::create_dir_all(&dir).unwrap();
        for part in 0..parts {
            let records: Vec<Vec<u8>> = (0..200)
                .map(|_| {
                    id += 1;
                    example(id, 60_000)
                })
                .collect();
            write_ofrecord(&dir.join(format!("part-{part:05}")), &to_of(&records));
        }
    }
    let info = serde_json::json!({
        "name": "big",
        "splits": [
            {"name": "test", "numBytes": "1", "shardLengths": ["200"]},
            {"name": "train", "numBytes": "1", "shardLengths": ["200", "200"]},
        ],
        "version": "1.0.0",
    });
    fs::write(
        input.join("dataset_info.json"),
        serde_json::to_string_pretty(&info).unwrap(),
    )
    .unwrap();
    input
}

#[test]
fn killed_after_one_split_is_converted_the_folder_holds_nothing_and_resume_finishes_it() {
    let work = tempdir();
    let input = big_tfds_tree(work.path());
    let output = work.path().join("back");
    let mut child = ofconvert()
        .args(["--jobs", "1", "of2tf"])
        .args([&input, &output])
        .spawn_quiet();
    // The test split's one work item is noted in its journal once its part is finished.
    let test_finished =
        || output.is_dir() && !files_starting(&output, ".ofconvert-big-test.done-").is_empty();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the conversion ended ({status}) before it could be killed");
        }
        if test_finished() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The test split is converted, but waits for train, its folder's other split: nothing
    // is published.
    let finished: Vec<String> = tree(&output)
        .into_iter()
        .filter(|file| !file.starts_with('.'))
        .collect();
    assert_eq!(finished, Vec::<String>::new());

    // --resume keeps the test split's part and publishes both.
    let run = of2tf(&input, &output, &["--resume", "-v"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let statuses: Vec<&str> = summary["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|dataset| dataset["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["converted", "converted"]);

    let clean = work.path().join("clean");
    assert_eq!(of2tf(&input, &clean, &[]).code, 0);
    assert_eq!(tree(&output), tree(&clean));
    for file in tree(&clean) {
        if !file.ends_with("ofconvert-manifest.json") {
            assert!(
                fs::read(output.join(&file)).unwrap() == fs::read(clean.join(&file)).unwrap(),
                "{file} differs"
            );
        }
    }
    let info = json(&output.join("dataset_info.json"));
    assert_eq!(
        shard_lengths(&info),
        [
            ("test".to_owned(), serde_json::json!(["200"])),
            ("train".to_owned(), serde_json::json!(["200", "200"]))
        ]
    );
    // numBytes: what TFDS counts, the bytes of the split's serialized examples.
    let train_bytes: usize = files_starting(&output, "big-train.tfrecord-")
        .iter()
        .flat_map(|file| tf_records(file))
        .map(|record| record.len())
        .sum();
    assert_eq!(info["splits"][1]["numBytes"], train_bytes.to_string());
}

#[test]
fn compressed_tfds_shards_keep_the_names_and_warn_that_tfds_cannot_read_them() {
    let work = tempdir();
    let of = to_oneflow(work.path());
    let back = work.path().join("back");
    let run = of2tf(&of, &back, &["--compression", "gzip"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mnist = back.join("mnist/3.0.1");
    assert_eq!(
        files_starting(&mnist, "mnist-train.tfrecord-")
            .iter()
            .map(|file| file.file_name().unwrap().to_str().unwrap().to_owned())
            .collect::<Vec<_>>(),
        [
            "mnist-train.tfrecord-00000-of-00002.gz",
            "mnist-train.tfrecord-00001-of-00002.gz"
        ]
    );
    assert_eq!(
        split_records(&mnist, "mnist", "train"),
        split_records(&tfds_samples().join("mnist/3.0.1"), "mnist", "train")
    );
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    for dataset in summary["datasets"].as_array().unwrap() {
        let warnings = dataset["manifest"]["warnings"].to_string();
        assert!(warnings.contains("reads only uncompressed"), "{warnings}");
    }
}

#[test]
fn tfds_shards_in_gzip_go_back_in_gzip_under_their_names_and_warn_that_tfds_cannot_read_them() {
    use std::io::Write;

    let work = tempdir();
    let input = work.path().join("in/mnist/3.0.1");
    copy_tree(&tfds_samples().join("mnist/3.0.1"), &input);
    for shard in files_starting(&input, "mnist-") {
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(&fs::read(&shard).unwrap()).unwrap();
        let name = format!("{}.gz", shard.file_name().unwrap().to_str().unwrap());
        fs::write(shard.with_file_name(name), gzip.finish().unwrap()).unwrap();
        fs::remove_file(shard).unwrap();
    }
    let of = work.path().join("of");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            work.path().join("in").as_os_str(),
            of.as_os_str(),
        ])
        .ok();
    let back = work.path().join("back");
    let run = of2tf(&of, &back, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);

    let mnist = back.join("mnist/3.0.1");
    let shards = |dir: &Path| -> Vec<String> {
        files_starting(dir, "mnist-")
            .iter()
            .map(|file| file.file_name().unwrap().to_str().unwrap().to_owned())
            .filter(|name| !name.ends_with(".json"))
            .collect()
    };
    assert_eq!(shards(&mnist), shards(&input));
    for name in shards(&input) {
        assert_eq!(
            &fs::read(mnist.join(&name)).unwrap()[..2],
            [0x1f, 0x8b],
            "{name}"
        );
        assert_eq!(
            tf_records(&mnist.join(&name)),
            tf_records(&input.join(&name))
        );
    }
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    for dataset in summary["datasets"].as_array().unwrap() {
        let warnings = dataset["manifest"]["warnings"].to_string();
        assert!(warnings.contains("reads only uncompressed"), "{warnings}");
    }
}
