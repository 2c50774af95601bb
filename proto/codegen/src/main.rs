//! The bridge's message code in `src/proto/` is what prost-build writes from the vendored
//! protos, with the protoc binary of `protoc-bin-vendored` (so that a machine with only cargo
//! can run it). It is kept in the tree rather than made by a build script: a build script's
//! dependencies are compiled for the build alone, and the tests compiled the crates they
//! share with it (regex, tempfile, rustix) a second time.
//!
//! `cargo run --locked --manifest-path proto/codegen/Cargo.toml` checks it (CI does), and
//! with `-- --write` writes it anew, after a change to `proto/` or to prost-build's version.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const PROTOS: [&str; 3] = [
    "proto/tensorflow/core/example/example.proto",
    "proto/tensorflow/core/example/feature.proto",
    "proto/oneflow/core/record/record.proto",
];

/// The code files prost-build writes, one a proto package.
const FILES: [&str; 2] = ["tensorflow.rs", "oneflow.rs"];

fn main() -> ExitCode {
    let write = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--write") => true,
        Some(other) => {
            eprintln!("unknown argument {other}: none checks src/proto/, --write writes it");
            return ExitCode::from(2);
        }
    };
    match run(write) {
        Ok(stale) if stale.is_empty() => {
            println!("src/proto/ is what prost-build writes from proto/");
            ExitCode::SUCCESS
        }
        Ok(stale) => {
            eprintln!(
                "src/proto/{{{}}} differ from what prost-build writes from proto/: write them \
                 anew with cargo run --locked --manifest-path proto/codegen/Cargo.toml -- --write",
                stale.join(", ")
            );
            ExitCode::FAILURE
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}

/// Compiles the protos and compares (or, with `write`, replaces) the kept code; returns the
/// files that differ and were not written.
fn run(write: bool) -> Result<Vec<&'static str>, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = scratch_dir()?;
    let protoc = protoc_bin_vendored::protoc_bin_path()
        .map_err(|err| format!("no vendored protoc for this platform: {err}"))?;
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc);
    config.out_dir(&out);
    // Sorted maps make the typed encoder deterministic (and match text_format's key order).
    config.btree_map(["."]);
    let protos = PROTOS.map(|proto| root.join(proto));
    config
        .compile_protos(&protos, &[root.join("proto")])
        .map_err(|err| format!("prost-build: {err}"))?;
    let mut stale = Vec::new();
    for file in FILES {
        let made = fs::read_to_string(out.join(file))
            .map_err(|err| format!("prost-build wrote no {file}: {err}"))?;
        let kept_path = root.join("src/proto").join(file);
        let kept = fs::read_to_string(&kept_path).unwrap_or_default();
        if made == kept {
            continue;
        }
        if write {
            fs::write(&kept_path, &made)
                .map_err(|err| format!("writing {}: {err}", kept_path.display()))?;
            println!("wrote src/proto/{file}");
        } else {
            stale.push(file);
        }
    }
    let _ = fs::remove_dir_all(&out);
    Ok(stale)
}

/// A directory of this run's own, for prost-build's output.
fn scratch_dir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("ofconvert-proto-codegen-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|err| format!("creating {}: {err}", dir.display()))?;
    Ok(dir)
}
