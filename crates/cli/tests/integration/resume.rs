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
pub(crate) fn big_input(root: &Path) -> PathBuf {
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
pub(crate) fn kill_when(child: &mut Child, ready: impl Fn() -> bool) {
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
pub(crate) fn finished_looking(dir: &Path) -> Vec<String> {
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
pub(crate) fn assert_same_output(resumed: &Path, clean: &Path) {
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

/// Sends `signal` once `ready` holds; returns the run's exit code and standard error.
#[cfg(unix)]
pub(crate) fn signal_when(
    mut child: Child,
    signal: i32,
    ready: impl Fn() -> bool,
) -> (i32, String) {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the conversion ended ({status}) before it could be interrupted");
        }
        if ready() {
            break;
        }
        sleep(Duration::from_millis(1));
    }
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on a child process of ours that has not been waited for.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let output = child.wait_with_output().unwrap();
    (
        output
            .status
            .code()
            .expect("exited, not killed by the signal"),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[cfg(unix)]
#[test]
fn sigint_and_sigterm_stop_cleanly_and_resume_finishes_the_run() {
    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let work = tempdir();
        let input = big_input(work.path());
        let output = work.path().join("out");
        let child = ofconvert()
            .args(["--jobs", "1", "tf2of"])
            .args([&input, &output])
            .spawn_piped();
        // Stopped after the first dataset is published, in the middle of the second.
        let first_manifest = output.join("a/ofconvert-manifest.json");
        let second = output.join("b");
        let (code, stderr) = signal_when(child, signal, || {
            first_manifest.exists()
                && second.is_dir()
                && !files_starting(&second, ".ofconvert-").is_empty()
        });
        assert_eq!(code, 130, "{name}: {stderr}");
        assert!(stderr.contains("interrupted"), "{name}: {stderr}");
        assert!(stderr.contains("--resume"), "{name}: {stderr}");
        // No lock, and nothing that looks finished but the finished dataset; of the second,
        // at most the parts finished before the signal, each with its note for --resume.
        assert_eq!(
            finished_looking(&output),
            ["a/ofconvert-manifest.json", "a/part-00000", "a/part-00001"],
            "{name}"
        );
        let hidden = |prefix| match second.is_dir() {
            true => files_starting(&second, prefix).len(),
            false => 0,
        };
        assert_eq!(
            hidden(".ofconvert-part-"),
            hidden(".ofconvert-done-"),
            "{name}"
        );
        assert_eq!(
            tree(&output).len(),
            3 + 2 * hidden(".ofconvert-done-"),
            "{name}: {:?}",
            tree(&output)
        );

        let run = ofconvert()
            .args(["tf2of".as_ref(), input.as_os_str(), output.as_os_str()])
            .arg("--resume")
            .ok();
        assert!(
            run.stdout.contains("(1 kept from an earlier run)"),
            "{}",
            run.stdout
        );
        let clean = work.path().join("clean");
        ofconvert()
            .args(["tf2of".as_ref(), input.as_os_str(), clean.as_os_str()])
            .ok();
        assert_same_output(&output, &clean);
    }
}

/// An input directory holding one small TFRecord file.
fn small_input(root: &Path) -> PathBuf {
    let input = root.join("in");
    fs::create_dir(&input).unwrap();
    write_tfrecord(&input.join("x.tfrecord"), &[example(1, 100)]);
    input
}

#[test]
fn a_second_run_on_a_locked_output_fails_at_once_naming_the_holder() {
    let work = tempdir();
    let input = small_input(work.path());
    let output = work.path().join("out");
    fs::create_dir(&output).unwrap();
    // The lock another run would hold, with its process id in it.
    let mut lock = fs::File::create(output.join(".ofconvert-lock")).unwrap();
    lock.try_lock().unwrap();
    std::io::Write::write_all(&mut lock, b"4242\n").unwrap();

    let run = ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), output.as_os_str()])
        .arg("--overwrite")
        .expect_code(2);
    assert!(
        run.stderr.contains("another ofconvert run (process 4242)"),
        "{}",
        run.stderr
    );
    assert_eq!(tree(&output), [".ofconvert-lock"]);

    // Released, the same run goes through and leaves no lock behind.
    drop(lock);
    ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), output.as_os_str()])
        .arg("--overwrite")
        .ok();
    assert_eq!(tree(&output), ["ofconvert-manifest.json", "part-00000"]);
}

#[cfg(target_os = "linux")]
#[test]
fn a_running_run_s_lock_is_reported_before_its_files_whatever_the_flags() {
    let work = tempdir();
    let input = small_input(work.path());
    let output = work.path().join("out");
    // What a run holds while it writes: its lock, a dataset's directory, a temporary part.
    fs::create_dir_all(output.join("train")).unwrap();
    fs::write(output.join(".ofconvert-part-0-0.tmp-7"), b"half").unwrap();
    let mut lock = fs::File::create(output.join(".ofconvert-lock")).unwrap();
    lock.try_lock().unwrap();
    let holder = format!("{} on {}", std::process::id(), host_name());
    std::io::Write::write_all(&mut lock, holder.as_bytes()).unwrap();

    for flags in [&[][..], &["--resume"][..], &["--overwrite"][..]] {
        let run = ofconvert()
            .args(["tf2of".as_ref(), input.as_os_str(), output.as_os_str()])
            .args(flags)
            .expect_code(2);
        let says = format!(
            "another ofconvert run (process {} on this machine ({})) is writing into this \
             directory: wait for it to end",
            std::process::id(),
            host_name()
        );
        assert!(run.stderr.contains(&says), "{flags:?}: {}", run.stderr);
        assert!(!run.stderr.contains("interrupted run"), "{}", run.stderr);
    }
    // Its holder runs on this machine: the lock is not broken.
    let refused = ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), output.as_os_str()])
        .args(["--resume", "--break-lock"])
        .expect_code(2);
    assert!(
        refused
            .stderr
            .contains("--break-lock breaks only a lock whose run has ended"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        tree(&output),
        [".ofconvert-lock", ".ofconvert-part-0-0.tmp-7"]
    );

    // Once it has ended, what it left is an interrupted run's.
    drop(lock);
    let ended = ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), output.as_os_str()])
        .expect_code(2);
    assert!(
        ended
            .stderr
            .contains("temporary files of an interrupted run"),
        "{}",
        ended.stderr
    );
}

#[test]
fn an_output_holding_only_hidden_temporary_files_is_named_as_such() {
    let work = tempdir();
    let input = small_input(work.path());
    let output = work.path().join("out");
    fs::create_dir(&output).unwrap();
    fs::write(output.join(".ofconvert-part-0-0.tmp-99"), b"half").unwrap();

    let run = ofconvert()
        .args(["tf2of".as_ref(), input.as_os_str(), output.as_os_str()])
        .expect_code(2);
    for expected in [
        ".ofconvert-part-0-0.tmp-99",
        "temporary files of an interrupted run",
        "--resume",
    ] {
        assert!(run.stderr.contains(expected), "{expected}: {}", run.stderr);
    }
}
