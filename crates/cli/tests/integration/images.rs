//! Image facts read from every record's headers, and what `schema --oneflow` prints for
//! images OneFlow 0.9 cannot decode.

use crate::util::*;
use ofconvert_bridge::{ExampleExt, OfRecordExt};
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
    // A section per split, each with its own warning.
    assert!(
        run.stderr
            .contains("mnist-train): feature \"image\": 80 of 80 images")
            && run
                .stderr
                .contains("mnist-test): feature \"image\": 40 of 40 images")
            && run.stderr.contains("80 PNG"),
        "{}",
        run.stderr
    );

    let run = ofconvert()
        .args(["schema".as_ref(), mnist.as_os_str()])
        .ok();
    assert!(
        run.stdout.contains("image: png 80; 28x28x1\n")
            && run.stdout.contains("image: png 40; 28x28x1\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  PNG: gray 8-bit 80\n"),
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
        run.stderr
            .contains("mnist-train: feature \"image\": 80 of 80 images are ones OneFlow 0.9"),
        "{}",
        run.stderr
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

#[test]
fn images_jpeg_reencodes_what_oneflow_cannot_decode_and_says_jpeg() {
    let work = tempdir();
    let out = work.path().join("of");
    let mixed = testdata().join("datasets/imagenet/mixed");
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            mixed.as_os_str(),
            out.as_os_str(),
            "--preset".as_ref(),
            "imagenet".as_ref(),
            "--images".as_ref(),
            "jpeg".as_ref(),
            "--no-sync".as_ref(),
        ])
        .ok();
    assert!(
        run.stdout
            .contains("re-encoded 3 CMYK JPEG, 6 PNG, 3 grayscale JPEG images to JPEG"),
        "{}",
        run.stdout
    );
    let manifest = manifest(&out);
    assert_eq!(
        manifest["image_conversion"]["reencoded"],
        serde_json::json!({"CMYK JPEG": 3, "PNG": 6, "grayscale JPEG": 3})
    );
    assert_eq!(
        manifest["settings"]["images"],
        serde_json::json!({"jpeg": {"quality": 100}})
    );
    let records = of_records(&out.join("part-00000"));
    let inputs = tf_records(&mixed.join("train-00000-of-00001"));
    for (record, input) in records.iter().zip(&inputs) {
        let record = ofconvert_bridge::decode_ofrecord(record).unwrap();
        let example = ofconvert_bridge::decode_example(input).unwrap();
        assert_eq!(record.bytes_values("format").unwrap()[0], b"JPEG");
        let original = &example.bytes_values("image/encoded").unwrap()[0];
        let written = &record.bytes_values("encoded").unwrap()[0];
        // Colour JPEGs keep their bytes; the others change.
        let colour_jpeg = example.bytes_values("image/colorspace").unwrap()[0] == b"RGB"
            && example.bytes_values("image/format").unwrap()[0] == b"JPEG";
        assert_eq!(written == original, colour_jpeg);
    }
    let run = ofconvert()
        .args(["schema".as_ref(), "--oneflow".as_ref(), out.as_os_str()])
        .ok();
    assert!(
        run.stdout.contains(
            "encoded = flow.nn.OFRecordImageDecoder(\"encoded\", color_space=\"RGB\")(record)\n"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn without_images_the_bytes_never_change() {
    let work = tempdir();
    let out = work.path().join("of");
    let mixed = testdata().join("datasets/imagenet/mixed");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            mixed.as_os_str(),
            out.as_os_str(),
            "--no-sync".as_ref(),
        ])
        .ok();
    let written = of_records(&out.join("part-00000"));
    assert_eq!(
        written,
        to_of(&tf_records(&mixed.join("train-00000-of-00001")))
    );
    assert!(manifest(&out).get("image_conversion").is_none());
}

