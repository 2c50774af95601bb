//! Unreadable, vanishing, looping, oddly named, numerous, empty and huge inputs

use super::*;

fn unreadable(path: &Path) {
    fs::set_permissions(path, fs::Permissions::from_mode(0o000)).unwrap();
}

#[test]
fn unreadable_inputs_fail_loudly_and_the_rest_converts() {
    let sandbox = Sandbox::new();
    let input = sandbox.path().join("in");
    tf_tree(&input, &["a", "b", "c", "d"], 1, 5, 100);
    // A record file by name, a directory, and a file that only its content could show to
    // be a record file: none can be read.
    let record_file = input.join("b/b-00000-of-00001");
    unreadable(&record_file);
    let directory = input.join("c");
    let by_content = input.join("d/data");
    fs::rename(input.join("d/d-00000-of-00001"), &by_content).unwrap();
    unreadable(&by_content);
    unreadable(&directory);
    let denied = "Permission denied (os error 13)";

    let output = sandbox.open_dir("w").join("out");
    let run = sandbox
        .run_as_nobody(args([os("tf2of"), input.as_os_str(), output.as_os_str()]))
        .expect_code(1);
    let line = format!("  b: {}: I/O error: {denied}", record_file.display());
    assert!(run.stderr.contains(&line), "{line}\n{}", run.stderr);
    for path in [&directory, &by_content] {
        let line = format!("  {}: cannot read: {denied}", path.display());
        assert!(run.stderr.contains(&line), "{line}\n{}", run.stderr);
    }
    assert_eq!(
        tree(&output),
        ["a/ofconvert-manifest.json", "a/part-00000"],
        "{}",
        run.stderr
    );

    for command in ["count", "verify"] {
        let run = sandbox
            .run_as_nobody(args([os(command), input.as_os_str()]))
            .expect_code(1);
        let all = format!("{}{}", run.stdout, run.stderr);
        for path in [&record_file, &directory, &by_content] {
            let line = format!("{}: I/O error: {denied}", path.display());
            assert!(all.contains(&line), "{command}: {line}\n{all}");
        }
    }

    // OneFlow datasets: an unreadable part fails its dataset, an unreadable directory the
    // run.
    let of_input = sandbox.path().join("of");
    of_tree(&of_input, &["a", "b", "c"], 2, 5, 100);
    let part = of_input.join("b/part-1");
    unreadable(&part);
    unreadable(&of_input.join("c"));
    let output = sandbox.open_dir("w2").join("out");
    let run = sandbox
        .run_as_nobody(args([
            os("of2tf"),
            of_input.as_os_str(),
            output.as_os_str(),
        ]))
        .expect_code(1);
    let line = format!("  b: {}: I/O error: {denied}", part.display());
    assert!(run.stderr.contains(&line), "{line}\n{}", run.stderr);
    let line = format!("  {}: cannot read: {denied}", of_input.join("c").display());
    assert!(run.stderr.contains(&line), "{line}\n{}", run.stderr);
    assert_eq!(
        tree(&output),
        [
            "a/a-00000-of-00002.tfrecord",
            "a/a-00001-of-00002.tfrecord",
            "a/ofconvert-manifest.json"
        ]
    );
}

#[test]
fn a_dataset_directory_removed_during_the_run_fails_that_dataset_only() {
    use ofconvert_engine::{convert, plan, DatasetStatus, Direction, Event, Options};
    use std::sync::Once;

    let work = tempdir();
    let input = work.path().join("in");
    tf_tree(&input, &["a", "b", "c"], 1, 20, 1_000);
    let output = work.path().join("out");
    let mut options = Options::new(Direction::TfToOf);
    // One worker takes the datasets in order: c is still to come when a is read.
    options.jobs = 1;
    let planned = plan(&input, &output, &options).unwrap();
    let removed = Once::new();
    let vanishing = input.join("c");
    let progress = |event: Event| {
        if matches!(event, Event::Progress { .. }) {
            removed.call_once(|| fs::remove_dir_all(&vanishing).unwrap());
        }
    };
    let summary = convert(planned, &options, &progress).unwrap();
    assert!(removed.is_completed());

    let statuses: Vec<(&str, DatasetStatus)> = summary
        .datasets
        .iter()
        .map(|dataset| (dataset.name.as_str(), dataset.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("a", DatasetStatus::Converted),
            ("b", DatasetStatus::Converted),
            ("c", DatasetStatus::Failed)
        ]
    );
    let error = summary.datasets[2].error.as_deref().unwrap();
    let expected = format!(
        "{}: I/O error: No such file or directory (os error 2)",
        vanishing.join("c-00000-of-00001").display()
    );
    assert_eq!(error, expected);
    assert!(!output.join("c").exists(), "{:?}", tree(&output));
    assert_eq!(temporaries(&output), Vec::<PathBuf>::new());
}

