//! ArrayRecord files read wherever TFRecord files are: detected by their signature, counted,
//! verified, printed and converted by tf2of exactly as the same records in a TFRecord file
//! are, TFDS's `.array_record-NNNNN-of-MMMMM` shards as one family, and Google's own
//! writer's files (testdata/arrayrecord) counted as it wrote them.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::*;

/// Writes `records` as an ArrayRecord file with `array_record`'s defaults (zstd, a record a
/// chunk) or `group` records a chunk.
fn write_array_record(path: &Path, records: &[Vec<u8>], group: u32) {
    let options = ofconvert_arrayrecord::WriterOptions {
        group_size: std::num::NonZeroU32::new(group).unwrap(),
        ..Default::default()
    };
    let mut writer =
        ofconvert_arrayrecord::Writer::with_options(File::create(path).unwrap(), options);
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap();
}

/// `ofconvert COMMAND INPUT OUTPUT -q --no-sync EXTRA...`, which must succeed.
fn convert(command: &str, input: &Path, output: &Path, extra: &[&str]) {
    ofconvert()
        .args([command.as_ref(), input.as_os_str(), output.as_os_str()])
        .args(["-q", "--no-sync"])
        .args(extra)
        .ok();
}

/// 300 Examples in `WORK/tf/train.tfrecord`, converted by tf2of into `WORK/of`: the records,
/// and those two directories.
fn tf_and_of(work: &Path) -> (Vec<Vec<u8>>, PathBuf, PathBuf) {
    let records = examples(0, 300, 500);
    let (tf, of) = (work.join("tf"), work.join("of"));
    fs::create_dir_all(&tf).unwrap();
    write_tfrecord(&tf.join("train.tfrecord"), &records);
    convert("tf2of", &tf, &of, &[]);
    (records, tf, of)
}

#[test]
fn tf2of_count_verify_and_cat_read_an_array_record_as_its_records_in_a_tfrecord() {
    let work = tempdir();
    let records = examples(0, 300, 500);
    let (tf, array) = (work.path().join("tf"), work.path().join("array"));
    fs::create_dir_all(&tf).unwrap();
    fs::create_dir_all(&array).unwrap();
    write_tfrecord(&tf.join("train.tfrecord"), &records);
    // A name that says nothing: the signature tells.
    let file = array.join("train.data");
    write_array_record(&file, &records, 16);

    let counted = count_json(&file);
    assert_eq!(counted["total"], 300, "{counted}");
    assert_eq!(counted["files"][0]["compression"], "array_record");
    assert_eq!(counted["files"][0]["format"], "tf");
    let run = ofconvert().args(["verify".as_ref(), file.as_os_str()]).ok();
    assert!(
        run.stdout.contains("300 good records, 0 problems"),
        "{}",
        run.stdout
    );
    let cat = |path: &Path| {
        ofconvert()
            .args(["cat".as_ref(), path.as_os_str(), "--json".as_ref()])
            .ok()
            .stdout
    };
    assert_eq!(cat(&file), cat(&tf.join("train.tfrecord")));

    // tf2of writes the same parts from either file.
    for (input, output) in [(&tf, "of-tf"), (&array, "of-array")] {
        convert("tf2of", input, &work.path().join(output), &[]);
    }
    let parts = |dir: &str| files_starting(&work.path().join(dir), "part-");
    assert!(!parts("of-tf").is_empty());
    assert_eq!(parts("of-tf").len(), parts("of-array").len());
    for (a, b) in parts("of-tf").iter().zip(parts("of-array")) {
        assert_eq!(
            fs::read(a).unwrap(),
            fs::read(&b).unwrap(),
            "{}",
            b.display()
        );
    }
    // The manifests say how each input stores its records, as `count` does: TensorFlow's
    // TFRecord reader cannot read an ArrayRecord file with any `compression_type`.
    let input_compression = |dir: &str| {
        let text = fs::read_to_string(work.path().join(dir).join("ofconvert-manifest.json"));
        let manifest: Value = serde_json::from_str(&text.unwrap()).unwrap();
        manifest["inputs"][0]["compression"].clone()
    };
    assert_eq!(input_compression("of-tf"), "none");
    assert_eq!(input_compression("of-array"), "array_record");

    // Its footer indexes it: no index file to write.
    let run = ofconvert()
        .args(["index".as_ref(), file.as_os_str()])
        .expect_code(1);
    assert!(
        run.stderr.contains("its footer indexes its records"),
        "{}",
        run.stderr
    );
}

