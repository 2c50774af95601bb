//! Killed mid-run

use super::*;

/// Where a running conversion is killed, each found by watching its output directory.
#[derive(Clone, Copy, Debug)]
enum KillPoint {
    /// A temporary file has appeared: the first parts are being written.
    FirstTemporary,
    /// A temporary part has grown to this many bytes.
    TemporaryBytes(u64),
    /// Parts with final names are in this many directories: a dataset is being published.
    Published(usize),
    /// This many datasets have their manifest.
    Manifests(usize),
}

const KILL_POINTS: [KillPoint; 6] = [
    KillPoint::FirstTemporary,
    KillPoint::TemporaryBytes(256 * 1024),
    KillPoint::Published(1),
    KillPoint::Manifests(1),
    KillPoint::Published(3),
    KillPoint::Manifests(3),
];

/// Six datasets, so that the kill points above all come well before the end whatever the
/// order in which two workers finish them.
const KILL_DATASETS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

impl KillPoint {
    fn reached(self, output: &Path) -> bool {
        let files = files_under(output);
        let published = |found: &&Found| {
            !name_of(&found.relative).starts_with(b".") && !is_manifest(&found.relative)
        };
        match self {
            KillPoint::FirstTemporary => files.iter().any(|f| is_temporary(&f.relative)),
            KillPoint::TemporaryBytes(bytes) => files
                .iter()
                .any(|f| is_temporary(&f.relative) && f.size >= bytes),
            KillPoint::Published(datasets) => {
                let mut dirs: Vec<&Path> = files
                    .iter()
                    .filter(published)
                    .filter_map(|f| f.relative.parent())
                    .collect();
                dirs.dedup();
                dirs.len() >= datasets
            }
            KillPoint::Manifests(count) => {
                files.iter().filter(|f| is_manifest(&f.relative)).count() >= count
            }
        }
    }
}

/// Waits, watching as closely as it can, until `point` is reached, then sends SIGKILL.
fn kill_at(child: &mut Child, point: KillPoint, output: &Path) {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the conversion ended ({status}) before {point:?}");
        }
        if point.reached(output) {
            break;
        }
        sleep(Duration::from_micros(200));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{point:?}");
}

/// Kills `command IN OUT` at each kill point, checks what it left, resumes it and compares
/// with a clean run.
fn kill_and_resume(work: &Path, command: &str, input: &Path) {
    let with = |output: &Path, more: &[&str]| -> Vec<OsString> {
        let mut list = args([
            os("--jobs"),
            os("2"),
            os(command),
            input.as_os_str(),
            output.as_os_str(),
        ]);
        list.extend(more.iter().map(OsString::from));
        list
    };
    let clean = work.join("clean");
    invoke(with(&clean, &[])).ok();
    for (n, point) in KILL_POINTS.into_iter().enumerate() {
        let output = work.join(format!("killed-{n}"));
        let mut child = ofconvert().args(with(&output, &[])).spawn_quiet();
        kill_at(&mut child, point, &output);
        let when = format!("{command} killed at {point:?}");
        assert_nothing_looks_finished_unless_it_is(&output, &clean, &when);

        let resumed = invoke(with(&output, &["--resume"])).ok();
        if matches!(point, KillPoint::Manifests(_)) {
            assert!(
                resumed.stdout.contains("kept from an earlier run"),
                "{when}: {}",
                resumed.stdout
            );
        }
        assert_same_output(&output, &clean);
    }
}

#[test]
fn tf2of_killed_at_any_point_leaves_nothing_unfinished_that_looks_finished_and_resumes() {
    let work = tempdir();
    let input = work.path().join("in");
    tf_tree(&input, &KILL_DATASETS, 2, 50, 40_000);
    kill_and_resume(work.path(), "tf2of", &input);
}

#[test]
fn of2tf_killed_at_any_point_leaves_nothing_unfinished_that_looks_finished_and_resumes() {
    let work = tempdir();
    let input = work.path().join("in");
    of_tree(&input, &KILL_DATASETS, 2, 50, 40_000);
    kill_and_resume(work.path(), "of2tf", &input);
}