/// Best effort, as nothing tells from outside where the walk is: a directory is removed at
/// a few moments while the walk lists thousands of files before it. Whatever the moment,
/// the run either never saw the directory or names what vanished, and exits 1.
#[test]
fn a_directory_removed_while_the_walk_runs_is_never_half_converted() {
    let work = Scratch::new();
    let input = work.path().join("in");
    // Files with names that say nothing: the walk opens every one to look at it (and, left
    // out with --no-side-files, copies none of them).
    let slow = input.join("a-slow");
    fs::create_dir_all(&slow).unwrap();
    for i in 0..20_000 {
        File::create(slow.join(format!("note-{i:05}"))).unwrap();
    }
    tf_tree(&input, &["b"], 1, 5, 100);
    let vanishing = input.join("z");
    for (attempt, delay) in [0u64, 2, 5, 10, 20, 40].into_iter().enumerate() {
        tf_tree(&input, &["z"], 3, 5, 100);
        let output = work.path().join(format!("out-{attempt}"));
        let child = ofconvert()
            .args([os("tf2of"), input.as_os_str(), output.as_os_str()])
            .arg("--no-side-files")
            .spawn_piped();
        sleep(Duration::from_millis(delay));
        fs::remove_dir_all(&vanishing).unwrap();
        let Output {
            status,
            stdout,
            stderr,
        } = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&stderr);
        let run = sane(Run {
            code: status.code().expect("exited"),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: stderr.clone().into_owned(),
        });
        assert_eq!(temporaries(&output), Vec::<PathBuf>::new());
        assert!(output.join("b/ofconvert-manifest.json").is_file());
        assert!(!output.join("z").join(MANIFEST).exists(), "{attempt}");
        assert!(files_under(&output.join("z")).is_empty(), "{attempt}");
        let named = format!("{}", vanishing.display());
        match run.code {
            0 => assert!(!stderr.contains(&named), "{stderr}"),
            1 => assert!(
                stderr.contains(&named)
                    && stderr.contains("No such file or directory (os error 2)"),
                "{stderr}"
            ),
            code => panic!("exit {code}: {stderr}"),
        }
    }
}

#[test]
fn symbolic_link_loops_and_dangling_links_are_listed_and_skipped() {
    use std::os::unix::fs::symlink;

    let work = tempdir();
    let input = work.path().join("in");
    tf_tree(&input, &["a"], 1, 5, 100);
    symlink("..", input.join("a/up")).unwrap();
    symlink("itself", input.join("a/itself")).unwrap();
    symlink("nowhere", input.join("a/dangling")).unwrap();
    let output = work.path().join("out");
    let run = invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).ok();
    for (link, reason) in [
        ("up", format!("symbolic link loop to {}", input.display())),
        ("itself", "broken symbolic link: ".to_owned()),
        ("dangling", "broken symbolic link: ".to_owned()),
    ] {
        let line = format!("  {}: {reason}", input.join("a").join(link).display());
        assert!(run.stdout.contains(&line), "{line}\n{}", run.stdout);
    }
    assert_eq!(tree(&output), ["a/ofconvert-manifest.json", "a/part-00000"]);

    let run = invoke(args([os("count"), input.as_os_str()])).ok();
    assert!(run.stdout.starts_with("      5  "), "{}", run.stdout);
    assert!(
        run.stderr.contains("symbolic link loop to"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_named_pipe_in_the_tree_is_listed_as_skipped_and_never_opened() {
    let work = tempdir();
    let input = work.path().join("in");
    tf_tree(&input, &["a"], 1, 5, 100);
    fs::create_dir_all(input.join("b")).unwrap();
    let pipe = input.join("b/part-0.tfrecord");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(made.success());
    // Opened, it would block the run for ever: nothing writes into it.
    let output = work.path().join("out");
    let run = invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).ok();
    let line = format!("  {}: not a regular file (a named pipe)", pipe.display());
    assert!(run.stdout.contains(&line), "{line}\n{}", run.stdout);
    assert_eq!(tree(&output), ["a/ofconvert-manifest.json", "a/part-00000"]);
    let run = invoke(args([os("count"), input.as_os_str()])).ok();
    assert!(run.stdout.starts_with("      5  "), "{}", run.stdout);
    assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);
}

