//! A server that answers `503` with `Retry-After` is left alone for as long as it asks
//! before it is asked again; one that asks for longer than the retry timeout allows fails
//! the run at once, saying so.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Response};

use crate::scripted::{answer, ScriptedServer, Seen};
use crate::util::*;

/// A file's answer as a plain file server gives it (no ranges, no WebDAV).
fn file(seen: &Seen<'_>, bytes: &Bytes) -> Response<Full<Bytes>> {
    match *seen.request.method() {
        Method::HEAD => Response::builder()
            .header("content-length", bytes.len())
            .body(Full::new(Bytes::new()))
            .unwrap(),
        Method::GET => Response::builder()
            .header("content-length", bytes.len())
            .body(Full::new(bytes.clone()))
            .unwrap(),
        _ => answer(501, "Not Implemented"),
    }
}

fn busy(seconds: u64) -> Response<Full<Bytes>> {
    Response::builder()
        .status(503)
        .header("retry-after", seconds.to_string())
        .body(Full::new(Bytes::from_static(b"busy")))
        .unwrap()
}

#[test]
fn a_server_is_asked_again_only_after_the_pause_it_asked_for() {
    let local = testdata().join("datasets/tutorial/tutorial.tfrecord");
    let bytes = Bytes::from(std::fs::read(&local).unwrap());
    // The first request is told to come back in a second; any request before then is
    // counted, and told the same again.
    let not_before: Arc<Mutex<Option<Instant>>> = Arc::default();
    let early = Arc::new(Mutex::new(0));
    let (until, counted) = (Arc::clone(&not_before), Arc::clone(&early));
    let server = ScriptedServer::start(move |seen| {
        let mut until = until.lock().unwrap();
        if seen.number == 0 {
            *until = Some(Instant::now() + Duration::from_secs(1));
            return busy(1);
        }
        if until.is_some_and(|until| Instant::now() < until) {
            *counted.lock().unwrap() += 1;
            return busy(1);
        }
        file(&seen, &bytes)
    });
    let url = format!("{}/tutorial.tfrecord", server.endpoint);
    let over_http = ofconvert().args(["cat", &url]).ok().stdout;
    assert_eq!(over_http, ofconvert().arg("cat").arg(&local).ok().stdout);
    assert_eq!(
        *early.lock().unwrap(),
        0,
        "requests sent before the pause ended"
    );
}

#[test]
fn a_pause_past_the_retry_timeout_fails_at_once_saying_so() {
    let server = ScriptedServer::start(|_| busy(3600));
    let url = format!("{}/tutorial.tfrecord", server.endpoint);
    let run = ofconvert()
        .args(["count", &url, "--retry-timeout", "5"])
        .expect_code(1);
    assert!(run.stderr.contains(&url), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "503 Service Unavailable: the server asks to be asked again in 3600 s \
             (Retry-After), past the retry timeout of 5 s (--retry-timeout)"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(server.requests(), 1, "{}", run.stderr);
}
