//! Compiles the vendored protos with prost-build, using the protoc binary that ships inside
//! the `protoc-bin-vendored` crate so a machine with only cargo can build.

use std::io;

fn main() -> io::Result<()> {
    let protoc = protoc_bin_vendored::protoc_bin_path()
        .map_err(|e| io::Error::other(format!("no vendored protoc for this platform: {e}")))?;
    let protos = [
        "proto/tensorflow/core/example/example.proto",
        "proto/tensorflow/core/example/feature.proto",
        "proto/oneflow/core/record/record.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc);
    // Sorted maps make the typed encoder deterministic (and match text_format's key order).
    config.btree_map(["."]);
    config.compile_protos(&protos, &["proto"])
}
