//! What `--resume` keeps of a killed run, and what it must not: runs killed at a chosen
//! storage operation (`every_step`'s child), with the process id of an earlier run, over
//! inputs rewritten at the same size, over a folder two datasets share, in a bucket; and
//! a sharded run over a published output.

use std::os::unix::fs::MetadataExt;
use std::process::Command;
use std::time::{Duration, SystemTime};

use super::child::{ofconvert_ok, run_child, run_child_with, strings, work_dir, Ran};
use super::*;
use crate::objects::S3Server;

/// What tells a journal line written: its flush on a disk, its put in an object store.
const LOCAL_LINE: [&str; 2] = ["flush ", ".jsonl"];
const STORE_LINE: [&str; 2] = ["put ", ".jsonl"];

/// Runs `args` killed once `nth` work items are noted in the journal (each line as
/// `line` tells it), through `command` when given (a namespace).
fn killed_after_line(
    command: Option<Command>,
    args: &[String],
    (nth, line): (u64, [&str; 2]),
    env: &[(String, String)],
    report: &Path,
) -> Ran {
    let command = command.unwrap_or_else(|| Command::new(std::env::current_exe().unwrap()));
    run_child_with(command, args, ("kill-after", nth, &line), env, report)
}

/// The summary `--json` printed, from a run's output (what follows the test harness's
/// own first line, when the run is `every_step`'s child).
fn summary_of(output: &str) -> Value {
    let start = output
        .find("{\n")
        .unwrap_or_else(|| panic!("no summary in\n{output}"));
    let end = output.rfind("\n}").unwrap() + 2;
    serde_json::from_str(&output[start..end]).unwrap()
}

/// The names of the parts a dataset's summary says were kept from an earlier run.
fn kept(dataset: &Value) -> Vec<String> {
    dataset["resumed"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|part| part.as_str().unwrap().to_owned())
        .collect()
}

fn tf2of(input: &Path, output: &Path, more: &[&str]) -> Vec<String> {
    let mut args = strings(["tf2of", "--jobs", "1"]);
    args.push(input.display().to_string());
    args.push(output.display().to_string());
    args.extend(more.iter().map(|arg| (*arg).to_owned()));
    args
}

#[test]
fn a_run_with_the_process_id_of_an_earlier_one_keeps_what_that_one_finished() {
    let work = work_dir();
    let (input, output) = (work.path().join("in/d"), work.path().join("out"));
    tf_tree(&work.path().join("in"), &["d"], 4, 3, 100);
    // Each run in a PID namespace of its own, under a shell that is process 1 there: the
    // conversion is process 2 every time, as every run is process 1 in a container.
    let in_a_namespace = || {
        let mut command = Command::new("unshare");
        command.args(["--pid", "--fork", "sh", "-c", "\"$@\"; exit $?", "sh"]);
        command
    };
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "true"])
        .status();
    assert!(
        probe.is_ok_and(|status| status.success()),
        "this test needs a PID namespace (unshare --pid --fork), which this machine refuses"
    );
    let report = work.path().join("report");
    // Killed once two work items are noted, then, resumed, once a third is.
    let first = tf2of(&input, &output, &[]);
    let killed = killed_after_line(
        Some(in_a_namespace()),
        &first,
        (2, LOCAL_LINE),
        &[],
        &report,
    );
    assert_eq!(killed.code, Some(128 + libc::SIGKILL), "{}", killed.output);
    let words_dir = work.path().join("words");
    copy_tree(&output, &words_dir);
    let resume = |output: &Path| tf2of(&input, output, &["--resume"]);
    let second = killed_after_line(
        Some(in_a_namespace()),
        &resume(&output),
        (1, LOCAL_LINE),
        &[],
        &report,
    );
    assert_eq!(second.code, Some(128 + libc::SIGKILL), "{}", second.output);
    let journals = files_starting(&output, ".ofconvert-done-");
    assert_eq!(journals.len(), 2, "one journal a run: {journals:?}");

    let last = ofconvert()
        .args(resume(&output))
        .args(["--json", "-v"])
        .ok();
    let summary: Value = serde_json::from_str(&last.stdout).unwrap();
    let dataset = &summary["datasets"][0];
    assert_eq!(kept(dataset), ["part-00000", "part-00001", "part-00002"]);
    assert_eq!(summary["kept_parts"], 3);
    assert_eq!(summary["kept_records"], 9);
    // What this run read and wrote: the last input and its part.
    let last_input = fs::metadata(input.join("d-00003-of-00004")).unwrap().len();
    assert_eq!(summary["input_bytes"], last_input);
    let clean = work.path().join("clean");
    ofconvert_ok(&tf2of(&input, &clean, &[]), &[]);
    assert_eq!(
        summary["output_bytes"],
        fs::metadata(clean.join("part-00003")).unwrap().len()
    );
    assert_same_output(&output, &clean);

    // The words say it too.
    let words = ofconvert().args(resume(&words_dir)).arg("-v").ok();
    let all = format!("{}{}", words.stdout, words.stderr);
    assert!(all.contains("kept 2 parts"), "{all}");
    assert!(all.contains("kept part-00000"), "{all}");
    assert!(all.contains("wrote part-00003"), "{all}");
    assert!(
        all.contains("read by the earlier run: d-00000-of-00004"),
        "{all}"
    );
    assert!(
        all.contains("; 2 parts (6 records) kept from an earlier run"),
        "{all}"
    );
}

