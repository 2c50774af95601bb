//! Every reading command over `http://` URLs of single record files, from a server that
//! answers byte ranges and from one that ignores them, each giving what it gives on the
//! local copy.

use super::*;

/// The reading commands, each run on `url` and on `local`, give the same output (the
/// converters: the same files).
fn reads_as_on_disk(url: &str, local: &Path) {
    let runs: [&[&str]; 6] = [
        &["count"],
        &["verify"],
        &["schema"],
        &["schema", "--oneflow"],
        &["cat", "--max-bytes", "16"],
        &["cat", "--json", "-n", "3"],
    ];
    for args in runs {
        let on_disk = ofconvert().args(args).arg(local).ok();
        let over_http = ofconvert().args(args).arg(url).ok();
        assert_eq!(
            over_http.stdout.replace(url, "FILE"),
            on_disk.stdout.replace(&*local.to_string_lossy(), "FILE"),
            "{args:?} of {url}"
        );
    }
    let work = tempdir();
    let (index_http, index_disk) = (work.path().join("idx-http"), work.path().join("idx-disk"));
    ofconvert()
        .args(["index", url, "--output-dir"])
        .arg(&index_http)
        .ok();
    ofconvert()
        .arg("index")
        .arg(local)
        .arg("--output-dir")
        .arg(&index_disk)
        .ok();
    assert!(!tree(&index_disk).is_empty());
    assert_eq!(tree(&index_http), tree(&index_disk));
    for file in tree(&index_disk) {
        assert_eq!(
            std::fs::read(index_http.join(&file)).unwrap(),
            std::fs::read(index_disk.join(&file)).unwrap(),
            "{file}"
        );
    }
    let (of_http, of_disk) = (work.path().join("of-http"), work.path().join("of-disk"));
    ofconvert().args(["tf2of", url]).arg(&of_http).ok();
    ofconvert().arg("tf2of").arg(local).arg(&of_disk).ok();
    assert_eq!(
        crate::objects::written(&of_http),
        crate::objects::written(&of_disk)
    );
}

#[test]
fn every_reading_command_reads_a_file_from_a_server_that_answers_ranges() {
    let datasets = testdata().join("datasets");
    let server = FileServer::start(
        datasets.clone(),
        Serving {
            ranges: true,
            ..Serving::default()
        },
    );
    for file in [
        "tutorial/tutorial.tfrecord",
        "imagenet/train/train-00000-of-00002",
    ] {
        reads_as_on_disk(&format!("{}/{file}", server.endpoint), &datasets.join(file));
    }
}

#[test]
fn every_reading_command_reads_a_file_from_a_server_that_ignores_ranges() {
    let datasets = testdata().join("datasets");
    let server = FileServer::start(datasets.clone(), Serving::default());
    for file in [
        "tutorial/tutorial.tfrecord",
        "imagenet/train/train-00000-of-00002",
    ] {
        reads_as_on_disk(&format!("{}/{file}", server.endpoint), &datasets.join(file));
    }
}