#[test]
fn googles_file_of_tensorflows_examples_converts_as_the_tfrecord_file_does() {
    let work = tempdir();
    let array = copy_into(
        &testdata().join("arrayrecord/examples.array_record"),
        &work.path().join("array"),
    );
    let tf = copy_into(
        &testdata().join("golden/tutorial.tfrecord"),
        &work.path().join("tf"),
    );
    assert_eq!(count_json(&array)["total"], 500);
    // schema, and the code it prints for OneFlow, as for the TFRecord file.
    for extra in [&[][..], &["--oneflow"][..]] {
        let schema = |path: &Path| {
            ofconvert()
                .args(["schema".as_ref(), path.as_os_str()])
                .args(extra)
                .ok()
                .stdout
        };
        let (ours, theirs) = (schema(&array), schema(&tf));
        assert!(ours.contains("feature3"), "{ours}");
        assert_eq!(
            ours.replace(array.to_str().unwrap(), "FILE"),
            theirs.replace(tf.to_str().unwrap(), "FILE")
        );
    }
    for extra in [&[][..], &["--unordered"][..]] {
        ofconvert()
            .args(["diff".as_ref(), array.as_os_str(), tf.as_os_str()])
            .args(extra)
            .ok();
    }
    let mut other = tf_records(&tf);
    other[17] = example(17, 3);
    let changed = work.path().join("changed/tutorial.tfrecord");
    fs::create_dir_all(changed.parent().unwrap()).unwrap();
    write_tfrecord(&changed, &other);
    let run = ofconvert()
        .args(["diff".as_ref(), array.as_os_str(), changed.as_os_str()])
        .expect_code(1);
    assert!(run.stdout.contains("#17"), "{}", run.stdout);
    for (input, output) in [(&array, "of-array"), (&tf, "of-tf")] {
        convert("tf2of", input, &work.path().join(output), &[]);
    }
    let parts = |dir: &str| files_starting(&work.path().join(dir), "part-");
    assert_eq!(parts("of-array").len(), parts("of-tf").len());
    let records = |dir: &str| -> Vec<Vec<u8>> {
        parts(dir)
            .iter()
            .flat_map(|part| of_records(part))
            .collect()
    };
    let converted = records("of-array");
    assert_eq!(converted.len(), 500);
    assert!(converted == records("of-tf"));
    assert!(to_tf(&converted) == tf_records(&tf));
}

/// Flips a byte inside the data of each of the chunks `chunks` of the ArrayRecord file
/// `file` (where its footer says they are); their offsets.
fn damage_chunks(file: &Path, chunks: &[usize]) -> Vec<u64> {
    let mut bytes = fs::read(file).unwrap();
    let by_footer = ofconvert_arrayrecord::IndexedReader::open(bytes.as_slice()).unwrap();
    let offsets: Vec<u64> = chunks.iter().map(|&c| by_footer.chunk(c).1).collect();
    for &offset in &offsets {
        let inside = offset as usize + 40 + 5;
        assert!(inside % 65536 > 64, "not in a block header");
        bytes[inside] ^= 0x40;
    }
    fs::write(file, &bytes).unwrap();
    offsets
}

