//! tf2of and of2tf over real trees: layout, naming, order, resharding, mapping, refusals.

use std::ffi::OsStr;
use std::fs;
use std::path::Path;

use crate::util::*;
use ofconvert_bridge::OfRecordExt;

mod mapping;
mod parts;
mod relocated;
mod said_once;

/// The sample tree's datasets: output directory, and its inputs in order.
const SAMPLE_DATASETS: [(&str, &[&str]); 9] = [
    ("bert", &["bert/pretrain.tfrecord"]),
    ("imagenet/mixed", &["imagenet/mixed/train-00000-of-00001"]),
    (
        "imagenet/train",
        &[
            "imagenet/train/train-00000-of-00002",
            "imagenet/train/train-00001-of-00002",
        ],
    ),
    (
        "imagenet/validation",
        &["imagenet/validation/validation-00000-of-00001"],
    ),
    (
        "tfds/cifar10/3.0.2/cifar10-test",
        &["tfds/cifar10/3.0.2/cifar10-test.tfrecord-00000-of-00001"],
    ),
    (
        "tfds/cifar10/3.0.2/cifar10-train",
        &[
            "tfds/cifar10/3.0.2/cifar10-train.tfrecord-00000-of-00002",
            "tfds/cifar10/3.0.2/cifar10-train.tfrecord-00001-of-00002",
        ],
    ),
    (
        "tfds/mnist/3.0.1/mnist-test",
        &["tfds/mnist/3.0.1/mnist-test.tfrecord-00000-of-00001"],
    ),
    (
        "tfds/mnist/3.0.1/mnist-train",
        &[
            "tfds/mnist/3.0.1/mnist-train.tfrecord-00000-of-00002",
            "tfds/mnist/3.0.1/mnist-train.tfrecord-00001-of-00002",
        ],
    ),
    ("tutorial", &["tutorial/tutorial.tfrecord"]),
];

fn datasets() -> std::path::PathBuf {
    testdata().join("datasets")
}

