//! Parquet files of serialized records (TFDS's `file_format='parquet'`) read wherever
//! TFRecord files are: told by their magic, counted, verified, printed, compared and
//! converted as the same records in TFRecord files are, TFDS's `.parquet-NNNNN-of-MMMMM`
//! shards as one family. The sample (testdata/tfds) is one builder TFDS prepared as both.
//! A damaged Parquet file is named as one, with its offset; a table of columns is refused by
//! its columns.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::*;

fn tfds(format: &str) -> PathBuf {
    testdata().join("tfds").join(format)
}

fn convert(command: &str, input: &Path, output: &Path, extra: &[&str]) -> Run {
    ofconvert()
        .args([command.as_ref(), input.as_os_str(), output.as_os_str()])
        .args(["-q", "--no-sync"])
        .args(extra)
        .ok()
}

/// Every file under `dir` but ofconvert's manifests: relative path and bytes.
fn files_but_manifests(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|path| !path.ends_with("ofconvert-manifest.json"))
        .map(|path| {
            let bytes = fs::read(dir.join(&path)).unwrap();
            (path, bytes)
        })
        .collect()
}

/// Writes `records` as a Parquet file of TFDS's layout in row groups of `group`.
fn write_parquet(path: &Path, records: &[Vec<u8>], group: usize) {
    let mut writer = ofconvert_parquet::Writer::new(Vec::new(), group).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, writer.finish().unwrap()).unwrap();
}

#[test]
fn a_tfds_parquet_folder_converts_to_its_tfrecord_preparations_parts_and_back_to_its_shards() {
    let work = tempdir();
    let (of_parquet, of_tfrecord) = (work.path().join("of-parquet"), work.path().join("of-tf"));
    convert("tf2of", &tfds("parquet"), &of_parquet, &[]);
    convert("tf2of", &tfds("tfrecord"), &of_tfrecord, &[]);
    // The same datasets, named as TFDS's splits, with the same parts.
    let parts = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        files_but_manifests(dir)
            .into_iter()
            .filter(|(path, _)| path.contains("/part-"))
            .collect()
    };
    let ours = parts(&of_parquet);
    assert_eq!(ours.len(), 4, "{:?}", tree(&of_parquet));
    assert!(
        ours[0].0.starts_with("pets/1.0.0/pets-test/part-"),
        "{}",
        ours[0].0
    );
    assert_eq!(ours, parts(&of_tfrecord));
    let manifest = manifest(&of_parquet.join("pets/1.0.0/pets-train"));
    assert_eq!(
        manifest["inputs"][0]["compression"], "parquet",
        "{manifest}"
    );

    // diff finds the two preparations the same records.
    let run = ofconvert()
        .args([
            "diff".as_ref(),
            tfds("parquet").as_os_str(),
            tfds("tfrecord").as_os_str(),
        ])
        .ok();
    assert!(
        run.stdout
            .contains("same: 33 records in 2 datasets (parquet"),
        "{}",
        run.stdout
    );

    // Back: the very TFRecord shards and metadata TFDS wrote (dataset_info.json saying
    // `tfrecord` now), under TFDS's names.
    let back = work.path().join("back");
    convert("of2tf", &of_parquet, &back, &[]);
    assert_eq!(
        files_but_manifests(&back),
        files_but_manifests(&tfds("tfrecord"))
    );
}

#[test]
fn count_verify_cat_and_schema_read_tfds_parquet_shards_as_their_records() {
    let folder = tfds("parquet").join("pets/1.0.0");
    let counted = count_json(&folder);
    assert_eq!(counted["total"], 33, "{counted}");
    for file in counted["files"].as_array().unwrap() {
        assert_eq!(
            (&file["format"], &file["compression"]),
            (&"tf".into(), &"parquet".into())
        );
    }
    let run = ofconvert()
        .args(["verify".as_ref(), folder.as_os_str()])
        .ok();
    assert!(
        run.stdout.contains("33 good records, 0 problems"),
        "{}",
        run.stdout
    );
    let cat = |folder: &Path, name: &str| {
        ofconvert()
            .args([
                "cat".as_ref(),
                folder.join(name).as_os_str(),
                "--json".as_ref(),
            ])
            .ok()
            .stdout
    };
    let tf_folder = tfds("tfrecord").join("pets/1.0.0");
    for (split, shard) in [("train", "00000"), ("test", "00001")] {
        let printed = cat(&folder, &format!("pets-{split}.parquet-{shard}-of-00002"));
        assert!(!printed.is_empty());
        let name = format!("pets-{split}.tfrecord-{shard}-of-00002");
        assert_eq!(printed, cat(&tf_folder, &name));
    }
    let schema = |folder: &Path| {
        let printed = ofconvert()
            .args(["schema".as_ref(), folder.as_os_str()])
            .ok()
            .stdout;
        printed
            .replace(".parquet", "")
            .replace(".tfrecord", "")
            .replace(&*folder.to_string_lossy(), "")
    };
    assert_eq!(schema(&folder), schema(&tf_folder));
}

