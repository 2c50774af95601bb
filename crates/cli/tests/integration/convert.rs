//! tf2of and of2tf over real trees: layout, naming, order, resharding, mapping, refusals.

use std::ffi::OsStr;
use std::fs;
use std::path::Path;

use crate::util::*;
use ofconvert_bridge::OfRecordExt;

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
    // TFDS's metadata is known, not noise: it is not listed as skipped.
    assert!(!run.stdout.contains("dataset_info.json"), "{}", run.stdout);
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
    for (dataset, inputs) in SAMPLE_DATASETS {
        let name = Path::new(dataset).file_name().unwrap().to_str().unwrap();
        for (index, input) in inputs.iter().enumerate() {
            // TFDS splits go back to their folder under TFDS's own names; a single part of
            // any other dataset is named after its directory.
            let written = if dataset.starts_with("tfds/") {
                tf.join(input)
            } else if inputs.len() == 1 {
                tf.join(dataset).join(format!("{name}.tfrecord"))
            } else {
                tf.join(dataset)
                    .join(format!("{name}-{index:05}-of-{:05}.tfrecord", inputs.len()))
            };
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
fn doubles_beyond_float_range_fail_even_when_lossy() {
    let work = tempdir();
    let input = testdata().join("ofrecord/all_kinds");
    // Both parts hold 1e300; which one fails first is a race between workers, so one worker
    // makes the first failure the first in record order.
    for flags in [&[][..], &["--lossy"]] {
        let out = work.path().join(format!("out{}", flags.len()));
        let run = ofconvert()
            .args(["--jobs", "1", "of2tf"])
            .arg(&input)
            .arg(&out)
            .args(flags)
            .expect_code(1);
        assert!(
            run.stderr.contains("part-00000: offset")
                && run.stderr.contains(
                    "(record #1): feature \"double\": double 1e300 is beyond the range of float"
                ),
            "{flags:?}: {}",
            run.stderr
        );
        assert!(tree(&out).is_empty(), "{:?}", tree(&out));
    }
}

#[test]
fn part_order_is_record_order_when_resharding() {
    let work = tempdir();
    let input = datasets().join("tfds/mnist/3.0.1");
    let mut all = Vec::new();
    for shard in 0..2 {
        let file = format!("mnist-train.tfrecord-{shard:05}-of-00002");
        all.extend(to_of(&tf_records(&input.join(file))));
    }
    for (flags, counts) in [
        (vec!["--parts", "3"], vec![26, 27, 27]),
        (vec!["--records-per-part", "30"], vec![30, 30, 20]),
        (
            vec!["--parts", "2", "--records-per-part", "25"],
            vec![20, 20, 20, 20],
        ),
        (vec!["--parts", "1"], vec![80]),
    ] {
        let out = work.path().join(flags.join("_"));
        let mut args = vec![
            "tf2of".to_owned(),
            input.display().to_string(),
            out.display().to_string(),
        ];
        args.extend(flags.iter().map(|flag| flag.to_string()));
        ofconvert().args(&args).ok();
        let parts = files_starting(&out.join("mnist-train"), "part-");
        let records: Vec<Vec<Vec<u8>>> = parts.iter().map(|part| of_records(part)).collect();
        let sizes: Vec<usize> = records.iter().map(Vec::len).collect();
        assert_eq!(sizes, counts, "{flags:?}");
        assert_eq!(records.concat(), all, "{flags:?}");
        let manifest = manifest(&out.join("mnist-train"));
        assert_eq!(manifest["oneflow"]["data_part_num"], counts.len());
    }
}

#[test]
fn max_part_bytes_caps_every_part() {
    let out = tempdir();
    let input = datasets().join("tutorial");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            out.path().as_os_str(),
            "--max-part-bytes".as_ref(),
            "2K".as_ref(),
        ])
        .ok();
    let parts = files_starting(out.path(), "part-");
    assert!(parts.len() > 3, "{parts:?}");
    let mut records = Vec::new();
    for part in &parts {
        assert!(
            fs::metadata(part).unwrap().len() <= 2048,
            "{}",
            part.display()
        );
        records.extend(of_records(part));
    }
    assert_eq!(
        records,
        to_of(&tf_records(&input.join("tutorial.tfrecord")))
    );
}

