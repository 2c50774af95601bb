//! What a new user meets: the files ofconvert itself leaves in a tree, empty and wrong
//! inputs, wrong directions, the mapping rules that match nothing, help and installation.

use std::fs;

use crate::util::*;

mod direction;
mod help;
mod report;
mod rules;
mod warnings;

// ---------------------------------------------------------------------------------------
// Our own files and TFDS metadata are passed over in silence

#[test]
fn every_command_passes_over_the_indexes_and_manifests_ofconvert_wrote() {
    let work = tempdir();
    let input = sample_tree(work.path(), "in");
    ofconvert().arg("index").arg(&input).ok();
    // Index files beside the records; a second index run finds no new record files in them.
    assert!(input
        .join("imagenet/train/train-00000-of-00002.idx")
        .is_file());
    let again = ofconvert().arg("index").arg(&input).ok();
    assert!(!again.stdout.contains(".idx.idx"), "{}", again.stdout);
    assert_eq!(again.stderr, "");

    let output = work.path().join("of");
    let run = ofconvert().arg("tf2of").arg(&input).arg(&output).ok();
    assert!(!run.stdout.contains("Skipped"), "{}", run.stdout);
    assert!(
        // Six, and CIFAR-10's two and the mixed ImageNet shard.
        run.stdout.contains("Converted 9 datasets"),
        "{}",
        run.stdout
    );
    for command in ["count", "verify", "schema"] {
        let run = ofconvert().arg(command).arg(&input).ok();
        assert!(!run.stdout.contains(".idx"), "{command}: {}", run.stdout);
        assert!(!run.stderr.contains(".idx"), "{command}: {}", run.stderr);
        assert!(
            !run.stderr.contains("ofconvert:"),
            "{command}: {}",
            run.stderr
        );
    }

    // The OneFlow tree holds a manifest beside every dataset's parts: not noise either.
    let back = work.path().join("tf");
    let run = ofconvert().arg("of2tf").arg(&output).arg(&back).ok();
    assert!(!run.stdout.contains("Skipped"), "{}", run.stdout);
    assert!(!run.stdout.contains("not a part file"), "{}", run.stdout);
    let counted = ofconvert().arg("count").arg(&output).ok();
    assert!(!counted.stdout.contains("manifest"), "{}", counted.stdout);
}

/// The `tfrecord` package's indexer, `python -m tfrecord.tools.tfrecord2idx DIR`, writes
/// `NAME.tfindex` beside each `NAME.tfrecord`: a line `offset length` a record, the length
/// its whole frame's. Byte offsets into a TFRecord file, which mean nothing beside the parts
/// made of its records: passed over as ofconvert's own indexes are. tf2of carried them beside
/// the parts, and with --no-side-files listed them as skipped, "not a TFRecord file".
#[test]
fn every_command_passes_over_the_indexes_the_tfrecord_package_wrote() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir_all(&input).unwrap();
    for (shard, first) in [("train", 0), ("valid", 10)] {
        let records = examples(first, 3, 20);
        let file = input.join(format!("{shard}.tfrecord"));
        write_tfrecord(&file, &records);
        let mut index = String::new();
        let mut offset = 0;
        for record in &records {
            let frame = 8 + 4 + record.len() + 4;
            index.push_str(&format!("{offset} {frame}\n"));
            offset += frame;
        }
        assert_eq!(offset as u64, fs::metadata(&file).unwrap().len());
        fs::write(input.join(format!("{shard}.tfindex")), index).unwrap();
    }

    let output = work.path().join("of");
    let run = ofconvert().arg("tf2of").arg(&input).arg(&output).ok();
    assert!(!run.stdout.contains("tfindex"), "{}", run.stdout);
    assert!(!run.stdout.contains("Skipped"), "{}", run.stdout);
    let written = tree(&output);
    assert!(
        !written.iter().any(|file| file.ends_with(".tfindex")),
        "{written:?}"
    );
    let run = ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg(work.path().join("parts-only"))
        .arg("--no-side-files")
        .ok();
    assert!(!run.stdout.contains("Skipped"), "{}", run.stdout);
    for command in ["count", "verify", "schema"] {
        let run = ofconvert().arg(command).arg(&input).ok();
        for said in [&run.stdout, &run.stderr] {
            assert!(!said.contains("tfindex"), "{command}: {said}");
            assert!(!said.contains("not a TFRecord"), "{command}: {said}");
        }
    }
}

