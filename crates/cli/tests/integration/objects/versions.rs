//! Reads pinned to the version of an object they started on: an object replaced between
//! two ranged reads fails the read, naming its URL, rather than giving bytes spliced from
//! both versions (which, records of the same sizes, would all pass their checksums).

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;

use super::*;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the front in [`replacing_proxy`] holds.
struct Replacing {
    upstream: s3s::service::S3Service,
    file: PathBuf,
    replacement: Vec<u8>,
    replaced: Arc<AtomicBool>,
}

/// A front for `s3` that, once it has served the first range of a read (where the
/// server keeps the object: `file`), writes `replacement` there: the object is replaced
/// mid-read.
fn replacing_proxy(
    runtime: &tokio::runtime::Runtime,
    s3: &S3Server,
    file: PathBuf,
    replacement: Vec<u8>,
) -> (String, Arc<AtomicBool>) {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let replaced = Arc::new(AtomicBool::new(false));
    let state = Arc::new(Replacing {
        upstream: s3.service.clone(),
        file,
        replacement,
        replaced: Arc::clone(&replaced),
    });
    runtime.spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let state = Arc::clone(&state);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    replace_after_first_range(request, Arc::clone(&state))
                });
                let _ = ConnBuilder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(socket), service)
                    .await;
            });
        }
    });
    (endpoint, replaced)
}

async fn replace_after_first_range(
    request: Request<Incoming>,
    state: Arc<Replacing>,
) -> Result<Response<BoxBody<Bytes, BoxError>>, BoxError> {
    // The first range of the conversion's read (8 MiB from the start), not a sample of a
    // few records.
    let first_range = request
        .headers()
        .get("range")
        .and_then(|range| range.to_str().ok())
        .and_then(|range| range.strip_prefix("bytes=0-"))
        .and_then(|end| end.parse::<u64>().ok())
        .is_some_and(|end| end + 1 >= 8 << 20);
    let response = Service::call(&state.upstream, request)
        .await
        .map_err(|err| format!("upstream: {err:?}"))?;
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await?.to_bytes();
    if first_range && !state.replaced.swap(true, Ordering::SeqCst) {
        fs::write(&state.file, &state.replacement)?;
    }
    let body = Full::new(bytes)
        .map_err(|never: Infallible| match never {})
        .boxed();
    Ok(Response::from_parts(parts, body))
}

#[test]
fn an_object_replaced_between_two_ranged_reads_fails_its_read_naming_the_url() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    // 12 MB in records of one size (ids of one varint length): read in two ranges, one at
    // a time.
    let first: Vec<Vec<u8>> = (200..400).map(|id| example(id, 60_000)).collect();
    let second: Vec<Vec<u8>> = (600..800).map(|id| example(id, 60_000)).collect();
    let (old, new) = (work.path().join("old"), work.path().join("new"));
    write_tfrecord(&old, &first);
    write_tfrecord(&new, &second);
    let (old, new) = (fs::read(&old).unwrap(), fs::read(&new).unwrap());
    assert_eq!(old.len(), new.len());
    let object = s3.file("data", "in/big.tfrecord");
    fs::create_dir_all(object.parent().unwrap()).unwrap();
    fs::write(&object, &old).unwrap();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (proxy, replaced) = replacing_proxy(&runtime, &s3, object, new);
    let out = work.path().join("out");
    let failed = s3
        .ofconvert_through(&proxy)
        .args(["--in-flight", "1", "tf2of", "s3://data/in/big.tfrecord"])
        .arg(&out)
        .expect_code(1);
    assert!(replaced.load(Ordering::SeqCst), "nothing was replaced");
    assert!(
        failed
            .stderr
            .contains("s3://data/in/big.tfrecord: the object was replaced while it was read"),
        "{}",
        failed.stderr
    );
    assert!(manifests(&out).is_empty());
}