#[test]
fn part_names_follow_prefix_and_digits() {
    let out = tempdir();
    let input = datasets().join("imagenet/train");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            out.path().as_os_str(),
            "--part-prefix".as_ref(),
            "shard_".as_ref(),
            "--part-digits".as_ref(),
            "0".as_ref(),
        ])
        .ok();
    assert_eq!(
        tree(out.path()),
        ["ofconvert-manifest.json", "shard_0", "shard_1"]
    );
    let manifest = manifest(out.path());
    assert_eq!(manifest["oneflow"]["part_name_suffix_length"], -1);
    assert_eq!(manifest["oneflow"]["part_name_prefix"], "shard_");
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
fn preset_imagenet_gives_oneflow_keys_and_zero_based_labels() {
    let out = tempdir();
    let input = datasets().join("imagenet/validation");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            out.path().as_os_str(),
            "--preset".as_ref(),
            "imagenet".as_ref(),
        ])
        .ok();
    let originals = tf_records(&input.join("validation-00000-of-00001"));
    let converted = of_records(&out.path().join("part-00000"));
    assert_eq!(originals.len(), converted.len());
    for (original, converted) in originals.iter().zip(&converted) {
        let example = ofconvert_bridge::decode_example(original).unwrap();
        let record = ofconvert_bridge::decode_ofrecord(converted).unwrap();
        use ofconvert_bridge::ExampleExt;
        let label = example.int64_values("image/class/label").unwrap()[0];
        assert_eq!(
            record.int32_values("class/label"),
            Some(&[label as i32 - 1][..])
        );
        assert_eq!(
            record.bytes_values("encoded"),
            example.bytes_values("image/encoded")
        );
    }
    let manifest = manifest(out.path());
    assert_eq!(
        manifest["settings"]["mapping"],
        serde_json::json!(["--preset=imagenet"])
    );
}

#[test]
fn rename_drop_and_cast_apply() {
    let out = tempdir();
    let input = datasets().join("tutorial");
    ofconvert()
        .args([
            "tf2of",
            input.to_str().unwrap(),
            out.path().to_str().unwrap(),
            "--rename",
            "feature2=animal",
            "--drop",
            "feature3",
            "--cast",
            "feature1=int32",
        ])
        .ok();
    let record = &of_records(&out.path().join("part-00000"))[0];
    let record = ofconvert_bridge::decode_ofrecord(record).unwrap();
    let names: Vec<&str> = record.feature.keys().map(String::as_str).collect();
    assert_eq!(names, ["animal", "feature0", "feature1"]);
    assert!(record.int32_values("feature1").is_some());
}

