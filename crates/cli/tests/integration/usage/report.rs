//! The report a newcomer reads: one short entry per dataset, what holds for several said
//! once, each failure said once, and a last line that says what was done.

use std::fs;

use crate::util::*;

#[test]
fn the_sample_run_ends_with_what_was_done_and_says_each_note_and_advice_once() {
    let work = tempdir();
    let out = work.path().join("of");
    let run = ofconvert()
        .env_remove("CARGO_PKG_NAME")
        .arg("tf2of")
        .arg(testdata().join("datasets"))
        .arg(&out)
        .arg("--no-sync")
        .ok();
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("Converted 9 datasets (329 records,") && last.ends_with(" s."),
        "{}",
        run.stdout
    );
    // Each note once, however many datasets it is about: one line for the six datasets of
    // one part, one for the three of several.
    let notes: Vec<&str> = run
        .stdout
        .lines()
        .filter(|line| line.starts_with("note"))
        .collect();
    assert_eq!(notes.len(), 2, "{}", run.stdout);
    assert!(
        notes[0].starts_with("note (6 datasets): only a single rank can read its one part"),
        "{}",
        run.stdout
    );
    assert!(
        notes[1].starts_with("note (3 datasets): OFRecordReader's defaults"),
        "{}",
        run.stdout
    );
    // Each reader's line, still.
    assert_eq!(
        run.stdout.matches("flow.nn.OFRecordReader(").count(),
        9,
        "{}",
        run.stdout
    );
    // The images OneFlow cannot decode: the advice once, then each dataset on a line of its
    // own.
    assert_eq!(
        run.stderr.matches("--images jpeg").count(),
        1,
        "{}",
        run.stderr
    );
    let images: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.contains("OFRecordImageDecoder cannot decode"))
        .collect();
    assert_eq!(images.len(), 5, "{}", run.stderr);
    assert!(
        images.iter().all(|line| line.starts_with("  ")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("warning: 5 datasets hold images OneFlow cannot decode: "),
        "{}",
        run.stderr
    );
    // All of it fits a screen.
    let lines = run.stdout.lines().count() + run.stderr.lines().count();
    assert!(lines <= 30, "{lines} lines:\n{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("`ofconvert schema --oneflow DIR`"),
        "{}",
        run.stdout
    );

    // Verbose: every dataset's notes and warnings in full, and its files.
    let verbose = ofconvert()
        .arg("tf2of")
        .arg(testdata().join("datasets/tutorial"))
        .arg(work.path().join("verbose"))
        .args(["--no-sync", "-v"])
        .ok();
    assert!(
        verbose
            .stdout
            .contains("      note: only a single rank can read its one part"),
        "{}",
        verbose.stdout
    );
    assert!(verbose.stdout.contains("      read "), "{}", verbose.stdout);
    assert!(
        verbose.stdout.contains("      wrote part-00000 ("),
        "{}",
        verbose.stdout
    );
}

#[test]
fn under_cargo_run_the_hint_says_how_to_run_the_next_command() {
    let work = tempdir();
    let run = ofconvert()
        .env("CARGO_PKG_NAME", "ofconvert")
        .arg("tf2of")
        .arg(testdata().join("datasets/tutorial"))
        .arg(work.path().join("of"))
        .arg("--no-sync")
        .ok();
    assert!(
        run.stdout
            .contains("`cargo run --release -p ofconvert -- schema --oneflow DIR`"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_failure_is_said_once() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir_all(input.join("a")).unwrap();
    fs::create_dir_all(input.join("b")).unwrap();
    fs::copy(
        testdata().join("golden/tutorial.tfrecord"),
        input.join("a/a.tfrecord"),
    )
    .unwrap();
    fs::copy(
        testdata().join("damaged/flipped_data.tfrecord"),
        input.join("b/b.tfrecord"),
    )
    .unwrap();
    let run = ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg(work.path().join("of"))
        .arg("--no-sync")
        .expect_code(1);
    let why = "offset 312 (record #3)";
    assert_eq!(run.stderr.matches(why).count(), 1, "{}", run.stderr);
    assert!(
        run.stdout
            .lines()
            .last()
            .unwrap_or_default()
            .contains("; 1 failed (above)."),
        "{}",
        run.stdout
    );
}

#[test]
fn commit_says_it_published_what_the_workers_converted() {
    let work = tempdir();
    let out = work.path().join("of");
    for worker in ["0/2", "1/2"] {
        ofconvert()
            .arg("tf2of")
            .arg(testdata().join("datasets/tutorial"))
            .arg(&out)
            .args(["--no-sync", "--parts", "2", "--shard", worker])
            .ok();
    }
    let run = ofconvert().arg("commit").arg(&out).ok();
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("Published 1 dataset (100 records"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("Converted"), "{}", run.stdout);
}

#[test]
fn a_dry_run_says_what_would_be_done_and_writes_nothing() {
    let work = tempdir();
    let out = work.path().join("of");
    let run = ofconvert()
        .arg("tf2of")
        .arg(testdata().join("datasets"))
        .arg(&out)
        .args(["--dry-run", "--records-per-part", "30"])
        .ok();
    assert!(!out.exists(), "a dry run wrote {:?}", tree(&out));
    assert!(
        run.stdout.contains("100 records -> 4 parts in"),
        "{}",
        run.stdout
    );
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("Dry run: would convert 9 datasets from")
            && last.ends_with("; nothing was written."),
        "{}",
        run.stdout
    );
    let json = ofconvert()
        .arg("of2tf")
        .arg(testdata().join("ofdatasets"))
        .arg(&out)
        .args(["--dry-run", "--json"])
        .ok()
        .stdout;
    let preview: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(preview["datasets"][0]["parts"], 2, "{preview}");
    assert!(!out.exists());
    // A dataset the run would fail fails the dry run too, still writing nothing.
    let run = ofconvert()
        .arg("tf2of")
        .arg(testdata().join("datasets/tutorial"))
        .arg(&out)
        .args(["--dry-run", "--rename", "featur0=x"])
        .expect_code(1);
    assert!(run.stdout.contains("would fail"), "{}", run.stdout);
    assert!(!out.exists());
    ofconvert()
        .arg("tf2of")
        .arg(testdata().join("datasets/tutorial"))
        .arg(&out)
        .args(["--dry-run", "--shard", "0/2"])
        .expect_code(2);
}
