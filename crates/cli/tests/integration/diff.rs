//! `diff A B`: the same records (exit 0, one line), the first difference named with its
//! values (exit 1), or no comparison possible (exit 2); in order or as multisets, across
//! formats, shardings, compressions and stores.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::objects::S3Server;
use crate::util::*;

fn diff(a: &Path, b: &Path, extra: &[&str]) -> Run {
    ofconvert().arg("diff").args([a, b]).args(extra).run()
}

fn json(a: &Path, b: &Path, extra: &[&str]) -> Value {
    let run = diff(a, b, &[extra, &["--json"]].concat());
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// A dataset of `count` records in `files` TFRecord files under `dir`.
fn tf_dataset(dir: &Path, records: &[Vec<u8>], files: usize) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let per_file = records.len().div_ceil(files);
    for (index, chunk) in records.chunks(per_file).enumerate() {
        write_tfrecord(&dir.join(format!("data-{index:05}-of-{files:05}")), chunk);
    }
    dir.to_path_buf()
}

#[test]
fn a_tree_and_its_conversions_hold_the_same_records() {
    let work = tempdir();
    let datasets = testdata().join("datasets");
    let of = work.path().join("of");
    let resharded = work.path().join("resharded");
    let back = work.path().join("back");
    ofconvert().arg("tf2of").args([&datasets, &of]).ok();
    ofconvert()
        .arg("tf2of")
        .args([&datasets, &resharded])
        .args(["--parts", "3"])
        .ok();
    ofconvert()
        .arg("of2tf")
        .args([&resharded, &back])
        .args(["--records-per-part", "7", "--compression", "gzip"])
        .ok();
    for (a, b) in [
        (&datasets, &of),
        (&datasets, &resharded),
        (&of, &back),
        (&back, &datasets),
    ] {
        let run = diff(a, b, &[]).expect_code(0);
        let line = "same: 329 records in 9 datasets (";
        assert!(run.stdout.starts_with(line), "{}", run.stdout);
        assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
        let unordered = json(a, b, &["--unordered"]);
        assert_eq!(unordered["same"], true, "{unordered}");
        assert_eq!(unordered["records"], 329);
    }
    let report = json(&datasets, &of, &[]);
    assert_eq!(
        (
            &report["a_format"],
            &report["b_format"],
            &report["datasets"]
        ),
        (&Value::from("tf"), &Value::from("of"), &Value::from(9))
    );
    assert_eq!(report["difference"], Value::Null);

    // int32 is the int64 of the same number; an offset makes other numbers.
    let cast = work.path().join("cast");
    ofconvert()
        .arg("tf2of")
        .args([&datasets.join("imagenet/train"), &cast])
        .args(["--cast", "image/class/label=int32"])
        .ok();
    diff(&datasets.join("imagenet/train"), &cast, &[]).expect_code(0);
    let offset = work.path().join("offset");
    ofconvert()
        .arg("tf2of")
        .args([&datasets.join("imagenet/train"), &offset])
        .args(["--offset", "image/class/label=-1"])
        .ok();
    let run = diff(&datasets.join("imagenet/train"), &offset, &[]).expect_code(1);
    assert!(
        run.stdout.starts_with(
            "differ: dataset train, record #0, feature \"image/class/label\": values differ\n  \
             A: int64_list [1]  ("
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn the_first_difference_is_named_with_its_place_and_values() {
    let work = tempdir();
    let records = examples(0, 50, 30);
    let a = tf_dataset(&work.path().join("a"), &records, 3);
    let mut changed = records.clone();
    changed[37] = example(1037, 30);
    changed[44] = example(1044, 30);
    let b = tf_dataset(&work.path().join("b"), &changed, 2);
    let report = json(&a, &b, &[]);
    assert_eq!(report["same"], false);
    let difference = &report["difference"];
    assert_eq!(difference["record"], 37);
    assert_eq!(difference["feature"], "id");
    assert_eq!(difference["what"], "values differ");
    assert_eq!(difference["a"], "int64_list [37]");
    assert_eq!(difference["b"], "int64_list [1037]");
    // Record 37 is record 3 of A's third file, record 12 of B's second.
    let a_place = &difference["a_place"];
    assert!(a_place["path"]
        .as_str()
        .unwrap()
        .ends_with("data-00002-of-00003"));
    assert_eq!(a_place["record"], 3);
    assert_eq!(difference["b_place"]["record"], 12);
    let run = diff(&a, &b, &[]).expect_code(1);
    assert!(
        run.stdout
            .starts_with("differ: dataset a, record #37, feature \"id\": values differ\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  B: int64_list [1037]  ("),
        "{}",
        run.stdout
    );

    // One side shorter.
    let shorter = tf_dataset(&work.path().join("shorter"), &records[..45], 1);
    let run = diff(&a, &shorter, &[]).expect_code(1);
    assert!(
        run.stdout
            .starts_with("differ: dataset a, record #45: B ends after 45 records; A has more"),
        "{}",
        run.stdout
    );
}

#[test]
fn records_in_another_order_are_the_same_only_as_multisets() {
    let work = tempdir();
    let records = examples(0, 40, 20);
    let a = tf_dataset(&work.path().join("a"), &records, 2);
    let mut shuffled = records.clone();
    shuffled.reverse();
    shuffled.swap(3, 30);
    let b = tf_dataset(&work.path().join("b"), &shuffled, 3);
    diff(&a, &b, &[]).expect_code(1);
    let run = diff(&a, &b, &["--unordered"]).expect_code(0);
    assert!(run.stdout.contains(", as multisets"), "{}", run.stdout);

    // One record of A replaced by a second copy of another: the difference named is the
    // one with the lowest record number, on A's side first.
    let mut doubled = shuffled.clone();
    let at = doubled.iter().position(|r| *r == records[11]).unwrap();
    doubled[at] = records[12].clone();
    let c = tf_dataset(&work.path().join("c"), &doubled, 1);
    let difference = &json(&a, &c, &["--unordered"])["difference"];
    assert_eq!(
        difference["what"],
        "record only in A: B has no record equal to it"
    );
    assert_eq!(difference["record"], 11);
    assert_eq!(difference["a_place"]["record"], 11);
    assert!(difference["a_place"]["path"]
        .as_str()
        .unwrap()
        .ends_with("data-00000-of-00002"));
    assert_eq!(difference["b_place"], Value::Null);
    // The last record replaced by a second copy of record 5: at number 39 on both sides,
    // A's extra copy is named first.
    let mut last = records.clone();
    last[39] = records[5].clone();
    let d = tf_dataset(&work.path().join("d"), &last, 1);
    let difference = &json(&d, &a, &["--unordered"])["difference"];
    assert_eq!(difference["what"], "record twice in A, once in B");
    assert_eq!(difference["record"], 39);
}

#[test]
fn datasets_pair_by_name_and_one_missing_is_a_difference() {
    let work = tempdir();
    let tree = sample_tree(work.path(), "tree");
    let of = work.path().join("of");
    ofconvert().arg("tf2of").args([&tree, &of]).ok();
    fs::remove_dir_all(of.join("imagenet/validation")).unwrap();
    let report = json(&tree, &of, &[]);
    let difference = &report["difference"];
    assert_eq!(difference["dataset"], "imagenet/validation");
    assert_eq!(
        difference["what"],
        "dataset only in A: B has none of that name"
    );
    // Those before it in name order were compared.
    assert_eq!(report["datasets"], 3);
}

#[test]
fn files_at_the_top_of_a_tree_and_of_its_conversion_are_no_dataset_to_compare() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir_all(input.join("train")).unwrap();
    fs::write(input.join("README.txt"), "about the data\n").unwrap();
    write_tfrecord(&input.join("train/x.tfrecord"), &examples(0, 3, 10));
    let of = work.path().join("out");
    ofconvert().arg("tf2of").args([&input, &of]).ok();
    assert!(of.join("README.txt").exists(), "{:?}", tree(&of));
    let report = json(&input, &of, &[]);
    assert!(report["difference"].is_null(), "{report}");
    assert_eq!(report["datasets"], 1);
    diff(&input, &of, &[]).ok();
}

#[test]
fn the_datasets_at_the_roots_of_two_trees_pair_whatever_the_trees_are_called() {
    let work = tempdir();
    let tree = work.path().join("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    write_tfrecord(&tree.join("train.tfrecord"), &examples(0, 4, 10));
    write_tfrecord(&tree.join("sub/x.tfrecord"), &examples(10, 3, 10));
    let of = work.path().join("of");
    ofconvert().arg("tf2of").args([&tree, &of]).ok();
    let report = json(&tree, &of, &[]);
    assert!(report["difference"].is_null(), "{report}");
    assert_eq!(report["datasets"], 2);
    // A difference at the root names the dataset as the converters do: A's own name.
    write_tfrecord(&tree.join("train.tfrecord"), &examples(0, 5, 10));
    let report = json(&tree, &of, &[]);
    assert_eq!(report["difference"]["dataset"], "tree", "{report}");
}

#[test]
fn what_cannot_be_compared_exits_2_saying_why() {
    let work = tempdir();
    let records = examples(0, 10, 20);
    let a = tf_dataset(&work.path().join("a"), &records, 1);
    let b = tf_dataset(&work.path().join("b"), &records, 1);
    let file = b.join("data-00000-of-00001");
    let mut bytes = fs::read(&file).unwrap();
    let at = bytes.len() - 30;
    bytes[at] ^= 0x40;
    fs::write(&file, bytes).unwrap();
    let run = diff(&a, &b, &[]).expect_code(2);
    assert!(run.stderr.contains("cannot compare: "), "{}", run.stderr);
    assert!(
        run.stderr.contains("data-00000-of-00001: offset"),
        "{}",
        run.stderr
    );
    diff(&a, &b, &["--unordered"]).expect_code(2);

    let run = diff(&a, &work.path().join("nowhere"), &[]).expect_code(2);
    assert!(run.stderr.contains("nowhere"), "{}", run.stderr);

    let mixed = work.path().join("mixed");
    copy_tree(&a, &mixed);
    write_ofrecord(&mixed.join("part-00000"), &to_of(&records));
    let run = diff(&a, &mixed, &[]).expect_code(2);
    assert!(
        run.stderr.contains("holds TFRecord files"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_bucket_and_a_local_tree_compare_as_two_local_trees() {
    let s3 = S3Server::start(&["data"]);
    let datasets = testdata().join("datasets/tfds");
    s3.ofconvert()
        .arg("tf2of")
        .arg(&datasets)
        .arg("s3://data/of")
        .ok();
    let run = s3
        .ofconvert()
        .arg("diff")
        .arg(&datasets)
        .arg("s3://data/of")
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("same: 168 records in 4 datasets"),
        "{}",
        run.stdout
    );
    let part = s3.file("data", "of/mnist/3.0.1/mnist-train/part-00001");
    let mut records = of_records(&part);
    records.pop();
    write_ofrecord(&part, &records);
    let run = s3
        .ofconvert()
        .args(["diff", "--unordered", "s3://data/of"])
        .arg(&datasets)
        .run();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("differ: dataset mnist/3.0.1/mnist-train, record #79: record only in B"),
        "{}",
        run.stdout
    );
}

/// Writes `records` cut into files of `sizes` records under `dir`.
fn cut(dir: &Path, records: &[Vec<u8>], sizes: &[usize]) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let mut at = 0;
    for (index, size) in sizes.iter().enumerate() {
        let name = format!("data-{index:05}-of-{:05}", sizes.len());
        write_tfrecord(&dir.join(name), &records[at..at + size]);
        at += size;
    }
    dir.to_path_buf()
}

#[test]
fn files_that_line_up_are_compared_pair_by_pair_and_the_others_as_streams() {
    let work = tempdir();
    let records = examples(0, 30, 20);
    let a = cut(&work.path().join("a"), &records, &[10, 10, 10]);
    // As many files, cut elsewhere: the same records.
    let shifted = cut(&work.path().join("shifted"), &records, &[12, 10, 8]);
    diff(&a, &shifted, &[]).expect_code(0);
    // A record changed in the third file of both: its number in the dataset is counted
    // over the files before it.
    let mut changed = records.clone();
    changed[25] = example(125, 20);
    let b = cut(&work.path().join("b"), &changed, &[10, 10, 10]);
    let difference = &json(&a, &b, &[])["difference"];
    assert_eq!(difference["record"], 25);
    assert_eq!(difference["a_place"]["record"], 5);
    assert!(difference["b_place"]["path"]
        .as_str()
        .unwrap()
        .ends_with("data-00002-of-00003"));
    // Also when an earlier file of the pair is cut elsewhere.
    let c = cut(&work.path().join("c"), &changed, &[9, 11, 10]);
    let difference = &json(&a, &c, &[])["difference"];
    assert_eq!(difference["record"], 25);
    assert_eq!(difference["b_place"]["record"], 5);
    // The last record missing.
    let short = cut(&work.path().join("short"), &records[..29], &[10, 10, 9]);
    let run = diff(&a, &short, &[]).expect_code(1);
    assert!(
        run.stdout
            .starts_with("differ: dataset a, record #29: B ends after 29 records; A has more"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_preset_conversion_is_the_same_as_its_source_mapped_by_the_preset() {
    let work = tempdir();
    let train = testdata().join("datasets/imagenet/train");
    let of = work.path().join("of");
    ofconvert()
        .arg("tf2of")
        .args([&train, &of])
        .args(["--preset", "imagenet"])
        .ok();
    let run = diff(&train, &of, &[]).expect_code(1);
    assert!(run
        .stdout
        .starts_with("differ: dataset train, record #0, feature "));
    let run = diff(&train, &of, &["--preset", "imagenet"]).expect_code(0);
    assert!(
        run.stdout.starts_with("same: 20 records in 1 dataset ("),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("), A mapped in "), "{}", run.stdout);
    let report = json(&train, &of, &["--preset", "imagenet", "--unordered"]);
    assert_eq!(
        (&report["same"], &report["mapped"]),
        (&true.into(), &true.into())
    );
    // A copy of the source is not what the preset makes of it, though its bytes are A's.
    let copy = work.path().join("copy");
    copy_tree(&train, &copy);
    diff(&train, &copy, &["--preset", "imagenet"]).expect_code(1);
    diff(&train, &copy, &[]).expect_code(0);

    // One value changed in the conversion is still found, in order and as multisets.
    let part = of.join("part-00000");
    let mut records = of_records(&part);
    let mut record = ofconvert_bridge::decode_ofrecord(&records[3]).unwrap();
    record.feature.insert(
        "class/label".to_owned(),
        ofconvert_bridge::of::int32_feature([999]),
    );
    records[3].clear();
    ofconvert_bridge::encode_ofrecord(&record, &mut records[3]);
    write_ofrecord(&part, &records);
    let run = diff(&train, &of, &["--preset", "imagenet"]).expect_code(1);
    assert!(
        run.stdout.starts_with(
            "differ: dataset train, record #3, feature \"class/label\": values differ\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  B: int32_list [999]  ("),
        "{}",
        run.stdout
    );
    let difference = &json(&train, &of, &["--preset", "imagenet", "--unordered"])["difference"];
    assert_eq!(
        (&difference["what"], &difference["record"]),
        (
            &"record only in A: B has no record equal to it".into(),
            &3.into()
        )
    );
}

#[test]
fn rename_cast_and_offset_map_a_as_they_mapped_its_conversion_either_way() {
    let work = tempdir();
    let a = tf_dataset(&work.path().join("a"), &examples(0, 12, 20), 2);
    let of = work.path().join("of");
    let rules = [
        "--rename",
        "payload=data",
        "--cast",
        "id=float",
        "--offset",
        "id=-1",
    ];
    ofconvert().arg("tf2of").args([&a, &of]).args(rules).ok();
    diff(&a, &of, &rules).expect_code(0);
    diff(&a, &of, &[&rules[..], &["--unordered"]].concat()).expect_code(0);
    // Each rule counts: without the cast, an id is an integer on one side only.
    let run = diff(&a, &of, &["--rename", "payload=data", "--offset", "id=-1"]).expect_code(1);
    assert!(
        run.stdout
            .starts_with("differ: dataset a, record #0, feature \"id\": kinds differ\n"),
        "{}",
        run.stdout
    );
    let run = diff(&a, &of, &["--rename", "payload=data", "--cast", "id=float"]).expect_code(1);
    assert!(
        run.stdout.contains("\"id\": values differ\n"),
        "{}",
        run.stdout
    );
    let run = diff(&a, &of, &rules[2..]).expect_code(1);
    assert!(
        run.stdout.contains("feature \"data\": only in B\n"),
        "{}",
        run.stdout
    );

    // OneFlow's side first: mapped as of2tf maps it.
    let back = work.path().join("back");
    let back_rules = ["--rename", "data=payload", "--cast", "id=int64"];
    ofconvert()
        .arg("of2tf")
        .args([&of, &back])
        .args(back_rules)
        .ok();
    diff(&of, &back, &back_rules).expect_code(0);
    diff(&of, &back, &[]).expect_code(1);
    let run = diff(
        &of,
        &back,
        &["--rename", "data=payload", "--offset", "id=1"],
    )
    .expect_code(1);
    assert!(
        run.stdout.contains("A's record does not map: "),
        "{}",
        run.stdout
    );

    // Rules that contradict each other cannot be compared against.
    let run = diff(&a, &of, &["--rename", "id=x", "--drop", "id"]).expect_code(2);
    assert!(run.stderr.contains("cannot compare: "), "{}", run.stderr);
    assert!(run.stderr.contains("\"id\""), "{}", run.stderr);
}

#[test]
fn a_lossy_conversion_is_the_same_as_its_source_rounded() {
    use ofconvert_bridge::of;
    let work = tempdir();
    let of_dir = work.path().join("of");
    fs::create_dir_all(&of_dir).unwrap();
    let records: Vec<Vec<u8>> = (0..5)
        .map(|i| {
            let mut bytes = Vec::new();
            let record = of::record([("score", of::double_feature([0.1 * f64::from(i + 1)]))]);
            ofconvert_bridge::encode_ofrecord(&record, &mut bytes);
            bytes
        })
        .collect();
    write_ofrecord(&of_dir.join("part-00000"), &records);
    let tf = work.path().join("tf");
    ofconvert()
        .arg("of2tf")
        .args([&of_dir, &tf])
        .arg("--lossy")
        .ok();
    let run = diff(&of_dir, &tf, &[]).expect_code(1);
    assert!(
        run.stdout.contains("A: double_list [0.1]  ("),
        "{}",
        run.stdout
    );
    diff(&of_dir, &tf, &["--lossy"]).expect_code(0);
    diff(&of_dir, &tf, &["--lossy", "--unordered"]).expect_code(0);
}

#[test]
fn an_array_record_side_is_named_as_one() {
    let file = testdata().join("arrayrecord/examples.array_record");
    let run = diff(&file, &file, &[]).ok();
    assert!(
        run.stdout
            .contains(&format!("(array_record {}", file.display())),
        "{}",
        run.stdout
    );
    let report = json(&file, &file, &[]);
    assert_eq!(report["a_kind"], "array_record", "{report}");
}

#[test]
fn a_byte_flipped_deep_in_an_image_is_named_by_its_offset_in_each_record() {
    let work = tempdir();
    let input = testdata().join("datasets/imagenet/train");
    let of = work.path().join("of");
    ofconvert().arg("tf2of").args([&input, &of]).ok();
    let part = of.join("part-00000");
    let mut bytes = fs::read(&part).unwrap();
    let jpeg = bytes
        .windows(3)
        .position(|window| window == b"\xff\xd8\xff")
        .unwrap();
    // Past the bytes a value shows from its start: shown as they are, both sides would read
    // alike.
    bytes[jpeg + 600] ^= 0xff;
    fs::write(&part, &bytes).unwrap();

    let run = diff(&input, &of, &[]).expect_code(1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "differ: dataset train, record #0, feature \"image/encoded\": values differ at byte 600",
        "{}",
        run.stdout
    );
    // The first record of the part, 8 bytes of length before its payload.
    let b_byte = jpeg + 600 - 8;
    assert!(
        lines[2].ends_with(&format!(
            "({}: offset 0 (record #0), byte {b_byte} of the record)",
            part.display()
        )),
        "{}",
        run.stdout
    );
    let shown = |line: &str| line.split("  (").next().unwrap().to_owned();
    assert_ne!(shown(lines[1])[3..], shown(lines[2])[3..], "{}", run.stdout);
    assert!(
        lines[1].contains("bytes_list [value 0 from byte 592: \""),
        "{}",
        run.stdout
    );
    let report = json(&input, &of, &[]);
    assert_eq!(report["difference"]["b_place"]["byte"], b_byte);
    let a_byte = report["difference"]["a_place"]["byte"].as_u64().unwrap() as usize;
    // A's byte in A's own record: the same image byte, unflipped.
    let a_record = &tf_records(&input.join("train-00000-of-00002"))[0];
    assert_eq!(a_record[a_byte], bytes[jpeg + 600] ^ 0xff);
}
