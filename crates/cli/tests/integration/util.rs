//! Helpers for driving the real `ofconvert` binary in temporary directories.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use ofconvert_bridge::Transcoder;
use ofconvert_tfrecord::crc::masked_crc32c;

/// The repository's `testdata/`.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// A fresh temporary directory, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// The `ofconvert` binary under test: the one built with the tests, or the one
/// `OFCONVERT_TEST_BINARY` names (to run these tests against another build).
pub fn the_binary() -> &'static Path {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        std::env::var_os("OFCONVERT_TEST_BINARY")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ofconvert")))
    })
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Panics with the run's output unless it exited with `code`.
    pub fn expect_code(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    pub fn ok(self) -> Run {
        self.expect_code(0)
    }
}

/// A command line for the binary, built up one argument at a time and then run:
/// `ofconvert().arg("count").arg(&dir).expect_code(1)`.
#[derive(Debug)]
pub struct TestCommand {
    command: Command,
}

impl TestCommand {
    /// A command running `program` (a copy of the binary, say) instead of the one built.
    pub fn with_program(program: &Path) -> TestCommand {
        TestCommand {
            command: Command::new(program),
        }
    }

    pub fn arg<A: AsRef<OsStr>>(&mut self, arg: A) -> &mut TestCommand {
        self.command.arg(arg);
        self
    }

    pub fn args<I, A>(&mut self, args: I) -> &mut TestCommand
    where
        I: IntoIterator<Item = A>,
        A: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    pub fn env<K: AsRef<OsStr>, V: AsRef<OsStr>>(&mut self, key: K, value: V) -> &mut TestCommand {
        self.command.env(key, value);
        self
    }

    pub fn env_remove<K: AsRef<OsStr>>(&mut self, key: K) -> &mut TestCommand {
        self.command.env_remove(key);
        self
    }

    pub fn current_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut TestCommand {
        self.command.current_dir(dir);
        self
    }

