//! TFDS's class names told to OneFlow users: in the manifest's schema, the summary and
//! `schema`, under the names the mapping gives the features.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::*;

const DIGITS: [&str; 10] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
];

/// TFDS's mnist sample with its label's class names beside it.
fn mnist_with_names(root: &Path) -> PathBuf {
    let folder = root.join("mnist");
    copy_tree(&testdata().join("datasets/tfds/mnist/3.0.1"), &folder);
    fs::write(folder.join("label.labels.txt"), DIGITS.join("\n") + "\n").unwrap();
    folder
}

fn class_names(manifest: &Value, feature: &str) -> Value {
    schema_names(&manifest["schema"], feature)
}

fn schema_names(schema: &Value, feature: &str) -> Value {
    schema["features"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == feature)
        .unwrap_or_else(|| panic!("no feature {feature}"))["class_names"]
        .clone()
}

#[test]
fn class_names_are_in_the_manifest_the_summary_and_schema() {
    let work = tempdir();
    let input = mnist_with_names(work.path());
    let out = work.path().join("of");
    let run = ofconvert().arg("tf2of").args([&input, &out]).ok();
    let train = out.join("mnist-train");
    assert_eq!(
        class_names(&manifest(&train), "label"),
        serde_json::json!(DIGITS)
    );
    assert!(
        run.stdout.contains(
            "class names of label (10): zero, one, two, three, four, five, six, seven, and 2 more"
        ),
        "{}",
        run.stdout
    );

    // schema, of the TFDS folder and of a converted dataset.
    for dir in [&input, &train] {
        let table = ofconvert().arg("schema").arg(dir).ok().stdout;
        assert!(
            table.contains("label: 10 class names (TFDS): zero, one, two"),
            "{table}"
        );
        let json: Value =
            serde_json::from_str(&ofconvert().args(["schema", "--json"]).arg(dir).ok().stdout)
                .unwrap();
        assert_eq!(schema_names(&json, "label"), serde_json::json!(DIGITS));
    }
    let code = ofconvert()
        .args(["schema", "--oneflow"])
        .arg(&train)
        .ok()
        .stdout;
    assert!(
        code.contains("label_names = [\"zero\", \"one\", \"two\""),
        "{code}"
    );
}

#[test]
fn class_names_follow_a_rename_and_an_offset_drops_them() {
    let work = tempdir();
    let input = mnist_with_names(work.path());
    let renamed = work.path().join("renamed");
    ofconvert()
        .arg("tf2of")
        .args([&input, &renamed])
        .args(["--rename", "label=digit"])
        .ok();
    let manifest_of = |dir: &Path| manifest(&dir.join("mnist-test"));
    assert_eq!(
        class_names(&manifest_of(&renamed), "digit"),
        serde_json::json!(DIGITS)
    );
    // Sharded, commit publishes the same names.
    let sharded = work.path().join("sharded");
    for k in 0..2 {
        ofconvert()
            .arg("tf2of")
            .args([&input, &sharded])
            .args(["--rename", "label=digit", "--shard", &format!("{k}/2")])
            .ok();
    }
    ofconvert().arg("commit").arg(&sharded).ok();
    assert_eq!(
        class_names(&manifest_of(&sharded), "digit"),
        serde_json::json!(DIGITS)
    );

    // Shifted labels no longer index the names.
    let shifted = work.path().join("shifted");
    ofconvert()
        .arg("tf2of")
        .args([&input, &shifted])
        .args(["--offset", "label=1"])
        .ok();
    assert_eq!(class_names(&manifest_of(&shifted), "label"), Value::Null);
}
