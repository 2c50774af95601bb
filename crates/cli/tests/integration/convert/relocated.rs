//! An output moved or copied elsewhere still describes itself: manifests name no place but
//! their own directory, and what is printed on screen names where the output is now.

use std::fs;
use std::path::Path;

use crate::util::*;

/// Every manifest under `dir`, as text, by its path relative to `dir`.
fn manifest_texts(dir: &Path) -> Vec<(String, String)> {
    tree(dir)
        .into_iter()
        .filter(|file| file.ends_with("ofconvert-manifest.json"))
        .map(|file| {
            let text = fs::read_to_string(dir.join(&file)).unwrap();
            (file, text)
        })
        .collect()
}

#[test]
fn a_moved_output_describes_itself_and_resumes_and_converts_back_from_there() {
    let work = tempdir();
    let input = sample_tree(work.path(), "in");
    let written = work.path().join("written");
    let run = ofconvert()
        .arg("tf2of")
        .args([&input, &written])
        .arg("--json")
        .ok();
    let root = work.path().display().to_string();
    let manifests = manifest_texts(&written);
    assert!(manifests.len() > 2);
    for (file, text) in &manifests {
        assert!(!text.contains(&root), "{file} names a place: {text}");
        let manifest: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(manifest["oneflow"]["ofrecord_dir"], ".", "{file}");
    }
    // On screen, where the dataset is.
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let tutorial = std::path::absolute(written.join("tutorial")).unwrap();
    let reader = summary["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|dataset| dataset["name"] == "tutorial")
        .map(|dataset| dataset["manifest"]["oneflow"]["python"].as_str().unwrap())
        .unwrap();
    assert!(
        reader.starts_with(&format!(
            "flow.nn.OFRecordReader(\"{}\", ",
            tutorial.display()
        )),
        "{reader}"
    );

    // Moved, it is what it was, read from where it is now.
    let moved = work.path().join("moved");
    fs::rename(&written, &moved).unwrap();
    let resumed = ofconvert()
        .arg("tf2of")
        .args([&input, &moved])
        .args(["--resume", "--json"])
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&resumed.stdout).unwrap();
    for dataset in summary["datasets"].as_array().unwrap() {
        assert_eq!(dataset["status"], "kept", "{dataset}");
        let dir = dataset["manifest"]["oneflow"]["ofrecord_dir"]
            .as_str()
            .unwrap();
        assert!(
            Path::new(dir).starts_with(std::path::absolute(&moved).unwrap()),
            "{dir}"
        );
    }
    assert_eq!(manifest_texts(&moved), manifests);
    let schema = ofconvert()
        .current_dir(&moved)
        .args(["schema", "--oneflow", "tutorial"])
        .ok();
    let here = std::path::absolute(moved.join("tutorial")).unwrap();
    assert!(
        schema
            .stdout
            .contains(&format!("flow.nn.OFRecordReader(\"{}\", ", here.display())),
        "{}",
        schema.stdout
    );

    // Back to TFRecord from there: the same relative manifests, absolute paths on screen.
    let back = work.path().join("back");
    let run = ofconvert()
        .arg("of2tf")
        .args([&moved, &back])
        .arg("--json")
        .ok();
    for (file, text) in manifest_texts(&back) {
        assert!(!text.contains(&root), "{file} names a place: {text}");
    }
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let back = std::path::absolute(&back).unwrap();
    for dataset in summary["datasets"].as_array().unwrap() {
        for file in dataset["manifest"]["tensorflow"]["files"]
            .as_array()
            .unwrap()
        {
            let file = Path::new(file.as_str().unwrap());
            assert!(
                file.starts_with(&back) && file.is_file(),
                "{}",
                file.display()
            );
        }
    }
}

#[test]
fn a_manifest_an_older_version_wrote_with_absolute_paths_is_read_where_it_is() {
    let work = tempdir();
    let input = sample_tree(work.path(), "in");
    let of = work.path().join("of");
    ofconvert()
        .arg("tf2of")
        .arg(input.join("tutorial"))
        .arg(&of)
        .ok();
    // What versions before wrote: the absolute paths of where it was written.
    let path = of.join("ofconvert-manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let elsewhere = "/somewhere/else/of";
    manifest["oneflow"]["ofrecord_dir"] = elsewhere.into();
    let python = manifest["oneflow"]["python"]
        .as_str()
        .unwrap()
        .replace("\".\"", &format!("\"{elsewhere}\""));
    manifest["oneflow"]["python"] = python.into();
    fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();

    let resumed = ofconvert()
        .arg("tf2of")
        .arg(input.join("tutorial"))
        .arg(&of)
        .args(["--resume", "--json"])
        .ok();
    let summary: serde_json::Value = serde_json::from_str(&resumed.stdout).unwrap();
    let dataset = &summary["datasets"][0];
    assert_eq!(dataset["status"], "kept");
    assert_eq!(
        dataset["manifest"]["oneflow"]["ofrecord_dir"],
        std::path::absolute(&of).unwrap().display().to_string()
    );
    let back = work.path().join("back");
    ofconvert().arg("of2tf").args([&of, &back]).ok();
    assert_eq!(
        tree(&back),
        ["ofconvert-manifest.json", "tutorial.tfrecord"]
    );
}
