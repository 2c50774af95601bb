//! What a failing store says: the cause and the variable to set, the store's own code kept
//! and its XML dropped.

use super::*;
use crate::scripted::{answer, closed_port, ScriptedServer};

/// The marks of a store's error document that the message must not carry.
fn assert_no_xml(stderr: &str) {
    for noise in ["<?xml", "<Error>", "<Code>", "RequestId", "</"] {
        assert!(!stderr.contains(noise), "{noise} in:\n{stderr}");
    }
}

#[test]
fn a_plain_http_endpoint_without_allow_http_names_the_variable() {
    let s3 = S3Server::start(&["data"]);
    let run = s3
        .ofconvert()
        .env_remove("AWS_ALLOW_HTTP")
        .args(["count", "s3://data/x.tfrecord"])
        .expect_code(1);
    assert!(
        run.stderr.contains("s3://data/x.tfrecord"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!(
            "plain HTTP to {} is refused: set AWS_ALLOW_HTTP=true",
            s3.endpoint
        )),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("builder error"), "{}", run.stderr);
}

#[test]
fn a_missing_bucket_is_named_by_its_code_without_the_stores_xml() {
    let s3 = S3Server::start(&["data"]);
    let run = s3
        .ofconvert()
        .arg("tf2of")
        .arg(testdata().join("datasets/tutorial"))
        .arg("s3://no-such-bucket/of")
        .expect_code(1);
    assert!(
        run.stderr.contains("s3://no-such-bucket/of"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("NoSuchBucket"), "{}", run.stderr);
    assert!(
        run.stderr.contains("no bucket no-such-bucket at"),
        "{}",
        run.stderr
    );
    assert_no_xml(&run.stderr);
}

#[test]
fn a_wrong_secret_is_named_by_its_code_and_the_variable_to_check() {
    let s3 = S3Server::start(&["data"]);
    let run = s3
        .ofconvert_as(ACCESS_KEY, "not-the-secret")
        .args(["count", "s3://data/x.tfrecord"])
        .expect_code(1);
    assert!(
        run.stderr.contains("s3://data/x.tfrecord"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("SignatureDoesNotMatch"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("AWS_SECRET_ACCESS_KEY"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("403 Forbidden"), "{}", run.stderr);
    assert_no_xml(&run.stderr);

    let run = s3
        .ofconvert_as("nobody", SECRET_KEY)
        .args(["count", "s3://data/x.tfrecord"])
        .expect_code(1);
    assert!(run.stderr.contains("AWS_ACCESS_KEY_ID"), "{}", run.stderr);
    assert_no_xml(&run.stderr);
}

#[test]
fn no_credentials_at_all_names_the_variables_to_set_instead_of_the_metadata_service() {
    let s3 = S3Server::start(&["data"]);
    // What the instance metadata service answers off the cloud's machines (or nothing
    // listens at all).
    let metadata = ScriptedServer::start(|seen| {
        if seen.request.uri().path() == "/latest/api/token" {
            answer(403, "Forbidden")
        } else {
            answer(404, "Not Found")
        }
    });
    let nothing = format!("http://127.0.0.1:{}", closed_port());
    for endpoint in [&metadata.endpoint, &nothing] {
        let run = s3
            .ofconvert_without_credentials(endpoint)
            .args(["count", "s3://data/x.tfrecord", "--retries", "1"])
            .expect_code(1);
        let stderr = &run.stderr;
        assert!(stderr.contains("s3://data/x.tfrecord"), "{stderr}");
        assert!(stderr.contains("no credentials for S3"), "{stderr}");
        for variable in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SKIP_SIGNATURE=true",
            "--anonymous",
        ] {
            assert!(stderr.contains(variable), "{variable} in:\n{stderr}");
        }
        assert!(!stderr.contains("/latest/api/token"), "{stderr}");
    }
    assert!(
        metadata.requests() > 0,
        "the metadata service was not asked"
    );
}

#[test]
fn an_overwrite_in_a_bucket_that_fails_leaves_the_dataset_that_was_there_whole() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir(&input).unwrap();
    write_tfrecord(&input.join("a.tfrecord"), &examples(1, 50, 100));
    write_tfrecord(&input.join("b.tfrecord"), &examples(51, 50, 100));
    s3.ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .ok();
    let stored = s3.file("data", "of");
    let snapshot = || -> Vec<(String, Vec<u8>)> {
        tree(&stored)
            .into_iter()
            .map(|file| {
                let bytes = fs::read(stored.join(&file)).unwrap();
                (file, bytes)
            })
            .collect()
    };
    let before = snapshot();
    assert_eq!(manifests(&stored).len(), 1, "{before:?}");

    let damaged = input.join("b.tfrecord");
    let bytes = fs::read(&damaged).unwrap();
    fs::write(&damaged, &bytes[..bytes.len() - 10]).unwrap();
    let run = s3
        .ofconvert()
        .arg("tf2of")
        .arg(&input)
        .args(["s3://data/of", "--overwrite"])
        .expect_code(1);
    assert_eq!(snapshot(), before, "{}", run.stderr);
    s3.ofconvert().args(["verify", "s3://data/of"]).ok();
}