#[test]
fn tf2of_converts_the_sample_tree_one_part_per_input() {
    let out = tempdir();
    let out = out.path().join("of");
    let run = ofconvert()
        .args(["tf2of".as_ref(), datasets().as_os_str(), out.as_os_str()])
        .ok();

    let mut expected_files = vec![];
    for (dataset, inputs) in SAMPLE_DATASETS {
        let dir = out.join(dataset);
        for (index, input) in inputs.iter().enumerate() {
            let part = dir.join(format!("part-{index:05}"));
            let expected = to_of(&tf_records(&datasets().join(input)));
            assert_eq!(of_records(&part), expected, "{}", part.display());
            expected_files.push(format!("{dataset}/part-{index:05}"));
        }
        expected_files.push(format!("{dataset}/ofconvert-manifest.json"));

        let manifest = manifest(&dir);
        // TFDS's metadata comes with each split, beside its parts, listed in its manifest.
        let side: &[&str] = if dataset.starts_with("tfds/") {
            &["dataset_info.json", "features.json"]
        } else {
            &[]
        };
        let listed: Vec<&str> = manifest["side_files"]
            .as_array()
            .map(|files| files.iter().map(|f| f["name"].as_str().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(listed, side, "{dataset}");
        for name in side {
            let original = datasets().join(inputs[0]).with_file_name(name);
            assert_eq!(
                fs::read(dir.join(name)).unwrap(),
                fs::read(original).unwrap()
            );
            expected_files.push(format!("{dataset}/{name}"));
        }
        let inputs_listed: Vec<&str> = manifest["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|input| input["path"].as_str().unwrap())
            .collect();
        assert_eq!(inputs_listed, inputs.to_vec());
        assert_eq!(manifest["oneflow"]["data_part_num"], inputs.len());
        assert_eq!(manifest["oneflow"]["part_name_suffix_length"], 5);
        let reader = format!(
            "flow.nn.OFRecordReader(\"{}\", batch_size=32, data_part_num={}, \
             part_name_prefix=\"part-\", part_name_suffix_length=5)",
            dir.display(),
            inputs.len()
        );
        assert!(run.stdout.contains(&reader), "{reader}\n{}", run.stdout);
    }
    expected_files.sort();
    assert_eq!(tree(&out), expected_files);
    // TFDS's metadata is carried, not skipped: two files beside each of four splits.
    assert!(
        run.stdout.contains("Carried 8 side files"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("Skipped"), "{}", run.stdout);
}

#[test]
fn the_manifest_has_counts_bytes_and_schema() {
    let out = tempdir();
    let input = datasets().join("imagenet/train");
    ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), out.path().as_os_str()])
        .ok();
    let manifest = manifest(out.path());
    assert_eq!(manifest["records"], 20);
    for part in manifest["parts"].as_array().unwrap() {
        let path = out.path().join(part["name"].as_str().unwrap());
        assert_eq!(part["bytes"], fs::metadata(&path).unwrap().len());
        assert_eq!(part["records"], of_records(&path).len());
    }
    let features = manifest["schema"]["features"].as_array().unwrap();
    let label = features
        .iter()
        .find(|feature| feature["name"] == "image/class/label")
        .unwrap();
    assert_eq!(label["kinds"], serde_json::json!(["int64_list"]));
    assert_eq!(
        (label["min_values"].as_u64(), label["present"].as_u64()),
        (Some(1), Some(20))
    );
    let encoded = features
        .iter()
        .find(|feature| feature["name"] == "image/encoded")
        .unwrap();
    assert_eq!(encoded["image"], "jpeg");
}

#[test]
fn of2tf_gives_back_the_bytes_tensorflow_wrote() {
    let work = tempdir();
    let of = work.path().join("of");
    let tf = work.path().join("tf");
    ofconvert()
        .args(["tf2of".as_ref(), datasets().as_os_str(), of.as_os_str()])
        .ok();
    let run = ofconvert()
        .args(["of2tf".as_ref(), of.as_os_str(), tf.as_os_str()])
        .ok();
    for (_, inputs) in SAMPLE_DATASETS {
        for input in inputs.iter() {
            // One file per part, as the dataset had: each goes back under its own name, to
            // its own folder (TFDS splits to the folder they shared).
            let written = tf.join(input);
            assert_eq!(
                fs::read(&written).unwrap(),
                fs::read(datasets().join(input)).unwrap(),
                "{}",
                written.display()
            );
        }
    }
    assert!(run.stdout.contains("tf.data.TFRecordDataset("));
}

#[test]
fn of2tf_reads_oneflow_datasets() {
    let out = tempdir();
    let input = testdata().join("ofdatasets");
    ofconvert()
        .args(["of2tf".as_ref(), input.as_os_str(), out.path().as_os_str()])
        .ok();
    let dir = out.path().join("imagenet_of/train");
    for index in 0..2 {
        let written = dir.join(format!("train-{index:05}-of-00002.tfrecord"));
        let part = input.join(format!("imagenet_of/train/part-{index:05}"));
        assert_eq!(tf_records(&written), to_tf(&of_records(&part)));
    }
}

#[test]
fn jobs_and_syncing_do_not_change_the_output() {
    let work = tempdir();
    let one = work.path().join("one");
    let two = work.path().join("two");
    let unsynced = work.path().join("unsynced");
    let input = datasets();
    for (jobs, out, extra) in [
        ("1", &one, None),
        ("2", &two, None),
        ("2", &unsynced, Some("--no-sync")),
    ] {
        let mut args = vec![
            "--jobs".as_ref(),
            jobs.as_ref(),
            "tf2of".as_ref(),
            input.as_os_str(),
            out.as_os_str(),
            "--records-per-part".as_ref(),
            "7".as_ref(),
        ];
        args.extend(extra.map(OsStr::new));
        ofconvert().args(args).ok();
    }
    let files = tree(&one);
    for other in [&two, &unsynced] {
        assert_eq!(files, tree(other));
        for file in files.iter().filter(|file| !file.ends_with(".json")) {
            assert_eq!(
                fs::read(one.join(file)).unwrap(),
                fs::read(other.join(file)).unwrap(),
                "{file}"
            );
        }
    }
}

#[test]
fn compression_takes_tensorflows_spellings_as_tf_io_does() {
    // tf.io.TFRecordOptions(compression_type=...) takes "GZIP", "ZLIB" and "" (none); a user
    // copying those gets the same files as with the lower-case names.
    let work = tempdir();
    let input = testdata().join("ofdatasets");
    let shard = "imagenet_of/train/train-00000-of-00002.tfrecord";
    for (tf_name, our_name, suffix) in [
        ("GZIP", "gzip", ".gz"),
        ("ZLIB", "zlib", ".zz"),
        ("", "none", ""),
    ] {
        let mut outputs = Vec::new();
        for (spelling, name) in [tf_name, our_name].into_iter().enumerate() {
            let out = work.path().join(format!("{our_name}-{spelling}"));
            ofconvert()
                .args([
                    "of2tf".as_ref(),
                    input.as_os_str(),
                    out.as_os_str(),
                    "--compression".as_ref(),
                    name.as_ref(),
                ])
                .ok();
            outputs.push(fs::read(out.join(format!("{shard}{suffix}"))).unwrap());
        }
        assert_eq!(outputs[0], outputs[1], "--compression {tf_name:?}");
    }
    let wrong = ofconvert()
        .args([
            "of2tf".as_ref(),
            input.as_os_str(),
            work.path().join("wrong").as_os_str(),
            "--compression".as_ref(),
            "BZIP2".as_ref(),
        ])
        .expect_code(2);
    assert!(
        wrong.stderr.contains("possible values: none, gzip, zlib"),
        "{}",
        wrong.stderr
    );
}

#[test]
fn gzip_and_zlib_outputs_hold_the_same_records() {
    let work = tempdir();
    let input = testdata().join("ofdatasets");
    let plain = work.path().join("plain");
    ofconvert()
        .args(["of2tf".as_ref(), input.as_os_str(), plain.as_os_str()])
        .ok();
    for (kind, suffix) in [("gzip", ".gz"), ("zlib", ".zz")] {
        let out = work.path().join(kind);
        let run = ofconvert()
            .args([
                "of2tf".as_ref(),
                input.as_os_str(),
                out.as_os_str(),
                "--compression".as_ref(),
                kind.as_ref(),
            ])
            .ok();
        let name = format!("imagenet_of/train/train-00000-of-00002.tfrecord{suffix}");
        assert_ne!(
            fs::read(out.join(&name)).unwrap(),
            fs::read(plain.join("imagenet_of/train/train-00000-of-00002.tfrecord")).unwrap()
        );
        assert_eq!(
            tf_records(&out.join(&name)),
            tf_records(&plain.join("imagenet_of/train/train-00000-of-00002.tfrecord"))
        );
        let compression_type = kind.to_uppercase();
        assert!(run
            .stdout
            .contains(&format!("compression_type=\"{compression_type}\"")));
    }
}

#[test]
fn a_non_empty_output_is_refused_and_overwrite_replaces_only_datasets() {
    let work = tempdir();
    let input = datasets().join("imagenet/train");
    let out = work.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("notes.txt"), "mine").unwrap();
    fs::write(out.join("part-00007"), "stale").unwrap();

    let run = ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), out.as_os_str()])
        .expect_code(2);
    assert!(run.stderr.contains("not empty"), "{}", run.stderr);
    assert_eq!(tree(&out), ["notes.txt", "part-00007"]);

    ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            out.as_os_str(),
            "--overwrite".as_ref(),
        ])
        .ok();
    assert_eq!(
        tree(&out),
        [
            "notes.txt",
            "ofconvert-manifest.json",
            "part-00000",
            "part-00001"
        ]
    );
}

