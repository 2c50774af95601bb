use super::*;
use ofconvert_bridge::{encode_ofrecord, of};

fn ofrecord(features: Vec<(&str, ofconvert_bridge::proto::oneflow::Feature)>) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_ofrecord(&of::record(features), &mut bytes);
    bytes
}

#[test]
fn counts_kinds_lengths_and_presence() {
    let mut builder = SchemaBuilder::new();
    let first = ofrecord(vec![
        ("label", of::int32_feature([3])),
        ("values", of::float_feature([1.0, 2.0])),
    ]);
    let second = ofrecord(vec![("values", of::float_feature([1.0, 2.0, 3.0]))]);
    builder.add_ofrecord(&first).unwrap();
    builder.add_ofrecord(&second).unwrap();
    let schema = builder.finish();
    assert_eq!(schema.records, 2);
    let label = &schema.features[0];
    assert_eq!(
        (label.name.as_str(), label.present, label.kind_names()),
        ("label", 1, vec!["int32_list"])
    );
    let values = &schema.features[1];
    assert_eq!(
        (values.min_values, values.max_values, values.present),
        (2, 3, 2)
    );
    let warnings = schema.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("\"label\" is missing from 1 of 2"));
}

#[test]
fn merging_equals_adding_in_order() {
    let records = [
        ofrecord(vec![
            ("a", of::int64_feature([1])),
            ("b", of::bytes_feature([b"x"])),
        ]),
        ofrecord(vec![("b", of::bytes_feature([b"y", b"z"]))]),
        ofrecord(vec![
            ("a", of::double_feature([1.0])),
            ("c", of::int32_feature([])),
        ]),
    ];
    let mut whole = SchemaBuilder::new();
    for record in &records {
        whole.add_ofrecord(record).unwrap();
    }
    let mut first = SchemaBuilder::new();
    first.add_ofrecord(&records[0]).unwrap();
    let mut rest = SchemaBuilder::new();
    rest.add_ofrecord(&records[1]).unwrap();
    rest.add_ofrecord(&records[2]).unwrap();
    first.merge(rest);
    assert_eq!(first.finish(), whole.finish());
}

#[test]
fn a_builder_read_back_from_json_merges_as_the_original() {
    let records = [
        ofrecord(vec![
            ("a", of::int64_feature([1, 2])),
            ("b", of::bytes_feature([b"\xff\xd8\xff"])),
        ]),
        ofrecord(vec![("b", of::bytes_feature([b"y"]))]),
        ofrecord(vec![("a", of::int64_feature([7]))]),
    ];
    let mut whole = SchemaBuilder::new();
    let mut first = SchemaBuilder::new();
    let mut rest = SchemaBuilder::new();
    for (index, record) in records.iter().enumerate() {
        whole.add_ofrecord(record).unwrap();
        let part = if index == 0 { &mut first } else { &mut rest };
        part.add_ofrecord(record).unwrap();
    }
    let read_back = |builder: &SchemaBuilder| -> SchemaBuilder {
        serde_json::from_str(&serde_json::to_string(builder).unwrap()).unwrap()
    };
    let mut merged = read_back(&first);
    merged.merge(read_back(&rest));
    // A read-back builder goes on taking records and merges as itself.
    merged.add_ofrecord(&records[2]).unwrap();
    whole.add_ofrecord(&records[2]).unwrap();
    assert_eq!(merged.finish(), whole.finish());
}

#[test]
fn varying_kind_is_warned_about() {
    let mut builder = SchemaBuilder::new();
    builder
        .add_ofrecord(&ofrecord(vec![("a", of::int64_feature([1]))]))
        .unwrap();
    builder
        .add_ofrecord(&ofrecord(vec![("a", of::float_feature([1.0]))]))
        .unwrap();
    let warnings = builder.finish().warnings();
    assert!(
        warnings.iter().any(|w| w.contains("changes kind")),
        "{warnings:?}"
    );
}

#[test]
fn snippets_name_decoders_and_feature_specs() {
    let mut builder = SchemaBuilder::new();
    let record = ofrecord(vec![
        (
            "encoded",
            of::bytes_feature([crate::images::test_jpeg(3, 24, 32, false)]),
        ),
        ("class/label", of::int32_feature([7])),
        ("ids", of::int64_feature([1, 2, 3])),
    ]);
    builder.add_ofrecord(&record).unwrap();
    let schema = builder.finish();
    let oneflow = schema.oneflow_snippet("flow.nn.OFRecordReader(\"d\")");
    assert!(oneflow.contains(
        "encoded = flow.nn.OFRecordImageDecoder(\"encoded\", color_space=\"RGB\")(record)"
    ));
    assert!(oneflow.contains(
        "class_label = flow.nn.OFRecordRawDecoder(\"class/label\", shape=(1,), dtype=flow.int32)(record)"
    ));
    let tf = schema.tf_snippet();
    assert!(tf.contains("\"class/label\": tf.io.FixedLenFeature([], tf.int64),"));
    assert!(tf.contains("\"ids\": tf.io.FixedLenFeature([3], tf.int64),"));
    assert!(tf.contains("\"encoded\": tf.io.FixedLenFeature([], tf.string),"));
}

