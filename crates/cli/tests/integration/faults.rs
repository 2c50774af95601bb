//! Faults, tested: what `ofconvert` does when it is killed, when the disk fills up, when
//! the output cannot be written, when the input cannot be read or is hostile. Every run
//! here is checked for a panic (and for death by a signal, where it was not killed on
//! purpose); every error names the file, and the offset and record where there is one.
//! Tests that need root (a tmpfs, dropping to `nobody`) use the other way, or fail loudly,
//! when that is not allowed.
//!
//! | Fault | What happens | Test |
//! |---|---|---|
//! | SIGKILL during `tf2of` / `of2tf` (2 workers, 6 datasets), at six points found by watching the output: first temporary file, a temporary part of 256 KiB, first and third dataset being published, first and third manifest | Under `OUT` only hidden `.ofconvert-*` temporaries, finished datasets (manifest and parts byte-identical to a clean run), and, killed while a dataset's parts are renamed, parts byte-identical to a clean run's beside that dataset's complete staged manifest. `--resume` keeps the finished datasets and ends byte-identical to a clean run. (Before the fix, parts stood without any manifest.) | `tf2of_killed_at_any_point_…`, `of2tf_killed_at_any_point_…` |
//! | Full disk (a 1 MiB tmpfs; a file-size limit where mounting is not allowed) | The dataset that does not fit fails: `b-big: OUT/b-big/.ofconvert-part-0-0.tmp-PID: I/O error: No space left on device (os error 28)`, exit 1; nothing of it and no temporary file is left; the dataset that fits is complete | `a_full_disk_fails_the_dataset_that_does_not_fit_and_cleans_up` |
//! | File-size limit (`RLIMIT_FSIZE` 1 MiB) | The same with `File too large (os error 27)`. (Before the fix: killed by SIGXFSZ, no message, temporaries left) | `a_file_size_limit_fails_the_dataset_that_outgrows_it_with_efbig_not_a_kill` |
//! | Read-only output directory (run as `nobody`) | Each dataset fails with `a: OUT/a: I/O error: Permission denied (os error 13)`; an output root that cannot be created stops the run (`the conversion could not start: …`); read-only dataset directories under `--overwrite` fail on the first temporary file, named; exit 1, nothing written | `a_read_only_output_directory_fails_each_dataset_and_writes_nothing` |
//! | Read-only file system (tmpfs mounted `ro`) | Each dataset fails with `Read-only file system (os error 30)`, exit 1 | `a_read_only_file_system_fails_each_dataset_and_writes_nothing` |
//! | Unreadable inputs (as `nobody`): a record file, a directory, a file only its content could identify; an unreadable part and OneFlow dataset directory | The record file fails its dataset, named; the directory and the file are listed on stderr as unreadable and the run exits 1, the rest converted; `count`/`verify` name each, exit 1. (Before the fix: listed as skipped, exit 0; `count`/`verify` left the file out silently) | `unreadable_inputs_fail_loudly_and_the_rest_converts` |
//! | A dataset's input directory removed after the walk (engine progress hook) | That dataset fails with `FILE: I/O error: No such file or directory (os error 2)`; the others convert | `a_dataset_directory_removed_during_the_run_fails_that_dataset_only` |
//! | A directory removed while the walk runs (best effort: six moments during a 20,000-file walk) | Either never seen (exit 0, absent from the output) or named with `No such file or directory` (exit 1); never partly converted, no temporaries | `a_directory_removed_while_the_walk_runs_is_never_half_converted` |
//! | Symbolic link loops (`up -> ..`, `itself -> itself`) and a dangling link | The walk ends; each is listed as skipped (`symbolic link loop to …`, `broken symbolic link: …`), exit 0 | `symbolic_link_loops_and_dangling_links_are_listed_and_skipped` |
//! | File and directory names that are not UTF-8 | Convert both ways; directory names keep their bytes; manifests spell them with U+FFFD; `--resume` keeps the dataset; `count` takes such paths | `file_names_that_are_not_utf8_convert_both_ways` |
//! | Names with spaces and newlines | Convert both ways; kept exactly in directories, manifests and the JSON summary | `names_with_spaces_and_newlines_convert_both_ways` |
//! | 100,000 tiny files in one directory | `tf2of --records-per-part 25000`: 4 parts of 25,000 records in name order, 100,000 inputs in the manifest; `count` totals 100,000 | `a_hundred_thousand_tiny_files_are_all_converted_and_counted` |
//! | 0-byte files | An empty shard makes no empty part (numbering stays contiguous); an empty record-named file alone is a dataset of 0 records (manifest, no part); an empty unnamed file is skipped; an empty OneFlow part between two is left out of the TFRecord shards; `count` says 0 | `zero_byte_files_hold_no_records_and_make_no_empty_part` |
//! | A 4.4 GB TFRecord, damaged past 4 GiB (ignored by default: `cargo test -p ofconvert --test integration -- --ignored past_4_gib`) | `verify` and `count` report offsets past 2^32 exactly: the data checksum of record #64, the truncation of #65 | `errors_past_4_gib_name_their_exact_offset` |
//! | Length prefix 2^60 and 2^63−1, TFRecord (length checksum right) and OFRecord, under `RLIMIT_AS` 512 MiB | `count`, `verify`, `cat`, `tf2of` / `of2tf`: exit 1 with `FILE: offset N (record #3): truncated record (…1152921504606846976 data bytes…, only 100 bytes follow)`; nothing written. 2^63 as an OFRecord length: `negative record length` | `length_prefixes_of_2_60_and_2_63_fail_at_their_offset_in_small_memory` |
//! | The same lengths before a 1 GiB (sparse) tail, more than the address space | `count` steps over it and reports the truncation; reading holds the tail as it arrives and fails at the record with `I/O error: out of memory`, exit 1, no abort | `a_hostile_length_over_a_tail_bigger_than_memory_is_an_error_not_an_abort` |
//! | Checksums right, payload garbage (TFRecord fixture; an OFRecord part) | `count` counts the frames; `cat` prints the records that parse and names `offset 201 (record #2): record is not a tf.train.Example`; `of2tf` and `verify` name the bad OFRecord's offset (`tf2of` and `verify` on the fixture: damaged.rs, inspect.rs) | `payloads_that_do_not_parse_behind_right_framing_fail_with_their_offset` |
//! | GZIP members that split a record at any byte (length, its checksum, payload, data checksum) | All 500 records, through `count`, `verify`, `cat` and `tf2of` | `gzip_members_that_split_a_record_anywhere_still_give_every_record` |
//! | GZIP cut in its header, a wrong GZIP trailer checksum, junk after the last member, ZLIB cut short, ZLIB trailing junk, GZIP cut short, concatenated members (fixtures) | `count`, `verify`, `cat` and `tf2of` fail with `offset O (record #I): I/O error: …` at the first record they cannot finish (0 for the header; the stream's end, 50241 #500, for the trailer and the junk); concatenated members give 510 records | `damaged_compressed_streams_fail_where_the_good_records_end` |
//! | ZLIB with a wrong Adler-32 | Fails (exit 1, nothing kept), but at offset 0, not where the good records end: the decompressor's last read returns the error and drops its data | `a_zlib_stream_with_a_wrong_adler32_fails_and_nothing_of_it_is_kept` |
//! | `--on-corrupt skip` with 7 damaged records (first, last, both sides of the `--parts 3` cuts), plain and GZIP; an OFRecord dataset with 3 garbage payloads | Exactly 7 (3) skipped, each detail naming file, offset and record; the kept records are exactly the others, in order (parts of 8, 7, 8). (Before the fix: a record after a damaged cut was written twice and the damage counted twice) | `skip_counts_exactly_the_damaged_records_and_keeps_the_others_in_order` |