#[test]
fn damage_in_an_array_record_is_named_with_its_offset() {
    let work = tempdir();
    let file = work.path().join("train.array_record");
    write_array_record(&file, &examples(0, 200, 1000), 1);
    damage_chunks(&file, &[50, 150]);
    let run = ofconvert()
        .args(["verify".as_ref(), file.as_os_str()])
        .expect_code(1);
    // Each damaged chunk named by its offset and record; every other record read (past the
    // first damage, through the footer, as `tf2of --on-corrupt skip` reads on) and counted
    // good.
    let named: Vec<&str> = run
        .stdout
        .lines()
        .filter(|line| line.contains("hash mismatch"))
        .collect();
    assert_eq!(named.len(), 2, "{}", run.stdout);
    for line in &named {
        assert!(
            line.contains(&format!("{}: offset ", file.display())),
            "{}",
            run.stdout
        );
    }
    // Reading resumes at the chunk after each, the damaged chunk's own bytes skipped.
    for line in &named {
        let offset = line
            .split("offset ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap();
        assert!(
            line.contains(&format!("(bytes {offset}..")),
            "{}",
            run.stdout
        );
    }
    assert!(
        run.stdout.contains("2 problems, 198 good records"),
        "{}",
        run.stdout
    );
    let run = ofconvert()
        .args(["count".as_ref(), file.as_os_str()])
        .expect_code(1);
    assert!(run.stderr.contains("hash mismatch"), "{}", run.stderr);

    // The postscript damaged too: nothing after the first damage can be found, and the
    // problem says so.
    let mut bytes = fs::read(&file).unwrap();
    let postscript = bytes.len() - 65536 + 24 + 40 + 4;
    bytes[postscript] ^= 1;
    fs::write(&file, bytes).unwrap();
    let run = ofconvert()
        .args(["verify".as_ref(), file.as_os_str()])
        .expect_code(1);
    assert!(
        run.stdout.contains("1 problem, 50 good records")
            && run
                .stdout
                .contains("its footer, which says where the chunks"),
        "{}",
        run.stdout
    );
}

#[test]
fn on_corrupt_skip_converts_every_chunk_after_a_damaged_one() {
    // A record a chunk (TFDS's way), and four a chunk: a damaged chunk loses its records.
    for (group, damaged) in [(1, vec![50, 150]), (4, vec![12, 37])] {
        let work = tempdir();
        let file = work.path().join("in/train.array_record");
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        let mut records = examples(0, 200, 1000);
        write_array_record(&file, &records, group);
        let offsets = damage_chunks(&file, &damaged);
        let out = work.path().join("out");
        convert(
            "tf2of",
            &file.with_file_name(""),
            &out,
            &["--on-corrupt", "skip"],
        );
        for &chunk in damaged.iter().rev() {
            let first = chunk * group as usize;
            records.drain(first..first + group as usize);
        }
        let converted: Vec<Vec<u8>> = files_starting(&out, "part-")
            .iter()
            .flat_map(|part| of_records(part))
            .collect();
        assert_eq!(converted.len(), records.len(), "{group} a chunk");
        assert!(
            converted == to_of(&records),
            "{group} a chunk: other records"
        );
        let manifest = manifest(&out);
        assert_eq!(manifest["records"], records.len() as u64);
        // Each damaged chunk costs the records its footer lists for it, counted exactly.
        assert_eq!(
            manifest["skipped"]["corrupt"],
            damaged.len() as u64 * u64::from(group)
        );
        for (detail, offset) in manifest["skipped"]["details"]
            .as_array()
            .unwrap()
            .iter()
            .zip(&offsets)
        {
            let detail = detail.as_str().unwrap();
            assert!(detail.contains(&format!("offset {offset}")), "{detail}");
            assert!(detail.contains("reading resumed at offset"), "{detail}");
        }
    }
}

#[test]
fn tfds_array_record_shards_convert_and_come_back_as_tfrecord_shards() {
    let work = tempdir();
    let original = testdata().join("datasets/tfds/mnist/3.0.1");
    let prepared = work.path().join("tfds/mnist/3.0.1");
    fs::create_dir_all(&prepared).unwrap();
    let mut shards = 0;
    for entry in fs::read_dir(&original).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains(".tfrecord-") {
            let renamed = name.replace(".tfrecord-", ".array_record-");
            write_array_record(&prepared.join(renamed), &tf_records(&path), 1);
            shards += 1;
        } else if name == "dataset_info.json" {
            let text = fs::read_to_string(&path).unwrap();
            let text = text.replace(
                "\"fileFormat\": \"tfrecord\"",
                "\"fileFormat\": \"array_record\"",
            );
            assert!(text.contains("array_record"));
            fs::write(prepared.join(name), text).unwrap();
        } else {
            fs::copy(&path, prepared.join(name)).unwrap();
        }
    }
    assert_eq!(shards, 3);

    let (of, back, of_original) = (
        work.path().join("of"),
        work.path().join("back"),
        work.path().join("of-original"),
    );
    for (input, output) in [(prepared.clone(), &of), (original.clone(), &of_original)] {
        convert("tf2of", &input, output, &[]);
    }
    // The same datasets (a split each), the same parts.
    let parts = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut found: Vec<(String, Vec<u8>)> = tree(dir)
            .into_iter()
            .filter(|name| {
                name.rsplit('/')
                    .next()
                    .is_some_and(|base| base.starts_with("part-"))
            })
            .map(|name| {
                let bytes = fs::read(dir.join(&name)).unwrap();
                (name, bytes)
            })
            .collect();
        found.sort();
        found
    };
    let (converted, expected) = (parts(&of), parts(&of_original));
    let names = |parts: &[(String, Vec<u8>)]| -> Vec<String> {
        parts.iter().map(|(name, _)| name.clone()).collect()
    };
    assert_eq!(names(&converted), names(&expected));
    assert_eq!(converted.len(), 3, "{:?}", tree(&of));
    for ((name, converted), (_, expected)) in converted.iter().zip(&expected) {
        assert!(converted == expected, "{name} differs");
    }

    convert("of2tf", &of, &back, &[]);
    let info: Value =
        serde_json::from_str(&fs::read_to_string(back.join("dataset_info.json")).unwrap()).unwrap();
    assert_eq!(info["fileFormat"], "tfrecord");
    // Written back as ArrayRecord: TFDS's names, and its dataset_info.json says so.
    let written = work.path().join("written");
    convert("of2tf", &of, &written, &["--to", "array_record"]);
    let info: Value =
        serde_json::from_str(&fs::read_to_string(written.join("dataset_info.json")).unwrap())
            .unwrap();
    assert_eq!(info["fileFormat"], "array_record");
    let shard_names = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = tree(dir)
            .into_iter()
            .filter(|name| name.contains("-of-"))
            .collect();
        names.sort();
        names
    };
    assert_eq!(shard_names(&written), shard_names(&prepared));
    for split in ["train", "test"] {
        let records = |dir: &Path, infix: &str| -> Vec<Vec<u8>> {
            files_starting(dir, &format!("mnist-{split}.{infix}-"))
                .iter()
                .flat_map(|file| tf_records(file))
                .collect()
        };
        let original_records = records(&original, "tfrecord");
        assert!(!original_records.is_empty());
        assert!(
            records(&back, "tfrecord") == original_records,
            "{split}: {:?}",
            tree(&back)
        );
    }
}

