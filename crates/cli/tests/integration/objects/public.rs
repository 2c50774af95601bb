//! A public bucket, read by anyone without credentials: with `--anonymous` or
//! `AWS_SKIP_SIGNATURE=true`, even where the environment holds none at all (no metadata
//! service asked); and what an unsigned write is told.

use super::*;
use crate::scripted::{answer, ScriptedServer};

#[test]
fn a_public_bucket_is_read_without_credentials() {
    let s3 = S3Server::start(&["data", PUBLIC_BUCKET]);
    let work = tempdir();
    let data = testdata().join("datasets/imagenet");
    let local = work.path().join("of");
    ofconvert().arg("tf2of").args([&data, &local]).ok();
    s3.ofconvert()
        .arg("tf2of")
        .arg(&data)
        .arg("s3://public/of")
        .ok();
    // Nobody's metadata service: asking it would fail the run.
    let metadata = ScriptedServer::start(|_| answer(403, "Forbidden"));

    let anonymous = |how: &str| {
        let mut command = s3.ofconvert_without_credentials(&metadata.endpoint);
        match how {
            "flag" => command.arg("--anonymous"),
            _ => command.env("AWS_SKIP_SIGNATURE", "true"),
        };
        command
    };
    for how in ["flag", "variable"] {
        let out = work.path().join(format!("back-{how}"));
        anonymous(how)
            .args(["of2tf", "s3://public/of"])
            .arg(&out)
            .ok();
        let tf = work.path().join(format!("tf-{how}"));
        ofconvert().arg("of2tf").arg(&local).arg(&tf).ok();
        assert_eq!(written(&out), written(&tf), "{how}");
        let counted = anonymous(how).args(["count", "s3://public/of"]).ok().stdout;
        let signed = s3.ofconvert().args(["count", "s3://public/of"]).ok().stdout;
        assert_eq!(counted, signed);
        for command in ["verify", "schema", "cat"] {
            anonymous(how).args([command, "s3://public/of"]).ok();
        }
    }
    assert_eq!(metadata.requests(), 0);

    // Another bucket is not public: what its refusal says.
    let run = anonymous("flag")
        .args(["count", "s3://data/of"])
        .expect_code(1);
    assert!(
        run.stderr.contains("AccessDenied (403 Forbidden)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("the request was sent without credentials"),
        "{}",
        run.stderr
    );
    // --anonymous wins over credentials in the environment.
    let run = s3
        .ofconvert()
        .arg("--anonymous")
        .arg("tf2of")
        .arg(&data)
        .arg("s3://data/anonymous")
        .expect_code(1);
    assert!(run.stderr.contains("AccessDenied"), "{}", run.stderr);
    assert!(written(&s3.file("data", "anonymous")).is_empty());
}
