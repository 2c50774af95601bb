//! Object stores: `tf2of` and `of2tf` read and write `s3://` URLs through a real S3 server
//! (s3s-fs, run in this process on 127.0.0.1) with the same bytes as on a local disk.

use std::fs;
use std::path::{Path, PathBuf};

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;

use crate::util::*;

mod errors;
mod inputs;
mod inspect;
#[cfg(target_os = "linux")]
mod lock;
mod public;
mod reader_line;
mod transfers;
mod versions;

const ACCESS_KEY: &str = "ofconvert-test";
const SECRET_KEY: &str = "ofconvert-test-secret";

/// The variables through which the AWS client finds credentials, besides the metadata
/// service.
const CREDENTIAL_VARIABLES: [&str; 8] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_SKIP_SIGNATURE",
    "AWS_CA_BUNDLE",
];

/// An S3 server over a temporary directory: bucket `B` is the directory `root/B`. It stops
/// when dropped.
pub(crate) struct S3Server {
    root: tempfile::TempDir,
    pub(crate) endpoint: String,
    /// The server's service, for a front that hands it requests itself.
    pub(crate) service: s3s::service::S3Service,
    _runtime: tokio::runtime::Runtime,
}

/// Who may do what without credentials: anyone may read the bucket named `public`, as a
/// bucket policy allowing `s3:GetObject` and `s3:ListBucket` to `*` lets them; nothing else
/// is done unsigned.
struct PublicReads;

#[async_trait::async_trait]
impl s3s::access::S3Access for PublicReads {
    async fn check(&self, cx: &mut s3s::access::S3AccessContext<'_>) -> s3s::S3Result<()> {
        let reads = matches!(
            cx.s3_op().name(),
            "GetObject" | "HeadObject" | "ListObjects" | "ListObjectsV2" | "HeadBucket"
        );
        if cx.credentials().is_some()
            || (reads && cx.s3_path().get_bucket_name() == Some(PUBLIC_BUCKET))
        {
            Ok(())
        } else {
            Err(s3s::s3_error!(AccessDenied, "Access Denied"))
        }
    }
}

/// The bucket anyone may read.
pub(crate) const PUBLIC_BUCKET: &str = "public";

impl S3Server {
    pub(crate) fn start(buckets: &[&str]) -> S3Server {
        S3Server::start_in(tempdir(), buckets)
    }

    /// A server keeping its objects in `root`.
    pub(crate) fn start_in(root: tempfile::TempDir, buckets: &[&str]) -> S3Server {
        for bucket in buckets {
            fs::create_dir(root.path().join(bucket)).unwrap();
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let mut builder = S3ServiceBuilder::new(s3s_fs::FileSystem::new(root.path()).unwrap());
        builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        builder.set_access(PublicReads);
        let service = builder.build();
        let served = service.clone();
        runtime.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let service = service.clone();
                tokio::spawn(async move {
                    let _ = ConnBuilder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        S3Server {
            root,
            endpoint,
            service: served,
            _runtime: runtime,
        }
    }

    /// `ofconvert` with the environment that points the AWS client at this server.
    pub(crate) fn ofconvert(&self) -> TestCommand {
        self.ofconvert_as(ACCESS_KEY, SECRET_KEY)
    }

    /// `ofconvert` pointed at this server through `endpoint` (a proxy in front of it).
    pub(crate) fn ofconvert_through(&self, endpoint: &str) -> TestCommand {
        let mut command = self.ofconvert();
        command.env("AWS_ENDPOINT_URL", endpoint);
        command
    }

    /// `ofconvert` pointed at this server with no credentials in its environment, the
    /// instance metadata service looked for at `metadata` (on 127.0.0.1).
    pub(crate) fn ofconvert_without_credentials(&self, metadata: &str) -> TestCommand {
        let mut command = ofconvert();
        for variable in CREDENTIAL_VARIABLES {
            command.env_remove(variable);
        }
        command
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_METADATA_ENDPOINT", metadata);
        command
    }

    pub(crate) fn ofconvert_as(&self, access_key: &str, secret_key: &str) -> TestCommand {
        let mut command = ofconvert();
        for (key, value) in self.environment_as(access_key, secret_key) {
            command.env(key, value);
        }
        command
    }

    /// The environment that points the AWS client at this server, for a process that is
    /// not the binary (a test's own child).
    pub(crate) fn environment(&self) -> Vec<(String, String)> {
        self.environment_as(ACCESS_KEY, SECRET_KEY)
    }

    fn environment_as(&self, access_key: &str, secret_key: &str) -> Vec<(String, String)> {
        [
            ("AWS_ACCESS_KEY_ID", access_key),
            ("AWS_SECRET_ACCESS_KEY", secret_key),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", &self.endpoint),
            ("AWS_ALLOW_HTTP", "true"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
    }

    /// The multipart uploads open in the server: s3s-fs keeps each as `.upload-ID.json`
    /// beside the buckets (its parts as `.upload_id-ID.part-N`: a part whose upload was
    /// in flight while the upload was aborted may stay behind, as S3 warns it may).
    pub(crate) fn open_uploads(&self) -> Vec<String> {
        let mut open: Vec<String> = fs::read_dir(self.root.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".upload-") && name.ends_with(".json"))
            .collect();
        open.sort();
        open
    }

    /// Where the server keeps `s3://bucket/key`.
    pub(crate) fn file(&self, bucket: &str, key: &str) -> PathBuf {
        self.root.path().join(bucket).join(key)
    }
}

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