#[test]
fn tfds_metadata_is_not_listed_as_skipped() {
    let work = tempdir();
    let input = sample_tree(work.path(), "in");
    // Carried beside the parts, and named as carried.
    let run = ofconvert()
        .arg("tf2of")
        .arg(input.join("tfds"))
        .arg(work.path().join("out"))
        .ok();
    assert!(!run.stdout.contains("Skipped"), "{}", run.stdout);
    assert!(
        run.stdout.contains("with dataset_info.json, features.json"),
        "{}",
        run.stdout
    );
    // Parts only: left out, without a word.
    let run = ofconvert()
        .arg("tf2of")
        .arg(input.join("tfds"))
        .arg(work.path().join("parts-only"))
        .arg("--no-side-files")
        .ok();
    assert!(!run.stdout.contains("dataset_info.json"), "{}", run.stdout);
    assert!(!run.stdout.contains("features.json"), "{}", run.stdout);
    assert!(!tree(&work.path().join("parts-only"))
        .iter()
        .any(|file| file.ends_with(".json") && !file.ends_with("manifest.json")));
}

// ---------------------------------------------------------------------------------------
// index --output-dir

#[test]
fn index_output_dir_keeps_the_tree_and_never_writes_one_path_twice() {
    let work = tempdir();
    let input = work.path().join("in");
    for (dir, id) in [("v1", 1), ("v2", 2)] {
        fs::create_dir_all(input.join(dir)).unwrap();
        write_tfrecord(
            &input.join(dir).join("data-00000-of-00001"),
            &examples(id, id as usize, 10),
        );
    }
    let indexes = work.path().join("idx");
    ofconvert()
        .arg("index")
        .arg(&input)
        .arg("--output-dir")
        .arg(&indexes)
        .ok();
    assert_eq!(
        tree(&indexes),
        ["v1/data-00000-of-00001.idx", "v2/data-00000-of-00001.idx"]
    );
    let lines = |file: &str| {
        fs::read_to_string(indexes.join(file))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(lines("v1/data-00000-of-00001.idx"), 1);
    assert_eq!(lines("v2/data-00000-of-00001.idx"), 2);

    // Two files named on the command line with one name: the second is refused, named.
    let flat = work.path().join("flat");
    let run = ofconvert()
        .arg("index")
        .arg(input.join("v1/data-00000-of-00001"))
        .arg(input.join("v2/data-00000-of-00001"))
        .arg("--output-dir")
        .arg(&flat)
        .expect_code(1);
    assert!(run.stderr.contains("not written"), "{}", run.stderr);
    assert!(run.stderr.contains("v1"), "{}", run.stderr);
    assert_eq!(tree(&flat), ["data-00000-of-00001.idx"]);
    assert_eq!(
        fs::read_to_string(flat.join("data-00000-of-00001.idx"))
            .unwrap()
            .lines()
            .count(),
        1
    );
}

// ---------------------------------------------------------------------------------------
// Empty and wrong input is not success

#[test]
fn inspecting_a_folder_without_record_files_fails_and_says_so() {
    let work = tempdir();
    let empty = work.path().join("empty");
    fs::create_dir(&empty).unwrap();
    fs::write(empty.join("notes.txt"), "nothing here").unwrap();
    for command in ["count", "verify", "schema", "index", "cat"] {
        let run = ofconvert().arg(command).arg(&empty).expect_code(1);
        let expected = format!("no record files found under {}", empty.display());
        // Said once: the listing names the folder, and no command adds its own line.
        assert_eq!(
            run.stderr.matches(&expected).count(),
            1,
            "{command}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_missing_path_is_a_usage_error_for_every_subcommand() {
    let work = tempdir();
    let missing = work.path().join("nosuch");
    let out = work.path().join("out");
    for command in ["count", "verify", "schema", "index", "cat"] {
        let run = ofconvert().arg(command).arg(&missing).expect_code(2);
        assert!(run.stderr.contains("nosuch"), "{command}: {}", run.stderr);
    }
    for command in ["tf2of", "of2tf"] {
        ofconvert()
            .arg(command)
            .arg(&missing)
            .arg(&out)
            .expect_code(2);
    }
}

#[test]
fn index_of_an_ofrecord_file_says_it_is_one() {
    let work = tempdir();
    let part = work.path().join("part-00000");
    write_ofrecord(&part, &to_of(&examples(0, 3, 10)));
    let run = ofconvert().arg("index").arg(&part).expect_code(1);
    assert!(run.stderr.contains("an OFRecord file"), "{}", run.stderr);
    assert!(!work.path().join("part-00000.idx").exists());
    // A tree of OneFlow datasets: what it holds, and what index is for.
    let run = ofconvert()
        .arg("index")
        .arg(testdata().join("ofdatasets"))
        .expect_code(1);
    assert!(
        run.stderr.contains(
            "it holds OFRecord files (OneFlow parts), and index writes indexes of TFRecord files"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("no record files"), "{}", run.stderr);
}

#[test]
fn tf2of_that_converts_nothing_leaves_no_empty_output() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    fs::write(input.join("README.md"), "no records here").unwrap();
    let output = work.path().join("out");
    ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg(&output)
        .expect_code(1);
    assert!(!output.exists(), "{:?}", tree(&output));
}

// ---------------------------------------------------------------------------------------
// Each direction's help speaks of its own format; one meaning for --offset

#[test]
fn each_direction_explains_its_flags_in_its_own_terms() {
    let of2tf = ofconvert().args(["of2tf", "--help"]).stdout();
    let no_verify = of2tf
        .split("--no-verify")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap()
        .to_owned();
    assert!(no_verify.contains("OFRecord"), "{no_verify}");
    assert!(!no_verify.contains("TFRecord"), "{no_verify}");
    let tf2of = ofconvert().args(["tf2of", "--help"]).stdout();
    assert!(tf2of.contains("OneFlow part"), "{tf2of}");
    assert!(of2tf.contains("TFRecord shard"), "{of2tf}");
}

#[test]
fn cat_skips_records_with_skip_and_offset_is_only_a_mapping_rule() {
    let file = testdata().join("golden/tutorial.tfrecord");
    let all = ofconvert().arg("cat").arg(&file).args(["-n", "3"]).stdout();
    let skipped = ofconvert()
        .arg("cat")
        .arg(&file)
        .args(["--skip", "1", "-n", "2"])
        .stdout();
    let records: Vec<&str> = all.split("\n\nfeatures").collect();
    assert_eq!(records.len(), 3, "{all}");
    assert!(
        skipped.starts_with(&format!("features{}", records[1])),
        "{skipped}"
    );
    ofconvert()
        .arg("cat")
        .arg(&file)
        .args(["--offset", "1"])
        .expect_code(2);
}

#[test]
fn cat_of_a_directory_prints_its_record_files_as_count_finds_them() {
    let work = tempdir();
    let dir = work.path().join("records");
    copy_into(&testdata().join("golden/tutorial.tfrecord"), &dir);
    fs::write(dir.join("notes.txt"), "not records").unwrap();
    let of_file = ofconvert()
        .arg("cat")
        .arg(dir.join("tutorial.tfrecord"))
        .stdout();
    let of_dir = ofconvert().arg("cat").arg(&dir).stdout();
    assert!(!of_file.is_empty());
    assert_eq!(of_dir, of_file);
}

// ---------------------------------------------------------------------------------------
// Installing like a real tool

#[test]
fn completions_come_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = ofconvert().args(["completions", shell]).stdout();
        assert!(script.contains("tf2of"), "{shell}: {script}");
        assert!(script.contains("max-part-bytes"), "{shell}");
    }
    ofconvert().args(["completions", "tcsh"]).expect_code(2);
}

#[test]
fn the_manual_page_is_roff_and_names_every_command() {
    let page = ofconvert().arg("man").stdout();
    assert!(page.contains(".TH ofconvert 1"), "{page}");
    for command in [
        "tf2of", "of2tf", "cat", "count", "verify", "schema", "index",
    ] {
        assert!(page.contains(command), "{command}");
    }
}

#[test]
fn version_names_the_commit_when_built_from_git() {
    let version = ofconvert().arg("--version").stdout();
    assert!(
        version.starts_with(&format!("ofconvert {}", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    if let Some(head) = head.ok().filter(|head| head.status.success()) {
        let commit = String::from_utf8(head.stdout).unwrap();
        let expected = format!("(commit {}", commit.trim());
        assert!(version.contains(&expected), "{version} lacks {expected}");
    }
}

#[test]
fn readme_installs_with_cargo_install_and_release_builds_drop_debug_info() {
    let root = testdata().join("..");
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("cargo install --locked --path crates/cli --profile dist"));
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let section = |name: &str| -> String {
        let start = manifest
            .find(&format!("[profile.{name}]"))
            .unwrap_or_else(|| panic!("no [profile.{name}]"));
        let rest = &manifest[start + 1..];
        rest[..rest.find("\n[").unwrap_or(rest.len())].to_owned()
    };
    let release = section("release");
    assert!(release.contains("debug = false"), "{release}");
    assert!(release.contains("strip = \"debuginfo\""), "{release}");
    // The product build is the whole-program one; `pip install` builds the quick release
    // profile the README's commands have already compiled (a release wheel asks for dist).
    let dist = section("dist");
    assert!(dist.contains("inherits = \"release\""), "{dist}");
    assert!(dist.contains("lto = \"fat\""), "{dist}");
    assert!(dist.contains("codegen-units = 1"), "{dist}");
    let pyproject = fs::read_to_string(root.join("crates/python/pyproject.toml")).unwrap();
    assert!(pyproject.contains("profile = \"release\""), "{pyproject}");
    let profiling = section("profiling");
    assert!(profiling.contains("inherits = \"release\""), "{profiling}");
    assert!(profiling.contains("debug = 1"), "{profiling}");
}

// ---------------------------------------------------------------------------------------
// Long inspections show progress; schema can sample

#[test]
fn schema_sample_reads_n_records_per_dataset() {
    let imagenet = testdata().join("datasets/imagenet");
    let all = ofconvert()
        .args(["schema", "--json"])
        .arg(&imagenet)
        .stdout();
    let all: serde_json::Value = serde_json::from_str(&all).unwrap();
    assert_eq!(all["records"], 45);
    // Three datasets (mixed: 1 file of 15, train: 2 files of 10, validation: 1 file of 10),
    // 3 records each; the train sample is the first file's first three.
    let sampled = ofconvert()
        .args(["schema", "--json", "--sample", "3"])
        .arg(&imagenet)
        .stdout();
    let sampled: serde_json::Value = serde_json::from_str(&sampled).unwrap();
    assert_eq!(sampled["records"], 9);
    let across_files = ofconvert()
        .args(["schema", "--json", "--sample", "15"])
        .arg(&imagenet)
        .stdout();
    let across_files: serde_json::Value = serde_json::from_str(&across_files).unwrap();
    // mixed 15, train 15 (10 + 5 of the second file), validation 10.
    assert_eq!(across_files["records"], 40);
}

/// Runs the binary with ARGS on a pseudo-terminal (util-linux `script`), or `None` where
/// there is no `script` to make one.
fn on_a_terminal(args: &[&std::ffi::OsStr]) -> Option<String> {
    // A pseudo-terminal made without a parent terminal is 0 columns wide, too narrow to
    // draw anything on: it is given a size first.
    let mut line = format!(
        "stty cols 120 rows 40; {}",
        shell_quote(the_binary().as_os_str())
    );
    for arg in args {
        line.push(' ');
        line.push_str(&shell_quote(arg));
    }
    let output = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("NO_COLOR")
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn shell_quote(arg: &std::ffi::OsStr) -> String {
    format!("'{}'", arg.to_string_lossy().replace('\'', "'\\''"))
}

#[test]
fn inspections_draw_the_converters_progress_bar_on_a_terminal() {
    let work = tempdir();
    let datasets = testdata().join("datasets");
    let indexes = work.path().join("idx");
    let runs: [Vec<&std::ffi::OsStr>; 4] = [
        vec!["count".as_ref(), datasets.as_os_str()],
        vec!["verify".as_ref(), datasets.as_os_str()],
        vec!["schema".as_ref(), datasets.as_os_str()],
        vec![
            "index".as_ref(),
            datasets.as_os_str(),
            "--output-dir".as_ref(),
            indexes.as_os_str(),
        ],
    ];
    for args in runs {
        let Some(shown) = on_a_terminal(&args) else {
            eprintln!("no `script` to make a terminal with: progress bars not checked");
            return;
        };
        // The bar of tf2of/of2tf: bytes read of the total, speed and time left.
        assert!(shown.contains("ETA"), "{args:?}: {shown}");
        assert!(shown.contains("B/s"), "{args:?}: {shown}");
    }
    // Not on a terminal: no bar.
    let plain = ofconvert().arg("count").arg(&datasets).ok();
    assert!(!plain.stderr.contains("ETA"), "{}", plain.stderr);
}
