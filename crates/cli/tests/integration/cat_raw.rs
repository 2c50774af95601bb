//! `cat` of records that are not Examples: `-n` bounds what is printed, errors included, and
//! `--raw` prints each record's bytes.

use crate::util::*;

/// A TFRecord file of `count` records that are not Examples (bytes no protobuf parses).
fn not_examples(dir: &std::path::Path, count: u8) -> (std::path::PathBuf, Vec<Vec<u8>>) {
    let records: Vec<Vec<u8>> = (0..count).map(|i| vec![0xff, 0xff, i, 0x07]).collect();
    let file = dir.join("raw.tfrecord");
    write_tfrecord(&file, &records);
    (file, records)
}

#[test]
fn cat_n_bounds_the_errors_it_prints_too() {
    let work = tempdir();
    let (file, _) = not_examples(work.path(), 50);
    let run = ofconvert()
        .arg("cat")
        .arg(&file)
        .args(["-n", "2"])
        .expect_code(1);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let errors: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(errors.len(), 2, "{}", run.stderr);
    assert!(errors[0].contains("(record #0)"), "{}", run.stderr);
    assert!(errors[1].contains("(record #1)"), "{}", run.stderr);
    assert!(run.stderr.contains("--raw"), "{}", run.stderr);
}

#[test]
fn cat_raw_prints_each_record_s_bytes_in_hex_or_base64() {
    let work = tempdir();
    let (file, records) = not_examples(work.path(), 3);
    let run = ofconvert().arg("cat").arg(&file).arg("--raw").ok();
    let expected: Vec<String> = records
        .iter()
        .enumerate()
        .map(|(index, record)| {
            let hex: String = record.iter().map(|byte| format!("{byte:02x}")).collect();
            format!(
                "record #{index}, offset {}, 4 bytes: {hex}",
                index * (4 + 16)
            )
        })
        .collect();
    assert_eq!(run.stdout.lines().collect::<Vec<_>>(), expected);

    let run = ofconvert()
        .arg("cat")
        .arg(&file)
        .args(["--raw=base64", "--json", "--skip", "2"])
        .ok();
    let object: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(
        object,
        serde_json::json!({"record": 2, "offset": 40, "bytes": 4, "base64": "//8CBw=="})
    );

    // A JPEG's worth of bytes, cut as --max-bytes cuts values.
    let run = ofconvert()
        .arg("cat")
        .arg(&file)
        .args(["--raw", "--max-bytes", "2", "-n", "1"])
        .ok();
    assert_eq!(run.stdout, "record #0, offset 0, 4 bytes: ffff...\n");
}

#[test]
fn cat_q_leaves_out_the_file_lines_and_v_prints_one_for_a_single_file() {
    let work = tempdir();
    let (file, _) = not_examples(work.path(), 2);
    let header = format!("==> {} <==", file.display());
    let one = |flags: &[&str]| {
        ofconvert()
            .arg("cat")
            .arg(&file)
            .args(["--raw", "-n", "1"])
            .args(flags)
            .ok()
            .stdout
    };
    assert!(!one(&[]).contains("==>"));
    assert!(one(&["-v"]).starts_with(&header), "{}", one(&["-v"]));
    let both = ofconvert()
        .arg("cat")
        .args([&file, &file])
        .args(["--raw", "-n", "1", "-q"])
        .ok()
        .stdout;
    assert_eq!(both.lines().count(), 2, "{both}");
    assert!(!both.contains("==>"), "{both}");
}

#[test]
fn index_takes_the_format_and_the_jobs_the_other_inspecting_commands_take() {
    let work = tempdir();
    let dir = work.path().join("data");
    for name in ["a", "b", "c"] {
        let file = dir.join(format!("{name}.tfrecord"));
        std::fs::create_dir_all(&dir).unwrap();
        write_tfrecord(&file, &examples(0, 10, 50));
    }
    let run = ofconvert()
        .args(["index", "-j", "2", "--format", "tf", "--json"])
        .arg(&dir)
        .ok();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["total"], 30, "{report}");
    assert_eq!(report["files"].as_array().unwrap().len(), 3, "{report}");
    let refused = ofconvert()
        .args(["index", "--format", "of"])
        .arg(dir.join("a.tfrecord"))
        .expect_code(1);
    assert!(
        refused
            .stderr
            .contains("index writes indexes of TFRecord files"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_count_of_zero_is_said_to_be_below_one() {
    let work = tempdir();
    let (file, _) = not_examples(work.path(), 1);
    let run = ofconvert()
        .arg("tf2of")
        .arg(&file)
        .arg(work.path().join("out"))
        .args(["--parts", "0"])
        .expect_code(2);
    assert!(
        run.stderr.contains("0: it must be at least 1"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("18446744073709551615"),
        "{}",
        run.stderr
    );
}