/// Rewrites `path` with `records`, at a modification time an hour later than it had.
fn rewrite(path: &Path, records: &[Vec<u8>]) {
    let (size, modified) = {
        let meta = fs::metadata(path).unwrap();
        (meta.len(), meta.modified().unwrap())
    };
    write_tfrecord(path, records);
    assert_eq!(fs::metadata(path).unwrap().len(), size, "not the same size");
    let file = File::options().write(true).open(path).unwrap();
    file.set_modified(modified + Duration::from_secs(3600))
        .unwrap();
}

#[test]
fn an_input_rewritten_at_the_same_size_is_converted_again() {
    let work = work_dir();
    let (input, output) = (work.path().join("in/d"), work.path().join("out"));
    tf_tree(&work.path().join("in"), &["d"], 2, 3, 100);
    let report = work.path().join("report");

    // Killed with the first work item noted; its input then rewritten.
    let killed = killed_after_line(
        None,
        &tf2of(&input, &output, &[]),
        (1, LOCAL_LINE),
        &[],
        &report,
    );
    assert_eq!(killed.code, None, "{}", killed.output);
    rewrite(&input.join("d-00000-of-00002"), &examples(100, 3, 100));
    let resumed = ofconvert()
        .args(tf2of(&input, &output, &["--resume", "--json"]))
        .ok();
    let summary: Value = serde_json::from_str(&resumed.stdout).unwrap();
    assert_eq!(kept(&summary["datasets"][0]), Vec::<String>::new());
    let clean = work.path().join("clean");
    ofconvert_ok(&tf2of(&input, &clean, &[]), &[]);
    assert_same_output(&output, &clean);

    // A dataset published whole is not kept either once an input of it is rewritten.
    rewrite(&input.join("d-00001-of-00002"), &examples(110, 3, 100));
    let again = ofconvert()
        .args(tf2of(&input, &output, &["--resume", "--json"]))
        .ok();
    let summary: Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(summary["datasets"][0]["status"], "converted");
    let clean = work.path().join("clean-again");
    ofconvert_ok(&tf2of(&input, &clean, &[]), &[]);
    assert_same_output(&output, &clean);
}

