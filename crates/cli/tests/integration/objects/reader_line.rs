//! The reader line of a dataset converted into a bucket: OneFlow's `OFRecordReader` opens
//! local paths only, so the line opens a local copy and says how to make it.

use super::S3Server;
use crate::util::*;

#[test]
fn a_bucket_outputs_reader_line_says_how_to_copy_the_parts_down_and_opens_the_copy() {
    let s3 = S3Server::start(&["data"]);
    let input = testdata().join("datasets").join("tutorial");
    let run = s3
        .ofconvert()
        .arg("tf2of")
        .arg(&input)
        .args(["s3://data/runs/of", "--parts", "2"])
        .ok();
    let lines: Vec<&str> = run.stdout.lines().map(str::trim).collect();
    let call = lines
        .iter()
        .position(|line| line.starts_with("flow.nn.OFRecordReader("))
        .unwrap_or_else(|| panic!("no reader line: {}", run.stdout));
    assert_eq!(
        lines[call - 1],
        "# OneFlow opens local paths only; copy the parts first: aws s3 sync \
         s3://data/runs/of runs/of",
        "{}",
        run.stdout
    );
    assert!(
        lines[call]
            .starts_with("flow.nn.OFRecordReader(\"runs/of\", batch_size=32, data_part_num=2,"),
        "{}",
        run.stdout
    );

    let json = s3
        .ofconvert()
        .arg("tf2of")
        .arg(&input)
        .args(["s3://data/json", "--json"])
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let reader = &summary["datasets"][0]["manifest"]["oneflow"];
    assert_eq!(reader["ofrecord_dir"], "s3://data/json");
    assert_eq!(reader["fetch"], "aws s3 sync s3://data/json json");
    assert!(reader["python"]
        .as_str()
        .unwrap()
        .contains("\nflow.nn.OFRecordReader(\"json\", batch_size=32, data_part_num=1,"));

    // The manifest in the bucket opens its own folder, `.`, wherever it is copied to.
    let manifest =
        std::fs::read_to_string(s3.file("data", "json/ofconvert-manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(manifest["oneflow"]["ofrecord_dir"], ".");
    assert!(manifest["oneflow"].get("fetch").is_none());
}
