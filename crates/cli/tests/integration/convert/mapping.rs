//! Mapping rules, presets and records that are not plain Examples, through the binary.

use super::*;

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
    assert!(
        run.stderr
            .contains("hint: an Example without features fails its dataset")
            && run.stderr.contains("pass --empty skip"),
        "{}",
        run.stderr
    );
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