#[test]
fn resuming_a_folder_two_datasets_share_keeps_each_ones_parts() {
    let work = work_dir();
    let of = work.path().join("of");
    let mnist = testdata().join("datasets/tfds/mnist");
    ofconvert_ok(
        &strings([
            "tf2of",
            &mnist.display().to_string(),
            &of.display().to_string(),
        ]),
        &[],
    );
    let back = work.path().join("back");
    let of2tf = |output: &Path, more: &[&str]| {
        let mut args = strings(["of2tf", "--jobs", "1"]);
        args.push(of.display().to_string());
        args.push(output.display().to_string());
        args.extend(more.iter().map(|arg| (*arg).to_owned()));
        args
    };
    ofconvert_ok(&of2tf(&back, &[]), &[]);
    // The train split's input is rewritten (the same bytes, touched): it is converted
    // again, the test split kept. A first resume is killed with train's first work item
    // noted.
    for part in files_starting(&of.join("3.0.1/mnist-train"), "part-") {
        let file = File::options().write(true).open(&part).unwrap();
        file.set_modified(SystemTime::now() + Duration::from_secs(3600))
            .unwrap();
    }
    let report = work.path().join("report");
    let killed = killed_after_line(
        None,
        &of2tf(&back, &["--resume"]),
        (1, LOCAL_LINE),
        &[],
        &report,
    );
    assert_eq!(killed.code, None, "{}", killed.output);
    let noted = files_starting(&back.join("3.0.1"), ".ofconvert-mnist-train.part-");
    assert_eq!(noted.len(), 1, "{noted:?}");
    let inode = fs::metadata(&noted[0]).unwrap().ino();

    let resumed = ofconvert().args(of2tf(&back, &["--resume", "--json"])).ok();
    let summary: Value = serde_json::from_str(&resumed.stdout).unwrap();
    let status = |source: &str| {
        summary["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|dataset| dataset["source"] == source)
            .unwrap()
            .clone()
    };
    assert_eq!(status("3.0.1/mnist-test")["status"], "kept");
    let train = status("3.0.1/mnist-train");
    assert_eq!(train["status"], "converted");
    let shard = "mnist-train.tfrecord-00000-of-00002";
    assert_eq!(kept(&train), [shard]);
    assert_eq!(
        fs::metadata(back.join("3.0.1").join(shard)).unwrap().ino(),
        inode
    );
    let clean = work.path().join("clean");
    ofconvert_ok(&of2tf(&clean, &[]), &[]);
    assert_same_output(&back, &clean);
}

#[test]
fn a_dataset_bound_for_a_bucket_resumes_at_the_part() {
    let s3 = S3Server::start_in(work_dir(), &["resumed"]);
    let env = s3.environment();
    let work = work_dir();
    let input = work.path().join("in/d");
    tf_tree(&work.path().join("in"), &["d"], 4, 3, 100);
    let convert = |name: &str, more: &[&str]| {
        let mut args = strings(["tf2of", "--jobs", "1"]);
        args.push(input.display().to_string());
        args.push(format!("s3://resumed/{name}"));
        args.extend(more.iter().map(|arg| (*arg).to_owned()));
        args
    };
    let report = work.path().join("report");
    // One transfer in flight: a work item's part is waited for once the next is done.
    let killed = killed_after_line(
        None,
        &convert("out", &["--in-flight", "1"]),
        (2, STORE_LINE),
        &env,
        &report,
    );
    assert_eq!(killed.code, None, "{}", killed.output);

    // The lock object outlives its killed holder (docs/locks.md).
    let resumed = run_child(
        &convert("out", &["--resume", "--break-lock", "--json"]),
        "count",
        0,
        &env,
        &report,
    );
    assert_eq!(resumed.code, Some(0), "{}", resumed.output);
    let summary = summary_of(&resumed.output);
    assert_eq!(
        kept(&summary["datasets"][0]),
        ["part-00000", "part-00001"],
        "{}",
        resumed.output
    );
    ofconvert_ok(&convert("clean", &[]), &env);
    assert_same_output(&s3.file("resumed", "out"), &s3.file("resumed", "clean"));
}

#[test]
fn a_sharded_run_over_a_published_output_replaces_it_with_overwrite() {
    let work = work_dir();
    let (old, new) = (work.path().join("old"), work.path().join("new"));
    tf_tree(&old, &["d"], 4, 3, 100);
    tf_tree(&new, &["d"], 2, 5, 60);
    let output = work.path().join("out");
    ofconvert_ok(&tf2of(&old.join("d"), &output, &[]), &[]);
    let worker = |k: &str, more: &[&str]| {
        let mut args = tf2of(&new.join("d"), &output, &["--shard", k]);
        args.extend(more.iter().map(|arg| (*arg).to_owned()));
        ofconvert().args(args).run()
    };
    // Without --overwrite a worker refuses what is there, as a run does.
    let refused = worker("0/2", &[]).expect_code(2);
    assert!(refused.stderr.contains("--overwrite"), "{}", refused.stderr);
    worker("0/2", &["--overwrite"]).ok();
    // Every worker of the run says the same.
    let differs = worker("1/2", &[]).expect_code(2);
    assert!(
        differs
            .stderr
            .contains("--overwrite in the run's plan, without --overwrite here"),
        "{}",
        differs.stderr
    );
    // Until the commit, the dataset published before is there as it was.
    let before = work.path().join("before");
    ofconvert_ok(&tf2of(&old.join("d"), &before, &[]), &[]);
    worker("1/2", &["--overwrite"]).ok();
    let visible = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        files_under(dir)
            .into_iter()
            .filter(|found| !name_of(&found.relative).starts_with(b"."))
            .filter(|found| !found.relative.starts_with(".ofconvert"))
            .map(|found| {
                let bytes = fs::read(dir.join(&found.relative)).unwrap();
                (found.relative.display().to_string(), bytes)
            })
            .collect()
    };
    assert_eq!(visible(&output), visible(&before));
    ofconvert()
        .args(["commit".as_ref(), output.as_os_str()])
        .ok();
    let clean = work.path().join("clean");
    ofconvert_ok(&tf2of(&new.join("d"), &clean, &[]), &[]);
    assert_same_output(&output, &clean);
}
