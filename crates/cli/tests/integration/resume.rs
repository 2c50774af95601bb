//! A conversion killed mid-write leaves nothing that looks finished, and `--resume` then
//! gives the same bytes as a clean run.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::thread::sleep;
use std::time::Duration;

use crate::util::*;

const DATASETS: [&str; 3] = ["a", "b", "c"];

/// Three datasets of two 12 MB files each: big enough that a debug build takes a while
/// over each.
fn big_input(root: &Path) -> PathBuf {
    let input = root.join("in");
    let mut id = 0;
    for dataset in DATASETS {
        let dir = input.join(dataset);
        fs::create_dir_all(&dir).unwrap();
        for shard in 0..2 {
            let records: Vec<Vec<u8>> = (0..200)
                .map(|_| {
                    id += 1;
                    example(id, 60_000)
                })
                .collect();
            write_tfrecord(
                &dir.join(format!("{dataset}-{shard:05}-of-00002")),
                &records,
            );
        }
    }
    input
}

fn start(input: &Path, output: &Path) -> Child {
    ofconvert()
        .args(["--jobs", "1", "tf2of"])
        .args([input, output])
        .spawn_quiet()
}

/// Waits until `ready` holds, then kills the conversion; panics if it ended first.
fn kill_when(child: &mut Child, ready: impl Fn() -> bool) {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the conversion ended ({status}) before it could be interrupted");
        }
        if ready() {
            break;
        }
        sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Names of the files under `dir` that are not temporary.
fn finished_looking(dir: &Path) -> Vec<String> {
    tree(dir)
        .into_iter()
        .filter(|file| {
            !Path::new(file)
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with('.')
        })
        .collect()
}

/// The same files with the same bytes; manifests alike but for the output path they name.
fn assert_same_output(resumed: &Path, clean: &Path) {
    let files = tree(clean);
    assert_eq!(tree(resumed), files);
    for file in &files {
        let (a, b) = (resumed.join(file), clean.join(file));
        if file.ends_with("ofconvert-manifest.json") {
            let strip = |path: &Path| {
                let mut manifest = manifest(path.parent().unwrap());
                manifest.as_object_mut().unwrap().remove("oneflow");
                manifest
            };
            assert_eq!(strip(&a), strip(&b), "{file}");
        } else {
            assert!(
                fs::read(&a).unwrap() == fs::read(&b).unwrap(),
                "{file} differs"
            );
        }
    }
}

#[test]
fn killed_while_writing_the_first_part_leaves_only_temporary_files() {
    let work = tempdir();
    let input = big_input(work.path());
    let output = work.path().join("out");
    let mut child = start(&input, &output);
    kill_when(&mut child, || !tree(&output).is_empty());
    assert!(finished_looking(&output).is_empty(), "{:?}", tree(&output));

    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            output.as_os_str(),
            "--resume".as_ref(),
        ])
        .ok();
    assert!(!run.stdout.contains("(kept)"), "{}", run.stdout);
    let clean = work.path().join("clean");
    ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), clean.as_os_str()])
        .ok();
    assert_same_output(&output, &clean);
}

#[test]
fn resume_keeps_finished_datasets_and_redoes_the_interrupted_one() {
    let work = tempdir();
    let input = big_input(work.path());
    let output = work.path().join("out");
    let mut child = start(&input, &output);
    let first_manifest = output.join("a/ofconvert-manifest.json");
    kill_when(&mut child, || first_manifest.exists());

    // The first dataset is whole; the others have no manifest and nothing but temporary
    // files.
    assert_eq!(
        finished_looking(&output.join("a")),
        ["ofconvert-manifest.json", "part-00000", "part-00001"]
    );
    for dataset in &DATASETS[1..] {
        assert!(
            finished_looking(&output.join(dataset)).is_empty(),
            "{dataset}: {:?}",
            tree(&output)
        );
    }

    let before: Vec<u8> = fs::read(output.join("a/part-00000")).unwrap();
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            output.as_os_str(),
            "--resume".as_ref(),
        ])
        .ok();
    assert!(
        run.stdout.contains("(1 kept from an earlier run)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("in 2 parts (kept)"), "{}", run.stdout);
    assert_eq!(fs::read(output.join("a/part-00000")).unwrap(), before);

    let clean = work.path().join("clean");
    ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), clean.as_os_str()])
        .ok();
    assert_same_output(&output, &clean);
}

#[test]
fn resume_redoes_a_dataset_whose_part_was_damaged_or_whose_settings_changed() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    write_tfrecord(
        &input.join("x.tfrecord"),
        &[example(1, 100), example(2, 100)],
    );
    let output = work.path().join("out");
    ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), output.as_os_str()])
        .ok();
    let part = output.join("part-00000");
    let whole = fs::read(&part).unwrap();

    fs::write(&part, &whole[..whole.len() - 1]).unwrap();
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            output.as_os_str(),
            "--resume".as_ref(),
        ])
        .ok();
    assert!(!run.stdout.contains("(kept)"), "{}", run.stdout);
    assert_eq!(fs::read(&part).unwrap(), whole);

    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            output.as_os_str(),
            "--resume".as_ref(),
        ])
        .ok();
    assert!(run.stdout.contains("(kept)"), "{}", run.stdout);

    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            input.as_os_str(),
            output.as_os_str(),
            "--resume".as_ref(),
            "--parts".as_ref(),
            "2".as_ref(),
        ])
        .ok();
    assert!(!run.stdout.contains("(kept)"), "{}", run.stdout);
    assert_eq!(
        tree(&output),
        ["ofconvert-manifest.json", "part-00000", "part-00001"]
    );
}
