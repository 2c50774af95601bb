//! TFDS's `features.json` made to describe what `--images` left in the records: an image
//! decoded to its pixels is no longer an `Image` TFDS can decode, but a `Tensor` of uint8
//! stored as bytes, with the int64 `Tensor` of its shape beside it; an image re-encoded is a
//! colour JPEG.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// What an image feature holds after `--images` changed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Recoded {
    /// Its pixels (uint8, height × width × channels), all of them in one bytes value, of
    /// this shape in every record; `None` when the shape differs between records (the
    /// records' `NAME/shape` gives each).
    Pixels(Option<Vec<i64>>),
    /// An RGB JPEG.
    Jpeg,
}

const FEATURES_DICT: &str = "tensorflow_datasets.core.features.features_dict.FeaturesDict";
const IMAGE: &str = "tensorflow_datasets.core.features.image_feature.Image";
const TENSOR: &str = "tensorflow_datasets.core.features.tensor_feature.Tensor";

/// `features.json` with each `Image` feature that `recoded` names (by its key in the
/// records: the names of the dictionaries above it and its own, `/`-separated) described as
/// what it now holds; `None` when none is, or the text is no TFDS description of features.
pub(crate) fn rewrite_features(text: &str, recoded: &BTreeMap<String, Recoded>) -> Option<String> {
    if recoded.is_empty() {
        return None;
    }
    let mut features: Value = serde_json::from_str(text).ok()?;
    if !rewrite_dict(&mut features, "", recoded) {
        return None;
    }
    let mut rewritten = serde_json::to_string_pretty(&features).ok()?;
    if text.ends_with('\n') {
        rewritten.push('\n');
    }
    Some(rewritten)
}

/// Rewrites the features of a `FeaturesDict` whose keys in the records start with
/// `prefix`; whether any changed.
fn rewrite_dict(dict: &mut Value, prefix: &str, recoded: &BTreeMap<String, Recoded>) -> bool {
    if class_name(dict) != Some(FEATURES_DICT) {
        return false;
    }
    let Some(features) = dict
        .pointer_mut("/featuresDict/features")
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    let mut changed = false;
    let mut shapes = Vec::new();
    for (name, feature) in features.iter_mut() {
        let key = format!("{prefix}{name}");
        match class_name(feature) {
            Some(FEATURES_DICT) => changed |= rewrite_dict(feature, &format!("{key}/"), recoded),
            Some(IMAGE) => {
                if let Some(now) = recoded.get(&key) {
                    changed |= rewrite_image(feature, now);
                    if matches!(now, Recoded::Pixels(_)) {
                        shapes.push(format!("{name}/shape"));
                    }
                }
            }
            _ => {}
        }
    }
    // The shape `--images raw` writes beside the pixels: `[h, w, c]`.
    for name in shapes {
        features.entry(name).or_insert_with(|| {
            json!({
                "pythonClassName": TENSOR,
                "tensor": {
                    "shape": { "dimensions": ["3"] },
                    "dtype": "int64",
                    "encoding": "none",
                },
            })
        });
    }
    changed
}

fn class_name(feature: &Value) -> Option<&str> {
    feature.get("pythonClassName").and_then(Value::as_str)
}

