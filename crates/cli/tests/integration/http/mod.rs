//! `http(s)://` inputs, read from a file server in this process on 127.0.0.1 that answers
//! byte ranges or ignores them (as `python3 -m http.server` does), that lists directories
//! through WebDAV or answers them with an HTML index page, over plain HTTP or TLS.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;

use crate::util::*;

mod memory;
mod ranges;
mod webdav;

type Body = BoxBody<Bytes, Infallible>;

/// A file made on the fly: `record` (a whole TFRecord frame) `count` times.
#[derive(Clone)]
pub(crate) struct Repeated {
    pub(crate) record: Bytes,
    pub(crate) count: u64,
}

/// What the server does.
#[derive(Clone, Default)]
pub(crate) struct Serving {
    /// Answers `Range: bytes=A-B` with 206 and those bytes (else the whole file, 200).
    pub(crate) ranges: bool,
    /// Answers `PROPFIND` with WebDAV's listing, one level at a time (else 501, as a plain
    /// file server does).
    pub(crate) webdav: bool,
    /// Files made on the fly, by path.
    pub(crate) repeated: Vec<(String, Repeated)>,
    /// Serves TLS with this configuration.
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
}

/// A static file server over `root` on 127.0.0.1; it stops when dropped.
pub(crate) struct FileServer {
    pub(crate) endpoint: String,
    /// Connections accepted (for TLS: handshakes begun).
    connections: Arc<AtomicUsize>,
    _runtime: tokio::runtime::Runtime,
}

impl FileServer {
    pub(crate) fn start(root: PathBuf, serving: Serving) -> FileServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let scheme = if serving.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let endpoint = format!("{scheme}://{}", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::clone(&connections);
        let serving = Arc::new(serving);
        let root = Arc::new(root);
        runtime.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                let (root, serving) = (Arc::clone(&root), Arc::clone(&serving));
                let tls = serving.tls.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let response = serve(&root, &serving, &request);
                        async move { Ok::<_, Infallible>(response) }
                    });
                    let builder = ConnBuilder::new(TokioExecutor::new());
                    match tls {
                        Some(config) => {
                            let acceptor = tokio_rustls::TlsAcceptor::from(config);
                            if let Ok(stream) = acceptor.accept(socket).await {
                                let _ = builder
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            }
                        }
                        None => {
                            let _ = builder
                                .serve_connection(TokioIo::new(socket), service)
                                .await;
                        }
                    }
                });
            }
        });
        FileServer {
            endpoint,
            connections,
            _runtime: runtime,
        }
    }

    /// Connections accepted so far.
    pub(crate) fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn status(code: StatusCode) -> Response<Body> {
    Response::builder().status(code).body(full("")).unwrap()
}

const MODIFIED: &str = "Wed, 25 Nov 2026 00:00:00 GMT";

fn serve(root: &Path, serving: &Serving, request: &Request<Incoming>) -> Response<Body> {
    let path = request.uri().path();
    let relative = path.trim_start_matches('/');
    if request.method().as_str() == "PROPFIND" {
        return match serving.webdav {
            true => propfind(root, relative, request),
            false => status(StatusCode::NOT_IMPLEMENTED),
        };
    }
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return status(StatusCode::METHOD_NOT_ALLOWED);
    }
    let local = root.join(relative);
    if local.is_dir() {
        // As a plain file server does: a page for people, after a redirect to the
        // directory's own URL.
        if !path.ends_with('/') {
            return Response::builder()
                .status(StatusCode::MOVED_PERMANENTLY)
                .header("location", format!("{path}/"))
                .body(full(""))
                .unwrap();
        }
        let page = format!(
            "<!DOCTYPE HTML><html><body><h1>Directory listing for {path}</h1></body></html>"
        );
        return Response::builder()
            .header("content-type", "text/html; charset=utf-8")
            .header("content-length", page.len())
            .body(full(if request.method() == Method::HEAD {
                String::new()
            } else {
                page
            }))
            .unwrap();
    }
    if let Some((_, repeated)) = serving.repeated.iter().find(|(name, _)| name == relative) {
        return serve_repeated(repeated, request);
    }
    let Ok(bytes) = std::fs::read(&local) else {
        return status(StatusCode::NOT_FOUND);
    };
    let len = bytes.len();
    let range = serving
        .ranges
        .then(|| request.headers().get("range"))
        .flatten()
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("bytes="))
        .and_then(|value| value.split_once('-'))
        .map(|(start, end)| {
            let start: usize = start.parse().unwrap_or(0);
            let end: usize = end.parse().map(|end: usize| end + 1).unwrap_or(len);
            (start.min(len), end.min(len))
        });
    let builder = Response::builder()
        .header("last-modified", MODIFIED)
        .header("content-type", "application/octet-stream");
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
        .body(full(body))
        .unwrap()
}

