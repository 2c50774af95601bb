//! Helpers for driving the real `ofconvert` binary in temporary directories.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ofconvert_bridge::Transcoder;

/// The repository's `testdata/`.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
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

pub fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ofconvert"))
}

/// Runs `ofconvert ARGS` and collects its output.
pub fn ofconvert<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let Output {
        status,
        stdout,
        stderr,
    } = binary().args(args).output().expect("the binary runs");
    Run {
        code: status.code().expect("exited, not killed"),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
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