#[test]
fn empty_examples_fail_or_are_skipped_and_counted() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    write_tfrecord(
        &input.join("data.tfrecord"),
        &[example(0, 10), Vec::new(), example(2, 10)],
    );
    let failed = work.path().join("failed");
    let run = ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), failed.as_os_str()])
        .expect_code(1);
    let second = format!(
        "data.tfrecord: offset {} (record #1): record has no features",
        16 + example(0, 10).len()
    );
    assert!(run.stderr.contains(&second), "{}", run.stderr);
    assert!(tree(&failed).is_empty());

    let skipped = work.path().join("skipped");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            skipped.as_os_str(),
            "--empty".as_ref(),
            "skip".as_ref(),
        ])
        .ok();
    assert_eq!(of_records(&skipped.join("part-00000")).len(), 2);
    assert_eq!(manifest(&skipped)["skipped"]["empty"], 1);
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
fn several_families_in_one_directory_get_a_subdirectory_each() {
    let work = tempdir();
    let input = work.path().join("data");
    fs::create_dir(&input).unwrap();
    write_tfrecord(&input.join("train-00001-of-00002"), &[example(3, 1)]);
    write_tfrecord(
        &input.join("train-00000-of-00002"),
        &[example(1, 1), example(2, 1)],
    );
    write_tfrecord(
        &input.join("eval-00000-of-00001.tfrecord"),
        &[example(4, 1)],
    );
    write_tfrecord(&input.join("extra.tfrecords"), &[example(5, 1)]);
    // A record file by content, whatever its name.
    write_tfrecord(&input.join("misc.bin"), &[example(6, 1)]);
    fs::write(input.join("labels.txt"), "cat\ndog\n").unwrap();
    let out = work.path().join("out");
    let run = ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), out.as_os_str()])
        .ok();
    assert_eq!(
        tree(&out),
        [
            "data/ofconvert-manifest.json",
            "data/part-00000",
            "data/part-00001",
            "eval/ofconvert-manifest.json",
            "eval/part-00000",
            "train/ofconvert-manifest.json",
            "train/part-00000",
            "train/part-00001",
        ]
    );
    let train: Vec<Vec<u8>> = [0, 1]
        .iter()
        .flat_map(|part| of_records(&out.join(format!("train/part-0000{part}"))))
        .collect();
    assert_eq!(train, to_of(&[example(1, 1), example(2, 1), example(3, 1)]));
    // The unsuffixed family, in name order: extra.tfrecords, then misc.bin.
    assert_eq!(
        of_records(&out.join("data/part-00001")),
        to_of(&[example(6, 1)])
    );
    assert!(
        run.stdout.contains("labels.txt: not a TFRecord file"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_gap_in_part_numbers_fails_its_dataset() {
    let work = tempdir();
    let input = work.path().join("of");
    let source = testdata().join("ofdatasets/imagenet_of/train/part-00000");
    fs::create_dir(&input).unwrap();
    fs::copy(&source, input.join("part-0")).unwrap();
    fs::copy(&source, input.join("part-2")).unwrap();
    let run = ofconvert()
        .args([
            "of2tf".as_ref(),
            input.as_os_str(),
            work.path().join("tf").as_os_str(),
        ])
        .expect_code(1);
    assert!(
        run.stderr.contains("part number 1 is missing"),
        "{}",
        run.stderr
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
fn sequence_examples_are_refused_unless_flattened() {
    let work = tempdir();
    let input = work.path().join("in");
    copy_into(&testdata().join("golden/sequence.tfrecord"), &input);
    let refused = work.path().join("refused");
    let run = ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), refused.as_os_str()])
        .expect_code(1);
    assert!(
        run.stderr.contains(
            "sequence.tfrecord: offset 0 (record #0): record is a tf.train.SequenceExample"
        ),
        "{}",
        run.stderr
    );

    let flat = work.path().join("flat");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            flat.as_os_str(),
            "--sequence".as_ref(),
            "flatten".as_ref(),
        ])
        .ok();
    let records = of_records(&flat.join("part-00000"));
    assert_eq!(records.len(), 4);
    let first = ofconvert_bridge::decode_ofrecord(&records[0]).unwrap();
    assert_eq!(first.int64_values("tokens"), Some(&[1, 2, 3, 4, 5, 6][..]));
    assert_eq!(first.int64_values("tokens/lengths"), Some(&[2, 1, 3][..]));
    assert_eq!(first.bytes_values("id"), Some(&[b"seq-0".to_vec()][..]));
}

#[test]
fn raw_feature_wraps_records_that_are_not_examples() {
    let work = tempdir();
    let input = work.path().join("in");
    let file = copy_into(
        &testdata().join("damaged/crc_ok_garbage_payload.tfrecord"),
        &input,
    );
    let out = work.path().join("out");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            out.as_os_str(),
            "--raw-feature".as_ref(),
            "raw".as_ref(),
        ])
        .ok();
    let originals = tf_records(&file);
    let records = of_records(&out.join("part-00000"));
    assert_eq!(records.len(), originals.len());
    let wrapped = ofconvert_bridge::decode_ofrecord(&records[2]).unwrap();
    assert_eq!(
        wrapped.bytes_values("raw"),
        Some(&[originals[2].clone()][..])
    );
    assert_eq!(records[0], to_of(&originals[..1])[0]);
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
fn unpadded_parts_are_read_in_numeric_order() {
    let work = tempdir();
    let input = work.path().join("set");
    fs::create_dir(&input).unwrap();
    let mut expected = Vec::new();
    for number in 0..12 {
        let record = to_of(&[example(number, 3)]);
        let mut writer = ofconvert_ofrecord::Writer::new(
            fs::File::create(input.join(format!("part-{number}"))).unwrap(),
        );
        writer.write_record(&record[0]).unwrap();
        writer.finish().unwrap();
        expected.push(example(number, 3));
    }
    let out = work.path().join("out");
    ofconvert()
        .args([
            "of2tf".as_ref(),
            input.as_os_str(),
            out.as_os_str(),
            "--parts".as_ref(),
            "1".as_ref(),
        ])
        .ok();
    assert_eq!(tf_records(&out.join("set.tfrecord")), expected);
}