#[test]
fn a_damaged_parquet_file_is_named_as_one_with_its_offset() {
    let work = tempdir();
    let records = examples(0, 30, 200);
    let file = work.path().join("in/train.parquet-00000-of-00001");
    write_parquet(&file, &records, 10);
    let whole = fs::read(&file).unwrap();

    // Cut short: no magic at its end.
    fs::write(&file, &whole[..whole.len() - 3]).unwrap();
    let run = ofconvert()
        .args(["count".as_ref(), file.as_os_str()])
        .expect_code(1);
    assert!(
        run.stderr
            .contains("damaged Parquet file: no PAR1 magic at its end"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("TFRecord"), "{}", run.stderr);

    // A page of the second row group damaged: verify names it, and tf2of steps over the row
    // group with --on-corrupt skip, counting its records lost.
    let reader = ofconvert_parquet::Reader::new(whole.clone().into()).unwrap();
    let (start, end) = reader.row_group_range(1);
    let damaged = (start..end)
        .map(|at| {
            let mut damaged = whole.clone();
            damaged[at as usize] ^= 0xff;
            damaged
        })
        .find(|damaged| {
            let reader = ofconvert_parquet::Reader::new(damaged.clone().into()).unwrap();
            reader.row_group(1).is_err() && reader.row_group(2).is_ok()
        })
        .expect("a byte whose damage the decoder finds");
    fs::write(&file, &damaged).unwrap();
    let run = ofconvert()
        .args(["verify".as_ref(), file.as_os_str()])
        .expect_code(1);
    let said = "damaged Parquet page";
    assert!(
        run.stdout.contains(said) || run.stderr.contains(said),
        "{run:?}"
    );
    assert!(
        run.stdout.contains(&format!("offset {start}"))
            || run.stderr.contains(&format!("offset {start}")),
        "{run:?}"
    );
    let out = work.path().join("of");
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            file.parent().unwrap().as_os_str(),
            out.as_os_str(),
        ])
        .args(["-q", "--no-sync", "--on-corrupt", "skip"])
        .ok();
    let converted: Vec<Vec<u8>> = files_starting(&out, "part-")
        .iter()
        .flat_map(|part| of_records(part))
        .collect();
    let expected: Vec<Vec<u8>> = to_of(&[&records[..10], &records[20..]].concat());
    assert_eq!(converted, expected, "{run:?}");
    let manifest = manifest(&out);
    assert_eq!(manifest["skipped"]["corrupt"], 10, "{manifest}");
    let detail = manifest["skipped"]["details"][0].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "offset {start} (record #10): damaged Parquet page"
        )),
        "{detail}"
    );
    assert!(detail.contains("10 records lost"), "{detail}");
}

#[test]
fn a_parquet_table_of_columns_is_refused_by_its_columns() {
    let work = tempdir();
    let file = work.path().join("table.parquet");
    write_parquet(&file, &[b"a".to_vec()], 10);
    let mut bytes = fs::read(&file).unwrap();
    while let Some(at) = bytes.windows(4).position(|w| w == b"data") {
        bytes[at..at + 4].copy_from_slice(b"text");
    }
    fs::write(&file, bytes).unwrap();
    let run = ofconvert()
        .args(["count".as_ref(), file.as_os_str()])
        .expect_code(1);
    assert!(
        run.stderr
            .contains("a Parquet file of columns text, not of serialized records"),
        "{}",
        run.stderr
    );
}

#[test]
fn verify_and_count_name_a_tfds_shard_short_of_its_stated_length_in_any_format() {
    // TFDS's own Parquet writer left this shard at 200 rows; dataset_info.json says 300.
    let short = tfds("parquet-short").join("long/1.0.0");
    let shard = short.join("long-train.parquet-00000-of-00001");
    let said = format!(
        "{}: 200 records where dataset_info.json's shardLengths says 300",
        shard.display()
    );
    let run = ofconvert()
        .args(["verify".as_ref(), short.as_os_str()])
        .expect_code(1);
    assert!(run.stdout.contains(&said), "{}", run.stdout);
    let run = ofconvert()
        .args(["count".as_ref(), short.as_os_str()])
        .expect_code(1);
    assert!(run.stderr.contains(&said), "{}", run.stderr);

    // A TFRecord folder whose dataset_info.json says one shard holds one more record than it
    // does: that shard alone is named, and the folder as TFDS wrote it is sound.
    let work = tempdir();
    let folder = work.path().join("pets");
    copy_tree(&tfds("tfrecord").join("pets/1.0.0"), &folder);
    ofconvert()
        .args(["verify".as_ref(), folder.as_os_str()])
        .ok();
    let info = folder.join("dataset_info.json");
    let text = fs::read_to_string(&info).unwrap();
    fs::write(&info, text.replacen("\"5\"", "\"6\"", 1)).unwrap();
    let run = ofconvert()
        .args(["verify".as_ref(), folder.as_os_str()])
        .expect_code(1);
    let named: Vec<&str> = run
        .stdout
        .lines()
        .filter(|line| line.contains("shardLengths"))
        .collect();
    assert_eq!(named.len(), 1, "{}", run.stdout);
    assert!(
        named[0].contains("pets-test.tfrecord-00001-of-00002: 5 records where dataset_info.json's shardLengths says 6"),
        "{}",
        run.stdout
    );
}