/// Describes the `Image` feature `feature` as what it now holds; whether that changed it.
fn rewrite_image(feature: &mut Value, now: &Recoded) -> bool {
    let Some(fields) = feature.as_object_mut() else {
        return false;
    };
    match now {
        Recoded::Pixels(shape) => {
            // One unknown dimension at most: TFDS stores a tensor of more apart from its
            // shape, under other keys than the records have.
            let dimensions: Vec<String> = match shape {
                Some(shape) => shape.iter().map(i64::to_string).collect(),
                None => vec!["-1".to_owned()],
            };
            let mut tensor = Map::new();
            tensor.insert("pythonClassName".to_owned(), json!(TENSOR));
            tensor.insert(
                "tensor".to_owned(),
                json!({
                    "shape": { "dimensions": dimensions },
                    "dtype": "uint8",
                    "encoding": "bytes",
                }),
            );
            if let Some(description) = fields.get("description") {
                tensor.insert("description".to_owned(), description.clone());
            }
            *fields = tensor;
            true
        }
        Recoded::Jpeg => {
            let Some(image) = fields.get_mut("image").and_then(Value::as_object_mut) else {
                return false;
            };
            let before = image.clone();
            image.insert("encodingFormat".to_owned(), json!("jpeg"));
            if let Some(channels) = image
                .get_mut("shape")
                .and_then(|shape| shape.get_mut("dimensions"))
                .and_then(Value::as_array_mut)
                .and_then(|dimensions| dimensions.get_mut(2))
            {
                *channels = match channels {
                    Value::String(_) => json!("3"),
                    _ => json!(3),
                };
            }
            *image != before
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MNIST's `features.json`, as TFDS wrote it.
    const MNIST: &str = r#"{
  "featuresDict": {
    "features": {
      "image": {
        "description": "",
        "image": {
          "dtype": "uint8",
          "encodingFormat": "png",
          "shape": {
            "dimensions": [
              "28",
              "28",
              "1"
            ]
          }
        },
        "pythonClassName": "tensorflow_datasets.core.features.image_feature.Image"
      },
      "label": {
        "classLabel": {
          "numClasses": "10"
        },
        "description": "",
        "pythonClassName": "tensorflow_datasets.core.features.class_label_feature.ClassLabel"
      }
    }
  },
  "pythonClassName": "tensorflow_datasets.core.features.features_dict.FeaturesDict"
}
"#;

    fn rewritten(name: &str, now: Recoded) -> Value {
        let recoded = BTreeMap::from([(name.to_owned(), now)]);
        serde_json::from_str(&rewrite_features(MNIST, &recoded).unwrap()).unwrap()
    }

    #[test]
    fn pixels_are_a_uint8_tensor_stored_as_bytes_of_their_shape() {
        let features = rewritten("image", Recoded::Pixels(Some(vec![28, 28, 1])));
        let image = &features["featuresDict"]["features"]["image"];
        assert_eq!(
            *image,
            json!({
                "pythonClassName": TENSOR,
                "tensor": {
                    "shape": { "dimensions": ["28", "28", "1"] },
                    "dtype": "uint8",
                    "encoding": "bytes",
                },
                "description": "",
            })
        );
        assert_eq!(
            features["featuresDict"]["features"]["image/shape"],
            json!({
                "pythonClassName": TENSOR,
                "tensor": {
                    "shape": { "dimensions": ["3"] },
                    "dtype": "int64",
                    "encoding": "none",
                },
            })
        );
        // The label is left as it was.
        let original: Value = serde_json::from_str(MNIST).unwrap();
        assert_eq!(
            features["featuresDict"]["features"]["label"],
            original["featuresDict"]["features"]["label"]
        );
    }

    #[test]
    fn pixels_of_shapes_that_differ_are_a_flat_tensor() {
        let features = rewritten("image", Recoded::Pixels(None));
        let tensor = &features["featuresDict"]["features"]["image"]["tensor"];
        assert_eq!(tensor["shape"]["dimensions"], json!(["-1"]));
    }

    #[test]
    fn jpegs_are_said_to_be_colour_jpegs() {
        let features = rewritten("image", Recoded::Jpeg);
        let image = &features["featuresDict"]["features"]["image"]["image"];
        assert_eq!(image["encodingFormat"], "jpeg");
        assert_eq!(image["shape"]["dimensions"], json!(["28", "28", "3"]));
    }

    #[test]
    fn features_not_recoded_or_not_images_leave_the_text_as_it_was() {
        let none = BTreeMap::from([("label".to_owned(), Recoded::Jpeg)]);
        assert_eq!(rewrite_features(MNIST, &none), None);
        let other = BTreeMap::from([("picture".to_owned(), Recoded::Jpeg)]);
        assert_eq!(rewrite_features(MNIST, &other), None);
        assert_eq!(rewrite_features("not json", &other), None);
    }

    #[test]
    fn an_image_in_a_nested_dictionary_goes_by_its_key_in_the_records() {
        let nested = json!({
            "pythonClassName": FEATURES_DICT,
            "featuresDict": { "features": {
                "objects": serde_json::from_str::<Value>(MNIST).unwrap(),
            }},
        })
        .to_string();
        let recoded = BTreeMap::from([("objects/image".to_owned(), Recoded::Jpeg)]);
        let text = rewrite_features(&nested, &recoded).unwrap();
        let features: Value = serde_json::from_str(&text).unwrap();
        let image = &features["featuresDict"]["features"]["objects"]["featuresDict"]["features"]
            ["image"]["image"];
        assert_eq!(image["encodingFormat"], "jpeg");
    }
}