fn png_head(color_type: u8) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend(28u32.to_be_bytes());
    bytes.extend(28u32.to_be_bytes());
    bytes.extend([8, color_type, 0, 0, 0]);
    bytes
}

#[test]
fn images_of_every_record_decide_the_decoder() {
    let jpeg = crate::images::test_jpeg(3, 24, 32, false);
    let mut first = SchemaBuilder::new();
    first
        .add_ofrecord(&ofrecord(vec![("img", of::bytes_feature([jpeg.clone()]))]))
        .unwrap();
    let mut second = SchemaBuilder::new();
    second
        .add_ofrecord(&ofrecord(vec![("img", of::bytes_feature([jpeg]))]))
        .unwrap();
    second
        .add_ofrecord(&ofrecord(vec![("img", of::bytes_feature([png_head(0)]))]))
        .unwrap();
    first.merge(second);
    let schema = first.finish();
    let img = &schema.features[0];
    assert_eq!(img.image.as_deref(), Some("mixed"));
    let facts = img.images.as_ref().unwrap();
    assert_eq!((facts.count("jpeg"), facts.count("png")), (2, 1));
    assert_eq!(facts.png_color.get("gray 8-bit"), Some(&1));
    assert_eq!(facts.first_undecodable, Some(2));
    let snippet = schema.oneflow_snippet("flow.nn.OFRecordReader(\"d\")");
    assert!(
        !snippet.contains("OFRecordImageDecoder(\"img\""),
        "{snippet}"
    );
    assert!(
        snippet.contains("img = flow.nn.OFRecordBytesDecoder(\"img\")(record)  # encoded images"),
        "{snippet}"
    );
    let warnings = schema.warnings();
    assert!(
        warnings.iter().any(|w| w.contains("\"img\": 1 of 3 images")
            && w.contains("1 PNG")
            && w.contains("record #2")),
        "{warnings:?}"
    );
}

#[test]
fn grayscale_jpegs_get_no_image_decoder() {
    let mut builder = SchemaBuilder::new();
    let gray = crate::images::test_jpeg(1, 28, 28, false);
    builder
        .add_ofrecord(&ofrecord(vec![("img", of::bytes_feature([gray]))]))
        .unwrap();
    let schema = builder.finish();
    let snippet = schema.oneflow_snippet("r");
    assert!(
        snippet.contains("OFRecordBytesDecoder(\"img\")"),
        "{snippet}"
    );
    assert!(snippet.contains("1 grayscale JPEG"), "{snippet}");
}

#[test]
fn transcoded_records_give_image_and_integer_facts_both_ways() {
    let jpeg = crate::images::test_jpeg(3, 24, 32, false);
    let mut example = Vec::new();
    ofconvert_bridge::encode_example(
        &ofconvert_bridge::tf::example([
            ("img", ofconvert_bridge::tf::bytes_feature([jpeg])),
            ("id", ofconvert_bridge::tf::int64_feature([-3, 1 << 40])),
        ]),
        &mut example,
    );
    let mut transcoder = Transcoder::new(ofconvert_bridge::MappingSpec::new()).unwrap();
    let (mut ofrecord, mut back) = (Vec::new(), Vec::new());
    transcoder.tf_to_of(&example, &mut ofrecord).unwrap();
    let mut to_of = SchemaBuilder::new();
    to_of.add_transcoded(&transcoder, &ofrecord);
    transcoder.of_to_tf(&ofrecord, &mut back).unwrap();
    let mut to_tf = SchemaBuilder::new();
    to_tf.add_transcoded(&transcoder, &back);
    for schema in [to_of.finish(), to_tf.finish()] {
        let id = &schema.features[0];
        assert_eq!(
            id.integers,
            Some(IntegerRange {
                min: -3,
                max: 1 << 40
            })
        );
        assert_eq!(schema.features[1].image.as_deref(), Some("jpeg"));
        let warnings = schema.warnings();
        assert!(
            warnings.iter().any(|w| w.contains("beyond int32")),
            "{warnings:?}"
        );
    }
}

#[test]
fn numeric_kinds_that_vary_read_with_one_raw_decoder() {
    let mut builder = SchemaBuilder::new();
    builder
        .add_ofrecord(&ofrecord(vec![("a", of::int64_feature([1]))]))
        .unwrap();
    builder
        .add_ofrecord(&ofrecord(vec![("a", of::float_feature([1.5]))]))
        .unwrap();
    let schema = builder.finish();
    let snippet = schema.oneflow_snippet("r");
    assert!(
        snippet.contains(
            "a = flow.nn.OFRecordRawDecoder(\"a\", shape=(1,), dtype=flow.float32)(record)"
        ),
        "{snippet}"
    );
    assert!(!schema
        .warnings()
        .iter()
        .any(|w| w.contains("no single decoder")));
}

