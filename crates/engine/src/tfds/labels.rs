//! The class names TFDS gives its `ClassLabel` features: written one per line to
//! `<feature>.labels.txt` beside the shards (TFDS's `ClassLabel.save_metadata`), or, in
//! older `features.json` files, inside the feature's description. `features.json` says
//! which features are `ClassLabel`s and where they sit in nested dictionaries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::FEATURES;
use crate::storage::Storage;

/// What TFDS appends to a feature's name for the file of its class names.
const LABELS_SUFFIX: &str = ".labels.txt";

/// A labels file bigger than this is not read (ImageNet's 21,841 classes take 250 KB).
const MAX_LABELS_BYTES: usize = 16 << 20;

/// The class names of the features of the TFDS records in `dir`, by the feature's name in
/// the records (`label`, `objects/label`), from `features.json` and the labels files among
/// `files` (the folder's other files). Without a `features.json`, each `NAME.labels.txt`
/// names the classes of feature `NAME`. Files that cannot be read or parsed add nothing.
pub(crate) fn class_names<'a>(
    storage: &dyn Storage,
    dir: &Path,
    files: impl Iterator<Item = &'a PathBuf>,
) -> BTreeMap<String, Vec<String>> {
    let present: Vec<String> = files
        .filter_map(|path| Some(path.file_name()?.to_string_lossy().into_owned()))
        .collect();
    let read_names = |file: &str| -> Option<Vec<String>> {
        if !present.iter().any(|name| name == file) {
            return None;
        }
        let bytes = storage.read(&dir.join(file)).ok()??;
        if bytes.len() > MAX_LABELS_BYTES {
            return None;
        }
        Some(parse_names(&String::from_utf8(bytes).ok()?))
    };
    let mut found = BTreeMap::new();
    let features = present
        .iter()
        .any(|name| name == FEATURES)
        .then(|| storage.read(&dir.join(FEATURES)).ok().flatten())
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    match features {
        Some(features) => {
            let mut labels = Vec::new();
            walk(&features, &mut Vec::new(), &mut labels);
            for (path, inline) in labels {
                let names = inline.or_else(|| read_names(&labels_file(&path)));
                if let Some(names) = names.filter(|names| !names.is_empty()) {
                    found.insert(path.join("/"), names);
                }
            }
        }
        None => {
            for file in &present {
                let Some(feature) = file.strip_suffix(LABELS_SUFFIX) else {
                    continue;
                };
                if let Some(names) = read_names(file).filter(|names| !names.is_empty()) {
                    found.insert(feature.to_owned(), names);
                }
            }
        }
    }
    found
}

/// The names of a labels file, as TFDS reads them: one per line, trimmed, blank lines
/// left out.
fn parse_names(text: &str) -> Vec<String> {
    text.split('\n')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}

/// TFDS's labels file of the feature at `path` in nested dictionaries: keys joined by `-`,
/// each key's `/` turned into `.` (`FeaturesDict.save_metadata`).
fn labels_file(path: &[String]) -> String {
    let keys: Vec<String> = path.iter().map(|key| key.replace('/', ".")).collect();
    format!("{}{LABELS_SUFFIX}", keys.join("-"))
}

/// The `ClassLabel`s under `node`, each with its key path and the names written inside
/// its description, if any. Both of TFDS's spellings of `features.json`: the current one
/// (`pythonClassName` beside `featuresDict` or `classLabel`) and the older one (`type`
/// beside `content`).
fn walk(node: &Value, path: &mut Vec<String>, found: &mut Vec<(Vec<String>, Option<Vec<String>>)>) {
    let class = node
        .get("pythonClassName")
        .or_else(|| node.get("type"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let children = node
        .get("featuresDict")
        .and_then(|dict| dict.get("features"))
        .or_else(|| {
            class
                .ends_with("FeaturesDict")
                .then(|| node.get("content"))
                .flatten()
        })
        .and_then(Value::as_object);
    if let Some(children) = children {
        for (key, child) in children {
            path.push(key.clone());
            walk(child, path, found);
            path.pop();
        }
        return;
    }
    if class.ends_with("ClassLabel") {
        let description = node.get("classLabel").or_else(|| node.get("content"));
        let inline = description
            .and_then(|description| description.get("names"))
            .and_then(Value::as_array)
            .and_then(|names| {
                names
                    .iter()
                    .map(|name| name.as_str().map(str::to_owned))
                    .collect::<Option<Vec<String>>>()
            });
        found.push((path.clone(), inline));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;
    use std::fs;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn labels_files_named_by_features_json_even_nested() {
        let dir = tempfile::tempdir().unwrap();
        let features = serde_json::json!({
            "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
            "featuresDict": {"features": {
                "image": {"pythonClassName": "tensorflow_datasets.core.features.image_feature.Image"},
                "label": {
                    "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
                    "classLabel": {"numClasses": "3"}
                },
                "objects": {
                    "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
                    "featuresDict": {"features": {"kind/coarse": {
                        "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
                        "classLabel": {"numClasses": "2"}
                    }}}
                },
                "unnamed": {
                    "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
                    "classLabel": {"numClasses": "5"}
                }
            }}
        });
        fs::write(dir.path().join(FEATURES), features.to_string()).unwrap();
        fs::write(dir.path().join("label.labels.txt"), "cat\ndog\n\n bird \n").unwrap();
        fs::write(
            dir.path().join("objects-kind.coarse.labels.txt"),
            "small\nbig\n",
        )
        .unwrap();
        fs::write(dir.path().join("stray.labels.txt"), "x\n").unwrap();
        let files: Vec<PathBuf> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        let found = class_names(&LocalFs, dir.path(), files.iter());
        assert_eq!(
            found,
            BTreeMap::from([
                ("label".to_owned(), names(&["cat", "dog", "bird"])),
                ("objects/kind/coarse".to_owned(), names(&["small", "big"])),
            ])
        );
        // Only the files named count: the others are not the folder's.
        let found = class_names(
            &LocalFs,
            dir.path(),
            files.iter().filter(|f| f.ends_with(FEATURES)),
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn names_inside_an_older_features_json_and_labels_files_alone() {
        let dir = tempfile::tempdir().unwrap();
        let features = serde_json::json!({
            "type": "tensorflow_datasets.core.features.features_dict.FeaturesDict",
            "content": {"label": {
                "type": "tensorflow_datasets.core.features.class_label_feature.ClassLabel",
                "content": {"names": ["no", "yes"]}
            }}
        });
        fs::write(dir.path().join(FEATURES), features.to_string()).unwrap();
        let files = [dir.path().join(FEATURES)];
        assert_eq!(
            class_names(&LocalFs, dir.path(), files.iter()),
            BTreeMap::from([("label".to_owned(), names(&["no", "yes"]))])
        );

        let bare = tempfile::tempdir().unwrap();
        fs::write(bare.path().join("class.labels.txt"), "a\r\nb\r\n").unwrap();
        let files = [bare.path().join("class.labels.txt")];
        assert_eq!(
            class_names(&LocalFs, bare.path(), files.iter()),
            BTreeMap::from([("class".to_owned(), names(&["a", "b"]))])
        );
    }
}
