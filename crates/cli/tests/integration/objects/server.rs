//! The S3 server the object-store tests run against: s3s-fs over a temporary directory, in
//! this process on 127.0.0.1, with credentials, and a bucket anyone may read.

use std::fs;
use std::path::PathBuf;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;

use crate::util::*;

pub(crate) const ACCESS_KEY: &str = "ofconvert-test";
pub(crate) const SECRET_KEY: &str = "ofconvert-test-secret";

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
