//! The wrong direction, the wrong part names

use super::*;

#[test]
fn the_wrong_direction_says_which_command_to_use() {
    let work = tempdir();
    let run = ofconvert()
        .arg("of2tf")
        .arg(testdata().join("datasets"))
        .arg(work.path().join("a"))
        .expect_code(1);
    assert!(
        run.stderr.contains("these are TFRecord files")
            || run.stderr.contains("holds TFRecord files"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("use tf2of"), "{}", run.stderr);

    let run = ofconvert()
        .arg("tf2of")
        .arg(testdata().join("ofrecord"))
        .arg(work.path().join("b"))
        .expect_code(1);
    assert!(
        run.stderr.contains("holds OFRecord files"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("use of2tf"), "{}", run.stderr);
}

#[test]
fn oneflow_parts_with_another_prefix_suggest_part_prefix() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    for part in 0..2 {
        write_ofrecord(
            &input.join(format!("train-{part:05}")),
            &to_of(&examples(part, 3, 10)),
        );
    }
    let run = ofconvert()
        .arg("of2tf")
        .arg(&input)
        .arg(work.path().join("out"))
        .expect_code(1);
    assert!(
        run.stderr.contains("--part-prefix train-"),
        "{}",
        run.stderr
    );
    ofconvert()
        .arg("of2tf")
        .arg(&input)
        .arg(work.path().join("out"))
        .args(["--part-prefix", "train-"])
        .ok();
}

#[test]
fn tf2of_takes_several_inputs_as_a_shell_glob_gives_them() {
    let work = tempdir();
    let input = sample_tree(work.path(), "in");
    let train = input.join("imagenet/train");
    // `tf2of in/imagenet/train/train-* OUT`: the named shards, as their directory would be.
    let shards = [
        train.join("train-00000-of-00002"),
        train.join("train-00001-of-00002"),
    ];
    let output = work.path().join("files");
    ofconvert().arg("tf2of").args(&shards).arg(&output).ok();
    assert_eq!(
        tree(&output),
        ["ofconvert-manifest.json", "part-00000", "part-00001"]
    );
    for (index, shard) in shards.iter().enumerate() {
        assert_eq!(
            of_records(&output.join(format!("part-{index:05}"))),
            to_of(&tf_records(shard))
        );
    }

    // `tf2of in/bert in/tutorial OUT`: each directory under its own name.
    let output = work.path().join("dirs");
    ofconvert()
        .arg("tf2of")
        .arg(input.join("bert"))
        .arg(input.join("tutorial"))
        .arg(&output)
        .ok();
    assert_eq!(
        tree(&output),
        [
            "bert/ofconvert-manifest.json",
            "bert/part-00000",
            "tutorial/ofconvert-manifest.json",
            "tutorial/part-00000"
        ]
    );
}