#[test]
fn output_inside_input_is_refused() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    write_tfrecord(&input.join("a.tfrecord"), &[example(1, 1)]);
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            input.join("out").as_os_str(),
        ])
        .expect_code(2);
    assert!(run.stderr.contains("overlaps"), "{}", run.stderr);
    let run = ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), work.path().as_os_str()])
        .expect_code(2);
    assert!(run.stderr.contains("overlaps"), "{}", run.stderr);
    assert_eq!(tree(&input), ["a.tfrecord"]);
}

#[test]
fn usage_errors_exit_2() {
    ofconvert().args(["tf2of"]).expect_code(2);
    ofconvert()
        .args(["tf2of", "a", "b", "--parts", "0"])
        .expect_code(2);
    ofconvert()
        .args(["tf2of", "a", "b", "--rename", "nothing"])
        .expect_code(2);
    ofconvert()
        .args(["tf2of", "a", "b", "--overwrite", "--resume"])
        .expect_code(2);
    let missing = ofconvert()
        .args(["tf2of", "/nonexistent/input", "/nonexistent/output"])
        .expect_code(2);
    assert!(
        missing.stderr.contains("/nonexistent/input"),
        "{}",
        missing.stderr
    );
}

#[test]
fn a_tree_without_records_is_a_failure() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    fs::write(input.join("README.md"), "no records here").unwrap();
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            work.path().join("out").as_os_str(),
        ])
        .expect_code(1);
    assert!(
        run.stdout.contains("No TFRecord files found"),
        "{}",
        run.stdout
    );
}

