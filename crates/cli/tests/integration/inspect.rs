//! cat, count, verify, schema and index against the golden files and what TensorFlow said
//! about them.

use std::fs;
use std::io::Read;
use std::path::Path;

use crate::util::*;
use serde_json::Value;

fn expected(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn fnv1a64(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The text TensorFlow's `MessageToString` gave for a record, as `cat` must print it. A
/// SequenceExample with only a context has the very bytes of an Example (both put their
/// features in field 1), so `cat` can only print it as the Example it also is.
fn expected_text(record: &Value) -> Option<String> {
    let text = record["text"].as_str()?;
    let context_only = record["type"] == "sequence_example"
        && record["feature_lists"]
            .as_object()
            .is_none_or(|lists| lists.is_empty());
    if context_only {
        if let Some(rest) = text.strip_prefix("context {") {
            return Some(format!("features {{{rest}"));
        }
    }
    Some(text.to_owned())
}

/// Checks `cat FILE` against the expected texts: all at once where every text is known,
/// record by record (with the hashes of the longest ones) otherwise.
fn check_cat(file: &Path, records: &[Value]) {
    let texts: Vec<Option<String>> = records.iter().map(expected_text).collect();
    if texts.iter().all(Option::is_some) {
        let whole: Vec<String> = texts.into_iter().flatten().collect();
        let run = ofconvert().args(["cat".as_ref(), file.as_os_str()]).ok();
        assert!(run.stdout == whole.join("\n"), "{}", file.display());
        return;
    }
    for (index, (record, text)) in records.iter().zip(texts).enumerate() {
        let run = ofconvert()
            .args([
                "cat".as_ref(),
                file.as_os_str(),
                "--skip".as_ref(),
                index.to_string().as_ref(),
                "-n".as_ref(),
                "1".as_ref(),
            ])
            .ok();
        match text {
            Some(text) => assert_eq!(run.stdout, text, "{} #{index}", file.display()),
            None => {
                assert_eq!(
                    run.stdout.len() as u64,
                    record["text_len"].as_u64().unwrap()
                );
                assert_eq!(fnv1a64(run.stdout.as_bytes()), record["text_fnv1a64"]);
            }
        }
    }
}

#[test]
fn cat_prints_what_text_format_prints_for_every_golden_tfrecord() {
    let mut checked = 0;
    for entry in fs::read_dir(testdata().join("golden")).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_name().unwrap().to_str() else {
            continue;
        };
        let Some(file) = name.strip_suffix(".expected.json") else {
            continue;
        };
        let expected = expected(&path);
        check_cat(
            &testdata().join("golden").join(file),
            expected["records"].as_array().unwrap(),
        );
        checked += 1;
    }
    assert!(checked >= 8, "{checked}");
}

#[test]
fn cat_prints_ofrecords_as_text_format_with_record_proto() {
    for dataset in ["all_kinds", "no_double"] {
        let expected = expected(&testdata().join(format!("ofrecord/{dataset}.expected.json")));
        let records = expected["records"].as_array().unwrap();
        let mut parts: Vec<&str> = records
            .iter()
            .map(|r| r["part"].as_str().unwrap())
            .collect();
        parts.dedup();
        for part in parts {
            let in_part: Vec<Value> = records
                .iter()
                .filter(|record| record["part"] == part)
                .cloned()
                .collect();
            check_cat(
                &testdata().join("ofrecord").join(dataset).join(part),
                &in_part,
            );
        }
    }
}

#[test]
fn cat_json_gives_one_object_per_record() {
    let file = testdata().join("golden/tutorial.tfrecord.zz");
    let run = ofconvert()
        .args(["cat".as_ref(), file.as_os_str(), "--json".as_ref()])
        .ok();
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 500);
    let first: Value = serde_json::from_str(lines[0]).unwrap();
    let feature0 = &first["features"]["feature"]["feature0"]["int64List"]["value"];
    let expected = expected(&testdata().join("golden/tutorial.tfrecord.zz.expected.json"));
    let value = expected["records"][0]["features"]["feature0"]["values"][0]
        .as_i64()
        .unwrap();
    // The JSON mapping writes 64-bit integers as strings.
    assert_eq!(feature0, &serde_json::json!([value.to_string()]));
}

