//! Nothing lost on the way: the files that come with the records travel beside the parts
//! and back, TFDS's class names are told, and `tf → of → tf` gives back the very tree,
//! path for path and byte for byte, with only ofconvert's manifests added.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::*;

mod classes;
mod compressed;
mod roots;
mod side;

/// The files of `dir` and their bytes, ofconvert's manifests left out.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|file| !file.ends_with("ofconvert-manifest.json"))
        .map(|file| {
            let bytes = fs::read(dir.join(&file)).unwrap();
            (file, bytes)
        })
        .collect()
}

/// The sample tree with the files datasets come with in the wild beside its records:
/// ImageNet's synset list, a BERT vocabulary, TFDS's class names, a README and a licence;
/// and a folder of notes without records.
fn sample_with_side_files(root: &Path) -> PathBuf {
    let input = sample_tree(root, "in");
    let files: [(&str, &[u8]); 7] = [
        (
            "imagenet/train/synset_labels.txt",
            b"n01440764\nn01443537\n",
        ),
        ("bert/vocab.txt", b"[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n"),
        (
            "tfds/mnist/3.0.1/label.labels.txt",
            b"zero\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n",
        ),
        (
            "tfds/mnist/3.0.1/README.md",
            b"# MNIST\n\nSeven-segment digits.\n",
        ),
        ("tutorial/LICENSE", b"Apache License 2.0\n"),
        // Bytes that are no text at all.
        ("tutorial/blob.bin", &[0, 159, 146, 150, 255, 0, 1]),
        ("notes/todo.txt", b"no records here\n"),
    ];
    for (path, bytes) in files {
        let path = input.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
    input
}

fn json_run(command: &mut TestCommand) -> Value {
    let run = command.arg("--json").ok();
    serde_json::from_str(&run.stdout).unwrap()
}

#[test]
fn tf_to_of_to_tf_gives_back_every_path_and_byte() {
    let work = tempdir();
    let input = sample_with_side_files(work.path());
    let of = work.path().join("of");
    let summary = json_run(ofconvert().arg("tf2of").args([&input, &of]));
    // Each family of a folder gets its copy: 1 + 1 + 4 for each of mnist's two splits, 2
    // for each of cifar10's, 2 for the tutorial; and the folder of notes its own.
    assert_eq!(summary["side_files"], 1 + 1 + 2 * 4 + 2 * 2 + 2 + 1);
    assert_eq!(summary["skipped_files"], serde_json::json!([]));

    // Beside the parts, each listed with its size and CRC32C.
    for (dataset, folder, name) in [
        ("imagenet/train", "imagenet/train", "synset_labels.txt"),
        ("bert", "bert", "vocab.txt"),
        (
            "tfds/mnist/3.0.1/mnist-train",
            "tfds/mnist/3.0.1",
            "label.labels.txt",
        ),
        (
            "tfds/mnist/3.0.1/mnist-test",
            "tfds/mnist/3.0.1",
            "README.md",
        ),
        ("tutorial", "tutorial", "blob.bin"),
    ] {
        let original = input.join(folder).join(name);
        let bytes = fs::read(&original).unwrap();
        assert_eq!(fs::read(of.join(dataset).join(name)).unwrap(), bytes);
        let listed = &manifest(&of.join(dataset))["side_files"];
        let entry = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["name"] == name)
            .unwrap_or_else(|| panic!("{dataset}: {name} not in {listed}"));
        assert_eq!(entry["bytes"], bytes.len());
        assert_eq!(
            entry["crc32c"],
            format!("{:08x}", ofconvert_tfrecord::crc::crc32c(&bytes))
        );
    }
    assert_eq!(
        fs::read(of.join("notes/todo.txt")).unwrap(),
        fs::read(input.join("notes/todo.txt")).unwrap()
    );

    let back = work.path().join("back");
    ofconvert().arg("of2tf").args([&of, &back]).ok();
    assert_eq!(contents(&back), contents(&input));
    // The manifests are all that is added: one per dataset, the splits of a folder each
    // with their own, and one for the folder of notes.
    let manifests: Vec<String> = tree(&back)
        .into_iter()
        .filter(|file| file.ends_with("ofconvert-manifest.json"))
        .collect();
    assert_eq!(
        manifests,
        [
            "bert/ofconvert-manifest.json",
            "imagenet/mixed/ofconvert-manifest.json",
            "imagenet/train/ofconvert-manifest.json",
            "imagenet/validation/ofconvert-manifest.json",
            "notes/ofconvert-manifest.json",
            "tfds/cifar10/3.0.2/cifar10-test.ofconvert-manifest.json",
            "tfds/cifar10/3.0.2/cifar10-train.ofconvert-manifest.json",
            "tfds/mnist/3.0.1/mnist-test.ofconvert-manifest.json",
            "tfds/mnist/3.0.1/mnist-train.ofconvert-manifest.json",
            "tutorial/ofconvert-manifest.json",
        ]
    );

    // And again: the tree that came back converts to the same OneFlow tree.
    let again = work.path().join("again");
    ofconvert().arg("tf2of").args([&back, &again]).ok();
    assert_eq!(contents(&again), contents(&of));
}

