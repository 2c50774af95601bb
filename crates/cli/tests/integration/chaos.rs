//! Conversions through a network that fails: the S3 server behind a proxy that answers a
//! share of requests with `503 SlowDown`, resets connections before and after serving them,
//! cuts bodies short (listings among them) and stalls past the client's timeout. At one
//! fault in ten every run gives the bytes of a run without faults; when every request
//! fails, each run fails within its bounds (no request sent more than `--retries` + 1
//! times), naming the URL, with nothing published and no multipart upload left open.
//! `OFCONVERT_CHAOS_SEED` replays a seed. Each test writes how many faults of each kind it
//! injected to `chaos-report-*.txt` in cargo's temporary directory for tests
//! (`target/tmp`), which CI prints: cargo test shows no output of a passing test.

use std::time::Duration;

use crate::chaos_proxy::{ChaosProxy, Target};
use crate::objects::{manifests, written, S3Server};
use crate::util::*;

/// Bounds short enough for a test: a stalled request gives up after a second.
const BOUNDS: [&str; 6] = [
    "--request-timeout",
    "1",
    "--retries",
    "10",
    "--retry-timeout",
    "60",
];
const STALL: Duration = Duration::from_millis(1500);

/// Prints `text` and keeps it as the report `name` for CI to print.
fn report(name: &str, text: &str) {
    eprintln!("{text}");
    let path =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("chaos-report-{name}.txt"));
    std::fs::write(&path, text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
}

