//! of2tf's narrowing of doubles: exact by default, rounded and counted under `--lossy`, and
//! never turned into an infinity.

use std::path::{Path, PathBuf};

use ofconvert_bridge::{of, ExampleExt};

use crate::util::*;

/// Writes an OFRecord dataset `dir/doubles` of one part, one record per entry of
/// `doubles`, each with that `double` list and an int64 `id`; returns the dataset.
fn double_dataset(dir: &Path, doubles: &[&[f64]]) -> PathBuf {
    let dataset = dir.join("doubles");
    std::fs::create_dir_all(&dataset).unwrap();
    let records: Vec<Vec<u8>> = doubles
        .iter()
        .enumerate()
        .map(|(id, values)| {
            let record = of::record([
                ("double", of::double_feature(values.iter().copied())),
                ("id", of::int64_feature([(1 << 60) + id as i64])),
            ]);
            let mut bytes = Vec::new();
            ofconvert_bridge::encode_ofrecord(&record, &mut bytes);
            bytes
        })
        .collect();
    write_ofrecord(&dataset.join("part-00000"), &records);
    dataset
}

#[test]
fn lossy_refuses_a_double_beyond_float_range_naming_feature_and_record() {
    let work = tempdir();
    let input = double_dataset(work.path(), &[&[0.5, 0.75], &[0.25], &[-2.0, 1e300]]);
    for flags in [&["--lossy"][..], &[]] {
        let out = work.path().join(format!("out{}", flags.len()));
        let run = ofconvert()
            .arg("of2tf")
            .arg(&input)
            .arg(&out)
            .args(flags)
            .expect_code(1);
        assert!(
            run.stderr.contains(
                "part-00000: offset 114 (record #2): feature \"double\": double 1e300 is beyond \
                 the range of float"
            ),
            "{flags:?}: {}",
            run.stderr
        );
        // Rounding is not what would fix it.
        assert!(!run.stderr.contains("pass --lossy"), "{}", run.stderr);
        assert!(tree(&out).is_empty(), "{flags:?}: {:?}", tree(&out));
    }
}

#[test]
fn a_cast_to_float_refuses_overflow_too() {
    let work = tempdir();
    let input = double_dataset(work.path(), &[&[-1e39]]);
    let out = work.path().join("out");
    let run = ofconvert()
        .arg("of2tf")
        .arg(&input)
        .arg(&out)
        .args(["--cast", "double=float", "--lossy"])
        .expect_code(1);
    assert!(
        run.stderr
            .contains("(record #0): feature \"double\": double -1e39 is beyond the range of float"),
        "{}",
        run.stderr
    );
    assert!(tree(&out).is_empty(), "{:?}", tree(&out));
}

#[test]
fn lossy_counts_every_value_it_rounds() {
    let work = tempdir();
    // Rounded: 0.1, 1e-300 (to 0), -1e-40 (to a subnormal), 1/3. Kept: the rest.
    let doubles: [&[f64]; 4] = [
        &[0.1, 0.5, 1e-300],
        &[-1e-40, f64::NAN, f64::INFINITY, -0.0],
        &[],
        &[0.25, 1.0 / 3.0, f64::from(f32::MAX)],
    ];
    let input = double_dataset(work.path(), &doubles);
    let out = work.path().join("out");
    let run = ofconvert()
        .arg("of2tf")
        .arg(&input)
        .arg(&out)
        .arg("--lossy")
        .ok();
    assert!(
        run.stdout
            .contains("--lossy rounded 4 values to the nearest float"),
        "{}",
        run.stdout
    );
    assert_eq!(manifest(&out)["rounded_values"], 4);
    let written = tf_records(&out.join("doubles.tfrecord"));
    assert_eq!(written.len(), doubles.len());
    for (record, values) in written.iter().zip(doubles) {
        let example = ofconvert_bridge::decode_example(record).unwrap();
        let got: Vec<u32> = example
            .float_values("double")
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let want: Vec<u32> = values.iter().map(|&v| (v as f32).to_bits()).collect();
        assert_eq!(got, want);
    }

    // Integers cast to float round too; each value counts once. The ids are 2^60 + i:
    // all but 2^60 itself round.
    let json = ofconvert()
        .arg("of2tf")
        .arg(&input)
        .arg(work.path().join("cast"))
        .args(["--lossy", "--cast", "id=float", "--json"])
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(summary["datasets"][0]["manifest"]["rounded_values"], 4 + 3);
}

#[test]
fn without_lossy_nothing_is_counted() {
    let work = tempdir();
    let input = double_dataset(work.path(), &[&[0.5, -2.0, f64::NAN]]);
    let out = work.path().join("out");
    let run = ofconvert().arg("of2tf").arg(&input).arg(&out).ok();
    assert!(!run.stdout.contains("rounded"), "{}", run.stdout);
    assert!(manifest(&out).get("rounded_values").is_none());
}

#[test]
fn the_failure_that_lossy_fixes_names_lossy() {
    let work = tempdir();
    let input = double_dataset(work.path(), &[&[0.5], &[0.1]]);
    let run = ofconvert()
        .arg("of2tf")
        .arg(&input)
        .arg(work.path().join("out"))
        .expect_code(1);
    assert!(
        run.stderr
            .contains("(record #1): feature \"double\": double 0.1 is not exactly representable"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("pass --lossy"), "{}", run.stderr);
}

#[test]
fn a_sharded_lossy_run_counts_what_a_single_run_counts() {
    let work = tempdir();
    let input = double_dataset(
        work.path(),
        &[&[0.1, 0.5], &[1e-300], &[0.25], &[1.0 / 3.0]],
    );
    let single = work.path().join("single");
    let sharded = work.path().join("sharded");
    let flags = ["--lossy", "--records-per-part", "1"];
    ofconvert()
        .arg("of2tf")
        .arg(&input)
        .arg(&single)
        .args(flags)
        .ok();
    for k in 0..2 {
        ofconvert()
            .arg("of2tf")
            .arg(&input)
            .arg(&sharded)
            .args(flags)
            .args(["--shard", &format!("{k}/2")])
            .ok();
    }
    ofconvert().arg("commit").arg(&sharded).ok();
    assert_eq!(manifest(&single)["rounded_values"], 3);
    assert_eq!(manifest(&sharded)["rounded_values"], 3);
    for part in tree(&single)
        .iter()
        .filter(|name| name.contains(".tfrecord"))
    {
        assert_eq!(
            std::fs::read(single.join(part)).unwrap(),
            std::fs::read(sharded.join(part)).unwrap(),
            "{part}"
        );
    }
}