#[test]
fn cat_skip_and_count_select_records() {
    let file = testdata().join("golden/bert.tfrecord");
    let expected = expected(&testdata().join("golden/bert.tfrecord.expected.json"));
    let run = ofconvert()
        .args([
            "cat".as_ref(),
            file.as_os_str(),
            "--skip".as_ref(),
            "1".as_ref(),
            "-n".as_ref(),
            "2".as_ref(),
        ])
        .ok();
    let texts: Vec<&str> = (1..3)
        .map(|i| expected["records"][i]["text"].as_str().unwrap())
        .collect();
    assert_eq!(run.stdout, texts.join("\n"));
}

#[test]
fn cat_message_reads_one_bare_serialized_message() {
    let work = tempdir();
    let images = expected(&testdata().join("golden/images.tfrecord.expected.json"));
    let record = &images["records"][0];
    let hex = record["serialized_hex"].as_str().unwrap();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let file = work.path().join("example.pb");
    fs::write(&file, bytes).unwrap();
    let run = ofconvert()
        .args(["cat".as_ref(), "--message".as_ref(), file.as_os_str()])
        .ok();
    assert_eq!(run.stdout, record["text"].as_str().unwrap());

    let ofrecord = work.path().join("record.pb");
    let part = of_records(&testdata().join("ofrecord/no_double/part-00000"));
    fs::write(&ofrecord, &part[0]).unwrap();
    let run = ofconvert()
        .args([
            "cat".as_ref(),
            "--message".as_ref(),
            "--format".as_ref(),
            "of".as_ref(),
            ofrecord.as_os_str(),
        ])
        .ok();
    let expected = expected(&testdata().join("ofrecord/no_double.expected.json"));
    assert_eq!(run.stdout, expected["records"][0]["text"].as_str().unwrap());
}