#![cfg(unix)]

use std::ffi::{CString, OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::thread::sleep;
use std::time::Duration;

use crate::util::*;
use serde_json::Value;

const MANIFEST: &str = "ofconvert-manifest.json";
const TEMP_PREFIX: &str = ".ofconvert-";

/// The uid and gid of `nobody`, which root drops to so that permission bits apply.
const NOBODY: u32 = 65534;

// ---------------------------------------------------------------------------------------
// Running the binary confined

/// Limits and privileges set in the child between fork and exec.
#[derive(Clone, Copy, Debug, Default)]
struct Confine {
    /// `RLIMIT_FSIZE`: the largest file the process may write, in bytes.
    file_size: Option<u64>,
    /// `RLIMIT_AS`: the most address space the process may map, in bytes.
    address_space: Option<u64>,
    /// Run as `nobody` when the tests run as root, who ignores permission bits; as anyone
    /// else, permission bits already apply.
    unprivileged: bool,
}

fn is_root() -> bool {
    euid() == 0
}

fn os_result(code: libc::c_int) -> io::Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A command for `program` that applies `confine` in the child.
fn confined(program: &Path, confine: Confine) -> TestCommand {
    let mut test_command = TestCommand::with_program(program);
    let command = test_command.command();
    let Confine {
        file_size,
        address_space,
        unprivileged,
    } = confine;
    if unprivileged && is_root() {
        // The standard library also drops root's supplementary groups.
        command.uid(NOBODY).gid(NOBODY);
    }
    // SAFETY: the closure runs in the forked child before exec and makes only
    // async-signal-safe calls (setrlimit).
    unsafe {
        command.pre_exec(move || {
            for (resource, bytes) in [
                (libc::RLIMIT_FSIZE, file_size),
                (libc::RLIMIT_AS, address_space),
            ] {
                if let Some(bytes) = bytes {
                    let limit = libc::rlimit {
                        rlim_cur: bytes,
                        rlim_max: bytes,
                    };
                    os_result(libc::setrlimit(resource, &limit))?;
                }
            }
            Ok(())
        });
    }
    test_command
}

/// Runs `program ARGS` under `confine`. Panics if the process was killed by a signal or
/// panicked: no fault may do either.
fn run_confined<I, S>(program: &Path, confine: Confine, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let Output {
        status,
        stdout,
        stderr,
    } = confined(program, confine)
        .args(args)
        .command()
        .output()
        .unwrap_or_else(|err| panic!("{} cannot be started {confine:?}: {err}", program.display()));
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    let Some(code) = status.code() else {
        panic!(
            "killed by signal {:?} {confine:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            status.signal()
        );
    };
    sane(Run {
        code,
        stdout,
        stderr,
    })
}

/// Panics if the run panicked (a panic exits with 101 and says so on stderr).
fn sane(run: Run) -> Run {
    assert!(
        !run.stderr.contains("panicked") && run.code != 101,
        "the binary panicked:\n{}",
        run.stderr
    );
    run
}

fn invoke<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    sane(ofconvert().args(args).run())
}

/// `[first, rest...]` as OS strings, for argument lists mixing words and paths.
fn args<const N: usize>(items: [&OsStr; N]) -> Vec<OsString> {
    items.iter().map(|item| item.to_os_string()).collect()
}

fn os(text: &str) -> &OsStr {
    OsStr::new(text)
}

/// A work directory every user can enter, with a copy of the binary in it that `nobody`
/// can run (the build directory may be inside a home only root can enter).
struct Sandbox {
    dir: tempfile::TempDir,
    program: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempdir();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let bin = dir.path().join("bin");
        fs::create_dir(&bin).unwrap();
        let program = bin.join("ofconvert");
        let built = Path::new(env!("CARGO_BIN_EXE_ofconvert"));
        if fs::hard_link(built, &program).is_err() {
            fs::copy(built, &program).unwrap();
        }
        fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).unwrap();
        Sandbox { dir, program }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A directory anyone may write into.
    fn open_dir(&self, name: &str) -> PathBuf {
        let dir = self.path().join(name);
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        dir
    }

    fn run_as_nobody<I, S>(&self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let confine = Confine {
            unprivileged: true,
            ..Confine::default()
        };
        run_confined(&self.program, confine, args)
    }
}