fn seed() -> u64 {
    std::env::var("OFCONVERT_CHAOS_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(20)
}

#[test]
fn one_request_in_ten_failing_changes_no_byte_of_any_conversion() {
    let s3 = S3Server::start(&["src", "chaos"]);
    let seed = seed();
    let proxy = ChaosProxy::start(s3.service.clone(), seed, 100, STALL);
    let work = tempdir();
    let data = testdata().join("datasets").join("tutorial");

    // The runs without faults: on the local disk, and the bucket's source straight in.
    let local_of = work.path().join("of");
    let local_tf = work.path().join("tf");
    ofconvert().arg("tf2of").args([&data, &local_of]).ok();
    ofconvert().arg("of2tf").args([&local_of, &local_tf]).ok();
    s3.ofconvert()
        .arg("tf2of")
        .arg(&data)
        .arg("s3://src/of")
        .ok();
    let clean_count = s3.ofconvert().args(["count", "s3://src/of"]).stdout();
    let through = || {
        let mut command = s3.ofconvert_through(&proxy.endpoint);
        command.args(BOUNDS);
        command
    };

    for run in 0..20 {
        let out = format!("tf2of-{run}");
        through()
            .arg("tf2of")
            .arg(&data)
            .arg(format!("s3://chaos/{out}"))
            .ok();
        assert_eq!(
            written(&s3.file("chaos", &out)),
            written(&local_of),
            "{out}"
        );
        assert_eq!(manifests(&s3.file("chaos", &out)), manifests(&local_of));
    }
    for run in 0..20 {
        let back = work.path().join("back").join(format!("{run}")).join("of");
        through().args(["of2tf", "s3://src/of"]).arg(&back).ok();
        assert_eq!(written(&back), written(&local_tf), "of2tf run {run}");
        assert_eq!(manifests(&back), manifests(&local_tf));
    }
    for run in 0..10 {
        let out = format!("b2b-{run}/of");
        through()
            .args(["of2tf", "s3://src/of"])
            .arg(format!("s3://chaos/{out}"))
            .ok();
        assert_eq!(
            written(&s3.file("chaos", &out)),
            written(&local_tf),
            "{out}"
        );
        assert_eq!(manifests(&s3.file("chaos", &out)), manifests(&local_tf));
    }
    for worker in 0..3 {
        through()
            .arg("tf2of")
            .arg(&data)
            .arg("s3://chaos/sharded")
            .args(["--shard", &format!("{worker}/3")])
            .ok();
    }
    through().args(["commit", "s3://chaos/sharded"]).ok();
    assert_eq!(written(&s3.file("chaos", "sharded")), written(&local_of));
    assert_eq!(
        manifests(&s3.file("chaos", "sharded")),
        manifests(&local_of)
    );
    for command in ["count", "verify", "schema"] {
        through().args([command, "s3://src/of"]).ok();
    }
    assert_eq!(
        through().args(["count", "s3://src/of"]).stdout(),
        clean_count
    );
    let clean_cat = s3.ofconvert().args(["cat", "s3://src/of"]).stdout();
    assert_eq!(through().args(["cat", "s3://src/of"]).stdout(), clean_cat);
    let (clean_idx, idx) = (work.path().join("idx-clean"), work.path().join("idx"));
    s3.ofconvert()
        .args(["of2tf", "s3://src/of", "s3://src/tf"])
        .ok();
    s3.ofconvert()
        .args(["index", "s3://src/tf", "--output-dir"])
        .arg(&clean_idx)
        .ok();
    through()
        .args(["index", "s3://src/tf", "--output-dir"])
        .arg(&idx)
        .ok();
    assert!(!written(&clean_idx).is_empty());
    assert_eq!(written(&idx), written(&clean_idx));

    let injected = proxy.injected();
    report(
        "one-in-ten",
        &format!(
            "chaos test, one request in ten failing (seed {seed}), every fault survived, \
             every output byte-identical:\n{}",
            proxy.report()
        ),
    );
    for (fault, count) in injected {
        assert!(
            count > 0,
            "no {fault:?} injected: the test would not test it"
        );
    }
}

/// Panics unless no request was sent more than `retries + 1` times since the last check
/// (a run that gives up sends each request it makes until its bound, and no more).
fn within_bound(proxy: &ChaosProxy, retries: u64, run: &str) {
    let (request, sent) = proxy.take_most_sent();
    assert!(
        sent <= retries + 1,
        "{run}: {request} sent {sent} times, past --retries {retries}"
    );
}

#[test]
fn every_request_failing_fails_each_run_within_its_bound_naming_the_url() {
    let s3 = S3Server::start(&["src", "chaos"]);
    let seed = seed();
    let proxy = ChaosProxy::start(s3.service.clone(), seed, 0, STALL);
    let work = tempdir();
    let data = testdata().join("datasets").join("tutorial");
    s3.ofconvert()
        .arg("tf2of")
        .arg(&data)
        .arg("s3://src/of")
        .ok();
    s3.ofconvert()
        .args(["of2tf", "s3://src/of", "s3://src/tf"])
        .ok();
    proxy.set_per_mille(1000);
    proxy.take_most_sent();
    let through = || {
        let mut command = s3.ofconvert_through(&proxy.endpoint);
        command.args([
            "--request-timeout",
            "1",
            "--retries",
            "2",
            "--retry-timeout",
            "5",
        ]);
        command
    };

    let failed = through()
        .arg("tf2of")
        .arg(&data)
        .arg("s3://chaos/dead")
        .expect_code(1);
    assert!(
        failed.stderr.contains("s3://chaos/dead"),
        "{}",
        failed.stderr
    );
    assert!(tree(&s3.file("chaos", "dead")).is_empty());
    eprintln!("tf2of's error:\n{}", failed.stderr);
    within_bound(&proxy, 2, "tf2of");

    let back = work.path().join("back");
    let failed = through()
        .args(["of2tf", "s3://src/of"])
        .arg(&back)
        .expect_code(1);
    assert!(failed.stderr.contains("s3://src/of"), "{}", failed.stderr);
    assert!(manifests(&back).is_empty());
    within_bound(&proxy, 2, "of2tf");

    let failed = through()
        .args(["of2tf", "s3://src/of", "s3://chaos/dead-b2b"])
        .expect_code(1);
    assert!(failed.stderr.contains("s3://src/of"), "{}", failed.stderr);
    assert!(tree(&s3.file("chaos", "dead-b2b")).is_empty());
    within_bound(&proxy, 2, "of2tf bucket to bucket");

    let failed = through()
        .arg("tf2of")
        .arg(&data)
        .arg("s3://chaos/dead-sharded")
        .args(["--shard", "0/3"])
        .expect_code(1);
    assert!(
        failed.stderr.contains("s3://chaos/dead-sharded"),
        "{}",
        failed.stderr
    );
    assert!(manifests(&s3.file("chaos", "dead-sharded")).is_empty());
    within_bound(&proxy, 2, "a worker of a sharded run");

    for command in ["count", "verify", "cat", "schema", "index"] {
        let failed = through().args([command, "s3://src/tf"]).expect_code(1);
        assert!(failed.stderr.contains("s3://src/tf"), "{}", failed.stderr);
        assert!(failed.stderr.contains("retries"), "{}", failed.stderr);
        within_bound(&proxy, 2, command);
    }
    // --retries 0: each request is sent once.
    for args in [
        &["count", "s3://src/tf"][..],
        &["tf2of", "s3://src/tf", "s3://chaos/dead-0"],
    ] {
        let failed = s3
            .ofconvert_through(&proxy.endpoint)
            .args(["--request-timeout", "1", "--retries", "0"])
            .args(args)
            .expect_code(1);
        assert!(failed.stderr.contains("s3://"), "{}", failed.stderr);
        within_bound(&proxy, 0, &args.join(" "));
    }
    // Only create-if-absent writes failing (503): the lock is sent as often as the bound
    // says, not that many times for each of its own tries; only ranged reads failing
    // (bodies cut): each range as often as the bound says, no more tries on top.
    let runs: [(Target, &[&str]); 2] = [
        (
            Target::Creates,
            &["tf2of", "s3://src/tf", "s3://chaos/dead-lock"],
        ),
        (Target::RangedReads, &["cat", "s3://src/tf"]),
    ];
    for (target, args) in runs {
        proxy.set_target(target);
        for retries in [2, 0] {
            let failed = s3
                .ofconvert_through(&proxy.endpoint)
                .args(["--request-timeout", "1", "--retries", &retries.to_string()])
                .args(args)
                .expect_code(1);
            assert!(failed.stderr.contains("s3://"), "{}", failed.stderr);
            within_bound(&proxy, retries, &format!("{target:?} {}", args.join(" ")));
        }
    }
    proxy.set_target(Target::Every);
    // --verbose says every try that failed, with its request.
    let failed = through()
        .args(["count", "-v", "s3://src/tf"])
        .expect_code(1);
    assert!(
        failed
            .stderr
            .contains("requests to a store failed and were tried again"),
        "{}",
        failed.stderr
    );
    assert!(failed.stderr.contains("  GET http://"), "{}", failed.stderr);
    // An object of four upload parts (16 MiB each, two in flight): nothing gets through,
    // so no multipart upload is opened.
    let big = work.path().join("big");
    std::fs::create_dir(&big).unwrap();
    let records: Vec<Vec<u8>> = (0..900).map(|id| example(id, 60_000)).collect();
    write_tfrecord(&big.join("big.tfrecord"), &records);
    let failed = through()
        .arg("tf2of")
        .arg(&big)
        .arg("s3://chaos/dead-big")
        .expect_code(1);
    assert!(
        failed.stderr.contains("s3://chaos/dead-big"),
        "{}",
        failed.stderr
    );
    assert!(tree(&s3.file("chaos", "dead-big")).is_empty());
    assert_eq!(s3.open_uploads(), Vec::<String>::new());
    let every_request = proxy.report();

    // Every upload of a part failing, the rest getting through: the upload is opened,
    // its first part fails while the third is being written, and the upload is aborted.
    proxy.set_target(Target::PartUploads);
    let before = proxy.injected();
    let failed = through()
        .arg("tf2of")
        .arg(&big)
        .arg("s3://chaos/dead-parts")
        .expect_code(1);
    assert!(
        failed.stderr.contains("s3://chaos/dead-parts"),
        "{}",
        failed.stderr
    );
    let parts_failed: u64 = proxy
        .injected()
        .iter()
        .zip(&before)
        .map(|((_, after), (_, before))| after - before)
        .sum();
    assert!(
        parts_failed > 0,
        "no part upload was tried: nothing was tested"
    );
    assert!(manifests(&s3.file("chaos", "dead-parts")).is_empty());
    assert!(written(&s3.file("chaos", "dead-parts")).is_empty());
    assert_eq!(s3.open_uploads(), Vec::<String>::new());
    report(
        "every-request",
        &format!(
            "chaos test, every request failing (seed {seed}): each run failed within its \
             bounds, naming the URL, nothing published, no multipart upload left open:\n\
             {every_request}then every part upload failing ({parts_failed} faults), the \
             upload aborted:\n{}",
            proxy.report()
        ),
    );
}

#[test]
fn lost_answers_to_multipart_completions_are_survived_leaving_no_upload_open() {
    let s3 = S3Server::start(&["chaos"]);
    let proxy = ChaosProxy::start(s3.service.clone(), seed(), 0, STALL);
    proxy.set_target(Target::FirstCompletions);
    let work = tempdir();
    // One 54 MB part: a multipart upload of four parts.
    let big = work.path().join("big");
    std::fs::create_dir(&big).unwrap();
    let records: Vec<Vec<u8>> = (0..900).map(|id| example(id, 60_000)).collect();
    write_tfrecord(&big.join("big.tfrecord"), &records);
    let local = work.path().join("local");
    ofconvert().arg("tf2of").args([&big, &local]).ok();
    // A 16 MiB part may take more than BOUNDS' second on a loaded machine.
    s3.ofconvert_through(&proxy.endpoint)
        .args(["--request-timeout", "60", "--retries", "10"])
        .arg("tf2of")
        .arg(&big)
        .arg("s3://chaos/big")
        .ok();
    assert_eq!(written(&s3.file("chaos", "big")), written(&local));
    assert_eq!(manifests(&s3.file("chaos", "big")), manifests(&local));
    assert_eq!(s3.open_uploads(), Vec::<String>::new());
    let lost: u64 = proxy
        .injected()
        .iter()
        .filter(|(fault, _)| *fault == crate::chaos_proxy::Fault::LostAnswer)
        .map(|(_, count)| count)
        .sum();
    assert!(
        lost > 0,
        "no completion's answer was lost: nothing was tested"
    );
}
