//! A front for the in-process S3 server that fails a share of requests the ways networks
//! do: `503 SlowDown`, a connection reset before the request reaches the server, a reset
//! after the server acted on it (the answer lost), a response body cut short, and a stall
//! past the client's read timeout. Faults are drawn from a seeded generator, so a failing
//! run can be replayed with its seed (requests in flight at once may draw in another order);
//! besides them, one listing in every `1000 / per_mille` has its body cut, so that every
//! seed cuts listings. It counts how often each request it fails (method, URL and range)
//! was sent.

use std::collections::HashMap;
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
    CutListing,
}

impl Fault {
    pub(crate) const ALL: [Fault; 6] = [
        Fault::SlowDown,
        Fault::ResetBefore,
        Fault::LostAnswer,
        Fault::CutBody,
        Fault::Stall,
        Fault::CutListing,
    ];

    fn name(self) -> &'static str {
        match self {
            Fault::SlowDown => "503 SlowDown",
            Fault::ResetBefore => "reset before the request",
            Fault::LostAnswer => "reset after it was served",
            Fault::CutBody => "body cut short",
            Fault::Stall => "stall past the timeout",
            Fault::CutListing => "listing's body cut short",
        }
    }
}

/// Which requests the faults are drawn for; the others pass untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Every,
    /// The uploads of a multipart upload's parts (`PUT ...?partNumber=N&uploadId=...`).
    PartUploads,
    /// The first try of each multipart upload's completion (`POST ...?uploadId=...`),
    /// always with its answer lost: the upload is completed, the client never hears it.
    FirstCompletions,
    /// Create-if-absent writes (`PUT` with `If-None-Match`), always answered
    /// `503 SlowDown` (nothing written).
    Creates,
    /// Ranged reads (`GET` with `Range`), always with their bodies cut short.
    RangedReads,
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
            Target::FirstCompletions => {
                request.method() == hyper::Method::POST
                    && request
                        .uri()
                        .query()
                        .is_some_and(|query| query.contains("uploadId="))
            }
            Target::Creates => {
                request.method() == hyper::Method::PUT
                    && request.headers().contains_key("if-none-match")
            }
            Target::RangedReads => {
                request.method() == hyper::Method::GET && request.headers().contains_key("range")
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
    listings: AtomicU64,
    injected: [AtomicU64; 6],
    /// How often each request was sent, by method, URL and range.
    sent: Mutex<HashMap<String, u64>>,
}

impl State {
    fn draw(&self, request: &Request<Incoming>) -> Option<Fault> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let per_mille = self.per_mille.load(Ordering::Relaxed);
        let listing = request
            .uri()
            .query()
            .is_some_and(|query| query.contains("list-type="));
        if listing && per_mille > 0 {
            let listings = self.listings.fetch_add(1, Ordering::Relaxed);
            if listings % (1000 / per_mille).max(1) == 1 {
                return Some(Fault::CutListing);
            }
        }
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
            listings: AtomicU64::new(0),
            injected: Default::default(),
            sent: Mutex::new(HashMap::new()),
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

    /// The request sent most often since the last call, and how often; forgets them.
    pub(crate) fn take_most_sent(&self) -> (String, u64) {
        let sent = std::mem::take(&mut *self.state.sent.lock().unwrap());
        sent.into_iter()
            .max_by_key(|(_, count)| *count)
            .unwrap_or_default()
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
    let sent = format!(
        "{} {} {}",
        request.method(),
        request.uri(),
        request
            .headers()
            .get("range")
            .and_then(|range| range.to_str().ok())
            .unwrap_or("")
    );
    let target = *state.target.lock().unwrap();
    // Only the requests faults are drawn for are counted: one that got through is not
    // sent again, and another request of the same URL is another request.
    let targeted = target.takes(&request);
    let times = if targeted {
        let mut counts = state.sent.lock().unwrap();
        let times = counts.entry(sent).or_default();
        *times += 1;
        *times
    } else {
        0
    };
    let fault = match target {
        Target::FirstCompletions if targeted && times == 1 => {
            state.requests.fetch_add(1, Ordering::Relaxed);
            Some(Fault::LostAnswer)
        }
        Target::FirstCompletions => None,
        Target::Creates if targeted => {
            state.requests.fetch_add(1, Ordering::Relaxed);
            Some(Fault::SlowDown)
        }
        Target::RangedReads if targeted => {
            state.requests.fetch_add(1, Ordering::Relaxed);
            Some(Fault::CutBody)
        }
        Target::Creates | Target::RangedReads => None,
        _ if targeted => state.draw(&request),
        _ => None,
    };
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
        Some(fault @ (Fault::CutBody | Fault::CutListing)) if bytes.len() >= 2 => {
            state.count(fault);
            let half = bytes.slice(..bytes.len() / 2);
            let body = StreamBody::new(cut_after(half)).boxed();
            Ok(Response::from_parts(parts, body))
        }
        Some(Fault::CutBody | Fault::CutListing | Fault::LostAnswer) => {
            state.count(Fault::LostAnswer);
            Err("injected: connection reset after the request was served".into())
        }
        _ => Ok(Response::from_parts(parts, full(bytes))),
    }
}

/// A body of `half` and then a reset, a moment later: the headers and `half` reach the
/// client first, as when a connection drops mid-body (an error ready at once would make
/// the server drop the connection before it sent the headers).
fn cut_after(
    half: Bytes,
) -> impl futures::Stream<Item = Result<Frame<Bytes>, BoxError>> + Send + Sync + 'static {
    use futures::StreamExt;
    futures::stream::once(async move { Ok(Frame::data(half)) }).chain(futures::stream::once(
        async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err("injected: connection reset inside the body".into())
        },
    ))
}