#[test]
fn images_raw_writes_pixels_and_shape_and_a_raw_decoder() {
    let work = tempdir();
    let out = work.path().join("of");
    let mnist = testdata().join("datasets/tfds/mnist/3.0.1");
    let run = ofconvert()
        .args([
            "tf2of".as_ref(),
            mnist.as_os_str(),
            out.as_os_str(),
            "--images".as_ref(),
            "raw".as_ref(),
            "--no-sync".as_ref(),
        ])
        .ok();
    assert!(
        run.stdout.contains("decoded 40 images to raw pixels"),
        "{}",
        run.stdout
    );
    let record = &of_records(&out.join("mnist-test/part-00000"))[0];
    let record = ofconvert_bridge::decode_ofrecord(record).unwrap();
    assert_eq!(record.bytes_values("image").unwrap()[0].len(), 28 * 28);
    assert_eq!(record.int64_values("image/shape"), Some(&[28, 28, 1][..]));
    let run = ofconvert()
        .args([
            "schema".as_ref(),
            "--oneflow".as_ref(),
            out.join("mnist-test").as_os_str(),
        ])
        .ok();
    assert!(
        run.stdout.contains(
            "image = flow.nn.OFRecordRawDecoder(\"image\", shape=(28, 28, 1), dtype=flow.uint8)(record)\n"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn images_raw_of_varying_shapes_says_which_record_differs() {
    let work = tempdir();
    let out = work.path().join("of");
    let train = testdata().join("datasets/imagenet/train");
    ofconvert()
        .args([
            "tf2of".as_ref(),
            train.as_os_str(),
            out.as_os_str(),
            "--images".as_ref(),
            "raw".as_ref(),
            "--no-sync".as_ref(),
        ])
        .ok();
    let run = ofconvert()
        .args(["schema".as_ref(), "--oneflow".as_ref(), out.as_os_str()])
        .ok();
    assert!(
        run.stdout.contains(
            "# \"image/encoded\": raw pixels whose shape differs between records (record #1 first differs"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn help_says_what_preset_imagenet_does_to_box_labels() {
    let run = ofconvert().args(["tf2of", "--help"]).ok();
    let text = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("shifts image/object/bbox/label by -1 into an int32 object/bbox/label"),
        "{}",
        run.stdout
    );
}

#[test]
fn images_jpeg_makes_colorspace_and_channels_fit_the_reencoded_images() {
    let work = tempdir();
    let mixed = testdata().join("datasets/imagenet/mixed");
    // Without the preset the inception keys stay, channels int64; with it they lose their
    // prefix and channels is int32.
    for (preset, prefix) in [(false, "image/"), (true, "")] {
        let out = work.path().join(format!("of-{preset}"));
        let mut command = ofconvert();
        command
            .arg("tf2of")
            .arg(&mixed)
            .arg(&out)
            .args(["--images", "jpeg", "--no-sync"]);
        if preset {
            command.args(["--preset", "imagenet"]);
        }
        command.ok();
        let records = of_records(&out.join("part-00000"));
        assert_eq!(records.len(), 15);
        for (index, record) in records.iter().enumerate() {
            let record = ofconvert_bridge::decode_ofrecord(record).unwrap();
            let image = &record.bytes_values(&format!("{prefix}encoded")).unwrap()[0];
            let header = ofconvert_engine::ImageHeader::parse(image).unwrap();
            assert_eq!(header.format, ofconvert_engine::ImageFormat::Jpeg);
            let colorspace = match header.jpeg_color {
                Some(ofconvert_engine::JpegColor::Rgb) => &b"RGB"[..],
                Some(ofconvert_engine::JpegColor::Grayscale) => b"Grayscale",
                other => panic!("record {index}: {other:?}"),
            };
            assert_eq!(
                record.bytes_values(&format!("{prefix}colorspace")).unwrap()[0],
                colorspace,
                "record {index}"
            );
            let channels = &format!("{prefix}channels");
            let written = if preset {
                assert!(record.int64_values(channels).is_none());
                i64::from(record.int32_values(channels).unwrap()[0])
            } else {
                record.int64_values(channels).unwrap()[0]
            };
            assert_eq!(written, i64::from(header.channels), "record {index}");
            // Everything OneFlow could not decode became a 3-channel RGB JPEG.
            assert_eq!(header.channels, 3, "record {index}");
        }
    }
}

/// The description of `feature` in the TFDS `features.json` at `path`.
fn tfds_feature(path: &std::path::Path, feature: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let features: Value = serde_json::from_str(&text).unwrap();
    features["featuresDict"]["features"][feature].clone()
}

#[test]
fn images_raw_makes_features_json_describe_the_pixels_there_and_back() {
    let work = tempdir();
    let mnist = testdata().join("datasets/tfds/mnist/3.0.1");
    let pixels = serde_json::json!({
        "pythonClassName": "tensorflow_datasets.core.features.tensor_feature.Tensor",
        "tensor": {
            "shape": { "dimensions": ["28", "28", "1"] },
            "dtype": "uint8",
            "encoding": "bytes",
        },
        "description": "",
    });
    let shape = serde_json::json!({
        "pythonClassName": "tensorflow_datasets.core.features.tensor_feature.Tensor",
        "tensor": {
            "shape": { "dimensions": ["3"] },
            "dtype": "int64",
            "encoding": "none",
        },
    });
    let label = tfds_feature(&mnist.join("features.json"), "label");
    for side_files in [true, false] {
        let of = work.path().join(format!("of-{side_files}"));
        let mut tf2of = ofconvert();
        tf2of
            .arg("tf2of")
            .args([&mnist, &of])
            .args(["--images", "raw"]);
        if !side_files {
            tf2of.arg("--no-side-files");
        }
        tf2of.ok();
        let split = of.join("mnist-test");
        if side_files {
            assert_eq!(tfds_feature(&split.join("features.json"), "image"), pixels);
            assert_eq!(tfds_feature(&split.join("features.json"), "label"), label);
            // Listed as written, with the size of the file it was rewritten from.
            let listed = manifest(&split)["side_files"]
                .as_array()
                .unwrap()
                .iter()
                .find(|side| side["name"] == "features.json")
                .cloned()
                .unwrap();
            let written = std::fs::read(split.join("features.json")).unwrap();
            assert_eq!(listed["bytes"], written.len());
            let original = std::fs::metadata(mnist.join("features.json"))
                .unwrap()
                .len();
            assert_eq!(listed["input_bytes"], original);
            // A resumed run finds the split whole.
            let run = ofconvert()
                .arg("tf2of")
                .args([&mnist, &of])
                .args(["--images", "raw", "--resume", "--json"])
                .ok();
            let summary: Value = serde_json::from_str(&run.stdout).unwrap();
            for dataset in summary["datasets"].as_array().unwrap() {
                assert_eq!(dataset["status"], "kept", "{dataset}");
            }
        } else {
            assert!(!split.join("features.json").exists());
        }

        // of2tf writes TFDS's metadata back beside the splits: the rewritten description.
        let back = work.path().join(format!("back-{side_files}"));
        ofconvert().arg("of2tf").args([&of, &back]).ok();
        assert_eq!(tfds_feature(&back.join("features.json"), "image"), pixels);
        assert_eq!(
            tfds_feature(&back.join("features.json"), "image/shape"),
            shape
        );
        assert_eq!(tfds_feature(&back.join("features.json"), "label"), label);
    }

    // Re-encoded as JPEG: TFDS's Image still, of colour JPEGs.
    let jpeg = work.path().join("jpeg");
    ofconvert()
        .arg("tf2of")
        .args([&mnist, &jpeg])
        .args(["--images", "jpeg"])
        .ok();
    let image = tfds_feature(&jpeg.join("mnist-test/features.json"), "image");
    assert_eq!(image["image"]["encodingFormat"], "jpeg");
    assert_eq!(
        image["image"]["shape"]["dimensions"],
        serde_json::json!(["28", "28", "3"])
    );
}
