//! Every storage operation of a conversion, failed in turn; the process killed after each.
//!
//! As SQLite's I/O-error and crash tests do, each case below is run once to count its
//! storage operations (listing, opening, reading, creating, writing, syncing, renaming or
//! copying, removing, putting, locking: `ofconvert_storage::faults`), then once for every
//! operation N: with N failing alone, with N and every one after it failing (a disk gone
//! read-only), and killed with SIGKILL right after N. Each run is a process of its own
//! ([`child`](super::child)).
//!
//! After each run the output must hold either the dataset there before, byte for byte, or
//! the one a run without faults writes, byte for byte; a run that fails says so and exits
//! non-zero. Killed while a dataset's files are being renamed, a directory may hold neither,
//! as long as the next run can tell: a replacement's journal is there, or no manifest stands
//! over the parts. Then the same command again, with `--resume` (or `--overwrite`, N by N
//! in turn) and no fault, must give the new dataset exactly, with no hidden file left.
//!
//! How many runs each case took is written to `fault-report-every-step-CASE.txt` in cargo's
//! temporary directory for tests, which CI prints.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::child::{ofconvert_ok, run_child, strings, tf_inputs, work_dir};
use super::*;
use crate::objects::S3Server;

/// The files under a directory and their bytes, those with a hidden component apart.
#[derive(Debug, Default, PartialEq, Eq)]
struct State {
    visible: BTreeMap<String, Vec<u8>>,
    hidden: Vec<String>,
}

fn state_of(dir: &Path) -> State {
    let mut state = State::default();
    for found in files_under(dir) {
        let relative = found.relative.to_string_lossy().into_owned();
        if relative.split('/').any(|part| part.starts_with('.')) {
            state.hidden.push(relative);
        } else {
            let bytes = fs::read(dir.join(&found.relative)).unwrap_or_default();
            state.visible.insert(relative, bytes);
        }
    }
    state
}

/// Where a case's output is: a local directory, or a prefix of a bucket of the test's S3
/// server (whose objects are files under its root).
#[derive(Clone, Copy)]
enum Place<'a> {
    Local,
    Bucket(&'a S3Server),
}

impl Place<'_> {
    /// The output `name` as the command line names it, and the directory holding its files.
    fn output(&self, work: &Path, name: &str) -> (String, PathBuf) {
        match self {
            Place::Local => {
                let dir = work.join(name);
                (dir.display().to_string(), dir)
            }
            Place::Bucket(s3) => (format!("s3://steps/{name}"), s3.file("steps", name)),
        }
    }

    fn env(&self) -> Vec<(String, String)> {
        match self {
            Place::Local => Vec::new(),
            Place::Bucket(s3) => s3.environment(),
        }
    }
}

/// A conversion tried at every step.
struct Case<'a> {
    name: &'a str,
    place: Place<'a>,
    /// Makes the output as it is before the command, at `out` (its argument), from the
    /// inputs under `work`.
    before: &'a (dyn Fn(&str) + Sync),
    /// The command, for the output `out`; the recovery adds `--resume` or `--overwrite`
    /// unless it is `commit`.
    command: &'a (dyn Fn(&str) -> Vec<String> + Sync),
}

/// Counts of what a case tried.
#[derive(Default)]
struct Tried {
    operations: u64,
    failed_alone: usize,
    failed_on: usize,
    kills: usize,
    left_old: usize,
    left_new: usize,
    left_between: usize,
}

