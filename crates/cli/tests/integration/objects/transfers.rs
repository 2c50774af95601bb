//! Several transfers in flight for one job: objects opened a work item ahead, ranges read
//! ahead, parts uploaded while the next are written. However many are in flight, the bytes
//! are those of a local run.

use super::*;

#[test]
fn one_job_with_any_number_of_transfers_in_flight_gives_the_bytes_of_a_local_run() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    let datasets = testdata().join("datasets");
    // Parts cut small, so that each work item uploads several and the slots fill.
    let flags = ["--jobs", "1", "--max-part-bytes", "4K"];
    let local_of = work.path().join("of");
    let local_tf = work.path().join("tf");
    ofconvert()
        .arg("tf2of")
        .args([&datasets, &local_of])
        .args(flags)
        .ok();
    ofconvert()
        .arg("of2tf")
        .args([&local_of, &local_tf])
        .args(flags)
        .ok();
    // The input put in the bucket as it is (the server keeps objects as files).
    copy_tree(&datasets, &s3.file("data", "in"));
    for in_flight in ["1", "3", "16"] {
        let of = format!("of-{in_flight}");
        let tf = format!("tf-{in_flight}");
        s3.ofconvert()
            .args(["tf2of", "s3://data/in", &format!("s3://data/{of}")])
            .args(flags)
            .args(["--in-flight", in_flight])
            .ok();
        // What went in, through the bucket and back, is what a local run writes.
        s3.ofconvert()
            .args([
                "of2tf",
                &format!("s3://data/{of}"),
                &format!("s3://data/{tf}"),
            ])
            .args(flags)
            .args(["--in-flight", in_flight])
            .ok();
        assert_eq!(
            written(&s3.file("data", &tf)),
            written(&local_tf),
            "{in_flight}"
        );
        assert_eq!(
            written(&s3.file("data", &of)),
            written(&local_of),
            "{in_flight}"
        );
    }
    let refused = s3
        .ofconvert()
        .args([
            "tf2of",
            "s3://data/in",
            "s3://data/none",
            "--in-flight",
            "0",
        ])
        .expect_code(2);
    assert!(refused.stderr.contains("--in-flight"), "{}", refused.stderr);
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}