#[test]
fn googles_own_files_count_as_it_wrote_them() {
    let dir = testdata().join("arrayrecord");
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let (mut counted, mut transposed) = (0, 0);
    for case in manifest.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let file = dir.join(format!("{name}.array_record"));
        let json = count_json(&file);
        assert_eq!(json["total"], case["records"], "{name}: {json}");
        counted += 1;
        transposed += usize::from(case["options"].as_str().unwrap().contains("transpose:true"));
    }
    assert!(counted >= 15 && transposed >= 6, "{counted} {transposed}");
}

#[test]
fn of2tf_to_array_record_writes_the_records_tf2of_read() {
    let work = tempdir();
    let (records, tf, of) = tf_and_of(work.path());
    let (array, again) = (work.path().join("array"), work.path().join("again"));
    convert("of2tf", &of, &array, &["--to", "array_record"]);
    let written: Vec<_> = tree(&array)
        .into_iter()
        .filter(|name| name.ends_with(".array_record"))
        .collect();
    assert_eq!(written.len(), 1, "{:?}", tree(&array));
    let file = array.join(&written[0]);
    let mut reader = ofconvert_arrayrecord::Reader::new(File::open(&file).unwrap());
    let mut read = Vec::new();
    let mut record = Vec::new();
    while reader.read_record(&mut record).unwrap() {
        read.push(record.clone());
    }
    assert!(read == records, "{} records read back", read.len());
    assert_eq!(count_json(&file)["files"][0]["compression"], "array_record");
    assert_eq!(manifest(&array)["settings"]["to"], "array_record");
    ofconvert()
        .args(["diff".as_ref(), tf.as_os_str(), array.as_os_str()])
        .ok();
    // And back to OneFlow: the same parts.
    convert("tf2of", &array, &again, &[]);
    let parts = |dir: &Path| files_starting(dir, "part-");
    assert_eq!(parts(&of).len(), parts(&again).len());
    for (a, b) in parts(&of).iter().zip(parts(&again)) {
        assert!(
            fs::read(a).unwrap() == fs::read(&b).unwrap(),
            "{}",
            b.display()
        );
    }

    // ArrayRecord files are compressed chunk by chunk, and only of2tf writes them.
    let run = ofconvert()
        .args([
            "of2tf".as_ref(),
            of.as_os_str(),
            work.path().join("gz").as_os_str(),
        ])
        .args(["--to", "array_record", "--compression", "gzip"])
        .expect_code(2);
    assert!(
        run.stderr
            .contains("--compression applies to TFRecord files"),
        "{}",
        run.stderr
    );
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            tf.as_os_str(),
            work.path().join("x").as_os_str(),
        ])
        .args(["--to", "array_record"])
        .expect_code(2);
    assert!(!run.stderr.is_empty());
}