fn run_case(work: &Path, case: &Case<'_>) -> Tried {
    let env = case.place.env();
    let report = |name: &str| work.join(format!("ops-{}-{name}", case.name));
    // The new dataset, and the operations a run takes to make it.
    let (clean_arg, clean_dir) = case.place.output(work, &format!("{}-clean", case.name));
    (case.before)(&clean_arg);
    let old_probe = {
        let (arg, dir) = case.place.output(work, &format!("{}-old", case.name));
        (case.before)(&arg);
        state_of(&dir)
    };
    let counted = run_child(
        &(case.command)(&clean_arg),
        "count",
        0,
        &env,
        &report("count"),
    );
    assert_eq!(counted.code, Some(0), "{}: {}", case.name, counted.output);
    let new = state_of(&clean_dir);
    assert!(new.hidden.is_empty(), "{}: {:?}", case.name, new.hidden);
    let operations = counted.operations;
    assert!(operations > 0, "{}: no operation counted", case.name);

    let tried = Mutex::new(Tried {
        operations,
        ..Tried::default()
    });
    let next = AtomicUsize::new(0);
    let modes = ["fail", "fail-on", "kill"];
    let runs: Vec<(&str, u64)> = modes
        .iter()
        .flat_map(|mode| (1..=operations).map(move |at| (*mode, at)))
        .collect();
    // Runs in a store wait on its answers more than on a core.
    let side_by_side = match case.place {
        Place::Local => 2,
        Place::Bucket(_) => 4,
    };
    std::thread::scope(|scope| {
        for worker in 0..side_by_side {
            let (runs, next, tried, env) = (&runs, &next, &tried, &env);
            let (old, new) = (&old_probe, &new);
            scope.spawn(move || loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(mode, at)) = runs.get(index) else {
                    return;
                };
                let label = format!("{}: {mode} at {at}", case.name);
                let (arg, dir) = case
                    .place
                    .output(work, &format!("{}-{mode}-{at}", case.name));
                (case.before)(&arg);
                let report = work.join(format!("ops-{}-{worker}", case.name));
                let ran = run_child(&(case.command)(&arg), mode, at, env, &report);
                let after = state_of(&dir);
                let journal = after.hidden.iter().any(|name| name.contains("swap-"));
                let which = if after.visible == old.visible {
                    "old"
                } else if after.visible == new.visible {
                    "new"
                } else {
                    "between"
                };
                if which == "between" {
                    // Killed while renaming, or failing to undo that: the next run must be
                    // able to tell, from the replacement's journal, or as parts without a
                    // manifest; and a run that lived says so.
                    assert!(
                        journal || !has_manifest(&after),
                        "{label}: neither dataset, and nothing to tell\n{:?}\n{}",
                        after.visible.keys().collect::<Vec<_>>(),
                        ran.output
                    );
                    assert!(
                        mode == "kill" || says_what_it_left(&ran.output),
                        "{label}: neither dataset, and the run does not say\n{:?}\n{}",
                        after.visible.keys().collect::<Vec<_>>(),
                        ran.output
                    );
                }
                if mode != "kill" {
                    if ran.code == Some(0) {
                        assert_eq!(which, "new", "{label}: exit 0\n{}", ran.output);
                    } else {
                        assert!(
                            ran.output
                                .contains(ofconvert_engine::storage::faults::INJECTED),
                            "{label}: failed without naming the fault\n{}",
                            ran.output
                        );
                    }
                    if which == "old" && old.visible.keys().any(|name| name.ends_with(MANIFEST)) {
                        assert!(
                            ran.code != Some(0),
                            "{label}: the old dataset and exit 0\n{}",
                            ran.output
                        );
                    }
                }
                // The next run without faults puts it right.
                let mut again = (case.command)(&arg);
                if again[0] != "commit" {
                    again.retain(|arg| arg != "--overwrite" && arg != "--resume");
                    again.push(
                        if at % 2 == 0 {
                            "--overwrite"
                        } else {
                            "--resume"
                        }
                        .to_owned(),
                    );
                }
                // A lock object outlives its killed holder (docs/locks.md).
                if matches!(case.place, Place::Bucket(_)) && ran.code.is_none() {
                    again.push("--break-lock".to_owned());
                }
                let recovered = run_child(&again, "count", 0, env, &report);
                // A commit that published finds nothing more to commit.
                let committed = again[0] == "commit"
                    && which == "new"
                    && recovered.output.contains("no sharded run to commit here");
                assert!(
                    recovered.code == Some(0) || committed,
                    "{label}: the run after it failed\n{}",
                    recovered.output
                );
                let recovered = state_of(&dir);
                assert_eq!(
                    recovered.visible.keys().collect::<Vec<_>>(),
                    new.visible.keys().collect::<Vec<_>>(),
                    "{label}: recovered"
                );
                assert!(
                    recovered.visible == new.visible,
                    "{label}: recovered, other bytes"
                );
                assert_eq!(recovered.hidden, Vec::<String>::new(), "{label}: left over");
                let mut tried = tried.lock().unwrap();
                match mode {
                    "fail" => tried.failed_alone += 1,
                    "fail-on" => tried.failed_on += 1,
                    _ => tried.kills += 1,
                }
                match which {
                    "old" => tried.left_old += 1,
                    "new" => tried.left_new += 1,
                    _ => tried.left_between += 1,
                }
            });
        }
    });
    let tried = tried.into_inner().unwrap();
    let text = format!(
        "{}: {} storage operations a run; {} runs with one failed, {} with all from one on \
         failed, {} killed after one; left the old dataset {} times, the new one {}, a \
         replacement to finish {}; each recovered by the next run\n",
        case.name,
        tried.operations,
        tried.failed_alone,
        tried.failed_on,
        tried.kills,
        tried.left_old,
        tried.left_new,
        tried.left_between
    );
    eprint!("{text}");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fault-report-every-step-{}.txt", case.name));
    fs::write(&path, text).unwrap();
    tried
}

/// Whether a run's output says what a failure it could not clean up after left.
fn says_what_it_left(output: &str) -> bool {
    [
        "undoing the replacement failed too",
        "removing what it wrote failed",
    ]
    .iter()
    .any(|words| output.contains(words))
        && output.contains("a run with --resume or --overwrite")
}

/// Whether `state` holds a manifest.
fn has_manifest(state: &State) -> bool {
    state.visible.keys().any(|name| name.ends_with(MANIFEST))
}

