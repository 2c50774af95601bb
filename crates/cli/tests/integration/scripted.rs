//! A plain-HTTP server on 127.0.0.1 whose every answer a test writes as a function of the
//! request (and of how many came before), counting the requests it saw: the metadata
//! service that refuses, the server that asks to be left alone for a while.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;

/// What the server is told of a request: its method, path and query, headers, and its
/// number (from 0) among those the server saw.
pub(crate) struct Seen<'a> {
    pub(crate) request: &'a Request<Incoming>,
    pub(crate) number: usize,
}

type Answer = dyn Fn(Seen<'_>) -> Response<Full<Bytes>> + Send + Sync;

/// The server; it stops when dropped.
pub(crate) struct ScriptedServer {
    pub(crate) endpoint: String,
    requests: Arc<AtomicUsize>,
    _runtime: tokio::runtime::Runtime,
}

impl ScriptedServer {
    pub(crate) fn start(
        answer: impl Fn(Seen<'_>) -> Response<Full<Bytes>> + Send + Sync + 'static,
    ) -> ScriptedServer {
        let answer: Arc<Answer> = Arc::new(answer);
        let requests = Arc::new(AtomicUsize::new(0));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let counter = Arc::clone(&requests);
        runtime.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let answer = Arc::clone(&answer);
                let counter = Arc::clone(&counter);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let number = counter.fetch_add(1, Ordering::SeqCst);
                        let response = answer(Seen {
                            request: &request,
                            number,
                        });
                        async move { Ok::<_, Infallible>(response) }
                    });
                    let _ = ConnBuilder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        ScriptedServer {
            endpoint,
            requests,
            _runtime: runtime,
        }
    }

    /// Requests seen so far.
    pub(crate) fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// An answer with `status` and `body`.
pub(crate) fn answer(status: u16, body: &str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap()
}

/// A port on 127.0.0.1 where nothing listens (bound, then let go).
pub(crate) fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