#[test]
fn json_summary_describes_every_dataset() {
    let out = tempdir();
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            datasets().as_os_str(),
            out.path().join("of").as_os_str(),
            "--json".as_ref(),
        ])
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(summary["failed"], 0);
    // 266 in the TensorFlow-tutorial, BERT, JPEG ImageNet and MNIST sets, 15 in the mixed
    // ImageNet shard, 48 in CIFAR-10.
    assert_eq!(summary["records"], 329);
    let names: Vec<&str> = summary["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|dataset| dataset["name"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = SAMPLE_DATASETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, expected);
    // dataset_info.json and features.json are TFDS metadata, passed over in silence.
    assert_eq!(summary["skipped_files"].as_array().unwrap().len(), 0);
}

#[test]
fn a_single_file_converts_into_the_output_directory() {
    let work = tempdir();
    let file = testdata().join("golden/tutorial.tfrecord.gz");
    let out = work.path().join("out");
    ofconvert()
        .args(["tf2of".as_ref(), file.as_os_str(), out.as_os_str()])
        .ok();
    assert_eq!(tree(&out), ["ofconvert-manifest.json", "part-00000"]);
    assert_eq!(
        of_records(&out.join("part-00000")),
        to_of(&tf_records(&file))
    );
    let manifest = manifest(&out);
    assert_eq!(manifest["inputs"][0]["path"], "tutorial.tfrecord.gz");
    assert_eq!(manifest["inputs"][0]["compression"], "gzip");
}

#[test]
fn no_verify_reads_past_a_bad_length_checksum() {
    let work = tempdir();
    let input = work.path().join("in");
    copy_into(
        &testdata().join("damaged/flipped_length_crc.tfrecord"),
        &input,
    );
    let checked = work.path().join("checked");
    ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), checked.as_os_str()])
        .expect_code(1);
    let unchecked = work.path().join("unchecked");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            unchecked.as_os_str(),
            "--no-verify".as_ref(),
        ])
        .ok();
    assert_eq!(
        of_records(&unchecked.join("part-00000")),
        to_of(&tf_records(&testdata().join("golden/tutorial.tfrecord")))
    );
}

#[test]
fn a_dataset_at_the_root_of_its_input_is_named_after_the_input_never_dot() {
    let work = tempdir();
    let big = work.path().join("big");
    write_tfrecord_in(&big, "train.tfrecord", &examples(0, 3, 10));
    write_tfrecord_in(&big.join("extra"), "x.tfrecord", &examples(10, 2, 10));
    let run = ofconvert()
        .arg("tf2of")
        .args([&big, &work.path().join("o")])
        .args(["--drop", "nosuch", "--json"])
        .expect_code(1);
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let names: Vec<&str> = summary["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|dataset| dataset["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["big", "extra"]);
    assert!(!run.stderr.contains(" .:"), "{}", run.stderr);

    // Several inputs: each directory's root dataset by its own name, as it is placed.
    let other = work.path().join("other");
    write_tfrecord_in(&other, "y.tfrecord", &examples(20, 2, 10));
    let both = ofconvert()
        .arg("tf2of")
        .args([&big, &other, &work.path().join("both")])
        .arg("--json")
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&both.stdout).unwrap();
    let names: Vec<&str> = summary["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|dataset| dataset["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["big", "big/extra", "other"]);
}

/// Writes `records` as the TFRecord file `dir/name`, creating `dir`.
fn write_tfrecord_in(dir: &std::path::Path, name: &str, records: &[Vec<u8>]) {
    fs::create_dir_all(dir).unwrap();
    write_tfrecord(&dir.join(name), records);
}
