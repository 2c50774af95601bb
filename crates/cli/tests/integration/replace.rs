//! An output replaced (`--overwrite`) stays whole until the new one is: a failed, stopped or
//! killed run leaves the dataset that was there as it was, and a finished one leaves nothing
//! of the old. `--resume` carries a dataset on from the parts an interrupted run finished.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::resume::{assert_same_output, big_input, finished_looking, kill_when, signal_when};
use crate::util::*;

/// Every file under `dir`, hidden ones too, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    tree(dir)
        .into_iter()
        .map(|file| {
            let bytes = fs::read(dir.join(&file)).unwrap();
            (file, bytes)
        })
        .collect()
}

/// The finished work items noted in `dir`'s journals for `--resume`: their whole lines.
pub(crate) fn noted(dir: &Path) -> usize {
    if !dir.is_dir() {
        return 0;
    }
    files_starting(dir, ".ofconvert-done-")
        .iter()
        .map(|journal| fs::read(journal).unwrap_or_default())
        .map(|bytes| bytes.iter().filter(|byte| **byte == b'\n').count())
        .sum()
}

fn tf2of(input: &Path, output: &Path) -> TestCommand {
    let mut command = ofconvert();
    command.args(["--jobs", "1", "tf2of"]).args([input, output]);
    command
}

/// A dataset of two files, converted into `out`.
fn converted(work: &Path) -> (PathBuf, PathBuf) {
    let input = work.join("in");
    fs::create_dir(&input).unwrap();
    write_tfrecord(&input.join("a.tfrecord"), &examples(1, 50, 100));
    write_tfrecord(&input.join("b.tfrecord"), &examples(51, 50, 100));
    let output = work.join("out");
    tf2of(&input, &output).ok();
    (input, output)
}

#[test]
fn an_overwrite_that_fails_leaves_the_dataset_that_was_there_whole() {
    let work = tempdir();
    let (input, output) = converted(work.path());
    let before = snapshot(&output);

    let damaged = input.join("b.tfrecord");
    let bytes = fs::read(&damaged).unwrap();
    fs::write(&damaged, &bytes[..bytes.len() - 10]).unwrap();
    let run = tf2of(&input, &output).arg("--overwrite").expect_code(1);
    assert!(
        run.stderr
            .contains("the dataset published there before is left as it was"),
        "{}",
        run.stderr
    );
    assert_eq!(snapshot(&output), before, "{}", run.stderr);
    let count = ofconvert().arg("verify").arg(&output).ok();
    assert!(count.stdout.contains("100"), "{}", count.stdout);
}

#[test]
fn an_overwrite_stopped_or_killed_leaves_the_dataset_that_was_there_whole() {
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let work = tempdir();
        let input = big_input(work.path());
        let output = work.path().join("out");
        tf2of(&input, &output).ok();
        let before = snapshot(&output);

        let mut child = tf2of(&input, &output).arg("--overwrite").spawn_piped();
        // Stopped while the second file of the first dataset is being written: its first is
        // finished, under its temporary name.
        let first = output.join("a");
        let ready = || files_starting(&first, ".ofconvert-part-").len() >= 2;
        let stderr = if signal == libc::SIGINT {
            let (code, stderr) = signal_when(child, signal, ready);
            assert_eq!(code, 130, "{stderr}");
            stderr
        } else {
            kill_when(&mut child, ready);
            String::new()
        };
        let finished: BTreeMap<String, Vec<u8>> = snapshot(&output)
            .into_iter()
            .filter(|(file, _)| !file.rsplit('/').next().unwrap().starts_with('.'))
            .collect();
        assert_eq!(finished, before, "signal {signal}: {stderr}");
        ofconvert().arg("verify").arg(&output).ok();
    }
}

#[test]
fn an_overwrite_that_finishes_leaves_nothing_of_the_old_dataset() {
    let work = tempdir();
    let (input, output) = converted(work.path());
    assert_eq!(
        tree(&output),
        ["ofconvert-manifest.json", "part-00000", "part-00001"]
    );
    fs::remove_file(input.join("b.tfrecord")).unwrap();
    tf2of(&input, &output).arg("--overwrite").ok();
    assert_eq!(tree(&output), ["ofconvert-manifest.json", "part-00000"]);
    let clean = work.path().join("clean");
    tf2of(&input, &clean).ok();
    assert_same_output(&output, &clean);
}

/// One dataset of eight files of 6 MB.
fn one_big_dataset(root: &Path) -> PathBuf {
    let input = root.join("in");
    fs::create_dir(&input).unwrap();
    for shard in 0..8 {
        let first = shard * 120 + 1;
        write_tfrecord(
            &input.join(format!("train-{shard:05}-of-00008")),
            &examples(first, 120, 50_000),
        );
    }
    input
}

/// The inode of every file in `dir` whose name starts with `prefix`.
fn inodes(dir: &Path, prefix: &str) -> Vec<u64> {
    let mut found: Vec<u64> = files_starting(dir, prefix)
        .iter()
        .map(|path| fs::metadata(path).unwrap().ino())
        .collect();
    found.sort_unstable();
    found
}

#[test]
fn resume_keeps_the_parts_an_interrupted_run_finished_and_writes_the_rest() {
    let work = tempdir();
    let input = one_big_dataset(work.path());
    let output = work.path().join("out");
    let child = tf2of(&input, &output).spawn_piped();
    let (code, stderr) = signal_when(child, libc::SIGINT, || noted(&output) >= 3);
    assert_eq!(code, 130, "{stderr}");
    assert!(finished_looking(&output).is_empty(), "{:?}", tree(&output));
    let notes = noted(&output);
    assert!(notes >= 3, "{:?}", tree(&output));
    assert!(
        stderr.contains(&format!("{notes} parts finished")) && stderr.contains("kept for --resume"),
        "{stderr}"
    );
    // What reads the output says what is there, and how to finish it.
    let count = ofconvert().arg("count").arg(&output).expect_code(1);
    assert!(
        count
            .stderr
            .contains("a conversion into it was stopped before it published anything")
            && count.stderr.contains("--resume"),
        "{}",
        count.stderr
    );
    // Every part a note names is kept: it is renamed into place, not written again.
    let kept = inodes(&output, ".ofconvert-part-");
    assert!(kept.len() >= notes, "{:?}", tree(&output));

    let run = tf2of(&input, &output).arg("--resume").ok();
    assert!(!run.stdout.contains("(kept)"), "{}", run.stdout);
    let published = inodes(&output, "part-");
    assert_eq!(published.len(), 8);
    let reused = kept.iter().filter(|ino| published.contains(ino)).count();
    assert!(reused >= notes, "{reused} of {notes} kept parts used");
    let clean = work.path().join("clean");
    tf2of(&input, &clean).ok();
    assert_same_output(&output, &clean);
}

#[test]
fn resume_does_again_the_parts_of_an_input_that_changed_since() {
    let work = tempdir();
    let input = one_big_dataset(work.path());
    let output = work.path().join("out");
    let child = tf2of(&input, &output).spawn_piped();
    let (code, stderr) = signal_when(child, libc::SIGINT, || noted(&output) >= 2);
    assert_eq!(code, 130, "{stderr}");
    // The first file gets a record more: the notes were of other inputs.
    write_tfrecord(
        &input.join("train-00000-of-00008"),
        &examples(1, 121, 50_000),
    );
    tf2of(&input, &output).arg("--resume").ok();
    let clean = work.path().join("clean");
    tf2of(&input, &clean).ok();
    assert_same_output(&output, &clean);
    assert!(
        files_starting(&output, ".ofconvert-").is_empty(),
        "{:?}",
        tree(&output)
    );
}
