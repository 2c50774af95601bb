//! The process a faulted run lives in: this test binary run again as `step_child`, which
//! turns the storage's faults on (`ofconvert_storage::faults`) and calls the command line's
//! `run`; and what the tests that run it share.

use std::process::Command;

use super::*;

/// The variable that makes `step_child` run a command: its arguments, the fault and where
/// to write the count of operations, as JSON.
const CHILD: &str = "OFCONVERT_EVERY_STEP_CHILD";

/// The child process of these tests: runs the command line `OFCONVERT_EVERY_STEP_CHILD`
/// gives, with its fault, and exits with the command's status.
#[test]
#[ignore = "the child process of the every-step tests, which run it themselves"]
fn step_child() {
    use ofconvert_engine::storage::faults::{inject, Fault};
    let spec: Value = serde_json::from_str(&std::env::var(CHILD).expect(CHILD)).unwrap();
    let number = |key: &str| spec[key].as_u64().unwrap();
    let fault = match spec["fault"].as_str().unwrap() {
        "count" => Fault::Count,
        "fail" => Fault::Fail {
            at: number("at"),
            persistent: false,
        },
        "fail-on" => Fault::Fail {
            at: number("at"),
            persistent: true,
        },
        "kill" => Fault::Kill {
            after: number("at"),
        },
        // The nth operation that says all of `matching`.
        "kill-after" => Fault::KillAfterNth {
            matching: spec["matching"]
                .as_array()
                .unwrap()
                .iter()
                .map(|part| part.as_str().unwrap().to_owned())
                .collect(),
            nth: number("at"),
        },
        other => panic!("no fault {other}"),
    };
    let args: Vec<String> = spec["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap().to_owned())
        .collect();
    let faults = inject(fault);
    let code = ofconvert_cli::run(std::iter::once("ofconvert".to_owned()).chain(args));
    fs::write(
        spec["report"].as_str().unwrap(),
        faults.operations().to_string(),
    )
    .unwrap();
    std::process::exit(code);
}

/// What one faulted run did.
pub(super) struct Ran {
    /// The exit status, `None` when killed.
    pub(super) code: Option<i32>,
    pub(super) output: String,
    /// Operations it tried, unless it was killed.
    pub(super) operations: u64,
}

/// Runs `args` in a child process with `fault` (`count`, `fail`, `fail-on`, `kill`) at
/// operation `at`, with `env` set.
pub(super) fn run_child(
    args: &[String],
    fault: &str,
    at: u64,
    env: &[(String, String)],
    report: &Path,
) -> Ran {
    let test_binary = std::env::current_exe().unwrap();
    run_child_with(
        Command::new(test_binary),
        args,
        (fault, at, &[]),
        env,
        report,
    )
}

/// [`run_child`] through `command`, to which the test binary's path (unless it is the
/// command) and arguments are added: a command that starts it in a namespace of its own.
pub(super) fn run_child_with(
    mut command: Command,
    args: &[String],
    (fault, at, matching): (&str, u64, &[&str]),
    env: &[(String, String)],
    report: &Path,
) -> Ran {
    let _ = fs::remove_file(report);
    let spec = serde_json::json!({
        "args": args,
        "fault": fault,
        "at": at,
        "matching": matching,
        "report": report,
    });
    let test_binary = std::env::current_exe().unwrap();
    if command.get_program() != test_binary {
        command.arg(&test_binary);
    }
    let output = command
        .args([
            "faults::child::step_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .env(CHILD, spec.to_string())
        .envs(env.iter().map(|(key, value)| (key, value)))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !text.contains("panicked"),
        "{fault} at {at}: {args:?} panicked:\n{text}"
    );
    let killed = output.status.signal() == Some(libc::SIGKILL);
    assert!(
        fault.starts_with("kill") || !killed,
        "{fault} at {at}: {args:?}: {:?}\n{text}",
        output.status
    );
    assert!(
        output.status.code().is_some() || killed,
        "{fault} at {at}: {args:?}: died of {:?}\n{text}",
        output.status
    );
    Ran {
        code: output.status.code(),
        output: text,
        operations: fs::read_to_string(report)
            .ok()
            .and_then(|text| text.parse().ok())
            .unwrap_or(0),
    }
}

/// Runs the real binary, which must succeed.
pub(super) fn ofconvert_ok(args: &[String], env: &[(String, String)]) {
    let mut command = ofconvert();
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command.ok();
}

pub(super) fn strings<const N: usize>(args: [&str; N]) -> Vec<String> {
    args.iter().map(|arg| (*arg).to_owned()).collect()
}

/// The inputs of the tf2of cases: `old` (four shards) and `new` (two shards of other
/// records), each a dataset of a README and a label file beside its shards.
pub(super) fn tf_inputs(work: &Path) -> (String, String) {
    let old = work.join("in-old");
    let new = work.join("in-new");
    tf_tree(&old, &["d"], 4, 3, 40);
    tf_tree(&new, &["d"], 2, 2, 60);
    fs::write(old.join("d/README"), "the old one\n").unwrap();
    fs::write(new.join("d/README"), "the new one\n").unwrap();
    fs::write(new.join("d/labels.txt"), "cat\ndog\n").unwrap();
    (
        old.join("d").display().to_string(),
        new.join("d").display().to_string(),
    )
}

/// A directory for a case's many runs: in memory where the machine has room there, since
/// the runs sync every file they write.
pub(super) fn work_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    match shm.is_dir() {
        true => tempfile::tempdir_in(shm).unwrap_or_else(|_| tempdir()),
        false => tempdir(),
    }
}