#[test]
fn file_names_that_are_not_utf8_convert_both_ways() {
    let work = tempdir();
    let input = work.path().join("in");
    let dir = input.join(OsStr::from_bytes(b"d\xffir"));
    fs::create_dir_all(&dir).unwrap();
    // One record file by name, one by content alone.
    let by_name = dir.join(OsStr::from_bytes(b"r\xfe.tfrecord"));
    let by_content = dir.join(OsStr::from_bytes(b"\xfa"));
    let (first, second) = (examples(0, 3, 50), examples(3, 2, 50));
    write_tfrecord(&by_name, &first);
    write_tfrecord(&by_content, &second);

    let output = work.path().join("of");
    invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).ok();
    let dataset = output.join(OsStr::from_bytes(b"d\xffir"));
    let expected = to_of(&[first.clone(), second.clone()].concat());
    assert_eq!(of_dataset(&dataset), expected);
    let manifest = manifest(&dataset);
    let inputs: Vec<&str> = manifest["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|input| input["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        inputs,
        ["d\u{fffd}ir/r\u{fffd}.tfrecord", "d\u{fffd}ir/\u{fffd}"]
    );
    let run_again = invoke(args([
        os("tf2of"),
        input.as_os_str(),
        output.as_os_str(),
        os("--resume"),
    ]))
    .ok();
    assert!(run_again.stdout.contains("(kept)"), "{}", run_again.stdout);

    let back = work.path().join("tf");
    invoke(args([os("of2tf"), output.as_os_str(), back.as_os_str()])).ok();
    let shards = files_starting(&back.join(OsStr::from_bytes(b"d\xffir")), "d");
    assert_eq!(shards.len(), 2, "{shards:?}");
    let records: Vec<Vec<u8>> = shards.iter().flat_map(|shard| tf_records(shard)).collect();
    assert_eq!(records, to_tf(&expected));

    let counted = invoke(args([
        os("count"),
        by_name.as_os_str(),
        by_content.as_os_str(),
    ]))
    .ok();
    assert!(
        counted.stdout.ends_with("      5  total\n"),
        "{}",
        counted.stdout
    );
}

#[test]
fn names_with_spaces_and_newlines_convert_both_ways() {
    let work = tempdir();
    let input = work.path().join("in");
    let plain = input.join("my data");
    let shards = input.join("new\nline set");
    fs::create_dir_all(&plain).unwrap();
    fs::create_dir_all(&shards).unwrap();
    let (first, second) = (examples(0, 3, 50), examples(3, 2, 50));
    let file = plain.join("a b\nc.tfrecord");
    write_tfrecord(&file, &first);
    write_tfrecord(&shards.join("x y-00000-of-00001"), &second);

    let output = work.path().join("of");
    let run_json = invoke(args([
        os("tf2of"),
        input.as_os_str(),
        output.as_os_str(),
        os("--json"),
    ]))
    .ok();
    let summary: Value = serde_json::from_str(&run_json.stdout).unwrap();
    let names: Vec<&str> = summary["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|dataset| dataset["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["my data", "new\nline set"]);
    assert_eq!(of_dataset(&output.join("my data")), to_of(&first));
    assert_eq!(of_dataset(&output.join("new\nline set")), to_of(&second));
    assert_eq!(
        manifest(&output.join("my data"))["inputs"][0]["path"],
        "my data/a b\nc.tfrecord"
    );

    let back = work.path().join("tf");
    invoke(args([os("of2tf"), output.as_os_str(), back.as_os_str()])).ok();
    // Back under the names they had.
    assert_eq!(
        fs::read(back.join("my data/a b\nc.tfrecord")).unwrap(),
        fs::read(&file).unwrap()
    );
    assert_eq!(
        fs::read(back.join("new\nline set/x y-00000-of-00001")).unwrap(),
        fs::read(shards.join("x y-00000-of-00001")).unwrap()
    );
    let verified = invoke(args([os("verify"), file.as_os_str()])).ok();
    assert!(
        verified
            .stdout
            .contains(&format!("OK      {}: 3 records", file.display())),
        "{}",
        verified.stdout
    );
}