#[test]
fn features_missing_from_some_records_get_no_live_decoder() {
    let mut builder = SchemaBuilder::new();
    builder
        .add_ofrecord(&ofrecord(vec![
            ("a", of::int64_feature([1])),
            ("b", of::int64_feature([2])),
        ]))
        .unwrap();
    builder
        .add_ofrecord(&ofrecord(vec![("b", of::int64_feature([3]))]))
        .unwrap();
    let snippet = builder.finish().oneflow_snippet("r");
    assert!(
        snippet.contains(
            "# \"a\": missing from 1 of 2 records, on which a decoder aborts: a = flow.nn.OFRecordRawDecoder(\"a\""
        ),
        "{snippet}"
    );
    assert!(
        snippet.contains("\nb = flow.nn.OFRecordRawDecoder(\"b\""),
        "{snippet}"
    );
}

#[test]
fn no_records_no_reader_line() {
    let snippet = SchemaBuilder::new()
        .finish()
        .oneflow_snippet("flow.nn.OFRecordReader()");
    assert!(!snippet.contains("reader = "), "{snippet}");
    assert!(snippet.contains("# no records"), "{snippet}");
}

#[test]
fn kinds_serialize_as_field_names() {
    let mut builder = SchemaBuilder::new();
    builder
        .add_ofrecord(&ofrecord(vec![("a", of::int32_feature([1]))]))
        .unwrap();
    let schema = builder.finish();
    let json = serde_json::to_value(&schema).unwrap();
    assert_eq!(
        json["features"][0]["kinds"],
        serde_json::json!(["int32_list"])
    );
    let back: Schema = serde_json::from_value(json).unwrap();
    assert_eq!(back, schema);
}

#[test]
fn records_of_one_shape_are_counted_as_a_parse_of_each_counts_them() {
    // Runs of records with the same names, broken by records with other names, by a record
    // added by parsing it, and by a builder merged in: whatever the builder remembers of the
    // last shape must not misplace a feature.
    let example = |features: Vec<(&str, ofconvert_bridge::proto::tensorflow::Feature)>| {
        let mut bytes = Vec::new();
        ofconvert_bridge::encode_example(&ofconvert_bridge::tf::example(features), &mut bytes);
        bytes
    };
    use ofconvert_bridge::tf::{bytes_feature, float_feature, int64_feature};
    let mut records = Vec::new();
    for i in 0..12i64 {
        records.push(match i % 5 {
            0..=2 => example(vec![
                ("label", int64_feature([i])),
                ("name", bytes_feature([b"cat".to_vec()])),
                (
                    "score",
                    float_feature([0.5; 3][..(i as usize % 3)].to_vec()),
                ),
            ]),
            // Names sort in the encoder: these come first, where the others were.
            3 => example(vec![
                ("age", bytes_feature([b"dog".to_vec(), b"cow".to_vec()])),
                ("label", int64_feature([-i, i])),
            ]),
            _ => example(vec![("score", int64_feature([7]))]),
        });
    }
    let mut transcoder = Transcoder::new(ofconvert_bridge::MappingSpec::new()).unwrap();
    let (mut shaped, mut parsed) = (SchemaBuilder::new(), SchemaBuilder::new());
    let mut ofrecord = Vec::new();
    for (i, record) in records.iter().enumerate() {
        transcoder.tf_to_of(record, &mut ofrecord).unwrap();
        assert!(transcoder.output_shape().is_some());
        match i {
            7 => shaped.add_ofrecord(&ofrecord).unwrap(),
            9 => {
                let mut other = SchemaBuilder::new();
                other.add_ofrecord(&ofrecord).unwrap();
                shaped.merge(other);
            }
            _ => shaped.add_transcoded(&transcoder, &ofrecord),
        }
        parsed.add_ofrecord(&ofrecord).unwrap();
    }
    assert_eq!(shaped.finish(), parsed.finish());
}

#[test]
fn small_integers_packed_count_as_the_same_values_written_any_other_way() {
    // Packed one-byte values take a shortcut; unpacked ones, and a list with one value past
    // 127, the general walk. Both must find the same range and the same repeated values.
    let lists: [&[u64]; 6] = [
        &[3, 0],
        &[3, 0],
        &[127, 1, 0, 0],
        &[5],
        &[1, 2, 3, 4, 5],
        &[7],
    ];
    let packed = |values: &[u64]| {
        let mut list = vec![0x0a, values.len() as u8];
        list.extend(values.iter().map(|&v| v as u8));
        list
    };
    let unpacked = |values: &[u64]| {
        values
            .iter()
            .flat_map(|&v| [0x08, v as u8])
            .collect::<Vec<u8>>()
    };
    for take in 1..=lists.len() {
        let (mut quick, mut general) = (Stats::new(b"n"), Stats::new(b"n"));
        for (record, values) in lists[..take].iter().enumerate() {
            quick.observe_list(FeatureKind::Int64, &packed(values), record as u64);
            general.observe_list(FeatureKind::Int64, &unpacked(values), record as u64);
        }
        assert_eq!(quick.integers, general.integers, "{take}");
        assert_eq!(
            format!("{:?}", quick.same),
            format!("{:?}", general.same),
            "{take}"
        );
    }
}
