//! The sample datasets in testdata/datasets: every file reads cleanly, TFDS's shard lengths match, and the OneFlow sample uses OneFlow's ImageNet keys.

use super::*;

/// The feature names and kinds of a record, which OneFlow needs to be the same in every record.
fn schema(
    example: &tensorflow::Example,
) -> Vec<(String, Option<Discriminant<tensorflow::feature::Kind>>)> {
    example
        .features
        .iter()
        .flat_map(|f| &f.feature)
        .map(|(name, feature)| (name.clone(), feature.kind.as_ref().map(discriminant)))
        .collect()
}

#[test]
fn sample_datasets_read_cleanly_with_one_schema_per_file() {
    let root = testdata("datasets");
    let mut record_files = 0;
    for path in files_under(&root) {
        if path.extension().is_some_and(|e| e == "json") {
            continue;
        }
        record_files += 1;
        let records = read_tfrecords(&path, Compression::None);
        assert!(!records.is_empty(), "{}", path.display());
        let schemas: Vec<_> = records
            .iter()
            .map(|r| {
                let example = tensorflow::Example::decode(r.as_slice())
                    .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
                schema(&example)
            })
            .collect();
        assert!(!schemas[0].is_empty(), "{}", path.display());
        assert!(
            schemas.iter().all(|s| *s == schemas[0]),
            "{}: features vary between records",
            path.display()
        );
    }
    // MNIST 3, JPEG ImageNet 3, mixed ImageNet 1, CIFAR-10 3, tutorial 1, BERT 1.
    assert_eq!(record_files, 12);
}

#[test]
fn tfds_shard_lengths_match_the_shards() {
    for (dataset, version) in [("mnist", "3.0.1"), ("cifar10", "3.0.2")] {
        let dir = testdata(&format!("datasets/tfds/{dataset}/{version}"));
        let info = load_json(&dir.join("dataset_info.json"));
        let splits = info["splits"].as_array().expect("splits");
        assert_eq!(splits.len(), 2);
        for split in splits {
            let name = split["name"].as_str().expect("a split name");
            let lengths = split["shardLengths"].as_array().expect("shardLengths");
            for (i, length) in lengths.iter().enumerate() {
                let shard = dir.join(format!(
                    "{dataset}-{name}.tfrecord-{i:05}-of-{:05}",
                    lengths.len()
                ));
                let count = read_tfrecords(&shard, Compression::None).len();
                assert_eq!(
                    length.as_str(),
                    Some(count.to_string().as_str()),
                    "{dataset} {name} {i}"
                );
            }
        }
    }
}

#[test]
fn sample_oneflow_dataset_uses_oneflows_imagenet_keys() {
    let dir = testdata("ofdatasets/imagenet_of/train");
    let parts = files_under(&dir);
    let names: Vec<_> = parts
        .iter()
        .filter_map(|p| p.file_name()?.to_str())
        .collect();
    assert_eq!(names, ["part-00000", "part-00001"]);
    for part in &parts {
        let records = read_ofrecords(part);
        assert!(!records.is_empty());
        for record in records {
            let record = oneflow::OfRecord::decode(record.as_slice()).expect("an OFRecord");
            let names: Vec<_> = record.feature.keys().map(String::as_str).collect();
            assert_eq!(names, ["class/label", "encoded"]);
            assert!(matches!(
                record.feature["class/label"].kind,
                Some(oneflow::feature::Kind::Int32List(_))
            ));
        }
    }
}
