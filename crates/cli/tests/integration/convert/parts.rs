//! Parts and shards: how records are cut, named and ordered, large and small.

use super::*;

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
    // labels.txt goes with each of the folder's families.
    assert_eq!(
        tree(&out),
        [
            "data/labels.txt",
            "data/ofconvert-manifest.json",
            "data/part-00000",
            "data/part-00001",
            "eval/labels.txt",
            "eval/ofconvert-manifest.json",
            "eval/part-00000",
            "train/labels.txt",
            "train/ofconvert-manifest.json",
            "train/part-00000",
            "train/part-00001",
        ]
    );
    for family in ["data", "eval", "train"] {
        assert_eq!(
            fs::read_to_string(out.join(family).join("labels.txt")).unwrap(),
            "cat\ndog\n"
        );
        assert_eq!(manifest(&out.join(family))["subfolder"], family);
    }
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
    assert!(!run.stdout.contains("Skipped"), "{}", run.stdout);
    assert!(
        run.stdout.contains("Carried 3 side files"),
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
    // One part, one file, under the name it had.
    assert_eq!(tree(&tf), ["mixed.tfrecord", "ofconvert-manifest.json"]);
    assert_eq!(fs::read(tf.join("mixed.tfrecord")).unwrap(), framed_tf);
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