#[test]
fn tfds_names_come_back_without_a_complete_dataset_info() {
    let work = tempdir();
    let input = work.path().join("in");
    let mnist = testdata().join("datasets/tfds/mnist/3.0.1");
    // No dataset_info.json at all; and one that lists only the test split.
    let bare = input.join("bare");
    let partial = input.join("partial");
    for folder in [&bare, &partial] {
        copy_tree(&mnist, folder);
    }
    fs::remove_file(bare.join("dataset_info.json")).unwrap();
    let mut info: Value =
        serde_json::from_str(&fs::read_to_string(mnist.join("dataset_info.json")).unwrap())
            .unwrap();
    info["splits"]
        .as_array_mut()
        .unwrap()
        .retain(|split| split["name"] == "test");
    let info = serde_json::to_string_pretty(&info).unwrap() + "\n";
    fs::write(partial.join("dataset_info.json"), &info).unwrap();

    let of = work.path().join("of");
    ofconvert().arg("tf2of").args([&input, &of]).ok();
    let back = work.path().join("back");
    ofconvert().arg("of2tf").args([&of, &back]).ok();
    assert_eq!(contents(&back), contents(&input));
    assert_eq!(
        fs::read_to_string(back.join("partial/dataset_info.json")).unwrap(),
        info
    );
    assert!(back
        .join("bare/mnist-train.ofconvert-manifest.json")
        .is_file());
}

#[test]
fn resharding_or_another_compression_keeps_the_names_of_the_new_files() {
    let work = tempdir();
    let input = sample_with_side_files(work.path());
    let of = work.path().join("of");
    ofconvert()
        .arg("tf2of")
        .args([&input.join("imagenet/train"), &of])
        .ok();
    let labels = fs::read(input.join("imagenet/train/synset_labels.txt")).unwrap();

    let resharded = work.path().join("resharded");
    ofconvert()
        .arg("of2tf")
        .args([&of, &resharded])
        .args(["--parts", "3"])
        .ok();
    assert_eq!(
        tree(&resharded),
        [
            "of-00000-of-00003.tfrecord",
            "of-00001-of-00003.tfrecord",
            "of-00002-of-00003.tfrecord",
            "ofconvert-manifest.json",
            "synset_labels.txt",
        ]
    );
    assert_eq!(
        fs::read(resharded.join("synset_labels.txt")).unwrap(),
        labels
    );

    let compressed = work.path().join("compressed");
    ofconvert()
        .arg("of2tf")
        .args([&of, &compressed])
        .args(["--compression", "GZIP"])
        .ok();
    assert_eq!(
        tree(&compressed),
        [
            "of-00000-of-00002.tfrecord.gz",
            "of-00001-of-00002.tfrecord.gz",
            "ofconvert-manifest.json",
            "synset_labels.txt",
        ]
    );

    // Resharded on the way in: the parts hold no file whole, and the names are new too.
    let of_resharded = work.path().join("of-resharded");
    ofconvert()
        .arg("tf2of")
        .args([&input.join("imagenet/train"), &of_resharded])
        .args(["--parts", "2"])
        .ok();
    assert!(manifest(&of_resharded)["parts"][0].get("from").is_none());
    let back = work.path().join("back");
    ofconvert().arg("of2tf").args([&of_resharded, &back]).ok();
    assert_eq!(
        files_starting(&back, "of-resharded-").len(),
        2,
        "{:?}",
        tree(&back)
    );
}

#[test]
fn parts_only_leaves_the_side_files_out_both_ways() {
    let work = tempdir();
    let input = sample_with_side_files(work.path());
    let of = work.path().join("of");
    let summary = json_run(
        ofconvert()
            .arg("tf2of")
            .args([&input.join("tutorial"), &of])
            .arg("--no-side-files"),
    );
    assert_eq!(summary["side_files"], 0);
    assert_eq!(tree(&of), ["ofconvert-manifest.json", "part-00000"]);
    let listed: Vec<&str> = summary["skipped_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skipped| skipped["reason"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["not a TFRecord file", "not a TFRecord file"]);

    // A OneFlow dataset with files beside its parts: of2tf writes them unless told not to.
    let with = work.path().join("with");
    ofconvert()
        .arg("tf2of")
        .args([&input.join("tutorial"), &with])
        .ok();
    let parts_only = work.path().join("parts-only");
    ofconvert()
        .arg("of2tf")
        .args([&with, &parts_only])
        .arg("--no-side-files")
        .ok();
    assert_eq!(
        tree(&parts_only),
        ["ofconvert-manifest.json", "tutorial.tfrecord"]
    );
}