#[test]
fn zero_byte_files_hold_no_records_and_make_no_empty_part() {
    let work = tempdir();
    let input = work.path().join("in");
    let mixed = input.join("mixed");
    fs::create_dir_all(&mixed).unwrap();
    write_tfrecord(&mixed.join("s-00000-of-00003"), &examples(0, 2, 10));
    File::create(mixed.join("s-00001-of-00003")).unwrap();
    write_tfrecord(&mixed.join("s-00002-of-00003"), &examples(2, 2, 10));
    // An empty file with a record name is a dataset of no records; without one it is
    // nothing.
    let only_empty = input.join("only-empty");
    fs::create_dir_all(&only_empty).unwrap();
    File::create(only_empty.join("e.tfrecord")).unwrap();
    File::create(only_empty.join("notes")).unwrap();

    let output = work.path().join("of");
    let summary = invoke(args([
        os("tf2of"),
        input.as_os_str(),
        output.as_os_str(),
        os("--json"),
    ]))
    .ok();
    let summary: Value = serde_json::from_str(&summary.stdout).unwrap();
    assert_eq!(summary["records"], 4);
    // `notes` is no record file: it comes with the dataset of its folder.
    assert_eq!(
        tree(&output),
        [
            "mixed/ofconvert-manifest.json",
            "mixed/part-00000",
            "mixed/part-00001",
            "only-empty/notes",
            "only-empty/ofconvert-manifest.json"
        ]
    );
    assert_eq!(
        of_dataset(&output.join("mixed")),
        to_of(&examples(0, 4, 10))
    );
    let empty = manifest(&output.join("only-empty"));
    assert_eq!(empty["records"], 0);
    assert_eq!(empty["parts"].as_array().unwrap().len(), 0);
    assert_eq!(summary["skipped_files"], serde_json::json!([]));
    assert_eq!(empty["side_files"][0]["name"], "notes");

    // Back as they were: the empty shard too, under its name.
    let tf = work.path().join("tf-back");
    invoke(args([os("of2tf"), output.as_os_str(), tf.as_os_str()])).ok();
    for shard in ["s-00000-of-00003", "s-00001-of-00003", "s-00002-of-00003"] {
        assert_eq!(
            fs::read(tf.join("mixed").join(shard)).unwrap(),
            fs::read(mixed.join(shard)).unwrap(),
            "{shard}"
        );
    }
    assert_eq!(
        tree(&tf.join("only-empty")),
        ["e.tfrecord", "notes", "ofconvert-manifest.json"]
    );

    // OneFlow: an empty part between two others.
    let of_input = work.path().join("of-in");
    fs::create_dir_all(&of_input).unwrap();
    write_ofrecord(&of_input.join("part-0"), &to_of(&examples(0, 2, 10)));
    File::create(of_input.join("part-1")).unwrap();
    write_ofrecord(&of_input.join("part-2"), &to_of(&examples(2, 2, 10)));
    let back = work.path().join("tf");
    invoke(args([os("of2tf"), of_input.as_os_str(), back.as_os_str()])).ok();
    let shards = files_starting(&back, "of-in-");
    assert_eq!(shards.len(), 2, "{shards:?}");
    let records: Vec<Vec<u8>> = shards.iter().flat_map(|shard| tf_records(shard)).collect();
    assert_eq!(records, to_tf(&to_of(&examples(0, 4, 10))));

    let counted = invoke(args([
        os("count"),
        only_empty.join("e.tfrecord").as_os_str(),
        of_input.join("part-1").as_os_str(),
    ]))
    .ok();
    assert_eq!(
        counted.stdout,
        format!(
            "      0  {}\n      0  {}\n      0  total\n",
            only_empty.join("e.tfrecord").display(),
            of_input.join("part-1").display()
        )
    );
    invoke(args([os("verify"), only_empty.as_os_str()])).ok();
}

