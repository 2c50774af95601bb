//! Workers racing to store a run's plan in a bucket: exactly one says it stored it.

use std::process::Child;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::objects::S3Server;
use crate::util::*;

/// A front for `s3` that holds the first two writes of a run's plan (`PUT` of
/// `.ofconvert/plan.json` with `If-None-Match`) until both have come, then passes them on one
/// after the other: two workers that both found no plan race to store theirs, and the
/// server sees the race as S3 would (s3s-fs checks `If-None-Match` and writes in two steps,
/// so two writes at once could both pass).
fn plan_race_proxy(runtime: &tokio::runtime::Runtime, s3: &S3Server) -> String {
    use http_body_util::BodyExt;
    use hyper::service::Service;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder as ConnBuilder;

    type BoxError = Box<dyn std::error::Error + Send + Sync>;
    struct Race {
        upstream: s3s::service::S3Service,
        both: tokio::sync::Barrier,
        one_at_a_time: tokio::sync::Mutex<()>,
        held: AtomicUsize,
    }
    async fn handle(
        request: hyper::Request<hyper::body::Incoming>,
        race: Arc<Race>,
    ) -> Result<hyper::Response<http_body_util::Full<bytes::Bytes>>, BoxError> {
        let plan = request.method() == hyper::Method::PUT
            && request.uri().path().ends_with("/.ofconvert/plan.json")
            && request.headers().contains_key("if-none-match");
        let _turn = if plan && race.held.fetch_add(1, Ordering::SeqCst) < 2 {
            let _ = tokio::time::timeout(Duration::from_secs(30), race.both.wait()).await;
            Some(race.one_at_a_time.lock().await)
        } else {
            None
        };
        let response = Service::call(&race.upstream, request)
            .await
            .map_err(|err| format!("upstream: {err:?}"))?;
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await?.to_bytes();
        Ok(hyper::Response::from_parts(
            parts,
            http_body_util::Full::new(bytes),
        ))
    }

    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let race = Arc::new(Race {
        upstream: s3.service.clone(),
        both: tokio::sync::Barrier::new(2),
        one_at_a_time: tokio::sync::Mutex::new(()),
        held: AtomicUsize::new(0),
    });
    runtime.spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let race = Arc::clone(&race);
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |request| handle(request, Arc::clone(&race)));
                let _ = ConnBuilder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(socket), service)
                    .await;
            });
        }
    });
    endpoint
}

#[test]
fn of_two_workers_racing_to_store_one_plan_in_a_bucket_only_one_says_it_stored_it() {
    let s3 = S3Server::start(&["data"]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let proxy = plan_race_proxy(&runtime, &s3);
    let datasets = testdata().join("datasets");
    let workers: Vec<Child> = (0..2)
        .map(|k| {
            s3.ofconvert_through(&proxy)
                .arg("tf2of")
                .arg(&datasets)
                .arg("s3://data/sharded")
                .args(["--shard", &format!("{k}/2")])
                .spawn_piped()
        })
        .collect();
    let said: Vec<String> = workers
        .into_iter()
        .map(|worker| {
            let output = worker.wait_with_output().unwrap();
            assert!(output.status.success(), "{output:?}");
            String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr)
        })
        .collect();
    let storing = said
        .iter()
        .filter(|said| said.contains("stored the run's plan"))
        .count();
    assert_eq!(storing, 1, "{said:#?}");
}
