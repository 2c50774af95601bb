//! `http://` inputs: single record files read from a plain-HTTP server in this process that
//! answers `HEAD` and byte ranges, as a static file server does.

use std::convert::Infallible;
use std::path::PathBuf;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;

use crate::util::*;

/// A static file server over `root` on 127.0.0.1 answering `Range: bytes=A-B`; it stops
/// when dropped.
struct FileServer {
    endpoint: String,
    _runtime: tokio::runtime::Runtime,
}

impl FileServer {
    fn start(root: PathBuf) -> FileServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let root = root.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let root = root.clone();
                        async move { Ok::<_, Infallible>(serve(&root, &request)) }
                    });
                    let _ = ConnBuilder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        FileServer {
            endpoint,
            _runtime: runtime,
        }
    }
}

fn serve(root: &std::path::Path, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let relative = request.uri().path().trim_start_matches('/');
    let Ok(bytes) = std::fs::read(root.join(relative)) else {
        return Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Full::new(Bytes::new()))
            .unwrap();
    };
    let len = bytes.len();
    let range = request
        .headers()
        .get("range")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("bytes="))
        .and_then(|value| value.split_once('-'))
        .map(|(start, end)| {
            let start: usize = start.parse().unwrap_or(0);
            let end: usize = end.parse().map(|end: usize| end + 1).unwrap_or(len);
            (start.min(len), end.min(len))
        });
    let builder = Response::builder().header("last-modified", "Wed, 25 Nov 2026 00:00:00 GMT");
    let (builder, body) = match range {
        Some((start, end)) => (
            builder.status(StatusCode::PARTIAL_CONTENT).header(
                "content-range",
                format!("bytes {start}-{}/{len}", end.max(1) - 1),
            ),
            Bytes::from(bytes[start..end].to_vec()),
        ),
        None => (builder.status(StatusCode::OK), Bytes::from(bytes)),
    };
    let size = body.len();
    let body = if request.method() == Method::HEAD {
        Bytes::new()
    } else {
        body
    };
    builder
        .header("content-length", size)
        .body(Full::new(body))
        .unwrap()
}

#[test]
fn a_record_file_is_read_over_plain_http_as_typed() {
    let datasets = testdata().join("datasets");
    let server = FileServer::start(datasets.clone());
    let url = format!("{}/tutorial/tutorial.tfrecord", server.endpoint);
    let local = datasets.join("tutorial").join("tutorial.tfrecord");

    let counted = ofconvert().args(["count", &url]).ok().stdout;
    assert!(counted.contains(&format!("100  {url}")), "{counted}");
    ofconvert().args(["verify", &url]).ok();
    let over_http = ofconvert().args(["cat", &url]).ok().stdout;
    let on_disk = ofconvert().arg("cat").arg(&local).ok().stdout;
    assert_eq!(over_http, on_disk);
}
