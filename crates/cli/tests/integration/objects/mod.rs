//! Object stores: `tf2of` and `of2tf` read and write `s3://` URLs through a real S3 server
//! (s3s-fs, run in this process on 127.0.0.1) with the same bytes as on a local disk.

use std::fs;
use std::path::Path;

use crate::util::*;

mod errors;
mod inputs;
mod inspect;
#[cfg(target_os = "linux")]
mod lock;
mod public;
mod reader_line;
mod server;
mod transfers;
mod versions;

pub(crate) use server::{S3Server, ACCESS_KEY, PUBLIC_BUCKET, SECRET_KEY};

/// The files under `dir` that a conversion writes, not counting manifests (which name
/// their own location): relative path and bytes.
pub(crate) fn written(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|file| !file.split('/').any(|part| part.starts_with('.')))
        .filter(|file| !file.ends_with("ofconvert-manifest.json"))
        .map(|file| {
            let bytes = fs::read(dir.join(&file)).unwrap();
            (file, bytes)
        })
        .collect()
}

pub(crate) fn manifests(dir: &Path) -> Vec<String> {
    tree(dir)
        .into_iter()
        .filter(|file| file.ends_with("ofconvert-manifest.json"))
        .collect()
}

#[test]
fn both_directions_through_a_bucket_give_the_bytes_of_a_local_run() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    let datasets = testdata().join("datasets");

    // The same conversions on the local disk.
    let local_of = work.path().join("of");
    let local_tf = work.path().join("tf");
    let local_again = work.path().join("again");
    ofconvert().arg("tf2of").args([&datasets, &local_of]).ok();
    ofconvert().arg("of2tf").args([&local_of, &local_tf]).ok();
    ofconvert()
        .arg("tf2of")
        .args([&local_tf, &local_again])
        .ok();

    // Local to bucket, bucket to bucket, bucket to local.
    s3.ofconvert()
        .arg("tf2of")
        .arg(&datasets)
        .arg("s3://data/of")
        .ok();
    assert_eq!(written(&s3.file("data", "of")), written(&local_of));
    assert_eq!(manifests(&s3.file("data", "of")), manifests(&local_of));

    s3.ofconvert()
        .args(["of2tf", "s3://data/of", "s3://data/tf"])
        .ok();
    assert_eq!(written(&s3.file("data", "tf")), written(&local_tf));

    let from_bucket = work.path().join("from-bucket");
    s3.ofconvert()
        .arg("tf2of")
        .arg("s3://data/tf")
        .arg(&from_bucket)
        .ok();
    assert_eq!(written(&from_bucket), written(&local_again));
}

#[test]
fn resharding_and_compression_in_a_bucket_match_a_local_run() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    let input = testdata().join("datasets/tutorial");
    let local = work.path().join("of");
    let flags = [
        "--parts",
        "3",
        "--rename",
        "feature0=id",
        "--drop",
        "feature3",
    ];
    ofconvert()
        .arg("tf2of")
        .args([&input, &local])
        .args(flags)
        .ok();
    let missing = s3
        .ofconvert()
        .args(["tf2of", "s3://data/in", "s3://data/of"])
        .expect_code(2);
    assert!(
        missing
            .stderr
            .contains("s3://data/in: no such file or directory"),
        "{}",
        missing.stderr
    );
    // The input uploaded first (the server keeps objects as files); the mapping's rules
    // are checked against records read from the bucket.
    fs::create_dir_all(s3.file("data", "in")).unwrap();
    fs::copy(
        input.join("tutorial.tfrecord"),
        s3.file("data", "in/tutorial.tfrecord"),
    )
    .unwrap();
    s3.ofconvert()
        .args(["tf2of", "s3://data/in", "s3://data/of"])
        .args(flags)
        .ok();
    assert_eq!(written(&s3.file("data", "of")), written(&local));

    let local_tf = work.path().join("tf");
    ofconvert()
        .arg("of2tf")
        .args([&local, &local_tf])
        .args(["--compression", "gzip", "--max-part-bytes", "2K"])
        .ok();
    s3.ofconvert()
        .args(["of2tf", "s3://data/of", "s3://data/tf"])
        .args(["--compression", "gzip", "--max-part-bytes", "2K"])
        .ok();
    assert_eq!(written(&s3.file("data", "tf")), written(&local_tf));
}