/// A temporary directory with a tmpfs mounted on it when that is allowed: on some disks
/// creating and removing 100,000 files takes minutes, and the disk is not what is tested.
/// Elsewhere a plain temporary directory.
struct Scratch {
    // Declared first to be unmounted before the directory is removed.
    _mounted: Option<Tmpfs>,
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempdir();
        let mounted = Tmpfs::mount(dir.path(), "size=2g", false).ok();
        Scratch {
            _mounted: mounted,
            dir,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

#[test]
fn a_hundred_thousand_tiny_files_are_all_converted_and_counted() {
    const FILES: i64 = 100_000;
    let work = Scratch::new();
    let input = work.path().join("in");
    let dir = input.join("tiny");
    fs::create_dir_all(&dir).unwrap();
    let payloads: Vec<Vec<u8>> = (0..FILES).map(|id| example(id, 0)).collect();
    for (id, payload) in payloads.iter().enumerate() {
        fs::write(dir.join(format!("t-{id:06}.tfrecord")), tf_frame(payload)).unwrap();
    }

    let output = work.path().join("of");
    invoke(args([
        os("tf2of"),
        input.as_os_str(),
        output.as_os_str(),
        os("--records-per-part"),
        os("25000"),
    ]))
    .ok();
    let manifest = manifest(&output.join("tiny"));
    assert_eq!(manifest["records"], FILES);
    assert_eq!(manifest["inputs"].as_array().unwrap().len(), FILES as usize);
    let counts: Vec<u64> = manifest["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["records"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [25_000; 4]);
    assert!(of_dataset(&output.join("tiny")) == to_of(&payloads));

    let counted = invoke(args([os("count"), input.as_os_str()])).ok();
    assert_eq!(counted.stdout.lines().count(), FILES as usize + 1);
    assert!(
        counted.stdout.ends_with("\n 100000  total\n"),
        "{}",
        &counted.stdout[counted.stdout.len() - 200..]
    );
}

/// A real TFRecord file past 4 GiB: 66 records of 64 MiB (a bytes feature of zeros), the
/// data of record 64 (which starts past 2^32) damaged and the file cut inside record 65.
/// Offsets past 2^32 must come out exact, not wrapped.
///
/// Needs 4.5 GB of disk, so it is ignored by default. Run it with:
///
/// ```sh
/// cargo test -p ofconvert --test integration -- --ignored past_4_gib
/// ```
#[test]
#[ignore]
fn errors_past_4_gib_name_their_exact_offset() {
    const RECORDS: u64 = 66;
    let work = tempdir();
    let file = work.path().join("huge.tfrecord");
    let zeros = {
        use ofconvert_bridge::tf;
        let example = tf::example([("zeros", tf::bytes_feature([vec![0u8; 64 << 20]]))]);
        let mut bytes = Vec::new();
        ofconvert_bridge::encode_example(&example, &mut bytes);
        bytes
    };
    let framed = tf_frame(&zeros);
    let length = framed.len() as u64;
    let mut out = File::create(&file).unwrap();
    for index in 0..RECORDS {
        let mut record = framed.clone();
        if index == 64 {
            record[12 + 1000] ^= 1;
        }
        if index == RECORDS - 1 {
            record.truncate(record.len() / 2);
        }
        out.write_all(&record).unwrap();
    }
    drop(out);
    let damaged = 64 * length;
    let cut = (RECORDS - 1) * length;
    assert!(damaged > 1 << 32);

    let counted = invoke(args([os("count"), file.as_os_str()])).expect_code(1);
    let truncated = format!(
        "{}: offset {cut} (record #{}): truncated record",
        file.display(),
        RECORDS - 1
    );
    assert!(counted.stderr.contains(&truncated), "{}", counted.stderr);

    let verified = invoke(args([os("verify"), file.as_os_str()])).expect_code(1);
    let checksum = format!(
        "{}: offset {} (record #64): corrupted record (data checksum mismatch",
        file.display(),
        damaged + 12
    );
    for expected in [&checksum, &truncated] {
        assert!(
            verified.stdout.contains(expected.as_str()),
            "{expected}\n{}",
            verified.stdout
        );
    }
    assert!(
        verified.stdout.contains("2 problems, 64 good records"),
        "{}",
        verified.stdout
    );
}
