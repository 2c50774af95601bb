//! The inspecting commands over a bucket: count, verify, cat, schema and index read it as they read the local copy, and name the URL when it fails.

use super::*;

/// Copies the tree `from` into the bucket's `key` prefix (the server keeps objects as
/// files).
fn upload(s3: &S3Server, from: &Path, bucket: &str, key: &str) {
    for file in tree(from) {
        let to = s3.file(bucket, &format!("{key}/{file}"));
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(from.join(&file), to).unwrap();
    }
}

/// The reader code `schema --oneflow` prints for datasets in the bucket `data`: each
/// `OFRecordReader("s3://data/KEY", ...)` of `code` opens the local copy `KEY` instead,
/// after a comment giving the command that makes it (OneFlow opens local paths only).
fn opened_from_a_local_copy(code: &str) -> String {
    let reader = "reader = flow.nn.OFRecordReader(\"s3://data/";
    code.lines()
        .map(|line| match line.strip_prefix(reader) {
            Some(rest) => {
                let key = &rest[..rest.find('"').unwrap()];
                format!(
                    "# OneFlow opens local paths only; copy the parts first: aws s3 sync \
                     s3://data/{key} {key}\nreader = flow.nn.OFRecordReader(\"{rest}\n"
                )
            }
            None => format!("{line}\n"),
        })
        .collect()
}

#[test]
fn inspection_commands_read_a_bucket_as_they_read_the_local_copy() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    let local_tf = work.path().join("tf");
    copy_tree(&testdata().join("datasets"), &local_tf);
    let local_of = work.path().join("of");
    ofconvert().arg("tf2of").args([&local_tf, &local_of]).ok();
    upload(&s3, &local_tf, "data", "tf");
    upload(&s3, &local_of, "data", "of");

    let runs: [&[&str]; 7] = [
        &["count"],
        &["count", "--json"],
        &["verify"],
        &["schema"],
        &["schema", "--oneflow"],
        &["cat", "-n", "2", "--max-bytes", "16"],
        &["cat", "--json", "-n", "1"],
    ];
    for (local, url) in [(&local_tf, "s3://data/tf"), (&local_of, "s3://data/of")] {
        for args in runs {
            let on_disk = ofconvert().args(args).arg(local).ok();
            let in_bucket = s3.ofconvert().args(args).arg(url).ok();
            let mut expected = on_disk.stdout.replace(&*local.to_string_lossy(), url);
            if args == ["schema", "--oneflow"] {
                expected = opened_from_a_local_copy(&expected);
            }
            assert_eq!(in_bucket.stdout, expected, "{args:?} {url}");
            assert_eq!(
                in_bucket.stderr,
                on_disk.stderr.replace(&*local.to_string_lossy(), url),
                "{args:?} {url}"
            );
        }
    }
    // A single object, and one named with a file:// URL, as the plain path.
    let object = "s3://data/tf/tutorial/tutorial.tfrecord";
    let on_disk = ofconvert()
        .arg("count")
        .arg(local_tf.join("tutorial/tutorial.tfrecord"))
        .ok();
    let in_bucket = s3.ofconvert().args(["count", object]).ok();
    assert_eq!(
        in_bucket.stdout,
        on_disk
            .stdout
            .replace(&*local_tf.to_string_lossy(), "s3://data/tf")
    );
    let file_url = format!("file://{}", local_tf.join("tutorial").display());
    let by_url = ofconvert().args(["count", &file_url]).ok();
    assert!(
        by_url.stdout.contains("tutorial.tfrecord"),
        "{}",
        by_url.stdout
    );
}

/// Copies the directory tree `from` to `to`.
fn copy_tree(from: &Path, to: &Path) {
    for file in tree(from) {
        let target = to.join(&file);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::copy(from.join(&file), target).unwrap();
    }
}

#[test]
fn indexes_of_a_bucket_go_beside_the_objects_or_under_an_output_url() {
    let s3 = S3Server::start(&["data", "idx"]);
    let work = tempdir();
    let local = work.path().join("tf");
    copy_tree(&testdata().join("datasets/imagenet"), &local);
    upload(&s3, &local, "data", "tf");
    let on_disk = ofconvert().arg("index").arg(&local).ok();
    let indexes: Vec<String> = tree(&local)
        .into_iter()
        .filter(|file| file.ends_with(".idx"))
        .collect();
    assert_eq!(indexes.len(), 4, "{indexes:?}");

    let beside = s3.ofconvert().args(["index", "s3://data/tf"]).ok();
    assert_eq!(
        beside.stdout,
        on_disk
            .stdout
            .replace(&*local.to_string_lossy(), "s3://data/tf")
    );
    for index in &indexes {
        let in_bucket = fs::read(s3.file("data", &format!("tf/{index}"))).unwrap();
        assert_eq!(in_bucket, fs::read(local.join(index)).unwrap(), "{index}");
    }
    // Into another bucket, keeping the tree; and from a bucket to a local directory.
    s3.ofconvert()
        .args(["index", "s3://data/tf", "--output-dir", "s3://idx/imagenet"])
        .ok();
    let local_out = work.path().join("idx");
    s3.ofconvert()
        .args(["index", "s3://data/tf", "--output-dir"])
        .arg(&local_out)
        .ok();
    for index in &indexes {
        let expected = fs::read(local.join(index)).unwrap();
        let in_bucket = fs::read(s3.file("idx", &format!("imagenet/{index}"))).unwrap();
        assert_eq!(in_bucket, expected, "{index}");
        assert_eq!(
            fs::read(local_out.join(index)).unwrap(),
            expected,
            "{index}"
        );
    }
}

#[test]
fn inspecting_a_missing_bucket_or_with_wrong_credentials_names_the_url_and_what_the_store_said() {
    let s3 = S3Server::start(&["data"]);
    upload(&s3, &testdata().join("datasets/tutorial"), "data", "tf");
    s3.ofconvert().args(["count", "s3://data/tf"]).ok();
    for command in ["count", "verify", "schema", "cat", "index"] {
        let run = s3
            .ofconvert_as(ACCESS_KEY, "not-the-secret")
            .args([command, "s3://data/tf"])
            .expect_code(1);
        assert!(
            run.stderr.contains("s3://data/tf"),
            "{command}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("403 Forbidden"),
            "{command}: {}",
            run.stderr
        );

        let run = s3
            .ofconvert()
            .args([command, "s3://no-such-bucket/tf"])
            .expect_code(1);
        assert!(
            run.stderr.contains("s3://no-such-bucket/tf"),
            "{command}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("NoSuchBucket"),
            "{command}: {}",
            run.stderr
        );
    }
    // A key that is not there is a path that does not exist, as on disk.
    let run = s3
        .ofconvert()
        .args(["count", "s3://data/nothing"])
        .expect_code(2);
    assert!(
        run.stderr
            .contains("s3://data/nothing: no such file or directory"),
        "{}",
        run.stderr
    );
}