#[test]
fn a_bucket_output_that_is_not_empty_is_refused_unless_overwriting() {
    let s3 = S3Server::start(&["data"]);
    let input = testdata().join("datasets/tutorial");
    s3.ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .ok();
    let first = written(&s3.file("data", "of"));
    assert!(!first.is_empty());
    let run = s3
        .ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .expect_code(2);
    assert!(run.stderr.contains("s3://data/of"), "{}", run.stderr);
    assert!(run.stderr.contains("not empty"), "{}", run.stderr);
    s3.ofconvert()
        .arg("tf2of")
        .arg(&input)
        .args(["s3://data/of", "--overwrite"])
        .ok();
    assert_eq!(written(&s3.file("data", "of")), first);
}

#[test]
fn wrong_credentials_and_a_missing_bucket_fail_naming_the_url_and_writing_nothing() {
    let s3 = S3Server::start(&["data"]);
    let input = testdata().join("datasets/tutorial");
    let work = tempdir();

    let run = s3
        .ofconvert_as(ACCESS_KEY, "not-the-secret")
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .expect_code(1);
    assert!(run.stderr.contains("s3://data/of"), "{}", run.stderr);
    // What the store said.
    assert!(run.stderr.contains("403 Forbidden"), "{}", run.stderr);
    assert!(written(&s3.file("data", "of")).is_empty());

    let run = s3
        .ofconvert_as(ACCESS_KEY, "not-the-secret")
        .arg("tf2of")
        .arg("s3://data/in")
        .arg(work.path().join("out"))
        .expect_code(1);
    assert!(run.stderr.contains("s3://data/in"), "{}", run.stderr);

    let run = s3
        .ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://no-such-bucket/of")
        .expect_code(1);
    assert!(
        run.stderr.contains("s3://no-such-bucket/of"),
        "{}",
        run.stderr
    );
}

/// A TCP proxy in front of `upstream` that cuts the first `cuts` connections after they
/// have carried `after` bytes from the server, as a dropped connection would. It stops
/// with the runtime that runs it.
fn cutting_proxy(
    runtime: &tokio::runtime::Runtime,
    upstream: String,
    cuts: usize,
    after: usize,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let upstream = upstream.trim_start_matches("http://").to_owned();
    let cut = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&cut);
    runtime.spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await else {
                continue;
            };
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let (mut client_read, mut client_write) = client.split();
                let (mut server_read, mut server_write) = server.split();
                let upload = tokio::io::copy(&mut client_read, &mut server_write);
                let download = async {
                    let mut carried = 0usize;
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = server_read.read(&mut buf).await?;
                        if n == 0 {
                            return Ok::<(), std::io::Error>(());
                        }
                        carried += n;
                        if carried > after && counter.load(Ordering::SeqCst) < cuts {
                            counter.fetch_add(1, Ordering::SeqCst);
                            // Part of the body, then the connection is gone.
                            client_write.write_all(&buf[..n / 2]).await?;
                            return Ok(());
                        }
                        client_write.write_all(&buf[..n]).await?;
                    }
                };
                tokio::select! {
                    _ = upload => {}
                    _ = download => {}
                }
            });
        }
    });
    (address, cut)
}

#[test]
fn reads_cut_mid_transfer_resume_and_give_the_same_bytes() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    // One 12 MB shard: two ranged reads, each of several MB.
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    let records: Vec<Vec<u8>> = (0..200).map(|id| example(id, 60_000)).collect();
    write_tfrecord(&input.join("big.tfrecord"), &records);
    fs::create_dir_all(s3.file("data", "in")).unwrap();
    fs::copy(
        input.join("big.tfrecord"),
        s3.file("data", "in/big.tfrecord"),
    )
    .unwrap();
    let local = work.path().join("local");
    ofconvert().arg("tf2of").args([&input, &local]).ok();

    let proxy_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (proxy, cut) = cutting_proxy(&proxy_runtime, s3.endpoint.clone(), 3, 1 << 20);
    let through_proxy = work.path().join("through-proxy");
    s3.ofconvert()
        .env("AWS_ENDPOINT_URL", &proxy)
        .arg("tf2of")
        .arg("s3://data/in")
        .arg(&through_proxy)
        .ok();
    assert_eq!(cut.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(written(&through_proxy), written(&local));
}

