//! A front for the in-process S3 server that fails a share of requests the ways networks
//! do: `503 SlowDown`, a connection reset before the request reaches the server, a reset
//! after the server acted on it (the answer lost), a response body cut short, and a stall
//! past the client's read timeout. Faults are drawn from a seeded generator, so a failing
//! run can be replayed with its seed (requests in flight at once may draw in another order).

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::Service;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ProxyBody = BoxBody<Bytes, BoxError>;

/// The ways a request is failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    SlowDown,
    ResetBefore,
    LostAnswer,
    CutBody,
    Stall,
}

impl Fault {
    pub(crate) const ALL: [Fault; 5] = [
        Fault::SlowDown,
        Fault::ResetBefore,
        Fault::LostAnswer,
        Fault::CutBody,
        Fault::Stall,
    ];

    fn name(self) -> &'static str {
        match self {
            Fault::SlowDown => "503 SlowDown",
            Fault::ResetBefore => "reset before the request",
            Fault::LostAnswer => "reset after it was served",
            Fault::CutBody => "body cut short",
            Fault::Stall => "stall past the timeout",
        }
    }
}

/// Which requests the faults are drawn for; the others pass untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Every,
    /// The uploads of a multipart upload's parts (`PUT ...?partNumber=N&uploadId=...`).
    PartUploads,
}

impl Target {
    fn takes(self, request: &Request<Incoming>) -> bool {
        match self {
            Target::Every => true,
            Target::PartUploads => {
                request.method() == hyper::Method::PUT
                    && request
                        .uri()
                        .query()
                        .is_some_and(|query| query.contains("partNumber="))
            }
        }
    }
}

struct State {
    upstream: s3s::service::S3Service,
    rng: Mutex<ChaCha8Rng>,
    /// Faults per thousand requests.
    per_mille: AtomicU64,
    target: Mutex<Target>,
    stall: Duration,
    requests: AtomicU64,
    injected: [AtomicU64; 5],
}

impl State {
    fn draw(&self) -> Option<Fault> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let per_mille = self.per_mille.load(Ordering::Relaxed);
        let mut rng = self.rng.lock().unwrap();
        if rng.random_range(0..1000) >= per_mille {
            return None;
        }
        // Stalls cost a timeout each: drawn a quarter as often as the others.
        let fault = match rng.random_range(0..13) {
            0..=2 => Fault::SlowDown,
            3..=5 => Fault::ResetBefore,
            6..=8 => Fault::LostAnswer,
            9..=11 => Fault::CutBody,
            _ => Fault::Stall,
        };
        Some(fault)
    }

    fn count(&self, fault: Fault) {
        let index = Fault::ALL.iter().position(|f| *f == fault).unwrap();
        self.injected[index].fetch_add(1, Ordering::Relaxed);
    }
}

/// The proxy; it stops when dropped.
pub(crate) struct ChaosProxy {
    pub(crate) endpoint: String,
    state: Arc<State>,
    _runtime: tokio::runtime::Runtime,
}

impl ChaosProxy {
    /// A proxy in front of `upstream` failing `per_mille` of a thousand requests, drawn
    /// from `seed`; a stalled request waits `stall` before it is served.
    pub(crate) fn start(
        upstream: s3s::service::S3Service,
        seed: u64,
        per_mille: u64,
        stall: Duration,
    ) -> ChaosProxy {
        let state = Arc::new(State {
            upstream,
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            per_mille: AtomicU64::new(per_mille),
            target: Mutex::new(Target::Every),
            stall,
            requests: AtomicU64::new(0),
            injected: Default::default(),
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let serving = Arc::clone(&state);
        runtime.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let state = Arc::clone(&serving);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        handle(request, Arc::clone(&state))
                    });
                    let _ = ConnBuilder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        ChaosProxy {
            endpoint,
            state,
            _runtime: runtime,
        }
    }

    /// Sets the share of requests failed from now on.
    pub(crate) fn set_per_mille(&self, per_mille: u64) {
        self.state.per_mille.store(per_mille, Ordering::Relaxed);
    }

    /// Draws faults for `target`'s requests only from now on.
    pub(crate) fn set_target(&self, target: Target) {
        *self.state.target.lock().unwrap() = target;
    }

    /// Requests seen so far.
    pub(crate) fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::Relaxed)
    }

    /// Faults injected so far, per kind.
    pub(crate) fn injected(&self) -> Vec<(Fault, u64)> {
        Fault::ALL
            .iter()
            .zip(&self.state.injected)
            .map(|(fault, count)| (*fault, count.load(Ordering::Relaxed)))
            .collect()
    }

    /// The counts as one line per kind.
    pub(crate) fn report(&self) -> String {
        let mut lines = format!("{} requests\n", self.requests());
        for (fault, count) in self.injected() {
            lines.push_str(&format!("  {:<26} {count}\n", fault.name()));
        }
        lines
    }
}

fn full(bytes: Bytes) -> ProxyBody {
    Full::new(bytes)
        .map_err(|never: Infallible| match never {})
        .boxed()
}

async fn handle(
    request: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<ProxyBody>, BoxError> {
    let targeted = state.target.lock().unwrap().takes(&request);
    let fault = if targeted { state.draw() } else { None };
    match fault {
        Some(Fault::SlowDown) => {
            state.count(Fault::SlowDown);
            let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>\
                        <Message>Please reduce your request rate.</Message></Error>";
            return Ok(Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .header("content-type", "application/xml")
                .header("retry-after", "0")
                .body(full(Bytes::from_static(body.as_bytes())))
                .unwrap());
        }
        Some(Fault::ResetBefore) => {
            state.count(Fault::ResetBefore);
            return Err("injected: connection reset before the request".into());
        }
        Some(Fault::Stall) => {
            state.count(Fault::Stall);
            tokio::time::sleep(state.stall).await;
        }
        _ => {}
    }
    let response = Service::call(&state.upstream, request)
        .await
        .map_err(|err| format!("upstream: {err:?}"))?;
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await?.to_bytes();
    match fault {
        Some(Fault::CutBody) if bytes.len() >= 2 => {
            state.count(Fault::CutBody);
            let half = bytes.slice(..bytes.len() / 2);
            let frames: Vec<Result<Frame<Bytes>, BoxError>> = vec![
                Ok(Frame::data(half)),
                Err("injected: connection reset inside the body".into()),
            ];
            let body = StreamBody::new(futures_stream(frames)).boxed();
            Ok(Response::from_parts(parts, body))
        }
        Some(Fault::CutBody) | Some(Fault::LostAnswer) => {
            state.count(Fault::LostAnswer);
            Err("injected: connection reset after the request was served".into())
        }
        _ => Ok(Response::from_parts(parts, full(bytes))),
    }
}

fn futures_stream(
    frames: Vec<Result<Frame<Bytes>, BoxError>>,
) -> impl futures::Stream<Item = Result<Frame<Bytes>, BoxError>> + Send + Sync + 'static {
    futures::stream::iter(frames)
}