#[test]
fn of2tf_groups_and_compresses_array_records_as_the_options_say() {
    let work = tempdir();
    let (records, _, of) = tf_and_of(work.path());
    let written = |out: &Path| {
        let name = tree(out)
            .into_iter()
            .find(|name| name.ends_with(".array_record"))
            .unwrap();
        fs::read(out.join(name)).unwrap()
    };
    let default = work.path().join("default");
    convert("of2tf", &of, &default, &["--to", "array_record"]);
    let grouped = work.path().join("grouped");
    let options = [
        "--to",
        "array_record",
        "--array-record-options",
        "group_size:64,brotli:9",
    ];
    convert("of2tf", &of, &grouped, &options);

    let bytes = written(&grouped);
    let by_footer = ofconvert_arrayrecord::IndexedReader::open(bytes.as_slice()).unwrap();
    // 300 records in chunks of 64; the footer says the options as array_record spells them.
    assert_eq!((by_footer.num_records(), by_footer.num_chunks()), (300, 5));
    let said = &by_footer.metadata().writer_options;
    assert!(
        said.starts_with("group_size:64,") && said.contains(",brotli:9,"),
        "{said}"
    );
    let read: Vec<Vec<u8>> = ofconvert_arrayrecord::Reader::new(bytes.as_slice())
        .records()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(read == records);
    // Records compressed together take less room than one a chunk.
    assert!(bytes.len() < written(&default).len(), "{}", bytes.len());
    assert_eq!(
        manifest(&grouped)["settings"]["array_record_options"],
        by_footer.metadata().writer_options.as_str()
    );
    assert!(manifest(&default)["settings"]
        .get("array_record_options")
        .is_none());

    // Options it cannot honour, or for files that are not ArrayRecord, are usage errors.
    for (extra, says) in [
        (
            &[
                "--to",
                "array_record",
                "--array-record-options",
                "transpose:true",
            ][..],
            "--array-record-options transpose:true: transpose:true: transposed chunks are read",
        ),
        (
            &["--array-record-options", "group_size:8"][..],
            "--array-record-options applies to ArrayRecord files (--to array_record)",
        ),
    ] {
        let run = ofconvert()
            .args([
                "of2tf".as_ref(),
                of.as_os_str(),
                work.path().join("refused").as_os_str(),
            ])
            .args(extra)
            .expect_code(2);
        assert!(run.stderr.contains(says), "{}", run.stderr);
    }
}