    /// The underlying command, for what the builder does not cover (limits, pipes).
    pub fn command(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Runs the command to its end and collects its output. Panics if a signal killed it.
    pub fn run(&mut self) -> Run {
        let Output {
            status,
            stdout,
            stderr,
        } = self.command.output().expect("the binary runs");
        Run {
            code: status.code().expect("exited, not killed"),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// Runs the command and panics with its output unless it exited with `code`.
    pub fn expect_code(&mut self, code: i32) -> Run {
        self.run().expect_code(code)
    }

    /// Runs the command and panics with its output unless it succeeded.
    pub fn ok(&mut self) -> Run {
        self.expect_code(0)
    }

    /// Runs the command, which must succeed, and returns what it printed on stdout.
    pub fn stdout(&mut self) -> String {
        self.ok().stdout
    }

    /// Runs the command, which must succeed, and returns what it printed on stderr.
    pub fn stderr(&mut self) -> String {
        self.ok().stderr
    }

    /// Starts the command with its output thrown away.
    pub fn spawn_quiet(&mut self) -> Child {
        self.command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary starts")
    }

    /// Starts the command with its output piped back.
    pub fn spawn_piped(&mut self) -> Child {
        self.command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts")
    }
}

/// A command for the binary under test.
pub fn ofconvert() -> TestCommand {
    TestCommand::with_program(the_binary())
}

/// The payloads of a TFRecord file (compression sniffed).
pub fn tf_records(path: &Path) -> Vec<Vec<u8>> {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (reader, _) = ofconvert_tfrecord::Reader::sniffed(file, Default::default()).unwrap();
    reader
        .records()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The payloads of an OFRecord file.
pub fn of_records(path: &Path) -> Vec<Vec<u8>> {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ofconvert_ofrecord::Reader::new(file)
        .records()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What the default mapping makes of TFRecord payloads.
pub fn to_of(records: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut transcoder = Transcoder::new(Default::default()).unwrap();
    records
        .iter()
        .map(|record| {
            let mut out = Vec::new();
            transcoder.tf_to_of(record, &mut out).unwrap();
            out
        })
        .collect()
}

/// What the default mapping makes of OFRecord payloads.
pub fn to_tf(records: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut transcoder = Transcoder::new(Default::default()).unwrap();
    records
        .iter()
        .map(|record| {
            let mut out = Vec::new();
            transcoder.of_to_tf(record, &mut out).unwrap();
            out
        })
        .collect()
}

/// The files directly in `dir` whose names start with `prefix`, sorted.
pub fn files_starting(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .and_then(OsStr::to_str)
                .is_some_and(|name| name.starts_with(prefix))
        })
        .collect();
    files.sort();
    files
}

/// Every file under `dir`, relative to it, sorted.
pub fn tree(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out.sort();
    out
}

/// What `ofconvert count PATH --json` prints, which must succeed.
pub fn count_json(path: &Path) -> serde_json::Value {
    let run = ofconvert()
        .args(["count".as_ref(), path.as_os_str(), "--json".as_ref()])
        .ok();
    serde_json::from_str(&run.stdout).unwrap()
}

/// The manifest of the dataset in `dir`.
pub fn manifest(dir: &Path) -> serde_json::Value {
    let path = dir.join("ofconvert-manifest.json");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Writes `records` as a TFRecord file.
pub fn write_tfrecord(path: &Path, records: &[Vec<u8>]) {
    let mut writer = ofconvert_tfrecord::Writer::new(File::create(path).unwrap());
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap();
}

/// A serialized Example with an int64 `id` and a bytes `payload` of `size` bytes.
pub fn example(id: i64, size: usize) -> Vec<u8> {
    use ofconvert_bridge::tf;
    let payload: Vec<u8> = (0..size)
        .map(|i| (i as u8).wrapping_mul(31) ^ id as u8)
        .collect();
    let example = tf::example([
        ("id", tf::int64_feature([id])),
        ("payload", tf::bytes_feature([payload])),
    ]);
    let mut bytes = Vec::new();
    ofconvert_bridge::encode_example(&example, &mut bytes);
    bytes
}

/// Copies a file into `dir` (created), keeping its name; returns the new path.
pub fn copy_into(file: &Path, dir: &Path) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let target = dir.join(file.file_name().unwrap());
    fs::copy(file, &target).unwrap();
    target
}

/// Examples with ids `first..first + count`, each carrying `size` payload bytes.
pub fn examples(first: i64, count: usize, size: usize) -> Vec<Vec<u8>> {
    (0..count as i64)
        .map(|i| example(first + i, size))
        .collect()
}

/// Writes `records` as an OFRecord file.
pub fn write_ofrecord(path: &Path, records: &[Vec<u8>]) {
    let mut writer = ofconvert_ofrecord::Writer::new(File::create(path).unwrap());
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap();
}

/// A TFRecord header announcing `length` bytes, with a length checksum that holds.
pub fn tf_header(length: u64) -> Vec<u8> {
    let length = length.to_le_bytes();
    let mut header = length.to_vec();
    header.extend_from_slice(&masked_crc32c(&length).to_le_bytes());
    header
}

/// A TFRecord frame around `data`.
pub fn tf_frame(data: &[u8]) -> Vec<u8> {
    let mut framed = tf_header(data.len() as u64);
    framed.extend_from_slice(data);
    framed.extend_from_slice(&masked_crc32c(data).to_le_bytes());
    framed
}

/// An OFRecord frame around `data`: its length, then the bytes.
pub fn of_frame(data: &[u8]) -> Vec<u8> {
    let mut framed = (data.len() as u64).to_le_bytes().to_vec();
    framed.extend_from_slice(data);
    framed
}

/// Copies the tree `from` to `to` (created).
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The sample datasets of the README, copied into `dir/name`.
pub fn sample_tree(dir: &Path, name: &str) -> PathBuf {
    let copy = dir.join(name);
    copy_tree(&testdata().join("datasets"), &copy);
    copy
}

/// This machine's name, as `ofconvert` writes it into the locks it takes.
pub fn host_name() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("a Linux host name")
        .trim()
        .to_owned()
}

/// The id of a process that has ended.
pub fn ended_process() -> u32 {
    let mut child = Command::new("true").spawn().expect("true runs");
    let pid = child.id();
    child.wait().unwrap();
    pid
}