/// A made file, whole (ranges ignored), streamed a record at a time.
fn serve_repeated(repeated: &Repeated, request: &Request<Incoming>) -> Response<Body> {
    let size = repeated.record.len() as u64 * repeated.count;
    let builder = Response::builder()
        .header("content-length", size)
        .header("content-type", "application/octet-stream");
    if request.method() == Method::HEAD {
        return builder.body(full("")).unwrap();
    }
    let record = repeated.record.clone();
    let frames = futures::stream::iter(0..repeated.count)
        .map(move |_| Ok::<_, Infallible>(Frame::data(record.clone())));
    builder
        .body(BodyExt::boxed(StreamBody::new(frames)))
        .unwrap()
}

use futures::StreamExt as _;

/// WebDAV's answer to `PROPFIND` with `Depth: 0` or `1` (`infinity` refused, as many
/// servers do).
fn propfind(root: &Path, relative: &str, request: &Request<Incoming>) -> Response<Body> {
    let depth = request
        .headers()
        .get("depth")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("infinity");
    if depth == "infinity" {
        return status(StatusCode::FORBIDDEN);
    }
    let relative = relative.trim_end_matches('/');
    let local = root.join(relative);
    if !local.exists() {
        return status(StatusCode::NOT_FOUND);
    }
    let mut entries = vec![(relative.to_owned(), local.clone())];
    if depth == "1" && local.is_dir() {
        let mut children: Vec<(String, PathBuf)> = std::fs::read_dir(&local)
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let name = entry.file_name().to_string_lossy().into_owned();
                let child = match relative {
                    "" => name,
                    _ => format!("{relative}/{name}"),
                };
                (child, entry.path())
            })
            .collect();
        children.sort();
        entries.extend(children);
    }
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n",
    );
    for (href, path) in entries {
        let (kind, length, slash) = if path.is_dir() {
            ("<D:collection/>", String::new(), "/")
        } else {
            let size = std::fs::metadata(&path).unwrap().len();
            (
                "",
                format!("<D:getcontentlength>{size}</D:getcontentlength>"),
                "",
            )
        };
        xml.push_str(&format!(
            "<D:response><D:href>/{href}{slash}</D:href><D:propstat><D:prop>\
             <D:getlastmodified>{MODIFIED}</D:getlastmodified>{length}\
             <D:resourcetype>{kind}</D:resourcetype></D:prop>\
             <D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>\n"
        ));
    }
    xml.push_str("</D:multistatus>\n");
    Response::builder()
        .status(StatusCode::MULTI_STATUS)
        .header("content-type", "application/xml; charset=utf-8")
        .body(full(xml))
        .unwrap()
}

#[test]
fn a_record_file_is_read_over_plain_http_as_typed() {
    let datasets = testdata().join("datasets");
    let server = FileServer::start(
        datasets.clone(),
        Serving {
            ranges: true,
            ..Serving::default()
        },
    );
    let url = format!("{}/tutorial/tutorial.tfrecord", server.endpoint);
    let local = datasets.join("tutorial").join("tutorial.tfrecord");

    let counted = ofconvert().args(["count", &url]).ok().stdout;
    assert!(counted.contains(&format!("100  {url}")), "{counted}");
    ofconvert().args(["verify", &url]).ok();
    let over_http = ofconvert().args(["cat", &url]).ok().stdout;
    let on_disk = ofconvert().arg("cat").arg(&local).ok().stdout;
    assert_eq!(over_http, on_disk);
}