fn tf2of_cases(place: Place<'_>) {
    let work = work_dir();
    let work = work.path();
    let (old_in, new_in) = tf_inputs(work);
    let env = place.env();
    let jobs = ["--jobs", "1"];
    let convert = |input: &str, out: &str, more: &[&str]| {
        let mut args = strings(["tf2of", input, out]);
        args.extend(jobs.iter().chain(more).map(|arg| (*arg).to_owned()));
        args
    };
    let nothing = |_: &str| {};
    let fresh_new = |out: &str| convert(&new_in, out, &[]);
    let old_there = |out: &str| ofconvert_ok(&convert(&old_in, out, &[]), &env);
    let new_there = |out: &str| ofconvert_ok(&convert(&new_in, out, &[]), &env);
    let over_with_new = |out: &str| convert(&new_in, out, &["--overwrite"]);
    let over_with_old = |out: &str| convert(&old_in, out, &["--overwrite"]);
    let label = |what: &str| match place {
        Place::Local => what.to_owned(),
        Place::Bucket(_) => format!("bucket-{what}"),
    };
    let cases = [
        (
            label("fresh"),
            &nothing as &(dyn Fn(&str) + Sync),
            &fresh_new as &(dyn Fn(&str) -> Vec<String> + Sync),
        ),
        (label("overwrite-fewer-parts"), &old_there, &over_with_new),
        (label("overwrite-more-parts"), &new_there, &over_with_old),
    ];
    for (name, before, command) in cases {
        run_case(
            work,
            &Case {
                name: &name,
                place,
                before,
                command,
            },
        );
    }
}

#[test]
fn tf2of_fresh_and_over_old_datasets_survive_a_fault_or_kill_at_every_step() {
    tf2of_cases(Place::Local);
}

#[test]
fn a_resume_after_a_kill_survives_a_fault_or_kill_at_every_step() {
    let work = work_dir();
    let work = work.path();
    let (old_in, new_in) = tf_inputs(work);
    let convert = |input: &str, out: &str, more: &[&str]| {
        let mut args = strings(["tf2of", input, out, "--jobs", "1"]);
        args.extend(more.iter().map(|arg| (*arg).to_owned()));
        args
    };
    // Killed two thirds of the way through replacing the old dataset: some work items
    // finished and noted, the old dataset in place.
    let probe = work.join("probe");
    ofconvert_ok(&convert(&old_in, &probe.display().to_string(), &[]), &[]);
    let overwrite = convert(&new_in, &probe.display().to_string(), &["--overwrite"]);
    let counted = run_child(&overwrite, "count", 0, &[], &work.join("ops-probe"));
    let kill_at = counted.operations * 2 / 3;
    let killed = |out: &str| {
        ofconvert_ok(&convert(&old_in, out, &[]), &[]);
        let args = convert(&new_in, out, &["--overwrite"]);
        let report = work.join(format!("ops-killed-{}", out.len()));
        assert_eq!(run_child(&args, "kill", kill_at, &[], &report).code, None);
    };
    let resume = |out: &str| convert(&new_in, out, &["--resume"]);
    run_case(
        work,
        &Case {
            name: "resume-after-a-kill",
            place: Place::Local,
            before: &killed,
            command: &resume,
        },
    );
}

#[test]
fn of2tf_into_a_shared_tfds_folder_survives_a_fault_or_kill_at_every_step() {
    let work = work_dir();
    let work = work.path();
    // MNIST's two splits, from OneFlow datasets cut as TFDS cut them and cut into one part
    // each: given back to one folder, their shards and metadata side by side.
    let mnist = testdata().join("datasets/tfds/mnist");
    let (as_cut, one_part) = (work.join("of-as-cut"), work.join("of-one-part"));
    let mnist = mnist.display().to_string();
    ofconvert_ok(
        &strings(["tf2of", &mnist, &as_cut.display().to_string()]),
        &[],
    );
    let one = one_part.display().to_string();
    ofconvert_ok(&strings(["tf2of", &mnist, &one, "--parts", "1"]), &[]);
    let back = |input: &Path, out: &str, more: &[&str]| {
        let mut args = strings(["of2tf", &input.display().to_string(), out, "--jobs", "1"]);
        args.extend(more.iter().map(|arg| (*arg).to_owned()));
        args
    };
    let old_there = |out: &str| ofconvert_ok(&back(&as_cut, out, &[]), &[]);
    let over = |out: &str| back(&one_part, out, &["--overwrite"]);
    run_case(
        work,
        &Case {
            name: "of2tf-tfds-folder",
            place: Place::Local,
            before: &old_there,
            command: &over,
        },
    );
}

#[test]
fn a_commit_of_sharded_workers_survives_a_fault_or_kill_at_every_step() {
    let work = work_dir();
    let work = work.path();
    let (_, new_in) = tf_inputs(work);
    let workers = |out: &str| {
        for worker in ["0/2", "1/2"] {
            ofconvert_ok(
                &strings(["tf2of", &new_in, out, "--jobs", "1", "--shard", worker]),
                &[],
            );
        }
    };
    let commit = |out: &str| strings(["commit", out]);
    run_case(
        work,
        &Case {
            name: "commit",
            place: Place::Local,
            before: &workers,
            command: &commit,
        },
    );
}

#[test]
fn tf2of_into_a_bucket_survives_a_fault_or_kill_at_every_step() {
    let s3 = S3Server::start_in(work_dir(), &["steps"]);
    tf2of_cases(Place::Bucket(&s3));
}
