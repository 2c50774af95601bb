//! The messages' code in `src/proto/` is what prost-build writes from the vendored protos,
//! with the protoc binary of `protoc-bin-vendored`, so that a machine with only cargo can
//! check it. It is kept in the tree rather than made by a build script: a build script's
//! dependencies are compiled a second time, unoptimised, for the build alone.
//!
//! After a change to `proto/` or to prost-build's version, write it anew with
//! `OFCONVERT_WRITE_PROTO_CODE=1 cargo test --release --test generated`.

use std::fs;
use std::path::Path;

const PROTOS: [&str; 3] = [
    "proto/tensorflow/core/example/example.proto",
    "proto/tensorflow/core/example/feature.proto",
    "proto/oneflow/core/record/record.proto",
];

/// The code files prost-build writes, one a proto package.
const FILES: [&str; 2] = ["tensorflow.rs", "oneflow.rs"];

#[test]
fn the_kept_message_code_is_what_prost_build_writes_from_the_protos() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile_dir();
    let protoc =
        protoc_bin_vendored::protoc_bin_path().expect("a vendored protoc for this platform");
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc);
    config.out_dir(&out);
    // Sorted maps make the typed encoder deterministic (and match text_format's key order).
    config.btree_map(["."]);
    let protos = PROTOS.map(|proto| root.join(proto));
    config
        .compile_protos(&protos, &[root.join("proto")])
        .expect("prost-build compiles the vendored protos");
    let rewrite = std::env::var_os("OFCONVERT_WRITE_PROTO_CODE").is_some();
    let mut stale = Vec::new();
    for file in FILES {
        let made = fs::read_to_string(out.join(file)).expect("prost-build wrote the file");
        let kept_path = root.join("src/proto").join(file);
        let kept = fs::read_to_string(&kept_path).unwrap_or_default();
        if made != kept {
            if rewrite {
                fs::write(&kept_path, &made).expect("src/proto is writable");
            } else {
                stale.push(file);
            }
        }
    }
    let _ = fs::remove_dir_all(&out);
    assert!(
        stale.is_empty(),
        "src/proto/{{{}}} differ from what prost-build writes from proto/: write them anew with \
         OFCONVERT_WRITE_PROTO_CODE=1 cargo test --release --test generated",
        stale.join(", ")
    );
}

/// A directory of this test's own under the target directory's temporary space.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("generated-proto-code-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("the target directory is writable");
    dir
}