/// A tmpfs mounted over a directory, unmounted when dropped.
struct Tmpfs {
    target: CString,
}

impl Tmpfs {
    fn mount(dir: &Path, options: &str, read_only: bool) -> io::Result<Tmpfs> {
        let target = CString::new(dir.as_os_str().as_bytes())?;
        let data = CString::new(options)?;
        let flags = if read_only { libc::MS_RDONLY } else { 0 };
        // SAFETY: every pointer is to a NUL-terminated string that outlives the call.
        os_result(unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                flags,
                data.as_ptr().cast(),
            )
        })?;
        Ok(Tmpfs { target })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // SAFETY: `target` is a NUL-terminated path.
        unsafe {
            libc::umount2(self.target.as_ptr(), libc::MNT_DETACH);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Inputs

/// A TFRecord tree: one directory per dataset, `shards` shard files each of `records`
/// Examples of `size` bytes.
fn tf_tree(input: &Path, datasets: &[&str], shards: usize, records: usize, size: usize) {
    let mut id = 0;
    for dataset in datasets {
        let dir = input.join(dataset);
        fs::create_dir_all(&dir).unwrap();
        for shard in 0..shards {
            let name = format!("{dataset}-{shard:05}-of-{shards:05}");
            write_tfrecord(&dir.join(name), &examples(id, records, size));
            id += records as i64;
        }
    }
}

/// The same as a tree of OneFlow datasets with `part-N` files.
fn of_tree(input: &Path, datasets: &[&str], parts: usize, records: usize, size: usize) {
    let mut id = 0;
    for dataset in datasets {
        let dir = input.join(dataset);
        fs::create_dir_all(&dir).unwrap();
        for part in 0..parts {
            let name = format!("part-{part}");
            write_ofrecord(&dir.join(name), &to_of(&examples(id, records, size)));
            id += records as i64;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Looking at outputs

/// A file found under a directory.
struct Found {
    relative: PathBuf,
    size: u64,
}

/// Every file under `dir`, hidden ones included. Files that vanish while it looks (a
/// running conversion renames and removes them) are left out.
fn files_under(dir: &Path) -> Vec<Found> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<Found>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                walk(root, &path, out);
            } else if let Ok(relative) = path.strip_prefix(root) {
                out.push(Found {
                    relative: relative.to_path_buf(),
                    size: meta.len(),
                });
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort_by(|a, b| a.relative.cmp(&b.relative));
    out
}

fn name_of(path: &Path) -> &[u8] {
    path.file_name().map_or(&[], |name| name.as_bytes())
}

fn is_temporary(path: &Path) -> bool {
    name_of(path).starts_with(TEMP_PREFIX.as_bytes())
}

fn is_manifest(path: &Path) -> bool {
    name_of(path) == MANIFEST.as_bytes()
}

/// The temporary files under `dir`.
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .map(|found| found.relative)
        .filter(|path| is_temporary(path))
        .collect()
}

/// A manifest without the reader lines, which name the output directory by its absolute
/// path.
fn portable_manifest(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut manifest: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let object = manifest.as_object_mut().unwrap();
    object.remove("oneflow");
    object.remove("tensorflow");
    manifest
}

/// The same files with the same bytes; manifests alike but for the paths they name.
fn assert_same_output(output: &Path, clean: &Path) {
    let names =
        |dir: &Path| -> Vec<PathBuf> { files_under(dir).into_iter().map(|f| f.relative).collect() };
    let files = names(clean);
    assert_eq!(names(output), files);
    for file in &files {
        let (a, b) = (output.join(file), clean.join(file));
        if is_manifest(file) {
            assert_eq!(
                portable_manifest(&a),
                portable_manifest(&b),
                "{}",
                file.display()
            );
        } else {
            assert!(
                fs::read(&a).unwrap() == fs::read(&b).unwrap(),
                "{} differs",
                file.display()
            );
        }
    }
}

/// The manifest a dataset in `dir` has staged under its temporary name, if any.
fn staged_manifest(dir: &Path) -> Option<PathBuf> {
    let staged = format!("{TEMP_PREFIX}{MANIFEST}.tmp-");
    fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .find(|path| name_of(path).starts_with(staged.as_bytes()))
}

/// After a kill: every file with a final name is byte for byte what a clean run writes,
/// a manifest lists only parts that are in place, and a part is in place only beside its
/// dataset's manifest, or while the dataset was being published: beside its complete
/// manifest staged under a temporary name.
fn assert_nothing_looks_finished_unless_it_is(output: &Path, clean: &Path, when: &str) {
    for found in files_under(output) {
        let relative = &found.relative;
        let path = output.join(relative);
        let dir = path.parent().unwrap();
        if name_of(relative).starts_with(b".") {
            assert!(
                is_temporary(relative),
                "{when}: a hidden file that is not ours: {}",
                relative.display()
            );
            continue;
        }
        let twin = clean.join(relative);
        assert!(
            twin.is_file(),
            "{when}: {} is not a file a clean run writes",
            relative.display()
        );
        if is_manifest(relative) {
            let manifest = portable_manifest(&path);
            assert_eq!(manifest, portable_manifest(&twin), "{when}");
            for part in manifest["parts"].as_array().unwrap() {
                let part = dir.join(part["name"].as_str().unwrap());
                assert!(part.is_file(), "{when}: {} is missing", part.display());
            }
            continue;
        }
        assert!(
            fs::read(&path).unwrap() == fs::read(&twin).unwrap(),
            "{when}: {} looks finished but is not what a clean run writes",
            relative.display()
        );
        if dir.join(MANIFEST).is_file() {
            continue;
        }
        let staged = staged_manifest(dir).unwrap_or_else(|| {
            panic!(
                "{when}: {} is in place without its dataset's manifest, finished or staged: {:?}",
                relative.display(),
                files_under(dir)
                    .iter()
                    .map(|f| f.relative.display().to_string())
                    .collect::<Vec<_>>()
            )
        });
        let listed = portable_manifest(&staged)["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|part| part["name"].as_str().map(OsStr::new) == relative.file_name());
        assert!(
            listed,
            "{when}: {} is not in the staged manifest",
            relative.display()
        );
    }
}

// ---------------------------------------------------------------------------------------
// 1. Killed mid-run

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

// ---------------------------------------------------------------------------------------
// 2. A full disk, a file-size limit

/// A small dataset that fits in a megabyte and a big one whose parts do not, as input for
/// `command`.
fn small_and_big(input: &Path, command: &str) {
    let build = |dir: &str, files: usize, records: usize, size: usize| match command {
        "tf2of" => tf_tree(input, &[dir], files, records, size),
        _ => of_tree(input, &[dir], files, records, size),
    };
    build("a-small", 1, 10, 1_000);
    build("b-big", 2, 40, 40_000);
}

/// Runs `command` over [`small_and_big`] into `output` under `confine` and checks that the
/// big dataset failed with `why` and a path inside it, that nothing of it and no temporary
/// file is left, and that the small dataset is what an unconfined run writes.
fn fails_to_write(command: &str, output: &Path, confine: Confine, why: &str) {
    let work = tempdir();
    let input = work.path().join("in");
    small_and_big(&input, command);
    let run = run_confined(
        the_binary(),
        confine,
        args([
            os("--jobs"),
            os("1"),
            os(command),
            input.as_os_str(),
            output.as_os_str(),
        ]),
    )
    .expect_code(1);
    let big = output.join("b-big");
    let line = run
        .stderr
        .lines()
        .find(|line| line.trim_start().starts_with("b-big: "))
        .unwrap_or_else(|| panic!("no failure line for b-big:\n{}", run.stderr));
    assert!(
        line.contains(&format!("{}/", big.display())) && line.ends_with(why),
        "{line}"
    );
    assert!(run.stderr.contains("1 dataset failed"), "{}", run.stderr);
    assert_eq!(temporaries(output), Vec::<PathBuf>::new());
    assert!(files_under(&big).is_empty(), "{:?}", tree(&big));

    let clean = work.path().join("clean");
    run_confined(
        the_binary(),
        Confine::default(),
        args([os(command), input.as_os_str(), clean.as_os_str()]),
    )
    .ok();
    assert_same_output(&output.join("a-small"), &clean.join("a-small"));
}

fn file_size_limit() -> Confine {
    Confine {
        file_size: Some(1 << 20),
        ..Confine::default()
    }
}

#[test]
fn a_file_size_limit_fails_the_dataset_that_outgrows_it_with_efbig_not_a_kill() {
    for command in ["tf2of", "of2tf"] {
        let work = tempdir();
        let output = work.path().join("out");
        fails_to_write(
            command,
            &output,
            file_size_limit(),
            "File too large (os error 27)",
        );
    }
}

#[test]
fn a_full_disk_fails_the_dataset_that_does_not_fit_and_cleans_up() {
    for command in ["tf2of", "of2tf"] {
        let work = tempdir();
        let disk = work.path().join("disk");
        fs::create_dir(&disk).unwrap();
        let output = disk.join("out");
        match Tmpfs::mount(&disk, "size=1m", false) {
            Ok(_mounted) => fails_to_write(
                command,
                &output,
                Confine::default(),
                "No space left on device (os error 28)",
            ),
            Err(err) => {
                // Not a pass in disguise: the same failure, made by the kernel's other way
                // of refusing a write.
                eprintln!("no tmpfs here ({err}): a file-size limit stands in for a full disk");
                fails_to_write(
                    command,
                    &output,
                    file_size_limit(),
                    "File too large (os error 27)",
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// 3. A read-only output directory

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Panics unless an unprivileged child really cannot write into `dir`: root ignores
/// permission bits, and a test run with them ignored would show nothing.
fn assert_cannot_write_into(dir: &Path) {
    let probe = dir.join("probe");
    let status = confined(
        Path::new("/bin/sh"),
        Confine {
            unprivileged: true,
            ..Confine::default()
        },
    )
    .args(["-c", ": > \"$1\"", "sh"])
    .arg(&probe)
    .command()
    .stderr(Stdio::null())
    .status()
    .expect("/bin/sh runs");
    assert!(
        !status.success() && !probe.exists(),
        "{} was writable to the unprivileged child (uid {}): permission bits are not \
         enforced here, so a read-only output cannot be shown",
        dir.display(),
        if is_root() { NOBODY } else { euid() }
    );
}

fn read_only(dir: &Path) {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o555)).unwrap();
}

#[test]
fn a_read_only_output_directory_fails_each_dataset_and_writes_nothing() {
    for command in ["tf2of", "of2tf"] {
        let sandbox = Sandbox::new();
        let input = sandbox.path().join("in");
        let datasets = ["a", "b"];
        match command {
            "tf2of" => tf_tree(&input, &datasets, 2, 5, 100),
            _ => of_tree(&input, &datasets, 2, 5, 100),
        }

        // The output root is read-only: no dataset directory can be made.
        let output = sandbox.path().join("out");
        fs::create_dir(&output).unwrap();
        read_only(&output);
        assert_cannot_write_into(&output);
        let run = sandbox
            .run_as_nobody(args([os(command), input.as_os_str(), output.as_os_str()]))
            .expect_code(1);
        for dataset in datasets {
            let line = format!(
                "  {dataset}: {}: I/O error: Permission denied (os error 13)",
                output.join(dataset).display()
            );
            assert!(run.stderr.contains(&line), "{line}\n{}", run.stderr);
        }
        assert!(run.stderr.contains("2 datasets failed"), "{}", run.stderr);
        assert!(files_under(&output).is_empty(), "{:?}", tree(&output));

        // An output root that cannot be made: the run cannot start.
        let inside = output.join("new");
        let run = sandbox
            .run_as_nobody(args([os(command), input.as_os_str(), inside.as_os_str()]))
            .expect_code(1);
        assert!(
            run.stderr.contains(&format!(
                "ofconvert: the conversion could not start: {}: I/O error: Permission denied",
                inside.display()
            )),
            "{}",
            run.stderr
        );

        // The dataset directories exist but are read-only (an earlier run, --overwrite):
        // the first temporary part cannot be created.
        let output = sandbox.open_dir(&format!("existing-{command}"));
        for dataset in datasets {
            fs::create_dir(output.join(dataset)).unwrap();
            read_only(&output.join(dataset));
        }
        let run = sandbox
            .run_as_nobody(args([
                os(command),
                input.as_os_str(),
                output.as_os_str(),
                os("--overwrite"),
            ]))
            .expect_code(1);
        for dataset in datasets {
            let start = format!(
                "  {dataset}: {}/{TEMP_PREFIX}",
                output.join(dataset).display()
            );
            let line = run
                .stderr
                .lines()
                .find(|line| line.starts_with(&start))
                .unwrap_or_else(|| panic!("{start}\n{}", run.stderr));
            assert!(
                line.ends_with("I/O error: Permission denied (os error 13)"),
                "{line}"
            );
        }
        assert!(files_under(&output).is_empty(), "{:?}", tree(&output));
    }
}

#[test]
fn a_read_only_file_system_fails_each_dataset_and_writes_nothing() {
    let work = tempdir();
    let input = work.path().join("in");
    tf_tree(&input, &["a", "b"], 1, 5, 100);
    let output = work.path().join("ro");
    fs::create_dir(&output).unwrap();
    let _mounted = match Tmpfs::mount(&output, "size=1m", true) {
        Ok(mounted) => mounted,
        Err(err) => {
            // Then the unprivileged test above must show read-only output on its own.
            eprintln!("cannot mount a read-only tmpfs here ({err})");
            let sandbox = Sandbox::new();
            let dir = sandbox.path().join("read-only");
            fs::create_dir(&dir).unwrap();
            read_only(&dir);
            assert_cannot_write_into(&dir);
            return;
        }
    };
    let run = invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).expect_code(1);
    for dataset in ["a", "b"] {
        let line = format!(
            "  {dataset}: {}: I/O error: Read-only file system (os error 30)",
            output.join(dataset).display()
        );
        assert!(run.stderr.contains(&line), "{line}\n{}", run.stderr);
    }
    assert!(files_under(&output).is_empty());
}

// ---------------------------------------------------------------------------------------
// 4. Unreadable, vanishing, looping, oddly named, numerous, empty and huge inputs

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
    // Files with names that say nothing: the walk opens every one to look at it.
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

/// The OFRecord payloads of every part in `dir`, in part order.
fn of_dataset(dir: &Path) -> Vec<Vec<u8>> {
    files_starting(dir, "part-")
        .iter()
        .flat_map(|part| of_records(part))
        .collect()
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
    assert_eq!(
        tf_records(&back.join("my data/my data.tfrecord")),
        to_tf(&to_of(&first))
    );
    assert_eq!(
        tf_records(&back.join("new\nline set/new\nline set.tfrecord")),
        to_tf(&to_of(&second))
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
    assert_eq!(
        tree(&output),
        [
            "mixed/ofconvert-manifest.json",
            "mixed/part-00000",
            "mixed/part-00001",
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
    assert_eq!(summary["skipped_files"][0]["reason"], "not a TFRecord file");

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

// ---------------------------------------------------------------------------------------
// 5. Hostile length prefixes

/// Half a gigabyte of address space: far less than any length below asks for, enough for
/// the binary with its threads and buffers.
const ADDRESS_SPACE: u64 = 512 << 20;

fn small_memory() -> Confine {
    Confine {
        address_space: Some(ADDRESS_SPACE),
        ..Confine::default()
    }
}

/// Three good records, then a TFRecord header announcing `length` bytes (its checksum
/// right), then `tail` bytes. Returns the header's offset.
fn hostile_tfrecord(path: &Path, length: u64, tail: u64) -> u64 {
    let mut bytes: Vec<u8> = examples(0, 3, 100)
        .iter()
        .flat_map(|r| tf_frame(r))
        .collect();
    let offset = bytes.len() as u64;
    bytes.extend(tf_header(length));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, &bytes).unwrap();
    // Sparse: a long tail costs no disk.
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(offset + 12 + tail)
        .unwrap();
    offset
}

/// The same in OFRecord framing: an 8-byte signed length.
fn hostile_ofrecord(path: &Path, length: u64, tail: u64) -> u64 {
    let mut bytes = Vec::new();
    for record in to_of(&examples(0, 3, 100)) {
        bytes.extend(of_frame(&record));
    }
    let offset = bytes.len() as u64;
    bytes.extend(length.to_le_bytes());
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, &bytes).unwrap();
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(offset + 8 + tail)
        .unwrap();
    offset
}

/// Runs `args` in small memory and checks for exit 1 and `expected` on stdout or stderr.
fn fails_in_small_memory(args: Vec<OsString>, expected: &str) {
    let run = run_confined(the_binary(), small_memory(), &args).expect_code(1);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains(expected), "{args:?}: {expected}\n{all}");
}

#[test]
fn length_prefixes_of_2_60_and_2_63_fail_at_their_offset_in_small_memory() {
    let work = tempdir();
    for length in [1u64 << 60, (1u64 << 63) - 1] {
        let tf = work.path().join(format!("tf-{length}/x.tfrecord"));
        let offset = hostile_tfrecord(&tf, length, 100);
        let place = format!("{}: offset {offset} (record #3): ", tf.display());
        let what = format!(
            "{place}truncated record (the header announces {length} data bytes and a 4-byte \
             checksum, only 100 bytes follow)"
        );
        for command in ["count", "verify", "cat"] {
            fails_in_small_memory(args([os(command), tf.as_os_str()]), &what);
        }
        let output = work.path().join(format!("of-out-{length}"));
        let input = tf.parent().unwrap();
        fails_in_small_memory(
            args([os("tf2of"), input.as_os_str(), output.as_os_str()]),
            &what,
        );
        assert!(files_under(&output).is_empty());

        let of = work.path().join(format!("of-{length}/part-0"));
        let offset = hostile_ofrecord(&of, length, 100);
        let what = format!(
            "{}: offset {offset} (record #3): truncated record (length {length}, only 100 \
             payload bytes follow)",
            of.display()
        );
        for command in ["count", "verify", "cat"] {
            fails_in_small_memory(args([os(command), of.as_os_str()]), &what);
        }
        let output = work.path().join(format!("tf-out-{length}"));
        let input = of.parent().unwrap();
        fails_in_small_memory(
            args([os("of2tf"), input.as_os_str(), output.as_os_str()]),
            &what,
        );
        assert!(files_under(&output).is_empty());
    }

    // Past 2^63 an OFRecord length is negative, as OneFlow reads it.
    let of = work.path().join("negative/part-0");
    let offset = hostile_ofrecord(&of, 1 << 63, 100);
    fails_in_small_memory(
        args([os("verify"), of.as_os_str()]),
        &format!(
            "{}: offset {offset} (record #3): negative record length {}",
            of.display(),
            i64::MIN
        ),
    );
}

/// A hostile length followed by a gigabyte of (sparse) file: more than the address space
/// the process has. Counting steps over it; reading has to hold what it reads, and the
/// allocation failing is an error at the record, not an abort.
#[test]
fn a_hostile_length_over_a_tail_bigger_than_memory_is_an_error_not_an_abort() {
    let work = tempdir();
    let tail = 1 << 30;
    let tf = work.path().join("tf/x.tfrecord");
    let offset = hostile_tfrecord(&tf, 1 << 60, tail);
    let place = format!("{}: offset {offset} (record #3): ", tf.display());
    fails_in_small_memory(
        args([os("count"), tf.as_os_str()]),
        &format!("{place}truncated record"),
    );
    fails_in_small_memory(args([os("verify"), tf.as_os_str()]), &place);
    let output = work.path().join("of-out");
    fails_in_small_memory(
        args([
            os("tf2of"),
            tf.parent().unwrap().as_os_str(),
            output.as_os_str(),
        ]),
        &place,
    );

    let of = work.path().join("of/part-0");
    let offset = hostile_ofrecord(&of, 1 << 60, tail);
    let place = format!("{}: offset {offset} (record #3): ", of.display());
    fails_in_small_memory(
        args([os("count"), of.as_os_str()]),
        &format!("{place}truncated record"),
    );
    fails_in_small_memory(args([os("verify"), of.as_os_str()]), &place);
}

// ---------------------------------------------------------------------------------------
// 6. Right checksums over garbage, damaged and unusual compressed streams

fn damaged_fixture(name: &str) -> PathBuf {
    testdata().join("damaged").join(name)
}

/// The uncompressed framed stream of the 500 tutorial records.
fn tutorial_stream() -> Vec<u8> {
    fs::read(testdata().join("golden/tutorial.tfrecord")).unwrap()
}

/// Where each record of a framed TFRecord stream starts, and where the stream ends.
fn record_starts(stream: &[u8]) -> Vec<u64> {
    let mut starts = vec![0u64];
    let mut at = 0usize;
    while at < stream.len() {
        let length = u64::from_le_bytes(stream[at..at + 8].try_into().unwrap());
        at += 16 + length as usize;
        starts.push(at as u64);
    }
    starts
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// The lines of `--json` output of `cat`: one per record printed.
fn cat_json(path: &Path) -> Run {
    invoke(args([os("cat"), os("--json"), path.as_os_str()]))
}

#[test]
fn gzip_members_that_split_a_record_anywhere_still_give_every_record() {
    let work = tempdir();
    let stream = tutorial_stream();
    let starts = record_starts(&stream);
    let expected = tf_records(&testdata().join("golden/tutorial.tfrecord"));
    // Cuts inside a length, its checksum, a payload and a data checksum, and between records.
    let third = starts[3] as usize;
    for cut in [
        third + 3,
        third + 10,
        third + 30,
        starts[4] as usize - 2,
        third,
    ] {
        let input = work.path().join(format!("in-{cut}"));
        fs::create_dir(&input).unwrap();
        let file = input.join("split.tfrecord.gz");
        let mut members = gzip(&stream[..cut]);
        members.extend(gzip(&stream[cut..]));
        fs::write(&file, members).unwrap();

        let counted = invoke(args([os("count"), file.as_os_str()])).ok();
        assert!(
            counted.stdout.starts_with("    500  "),
            "{}",
            counted.stdout
        );
        invoke(args([os("verify"), file.as_os_str()])).ok();
        assert_eq!(cat_json(&file).ok().stdout.lines().count(), 500);
        let output = work.path().join(format!("out-{cut}"));
        invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).ok();
        assert_eq!(of_records(&output.join("part-00000")), to_of(&expected));
    }
}

/// Checks that `count`, `verify`, `cat` and `tf2of` all fail on `file` with
/// `path: offset OFFSET (record #INDEX): what`, and that tf2of leaves nothing.
fn every_reader_fails_at(file: &Path, offset: u64, index: u64, what: &str) {
    let expected = format!(
        "{}: offset {offset} (record #{index}): {what}",
        file.display()
    );
    for command in ["count", "verify", "cat"] {
        let run = invoke(args([os(command), file.as_os_str()])).expect_code(1);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains(&expected), "{command}: {expected}\n{all}");
    }
    let work = tempdir();
    let input = work.path().join("in");
    copy_into(file, &input);
    let output = work.path().join("out");
    let run = invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).expect_code(1);
    let expected = expected.replace(
        &file.display().to_string(),
        &input.join(file.file_name().unwrap()).display().to_string(),
    );
    assert!(run.stderr.contains(&expected), "{expected}\n{}", run.stderr);
    assert!(files_under(&output).is_empty(), "{:?}", tree(&output));
}

#[test]
fn damaged_compressed_streams_fail_where_the_good_records_end() {
    let work = tempdir();
    let stream = tutorial_stream();
    let starts = record_starts(&stream);
    let end = stream.len() as u64;
    let whole = gzip(&stream);

    // Cut inside the gzip header: nothing can be read.
    let file = work.path().join("header.tfrecord.gz");
    fs::write(&file, &whole[..5]).unwrap();
    every_reader_fails_at(&file, 0, 0, "I/O error: unexpected end of file");

    // The gzip trailer's CRC-32 of the data does not match: every record read, then the
    // error at the end.
    let file = work.path().join("trailer.tfrecord.gz");
    let mut damaged = whole.clone();
    let crc_at = damaged.len() - 8;
    damaged[crc_at] ^= 0xff;
    fs::write(&file, damaged).unwrap();
    every_reader_fails_at(
        &file,
        end,
        500,
        "I/O error: corrupt gzip stream does not have a matching checksum",
    );

    // Junk after the last gzip member is read as a member that is not one.
    let file = work.path().join("junk.tfrecord.gz");
    let mut junk = whole.clone();
    junk.extend_from_slice(b"not a gzip member");
    fs::write(&file, junk).unwrap();
    every_reader_fails_at(&file, end, 500, "I/O error: invalid gzip header");

    // A ZLIB stream cut in half fails at the start of the first record it cannot finish.
    let file = work.path().join("cut.tfrecord.zz");
    let compressed = zlib(&stream);
    fs::write(&file, &compressed[..compressed.len() / 2]).unwrap();
    let run = invoke(args([os("count"), file.as_os_str()])).expect_code(1);
    let place = run
        .stderr
        .split_once(": offset ")
        .and_then(|(_, rest)| rest.split_once(": I/O error: incomplete deflate stream"))
        .unwrap_or_else(|| panic!("{}", run.stderr))
        .0;
    let (offset, index) = place.split_once(" (record #").unwrap();
    let (offset, index): (u64, usize) = (
        offset.parse().unwrap(),
        index.trim_end_matches(')').parse().unwrap(),
    );
    assert!(index > 0 && index < 500, "{place}");
    assert_eq!(offset, starts[index], "{place}");
    every_reader_fails_at(
        &file,
        offset,
        index as u64,
        "I/O error: incomplete deflate stream",
    );

    // The fixtures, through the readers damaged.rs and inspect.rs do not use on them.
    let trailing = damaged_fixture("zlib_trailing.tfrecord.zz");
    every_reader_fails_at(
        &trailing,
        end,
        500,
        "I/O error: unexpected data after the end of the zlib stream",
    );
    let cut = damaged_fixture("gzip_cut.tfrecord.gz");
    every_reader_fails_at(&cut, 29243, 291, "I/O error: incomplete deflate stream");
    let concatenated = damaged_fixture("gzip_concat.tfrecord.gz");
    let counted = invoke(args([os("count"), concatenated.as_os_str()])).ok();
    assert!(
        counted.stdout.starts_with("    510  "),
        "{}",
        counted.stdout
    );
    assert_eq!(cat_json(&concatenated).ok().stdout.lines().count(), 510);
}

/// A ZLIB stream whose Adler-32 is wrong fails, and no record of it passes as good. (The
/// offset reported is where the decompressor's last read began, not the stream's end: the
/// checksum is checked inside the read that reaches the end, which then returns no data.)
#[test]
fn a_zlib_stream_with_a_wrong_adler32_fails_and_nothing_of_it_is_kept() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    let file = input.join("adler.tfrecord.zz");
    let mut compressed = zlib(&tutorial_stream());
    let last = compressed.len() - 1;
    compressed[last] ^= 0xff;
    fs::write(&file, compressed).unwrap();
    let named = format!("{}: offset ", file.display());
    for command in ["count", "verify"] {
        let run = invoke(args([os(command), file.as_os_str()])).expect_code(1);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(
            all.contains(&named) && all.contains("I/O error: corrupt deflate stream"),
            "{all}"
        );
    }
    let output = work.path().join("out");
    invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).expect_code(1);
    assert!(files_under(&output).is_empty());
}

#[test]
fn payloads_that_do_not_parse_behind_right_framing_fail_with_their_offset() {
    // TFRecord: the framing is right, so count counts all four; cat prints the three that
    // parse and names the one that does not.
    let garbage = damaged_fixture("crc_ok_garbage_payload.tfrecord");
    let counted = invoke(args([os("count"), garbage.as_os_str()])).ok();
    assert!(
        counted.stdout.starts_with("      4  "),
        "{}",
        counted.stdout
    );
    let cat = cat_json(&garbage).expect_code(1);
    assert_eq!(cat.stdout.lines().count(), 3);
    let expected = format!(
        "{}: offset 201 (record #2): record is not a tf.train.Example",
        garbage.display()
    );
    assert!(cat.stderr.contains(&expected), "{}", cat.stderr);

    // OFRecord: a payload that is not an OFRecord fails of2tf at its offset.
    let work = tempdir();
    let input = work.path().join("of");
    fs::create_dir(&input).unwrap();
    let mut records = to_of(&examples(0, 4, 10));
    records[2] = vec![0xff; 16];
    let part = input.join("part-0");
    write_ofrecord(&part, &records);
    let offset: usize = records[..2].iter().map(|record| record.len() + 8).sum();
    let output = work.path().join("tf");
    let run = invoke(args([os("of2tf"), input.as_os_str(), output.as_os_str()])).expect_code(1);
    let place = format!("{}: offset {offset} (record #2): ", part.display());
    assert!(run.stderr.contains(&place), "{place}\n{}", run.stderr);
    assert!(files_under(&output).is_empty());
    let verified = invoke(args([os("verify"), part.as_os_str()])).expect_code(1);
    assert!(verified.stdout.contains(&place), "{}", verified.stdout);
}

// ---------------------------------------------------------------------------------------
// 7. --on-corrupt skip

/// A framed TFRecord stream of `records` whose records at `damaged` have one data byte
/// flipped (their data checksum fails, their framing holds). Returns the stream and the
/// offsets of the damaged records' data.
fn with_flipped_data(records: &[Vec<u8>], damaged: &[usize]) -> (Vec<u8>, Vec<u64>) {
    let mut stream: Vec<u8> = records.iter().flat_map(|record| tf_frame(record)).collect();
    let starts = record_starts(&stream);
    let mut data_offsets = Vec::new();
    for &index in damaged {
        let data = starts[index] + 12;
        stream[data as usize + 5] ^= 0x40;
        data_offsets.push(data);
    }
    (stream, data_offsets)
}

fn without(records: &[Vec<u8>], damaged: &[usize]) -> Vec<Vec<u8>> {
    records
        .iter()
        .enumerate()
        .filter(|(index, _)| !damaged.contains(index))
        .map(|(_, record)| record.clone())
        .collect()
}

#[test]
fn skip_counts_exactly_the_damaged_records_and_keeps_the_others_in_order() {
    let work = tempdir();
    let input = work.path().join("in");
    let records = examples(0, 30, 50);
    // The first and last records, and both sides of the cuts --parts 3 makes (after
    // records 9 and 19).
    let damaged = [0, 9, 10, 17, 19, 20, 29];
    let (stream, offsets) = with_flipped_data(&records, &damaged);
    let plain = input.join("plain");
    fs::create_dir_all(&plain).unwrap();
    let plain_file = plain.join("x.tfrecord");
    fs::write(&plain_file, &stream).unwrap();
    let packed = input.join("packed");
    fs::create_dir_all(&packed).unwrap();
    let packed_file = packed.join("x.tfrecord.gz");
    fs::write(&packed_file, gzip(&stream)).unwrap();

    let output = work.path().join("out");
    let run = invoke(args([
        os("tf2of"),
        input.as_os_str(),
        output.as_os_str(),
        os("--on-corrupt"),
        os("skip"),
        os("--parts"),
        os("3"),
        os("--json"),
    ]))
    .ok();
    let summary: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(summary["records"], 2 * (30 - damaged.len()));
    let kept = to_of(&without(&records, &damaged));
    for (dataset, file) in [("packed", &packed_file), ("plain", &plain_file)] {
        let manifest = manifest(&output.join(dataset));
        assert_eq!(manifest["skipped"]["corrupt"], damaged.len(), "{dataset}");
        assert_eq!(manifest["records"], 30 - damaged.len(), "{dataset}");
        let per_part: Vec<u64> = manifest["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|part| part["records"].as_u64().unwrap())
            .collect();
        // Parts cut the 30 records at 10 and 20, damaged ones included.
        assert_eq!(per_part, [8, 7, 8], "{dataset}");
        let details: Vec<&str> = manifest["skipped"]["details"]
            .as_array()
            .unwrap()
            .iter()
            .map(|detail| detail.as_str().unwrap())
            .collect();
        assert_eq!(details.len(), damaged.len(), "{dataset}");
        for ((detail, index), offset) in details.iter().zip(damaged).zip(&offsets) {
            let place = format!(
                "{}: offset {offset} (record #{index}): corrupted record (data checksum",
                file.display()
            );
            assert!(detail.starts_with(&place), "{detail}\n{place}");
        }
        assert_eq!(of_dataset(&output.join(dataset)), kept, "{dataset}");
    }

    // OneFlow parts: payloads that do not parse are skipped and counted the same way.
    let of_input = work.path().join("of");
    fs::create_dir(&of_input).unwrap();
    let mut first = to_of(&examples(0, 6, 10));
    let mut second = to_of(&examples(6, 4, 10));
    for index in [1, 4] {
        first[index] = vec![0xff; 7];
    }
    second[0] = vec![0xff; 7];
    write_ofrecord(&of_input.join("part-0"), &first);
    write_ofrecord(&of_input.join("part-1"), &second);
    let back = work.path().join("tf");
    invoke(args([
        os("of2tf"),
        of_input.as_os_str(),
        back.as_os_str(),
        os("--on-corrupt"),
        os("skip"),
    ]))
    .ok();
    let manifest = manifest(&back);
    assert_eq!(manifest["skipped"]["corrupt"], 3);
    assert_eq!(manifest["records"], 7);
    let records: Vec<Vec<u8>> = files_starting(&back, "of-")
        .iter()
        .flat_map(|shard| tf_records(shard))
        .collect();
    let mut expected = without(&first, &[1, 4]);
    expected.extend(without(&second, &[0]));
    assert_eq!(records, to_tf(&expected));
}
