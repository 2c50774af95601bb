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
//! | Read-only output directory (run as `nobody`) | Each dataset fails with `a: OUT/a: I/O error: Permission denied (os error 13)`; an output root that cannot be created stops the run (`the conversion could not start: …`); read-only dataset directories under `--overwrite` fail naming the directory (`a: OUT/a: I/O error: cannot write in it: Permission denied`); exit 1, nothing written | `a_read_only_output_directory_fails_each_dataset_and_writes_nothing` |
//! | Read-only file system (tmpfs mounted `ro`) | Each dataset fails with `Read-only file system (os error 30)`, exit 1 | `a_read_only_file_system_fails_each_dataset_and_writes_nothing` |
//! | Unreadable inputs (as `nobody`): a record file, a directory, a file only its content could identify; an unreadable part and OneFlow dataset directory | The record file fails its dataset, named; the directory and the file are listed on stderr as unreadable and the run exits 1, the rest converted; `count`/`verify` name each, exit 1. (Before the fix: listed as skipped, exit 0; `count`/`verify` left the file out silently) | `unreadable_inputs_fail_loudly_and_the_rest_converts` |
//! | A dataset's input directory removed after the walk (engine progress hook) | That dataset fails with `FILE: I/O error: No such file or directory (os error 2)`; the others convert | `a_dataset_directory_removed_during_the_run_fails_that_dataset_only` |
//! | A directory removed while the walk runs (best effort: six moments during a 20,000-file walk) | Either never seen (exit 0, absent from the output) or named with `No such file or directory` (exit 1); never partly converted, no temporaries | `a_directory_removed_while_the_walk_runs_is_never_half_converted` |
//! | Symbolic link loops (`up -> ..`, `itself -> itself`) and a dangling link | The walk ends; each is listed as skipped (`symbolic link loop to …`, `broken symbolic link: …`), exit 0 | `symbolic_link_loops_and_dangling_links_are_listed_and_skipped` |
//! | A named pipe where a record file could be | Listed as skipped (`not a regular file (a named pipe)`), never opened (nothing writes into it: opening it would block the run), exit 0. (Before the fix: passed over without a word) | `a_named_pipe_in_the_tree_is_listed_as_skipped_and_never_opened` |
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

mod child;
mod disk;
mod every_step;
mod hostile;
mod inputs;
mod killed;
mod read_only;
mod resumed;
mod skip;
mod streams;

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

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
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

/// The OFRecord payloads of every part in `dir`, in part order.
fn of_dataset(dir: &Path) -> Vec<Vec<u8>> {
    files_starting(dir, "part-")
        .iter()
        .flat_map(|part| of_records(part))
        .collect()
}