#[test]
fn keep_and_offset_apply() {
    let out = tempdir();
    let input = datasets().join("tutorial");
    ofconvert()
        .args([
            "tf2of",
            input.to_str().unwrap(),
            out.path().to_str().unwrap(),
            "--keep",
            "feature1",
            "--keep",
            "feature2",
            "--offset",
            "feature1=-10",
        ])
        .ok();
    let originals = tf_records(&input.join("tutorial.tfrecord"));
    let converted = of_records(&out.path().join("part-00000"));
    for (original, converted) in originals.iter().zip(&converted) {
        use ofconvert_bridge::ExampleExt;
        let example = ofconvert_bridge::decode_example(original).unwrap();
        let record = ofconvert_bridge::decode_ofrecord(converted).unwrap();
        let names: Vec<&str> = record.feature.keys().map(String::as_str).collect();
        assert_eq!(names, ["feature1", "feature2"]);
        let shifted: Vec<i64> = example
            .int64_values("feature1")
            .unwrap()
            .iter()
            .map(|v| v - 10)
            .collect();
        assert_eq!(record.int64_values("feature1"), Some(&shifted[..]));
    }
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

/// Records of 64 KiB and more reach the part in one vectored write, smaller ones through the
/// writer's buffer; mixed, in both directions, the bytes are those framed by hand.
#[test]
fn large_and_small_records_mixed_keep_their_bytes_and_order() {
    let work = tempdir();
    let input = work.path().join("mixed");
    fs::create_dir(&input).unwrap();
    let sizes = [10, 70_000, 3, 65_536, 300_000, 1, 20, 131_072];
    let records: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(id, &size)| example(id as i64, size))
        .collect();
    let framed_tf: Vec<u8> = records.iter().flat_map(|r| tf_frame(r)).collect();
    fs::write(input.join("mixed.tfrecord"), &framed_tf).unwrap();

    let of = work.path().join("of");
    ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), of.as_os_str()])
        .ok();
    let framed_of: Vec<u8> = to_of(&records).iter().flat_map(|r| of_frame(r)).collect();
    assert_eq!(fs::read(of.join("part-00000")).unwrap(), framed_of);

    let tf = work.path().join("tf");
    ofconvert()
        .args(["of2tf".as_ref(), of.as_os_str(), tf.as_os_str()])
        .ok();
    // A single part is named after its directory.
    assert_eq!(tree(&tf), ["of.tfrecord", "ofconvert-manifest.json"]);
    assert_eq!(fs::read(tf.join("of.tfrecord")).unwrap(), framed_tf);
}

/// Records of 60–160 KB, as images are, in parts of several mebibytes: a part is written in
/// whole buffers, and a synced one is handed to write-back as it grows.
#[test]
fn large_records_come_out_byte_exact_synced_or_not() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir_all(&input).unwrap();
    let records: Vec<Vec<u8>> = (0..100)
        .map(|id| example(id, 60_000 + (id as usize * 7_919) % 100_000))
        .collect();
    write_tfrecord(&input.join("images.tfrecord"), &records);
    let framed_of: Vec<u8> = to_of(&records).iter().flat_map(|r| of_frame(r)).collect();
    let framed_tf: Vec<u8> = records.iter().flat_map(|r| tf_frame(r)).collect();
    let concatenated = |dir: &Path| -> Vec<u8> {
        let files = tree(dir);
        assert!(files.len() > 2, "{files:?}");
        files
            .iter()
            .filter(|name| !name.ends_with(".json"))
            .flat_map(|name| fs::read(dir.join(name)).unwrap())
            .collect()
    };
    for sync in [None, Some("--no-sync")] {
        let of = work.path().join(format!("of{}", sync.unwrap_or("")));
        let tf = work.path().join(format!("tf{}", sync.unwrap_or("")));
        let mut args = vec![
            "tf2of".as_ref(),
            input.as_os_str(),
            of.as_os_str(),
            "--records-per-part".as_ref(),
            "60".as_ref(),
        ];
        args.extend(sync.map(OsStr::new));
        ofconvert().args(args).ok();
        assert!(concatenated(&of) == framed_of, "{sync:?}");

        let mut args = vec!["of2tf".as_ref(), of.as_os_str(), tf.as_os_str()];
        args.extend(sync.map(OsStr::new));
        ofconvert().args(args).ok();
        assert!(concatenated(&tf) == framed_tf, "{sync:?}");
    }
}
