//! Image facts read from every record's headers, and what `schema --oneflow` prints for
//! images OneFlow 0.9 cannot decode.

use crate::util::*;
use serde_json::Value;

#[test]
fn png_features_get_facts_a_warning_and_no_image_decoder() {
    let mnist = testdata().join("datasets/tfds/mnist/3.0.1");
    let run = ofconvert()
        .args(["schema".as_ref(), "--json".as_ref(), mnist.as_os_str()])
        .ok();
    let schema: Value = serde_json::from_str(&run.stdout).unwrap();
    let image = schema["features"]
        .as_array()
        .unwrap()
        .iter()
        .find(|feature| feature["name"] == "image")
        .unwrap();
    assert_eq!(image["image"], "png");
    assert_eq!(image["images"]["formats"], serde_json::json!({"png": 120}));
    assert_eq!(
        image["images"]["png_color"],
        serde_json::json!({"gray 8-bit": 120})
    );
    assert_eq!(
        image["images"]["height"],
        serde_json::json!({"min": 28, "max": 28})
    );
    assert_eq!(
        image["images"]["channels"],
        serde_json::json!({"min": 1, "max": 1})
    );
    assert_eq!(image["images"]["oneflow_cannot_decode"], 120);

    let run = ofconvert()
        .args(["schema".as_ref(), "--oneflow".as_ref(), mnist.as_os_str()])
        .ok();
    assert!(
        !run.stdout.contains("OFRecordImageDecoder("),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("image = flow.nn.OFRecordBytesDecoder(\"image\")(record)  # encoded images"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("feature \"image\": 120 of 120 images")
            && run.stderr.contains("120 PNG"),
        "{}",
        run.stderr
    );

    let run = ofconvert()
        .args(["schema".as_ref(), mnist.as_os_str()])
        .ok();
    assert!(
        run.stdout.contains("image: png 120; 28x28x1\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  PNG: gray 8-bit 120\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn mixed_formats_are_not_called_by_one_records_format() {
    let images = testdata().join("golden/images.tfrecord");
    let run = ofconvert()
        .args(["schema".as_ref(), "--json".as_ref(), images.as_os_str()])
        .ok();
    let schema: Value = serde_json::from_str(&run.stdout).unwrap();
    let encoded = schema["features"]
        .as_array()
        .unwrap()
        .iter()
        .find(|feature| feature["name"] == "image/encoded")
        .unwrap();
    assert_eq!(encoded["image"], "mixed");
    assert_eq!(
        encoded["images"]["formats"],
        serde_json::json!({"jpeg": 3, "png": 3})
    );
    assert_eq!(encoded["images"]["first_undecodable"], 1);
}

#[test]
fn the_summary_and_manifest_carry_image_facts_warnings_and_reader_notes() {
    let work = tempdir();
    let out = work.path().join("of");
    let mnist = testdata().join("datasets/tfds/mnist/3.0.1");
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            mnist.as_os_str(),
            out.as_os_str(),
            "--no-sync".as_ref(),
        ])
        .ok();
    assert!(
        run.stdout.contains("images in image: png 80; 28x28x1"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("80 of 80 images are ones OneFlow 0.9"),
        "{}",
        run.stdout
    );
    let manifest = manifest(&out.join("mnist-test"));
    let warnings = manifest["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("40 of 40 images")),
        "{warnings:?}"
    );
    assert_eq!(manifest["oneflow"]["max_ranks"], 1);
    let notes = manifest["oneflow"]["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("--parts N")),
        "{notes:?}"
    );
}

#[test]
fn schema_tf_prints_no_oneflow_warnings() {
    let mnist = testdata().join("datasets/tfds/mnist/3.0.1");
    let run = ofconvert()
        .args(["schema".as_ref(), "--tf".as_ref(), mnist.as_os_str()])
        .ok();
    assert!(!run.stderr.contains("OneFlow"), "{}", run.stderr);
}

#[test]
fn integers_beyond_int32_are_said() {
    let edge = testdata().join("golden/edge.tfrecord");
    let run = ofconvert().args(["schema".as_ref(), edge.as_os_str()]).ok();
    assert!(
        run.stderr.contains(
            "feature \"int64\" holds integers from -9223372036854775808 to 9223372036854775807, beyond int32"
        ),
        "{}",
        run.stderr
    );
}