#[test]
fn a_tfds_folder_in_a_bucket_resumes_with_its_metadata_rewritten_in_place() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    let of = work.path().join("of");
    ofconvert()
        .arg("tf2of")
        .args([&testdata().join("datasets/tfds"), &of])
        .ok();
    s3.ofconvert()
        .arg("of2tf")
        .arg(&of)
        .arg("s3://data/tf")
        .ok();
    let info = s3.file("data", "tf/mnist/3.0.1/dataset_info.json");
    let original = testdata().join("datasets/tfds/mnist/3.0.1/dataset_info.json");
    assert_eq!(fs::read(&info).unwrap(), fs::read(&original).unwrap());

    // Every split kept: the metadata, already there, is written again without a clash.
    let run = s3
        .ofconvert()
        .arg("of2tf")
        .arg(&of)
        .args(["s3://data/tf", "--resume", "--json"])
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(summary["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .all(|dataset| dataset["status"] == "kept"));
    assert_eq!(summary["tfds_metadata"].as_array().unwrap().len(), 4);

    // One split redone with new shards: the metadata follows.
    fs::remove_file(s3.file("data", "tf/mnist/3.0.1/mnist-train.ofconvert-manifest.json")).unwrap();
    s3.ofconvert()
        .arg("of2tf")
        .arg(&of)
        .args(["s3://data/tf", "--resume", "--records-per-part", "50"])
        .ok();
    let info: serde_json::Value = serde_json::from_slice(&fs::read(&info).unwrap()).unwrap();
    let lengths: Vec<&serde_json::Value> = info["splits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|split| &split["shardLengths"])
        .collect();
    assert_eq!(
        lengths,
        [&serde_json::json!(["40"]), &serde_json::json!(["50", "30"])]
    );
}

#[test]
fn a_second_run_into_a_locked_bucket_output_fails_naming_the_holder_until_the_lock_is_deleted() {
    let s3 = S3Server::start(&["data"]);
    let input = testdata().join("datasets/tutorial");
    // What a run killed with SIGKILL leaves: its lock object.
    let lock = s3.file("data", "of/.ofconvert-lock");
    fs::create_dir_all(lock.parent().unwrap()).unwrap();
    fs::write(&lock, "4242 on worker-7").unwrap();
    let run = s3
        .ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .expect_code(2);
    assert!(run.stderr.contains("4242 on worker-7"), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "holds s3://data/of/.ofconvert-lock: wait for it to end; if it no longer runs \
             (killed, or its machine gone), pass --break-lock to remove the lock"
        ),
        "{}",
        run.stderr
    );
    assert!(written(&s3.file("data", "of")).is_empty());

    fs::remove_file(&lock).unwrap();
    s3.ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .ok();
    assert!(!written(&s3.file("data", "of")).is_empty());
    // Released at the end of the run.
    assert!(!lock.exists());
}

#[test]
fn parts_in_a_bucket_without_their_manifest_are_reported_as_not_published() {
    let s3 = S3Server::start(&["data"]);
    s3.ofconvert()
        .arg("tf2of")
        .arg(testdata().join("datasets/tutorial"))
        .arg("s3://data/of")
        .ok();
    let published = s3.ofconvert().args(["count", "s3://data/of"]).ok();
    assert!(
        !published.stderr.contains("published"),
        "{}",
        published.stderr
    );
    // As a killed run leaves them: the parts uploaded, the manifest not yet.
    fs::remove_file(s3.file("data", "of/ofconvert-manifest.json")).unwrap();
    for command in ["count", "verify", "schema"] {
        let run = s3.ofconvert().args([command, "s3://data/of"]).ok();
        assert!(
            run.stderr.contains(
                "s3://data/of: OneFlow parts without ofconvert-manifest.json: not a published dataset"
            ),
            "{command}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_part_larger_than_one_upload_part_goes_up_in_several_and_arrives_whole() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    // One 19 MB shard into one part: more than one 16 MiB part of a multipart upload.
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    let records: Vec<Vec<u8>> = (0..320).map(|id| example(id, 60_000)).collect();
    write_tfrecord(&input.join("big.tfrecord"), &records);
    // Named as in the bucket: of2tf names its shards after the dataset's directory.
    let local = work.path().join("of");
    ofconvert().arg("tf2of").args([&input, &local]).ok();
    s3.ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .ok();
    let parts = written(&s3.file("data", "of"));
    assert!(parts.iter().any(|(_, bytes)| bytes.len() > 16 << 20));
    assert!(
        parts == written(&local),
        "the parts differ from a local run's"
    );
    s3.ofconvert()
        .args(["of2tf", "s3://data/of", "s3://data/tf"])
        .ok();
    let back = work.path().join("back");
    ofconvert().arg("of2tf").args([&local, &back]).ok();
    let (in_bucket, on_disk) = (written(&s3.file("data", "tf")), written(&back));
    let names = |files: &[(String, Vec<u8>)]| -> Vec<String> {
        files.iter().map(|(name, _)| name.clone()).collect()
    };
    assert_eq!(names(&in_bucket), names(&on_disk));
    assert!(in_bucket == on_disk, "the shards differ from a local run's");
}
