//! Directories over HTTP: walked through WebDAV where the server speaks it (a tree of
//! datasets converted as from the local disk), refused with what can be read where it does
//! not (a plain file server's directory is a page for people).

use super::*;
use crate::objects::{manifests, written};

#[test]
fn a_tree_is_listed_and_converted_where_the_server_speaks_webdav() {
    let work = tempdir();
    let datasets = testdata().join("datasets");
    let local_of = work.path().join("of");
    let local_tf = work.path().join("tf");
    ofconvert().arg("tf2of").args([&datasets, &local_of]).ok();
    ofconvert().arg("of2tf").args([&local_of, &local_tf]).ok();
    let server = FileServer::start(
        testdata(),
        Serving {
            ranges: true,
            webdav: true,
            ..Serving::default()
        },
    );
    for url in [
        format!("{}/datasets/", server.endpoint),
        format!("{}/datasets", server.endpoint),
    ] {
        let out = work.path().join(format!("from-{}", url.len()));
        ofconvert().args(["tf2of", &url]).arg(&out).ok();
        assert_eq!(written(&out), written(&local_of), "{url}");
        assert_eq!(manifests(&out), manifests(&local_of));
        let over_http = ofconvert().args(["count", &url]).ok().stdout;
        let on_disk = ofconvert().arg("count").arg(&datasets).ok().stdout;
        assert_eq!(
            over_http.replace(url.trim_end_matches('/'), "IN"),
            on_disk.replace(&*datasets.to_string_lossy(), "IN"),
        );
    }

    // A OneFlow tree served the same way goes back to TFRecords as from the disk.
    let of_server = FileServer::start(
        work.path().to_path_buf(),
        Serving {
            ranges: false,
            webdav: true,
            ..Serving::default()
        },
    );
    let back = work.path().join("back");
    ofconvert()
        .args(["of2tf", &format!("{}/of", of_server.endpoint)])
        .arg(&back)
        .ok();
    assert_eq!(written(&back), written(&local_tf));
}

#[test]
fn a_directory_on_a_server_without_webdav_is_refused_saying_what_can_be_read() {
    let server = FileServer::start(testdata(), Serving::default());
    for url in [
        format!("{}/datasets/tutorial/", server.endpoint),
        format!("{}/datasets/tutorial", server.endpoint),
    ] {
        for command in ["count", "tf2of"] {
            let mut run = ofconvert();
            run.args([command, &url]);
            if command == "tf2of" {
                run.arg(tempdir().path().join("out"));
            }
            let run = run.expect_code(1);
            assert!(run.stderr.contains(&url), "{}", run.stderr);
            assert!(
                run.stderr.contains("only single files can be read from it"),
                "{}",
                run.stderr
            );
            assert!(run.stderr.contains("501 Not Implemented"), "{}", run.stderr);
        }
    }
    // Its files are read as they are.
    let file = format!("{}/datasets/tutorial/tutorial.tfrecord", server.endpoint);
    ofconvert().args(["count", &file]).ok();
}