#[test]
fn cat_ends_quietly_on_a_closed_pipe() {
    let file = testdata().join("golden/tutorial.tfrecord");
    let mut child = ofconvert()
        .arg("cat")
        .args([&file, &file, &file, &file])
        .spawn_piped();
    let mut stdout = child.stdout.take().unwrap();
    let mut start = [0u8; 100];
    stdout.read_exact(&mut start).unwrap();
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

#[test]
fn count_reports_each_file_and_the_total() {
    let golden = testdata().join("golden");
    let run = ofconvert()
        .args([
            "count".as_ref(),
            golden.join("tutorial.tfrecord").as_os_str(),
            golden.join("tutorial.tfrecord.gz").as_os_str(),
            golden.join("empty.tfrecord").as_os_str(),
            testdata().join("ofrecord/all_kinds").as_os_str(),
        ])
        .ok();
    let counts: Vec<(u64, String)> = run
        .stdout
        .lines()
        .map(|line| {
            let (count, path) = line.trim_start().split_once("  ").unwrap();
            (count.parse().unwrap(), path.to_owned())
        })
        .collect();
    let numbers: Vec<u64> = counts.iter().map(|(count, _)| *count).collect();
    assert_eq!(numbers, [500, 500, 0, 4, 3, 1007]);
    assert_eq!(counts[5].1, "total");

    let run = ofconvert()
        .args([
            "count".as_ref(),
            testdata().join("datasets").as_os_str(),
            "--json".as_ref(),
        ])
        .ok();
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    // The mixed ImageNet shard (15 records, 1 file) and CIFAR-10 (48 records, 3 files) came
    // after the first 266 records in 8 files.
    assert_eq!(json["total"], 329);
    assert_eq!(json["files"].as_array().unwrap().len(), 12);
}

#[test]
fn count_fails_on_damaged_framing() {
    let file = testdata().join("damaged/truncated_payload.tfrecord");
    let run = ofconvert()
        .args(["count".as_ref(), file.as_os_str()])
        .expect_code(1);
    assert!(
        run.stderr
            .contains("offset 50140 (record #499): truncated record"),
        "{}",
        run.stderr
    );
}

#[test]
fn verify_passes_golden_files_and_reports_every_problem() {
    let run = ofconvert()
        .args([
            "verify".as_ref(),
            testdata().join("golden").as_os_str(),
            testdata().join("ofrecord").as_os_str(),
        ])
        .ok();
    assert!(
        run.stdout
            .contains("verified 11 files: 1537 good records, 0 problems"),
        "{}",
        run.stdout
    );

    let facts = expected(&testdata().join("damaged/expected.json"));
    for (file, facts) in facts["files"].as_object().unwrap() {
        let path = testdata().join("damaged").join(file);
        let run = ofconvert()
            .args(["verify".as_ref(), path.as_os_str()])
            .run();
        if facts["kind"] == "ok" {
            run.ok();
            continue;
        }
        let run = run.expect_code(1);
        let place = format!(
            "{}: offset {} (record #{})",
            path.display(),
            facts["offset"],
            facts["index"]
        );
        assert!(run.stdout.contains(&place), "{place}\n{}", run.stdout);
    }
    // Past a bad data checksum the framing holds: the other records are checked too.
    let path = testdata().join("damaged/flipped_data.tfrecord");
    let run = ofconvert()
        .args(["verify".as_ref(), path.as_os_str()])
        .expect_code(1);
    assert!(
        run.stdout.contains("1 problem, 499 good records"),
        "{}",
        run.stdout
    );
}

#[test]
fn schema_shows_kinds_counts_and_reader_code() {
    let tutorial = testdata().join("golden/tutorial.tfrecord");
    let run = ofconvert()
        .args(["schema".as_ref(), tutorial.as_os_str()])
        .ok();
    assert!(
        run.stdout.starts_with("500 records in 1 file\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("feature2  bytes_list       1      500"),
        "{}",
        run.stdout
    );

    let run = ofconvert()
        .args(["schema".as_ref(), "--tf".as_ref(), tutorial.as_os_str()])
        .ok();
    assert!(run
        .stdout
        .contains("    \"feature3\": tf.io.FixedLenFeature([], tf.float32),\n"));

    let dataset = testdata().join("ofdatasets/imagenet_of/train");
    let run = ofconvert()
        .args(["schema".as_ref(), "--oneflow".as_ref(), dataset.as_os_str()])
        .ok();
    let reader = format!(
        "reader = flow.nn.OFRecordReader(\"{}\", batch_size=32, data_part_num=2, \
         part_name_prefix=\"part-\", part_name_suffix_length=5)\n",
        dataset.display()
    );
    assert!(run.stdout.contains(&reader), "{}", run.stdout);
    assert!(run.stdout.contains(
        "encoded = flow.nn.OFRecordImageDecoder(\"encoded\", color_space=\"RGB\")(record)\n"
    ));
    assert!(run.stdout.contains(
        "class_label = flow.nn.OFRecordRawDecoder(\"class/label\", shape=(1,), dtype=flow.int32)(record)\n"
    ));

    // Lists of varying length: the longest sets the shape and truncate zero-pads the others
    // (OneFlow copies min(count, prod(shape)) values), so no value is cut.
    let imagenet = testdata().join("datasets/imagenet/train");
    let run = ofconvert()
        .args([
            "schema".as_ref(),
            "--oneflow".as_ref(),
            imagenet.as_os_str(),
        ])
        .ok();
    assert!(
        run.stdout.contains(
            "flow.nn.OFRecordRawDecoder(\"image/object/bbox/xmin\", shape=(2,), dtype=flow.float32, truncate=True)(record)  # 1 to 2 values per record: shorter ones are zero-padded\n"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn schema_warns_about_what_would_abort_oneflow() {
    let edge = testdata().join("golden/edge.tfrecord");
    let run = ofconvert().args(["schema".as_ref(), edge.as_os_str()]).ok();
    assert!(run.stderr.contains("is missing from"), "{}", run.stderr);
    assert!(run.stderr.contains("has no kind set"), "{}", run.stderr);
    let json = ofconvert()
        .args(["schema".as_ref(), "--json".as_ref(), edge.as_os_str()])
        .ok();
    let schema: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(schema["records"], 11);
}

/// `OFFSET LENGTH` lines worked out from the framing directly.
fn index_lines(bytes: &[u8]) -> String {
    let mut lines = String::new();
    let mut offset = 0usize;
    while offset < bytes.len() {
        let mut length = [0u8; 8];
        length.copy_from_slice(&bytes[offset..offset + 8]);
        let framed = 16 + u64::from_le_bytes(length) as usize;
        lines.push_str(&format!("{offset} {framed}\n"));
        offset += framed;
    }
    lines
}

#[test]
fn index_writes_offset_and_framed_length_per_record() {
    let work = tempdir();
    let tutorial = testdata().join("golden/tutorial.tfrecord");
    let into = work.path().join("idx");
    ofconvert()
        .args([
            "index".as_ref(),
            tutorial.as_os_str(),
            "--output-dir".as_ref(),
            into.as_os_str(),
        ])
        .ok();
    let written = fs::read_to_string(into.join("tutorial.tfrecord.idx")).unwrap();
    assert_eq!(written, index_lines(&fs::read(&tutorial).unwrap()));
    assert_eq!(written.lines().count(), 500);

    let beside = copy_into(
        &testdata().join("golden/bert.tfrecord"),
        &work.path().join("b"),
    );
    ofconvert()
        .args(["index".as_ref(), beside.as_os_str()])
        .ok();
    let written = fs::read_to_string(work.path().join("b/bert.tfrecord.idx")).unwrap();
    assert_eq!(written, index_lines(&fs::read(&beside).unwrap()));
}

#[test]
fn index_json_lists_each_index_with_its_records() {
    let work = tempdir();
    let tutorial = copy_into(&testdata().join("golden/tutorial.tfrecord"), work.path());
    let bert = copy_into(&testdata().join("golden/bert.tfrecord"), work.path());
    let run = ofconvert()
        .args(["index".as_ref(), work.path().as_os_str(), "--json".as_ref()])
        .ok();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{report}");
    let mut total = 0;
    for file in files {
        let index = file["index"].as_str().unwrap();
        let lines = fs::read_to_string(index).unwrap().lines().count() as u64;
        assert_eq!(file["records"], lines, "{report}");
        assert_eq!(format!("{}.idx", file["path"].as_str().unwrap()), index);
        total += lines;
    }
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        [bert.to_str().unwrap(), tutorial.to_str().unwrap()],
        "in name order"
    );
    assert_eq!(report["total"], total);
    assert_eq!(total, 500 + count_of(&bert));
}

fn count_of(file: &std::path::Path) -> u64 {
    let run = ofconvert().args(["count".as_ref(), file.as_os_str()]).ok();
    run.stdout
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn index_refuses_compressed_files() {
    let work = tempdir();
    let gz = copy_into(&testdata().join("golden/tutorial.tfrecord.gz"), work.path());
    let run = ofconvert()
        .args(["index".as_ref(), gz.as_os_str()])
        .expect_code(1);
    assert!(run.stderr.contains("compressed"), "{}", run.stderr);
    assert_eq!(tree(work.path()), ["tutorial.tfrecord.gz"]);
}

#[test]
fn parts_left_by_a_run_that_did_not_finish_are_reported_as_not_published() {
    let dir = tempdir();
    let out = dir.path().join("of");
    ofconvert()
        .arg("tf2of")
        .arg(testdata().join("datasets/tutorial"))
        .arg(&out)
        .ok();
    // A OneFlow dataset without a manifest, as OneFlow itself writes them: nothing to say.
    fs::remove_file(out.join("ofconvert-manifest.json")).unwrap();
    let plain = ofconvert().args(["verify"]).arg(&out).ok();
    assert!(!plain.stderr.contains("published"), "{}", plain.stderr);
    // With the temporary part of a run beside them, the parts are a run that did not end.
    fs::write(out.join(".ofconvert-part-1-0.tmp-4242"), b"half").unwrap();
    let expected = format!(
        "{}: OneFlow parts without ofconvert-manifest.json: not a published dataset",
        out.display()
    );
    for command in ["count", "schema"] {
        let run = ofconvert().arg(command).arg(&out).ok();
        assert!(run.stderr.contains(&expected), "{command}: {}", run.stderr);
    }
    let run = ofconvert().arg("verify").arg(&out).expect_code(1);
    assert!(run.stderr.contains(&expected), "{}", run.stderr);
    assert!(run.stderr.contains("--resume"), "{}", run.stderr);
}
