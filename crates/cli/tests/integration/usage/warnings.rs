//! Warnings: on stderr, in the JSON summary, coloured on request, with the flag that helps

use super::*;

/// A dataset whose records do not all carry the same features: tf2of warns about it.
fn uneven_input(root: &std::path::Path) -> std::path::PathBuf {
    let input = root.join("in");
    copy_into(&testdata().join("golden/edge.tfrecord"), &input);
    input
}

#[test]
fn warnings_go_to_stderr_and_into_the_json_summary() {
    let work = tempdir();
    let input = uneven_input(work.path());
    let run = ofconvert()
        .arg("tf2of")
        .args(["--empty", "skip"])
        .arg(&input)
        .arg(work.path().join("out"))
        .env_remove("CLICOLOR_FORCE")
        .ok();
    assert!(!run.stdout.contains("warning"), "{}", run.stdout);
    // The features missing from some records: one line, naming the dataset and them.
    let missing: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.contains("missing from some records"))
        .collect();
    assert_eq!(missing.len(), 1, "{}", run.stderr);
    assert!(missing[0].contains(": in: \""), "{}", run.stderr);
    assert!(!run.stderr.contains("is missing from"), "{}", run.stderr);

    let json = ofconvert()
        .arg("tf2of")
        .args(["--empty", "skip"])
        .arg(&input)
        .arg(work.path().join("json"))
        .arg("--json")
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let warnings = summary["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("is missing from")),
        "{warnings:?}"
    );

    let schema = ofconvert()
        .args(["schema", "--json"])
        .arg(input.join("edge.tfrecord"))
        .ok();
    let schema: serde_json::Value = serde_json::from_str(&schema.stdout).unwrap();
    assert!(!schema["warnings"].as_array().unwrap().is_empty());
}

#[test]
fn warnings_and_errors_are_coloured_on_request_and_never_under_no_color() {
    let work = tempdir();
    let input = uneven_input(work.path());
    let coloured = ofconvert()
        .arg("tf2of")
        .args(["--empty", "skip"])
        .arg(&input)
        .arg(work.path().join("a"))
        .env("CLICOLOR_FORCE", "1")
        .env_remove("NO_COLOR")
        .ok();
    assert!(
        coloured.stderr.contains("\x1b[1;33mwarning:\x1b[0m"),
        "{}",
        coloured.stderr
    );
    let missing = ofconvert()
        .args(["count", "/nonexistent/ofconvert-test"])
        .env("CLICOLOR_FORCE", "1")
        .env_remove("NO_COLOR")
        .expect_code(2);
    assert!(
        missing.stderr.contains("\x1b[1;31mofconvert:\x1b[0m"),
        "{}",
        missing.stderr
    );

    let plain = ofconvert()
        .arg("tf2of")
        .args(["--empty", "skip"])
        .arg(&input)
        .arg(work.path().join("b"))
        .env("CLICOLOR_FORCE", "1")
        .env("NO_COLOR", "1")
        .ok();
    assert!(!plain.stderr.contains('\x1b'), "{}", plain.stderr);
    assert!(plain.stderr.contains("warning:"), "{}", plain.stderr);
}

#[test]
fn an_invalid_mapping_says_so_once() {
    let work = tempdir();
    let run = ofconvert()
        .arg("tf2of")
        .arg(testdata().join("datasets/tutorial"))
        .arg(work.path().join("out"))
        .args(["--keep", "feature0", "--drop", "feature0"])
        .expect_code(2);
    assert!(
        run.stderr.contains("invalid mapping: feature"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("invalid mapping: invalid mapping"),
        "{}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------------
// cat for reading: text as text, long values cut

#[test]
fn cat_json_shows_text_as_text_and_max_bytes_cuts_long_values() {
    let file = testdata().join("golden/images.tfrecord");
    let value = |json: &str, feature: &str| -> String {
        let record: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
        record["features"]["feature"][feature]["bytesList"]["value"][0]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let whole = ofconvert()
        .arg("cat")
        .arg(&file)
        .args(["--json", "-n", "1"])
        .stdout();
    assert_eq!(value(&whole, "image/colorspace"), "RGB");
    let encoded = value(&whole, "image/encoded");
    // A JPEG is binary: base64 (FF D8 FF is "/9j/").
    assert!(encoded.starts_with("/9j/"), "{encoded}");
    let padding = encoded.bytes().rev().take_while(|b| *b == b'=').count();
    let length = encoded.len() / 4 * 3 - padding;

    let cut = ofconvert()
        .arg("cat")
        .arg(&file)
        .args(["--json", "-n", "1", "--max-bytes", "3"])
        .stdout();
    assert_eq!(
        value(&cut, "image/encoded"),
        format!("/9j/... ({length} bytes)")
    );
    assert_eq!(value(&cut, "image/colorspace"), "RGB");

    let text = ofconvert()
        .arg("cat")
        .arg(&file)
        .args(["-n", "1", "--max-bytes", "3"])
        .stdout();
    assert!(
        text.contains(&format!("value: \"\\377\\330\\377... ({length} bytes)\"")),
        "{text}"
    );
}
