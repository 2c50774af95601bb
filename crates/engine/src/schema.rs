//! Feature schemas: which features the records of a dataset carry, of which kind and length,
//! and how to read them in OneFlow or TensorFlow.

use std::collections::HashMap;
use std::fmt::Write as _;

use ofconvert_bridge::proto::oneflow::feature::Kind as OfKind;
use ofconvert_bridge::proto::tensorflow::feature::Kind as TfKind;
use ofconvert_bridge::{FeatureKind, TfRecordType, Transcoder};
use serde::{Deserialize, Serialize};

/// The features of a set of records.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    /// How many records were looked at.
    pub records: u64,
    /// The features, sorted by name.
    pub features: Vec<FeatureSchema>,
}

/// One feature of a [`Schema`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FeatureSchema {
    /// The feature's name (invalid UTF-8 replaced).
    pub name: String,
    /// The kinds it was found with (`bytes_list`, `int64_list`, ...; `none` for a `Feature`
    /// with no kind set). More than one means trouble for readers.
    pub kinds: Vec<String>,
    /// The fewest values it held in a record that has it.
    pub min_values: u64,
    /// The most values it held in a record that has it.
    pub max_values: u64,
    /// How many records have it.
    pub present: u64,
    /// `jpeg`, `png`, `gif` or `bmp` when the first record's value is an encoded image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// Bit of the kind-less `Feature` in [`Stats::kinds`], after the five list kinds.
const KINDLESS: u8 = 1 << 5;

fn kind_bit(kind: Option<FeatureKind>) -> u8 {
    match kind {
        Some(FeatureKind::Bytes) => 1,
        Some(FeatureKind::Float) => 1 << 1,
        Some(FeatureKind::Double) => 1 << 2,
        Some(FeatureKind::Int32) => 1 << 3,
        Some(FeatureKind::Int64) => 1 << 4,
        None => KINDLESS,
    }
}

const KIND_BITS: [(u8, &str); 6] = [
    (1, "bytes_list"),
    (1 << 1, "float_list"),
    (1 << 2, "double_list"),
    (1 << 3, "int32_list"),
    (1 << 4, "int64_list"),
    (KINDLESS, "none"),
];

#[derive(Clone, Debug)]
struct Stats {
    name: Vec<u8>,
    kinds: u8,
    min_values: u64,
    max_values: u64,
    present: u64,
    /// The number of the last record (counted from 1) that had the feature, so that a key
    /// repeated within one record counts once.
    last_seen: u64,
    image: Option<&'static str>,
}

/// Collects a [`Schema`] record by record, from the wire-level visitors of the bridge.
///
/// Records of one dataset usually list the same keys in the same order, so each lookup first
/// tries the feature that followed the previous one; only a surprise costs a hash lookup.
#[derive(Clone, Debug, Default)]
pub struct SchemaBuilder {
    records: u64,
    features: Vec<Stats>,
    by_name: HashMap<Vec<u8>, usize>,
    cursor: usize,
}

impl SchemaBuilder {
    /// An empty builder.
    pub fn new() -> SchemaBuilder {
        SchemaBuilder::default()
    }

    /// How many records were added.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Adds a serialized OFRecord.
    ///
    /// # Errors
    ///
    /// When the record does not parse; the record is then counted but its features may be
    /// counted in part.
    pub fn add_ofrecord(&mut self, record: &[u8]) -> Result<(), ofconvert_bridge::Error> {
        let result = ofconvert_bridge::visit_ofrecord(record, |name, kind, values| {
            self.observe(name, kind, values)
        });
        self.end_record();
        result
    }

    /// Adds a serialized `tf.train.Example` or `SequenceExample` (whose feature lists count
    /// as features holding all their steps' values).
    ///
    /// # Errors
    ///
    /// As [`add_ofrecord`](SchemaBuilder::add_ofrecord).
    pub fn add_example(&mut self, example: &[u8]) -> Result<TfRecordType, ofconvert_bridge::Error> {
        let result = ofconvert_bridge::visit_example(example, |name, kind, values| {
            self.observe(name, kind, values)
        });
        self.end_record();
        result
    }

    /// Adds the record `transcoder` just wrote into `output`, from what the transcoder
    /// planned: the same features a parse of `output` finds, without parsing it again.
    pub fn add_transcoded(&mut self, transcoder: &Transcoder, output: &[u8]) {
        transcoder.visit_output(output, |name, kind, values| {
            self.observe(name, kind, values)
        });
        self.end_record();
    }

    fn observe(&mut self, name: &[u8], kind: Option<FeatureKind>, values: usize) {
        let record = self.records + 1;
        let index = match self.features.get(self.cursor) {
            Some(stats) if stats.name == name => self.cursor,
            _ => match self.by_name.get(name) {
                Some(&index) => index,
                None => {
                    self.features.push(Stats {
                        name: name.to_vec(),
                        kinds: 0,
                        min_values: u64::MAX,
                        max_values: 0,
                        present: 0,
                        last_seen: 0,
                        image: None,
                    });
                    self.by_name.insert(name.to_vec(), self.features.len() - 1);
                    self.features.len() - 1
                }
            },
        };
        self.cursor = index + 1;
        let stats = &mut self.features[index];
        let values = values as u64;
        stats.kinds |= kind_bit(kind);
        stats.min_values = stats.min_values.min(values);
        stats.max_values = stats.max_values.max(values);
        if stats.last_seen != record {
            stats.last_seen = record;
            stats.present += 1;
        }
    }

    fn end_record(&mut self) {
        self.records += 1;
        self.cursor = 0;
    }

    /// Notes which bytes features of a (typically first) serialized OFRecord hold an encoded
    /// image, for the decoder suggestions. Records that do not parse are ignored.
    pub fn sample_ofrecord(&mut self, record: &[u8]) {
        let Ok(record) = ofconvert_bridge::decode_ofrecord(record) else {
            return;
        };
        for (name, feature) in &record.feature {
            if let Some(OfKind::BytesList(list)) = &feature.kind {
                self.note_image(name.as_bytes(), &list.value);
            }
        }
    }

    /// As [`sample_ofrecord`](SchemaBuilder::sample_ofrecord), for a `tf.train.Example`.
    pub fn sample_example(&mut self, example: &[u8]) {
        let Ok(example) = ofconvert_bridge::decode_example(example) else {
            return;
        };
        for (name, feature) in example.features.iter().flat_map(|f| &f.feature) {
            if let Some(TfKind::BytesList(list)) = &feature.kind {
                self.note_image(name.as_bytes(), &list.value);
            }
        }
    }

    fn note_image(&mut self, name: &[u8], values: &[Vec<u8>]) {
        let format = match values {
            [only] => image_format(only),
            _ => None,
        };
        if let (Some(format), Some(&index)) = (format, self.by_name.get(name)) {
            self.features[index].image = Some(format);
        }
    }

    /// Adds the records of another builder, as if they came after this one's.
    pub fn merge(&mut self, other: SchemaBuilder) {
        let offset = self.records;
        self.records += other.records;
        for stats in other.features {
            match self.by_name.get(&stats.name) {
                Some(&index) => {
                    let mine = &mut self.features[index];
                    mine.kinds |= stats.kinds;
                    mine.min_values = mine.min_values.min(stats.min_values);
                    mine.max_values = mine.max_values.max(stats.max_values);
                    mine.present += stats.present;
                    mine.last_seen = stats.last_seen + offset;
                    mine.image = mine.image.or(stats.image);
                }
                None => {
                    self.by_name.insert(stats.name.clone(), self.features.len());
                    self.features.push(Stats {
                        last_seen: stats.last_seen + offset,
                        ..stats
                    });
                }
            }
        }
        self.cursor = 0;
    }

    /// The schema, features sorted by name.
    pub fn finish(self) -> Schema {
        let mut features: Vec<FeatureSchema> = self
            .features
            .into_iter()
            .map(|stats| FeatureSchema {
                name: String::from_utf8_lossy(&stats.name).into_owned(),
                kinds: KIND_BITS
                    .iter()
                    .filter(|(bit, _)| stats.kinds & bit != 0)
                    .map(|(_, name)| (*name).to_owned())
                    .collect(),
                min_values: stats.min_values,
                max_values: stats.max_values,
                present: stats.present,
                image: stats.image.map(str::to_owned),
            })
            .collect();
        features.sort_by(|a, b| a.name.cmp(&b.name));
        Schema {
            records: self.records,
            features,
        }
    }
}

fn image_format(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0xff, 0xd8, 0xff, ..] => Some("jpeg"),
        [0x89, b'P', b'N', b'G', ..] => Some("png"),
        [b'G', b'I', b'F', b'8', ..] => Some("gif"),
        [b'B', b'M', ..] => Some("bmp"),
        _ => None,
    }
}

impl FeatureSchema {
    /// The only kind, when there is exactly one and it is set.
    fn single_kind(&self) -> Option<&str> {
        match self.kinds.as_slice() {
            [kind] if kind != "none" => Some(kind),
            _ => None,
        }
    }
}

impl Schema {
    /// What would make OneFlow's reader or decoders abort, or TensorFlow's parser complain:
    /// a feature missing from some records, a kind that varies, a `Feature` with no kind.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        for feature in &self.features {
            let name = &feature.name;
            if feature.present < self.records {
                warnings.push(format!(
                    "feature \"{name}\" is missing from {} of {} records: a OneFlow decoder of \
                     it aborts on those records",
                    self.records - feature.present,
                    self.records
                ));
            }
            if feature.kinds.iter().any(|kind| kind == "none") {
                warnings.push(format!(
                    "feature \"{name}\" has no kind set in some records: OneFlow aborts on it"
                ));
            }
            let set_kinds: Vec<_> = feature.kinds.iter().filter(|k| *k != "none").collect();
            if set_kinds.len() > 1 {
                let kinds: Vec<&str> = set_kinds.iter().map(|k| k.as_str()).collect();
                warnings.push(format!(
                    "feature \"{name}\" changes kind between records ({}): no single decoder \
                     reads it",
                    kinds.join(", ")
                ));
            }
        }
        warnings
    }

    /// Python lines that read these features in OneFlow, given the `OFRecordReader(...)`
    /// call that opens the dataset.
    pub fn oneflow_snippet(&self, reader: &str) -> String {
        let mut out = String::from("import oneflow as flow\n\n");
        let _ = writeln!(out, "reader = {reader}");
        out.push_str("record = reader()\n");
        for feature in &self.features {
            let literal = python_string(&feature.name);
            let variable = python_identifier(&feature.name);
            let Some(kind) = feature.single_kind() else {
                let _ = writeln!(
                    out,
                    "# {literal}: kinds {}: no OneFlow decoder reads it",
                    feature.kinds.join(", ")
                );
                continue;
            };
            let line = match kind {
                "bytes_list" => match (&feature.image, feature.min_values, feature.max_values) {
                    (Some(_), 1, 1) => format!(
                        "{variable} = flow.nn.OFRecordImageDecoder({literal}, color_space=\"RGB\")(record)"
                    ),
                    (None, 1, 1) => {
                        format!("{variable} = flow.nn.OFRecordBytesDecoder({literal})(record)")
                    }
                    (_, min, max) => format!(
                        "# {literal}: {min} to {max} bytes values per record; OneFlow's decoders \
                         read exactly one"
                    ),
                },
                numeric => {
                    let dtype = match numeric {
                        "float_list" => "flow.float32",
                        "double_list" => "flow.float64",
                        "int32_list" => "flow.int32",
                        _ => "flow.int64",
                    };
                    if feature.min_values == feature.max_values {
                        format!(
                            "{variable} = flow.nn.OFRecordRawDecoder({literal}, shape=({},), \
                             dtype={dtype})(record)",
                            feature.min_values
                        )
                    } else {
                        // With truncate, OneFlow copies min(count, prod(shape)) values and
                        // zero-fills the rest: the longest list sets the shape, nothing is cut.
                        format!(
                            "{variable} = flow.nn.OFRecordRawDecoder({literal}, shape=({},), \
                             dtype={dtype}, truncate=True)(record)  # {} to {} values per \
                             record: shorter ones are zero-padded",
                            feature.max_values, feature.min_values, feature.max_values
                        )
                    }
                }
            };
            out.push_str(&line);
            if feature.present < self.records {
                out.push_str("  # missing from some records");
            }
            out.push('\n');
        }
        out
    }

    /// The `feature_description` dict for `tf.io.parse_single_example`: a fixed-length
    /// feature for those every record has with the same number of values, a `VarLenFeature`
    /// for the others. OneFlow's int32 and double read as TensorFlow's int64 and float, as
    /// `of2tf` writes them.
    pub fn tf_snippet(&self) -> String {
        let mut out = String::from("import tensorflow as tf\n\nfeature_description = {\n");
        for feature in &self.features {
            let literal = python_string(&feature.name);
            let Some(kind) = feature.single_kind() else {
                let _ = writeln!(out, "    # {literal}: kinds {}", feature.kinds.join(", "));
                continue;
            };
            let dtype = match kind {
                "bytes_list" => "tf.string",
                "float_list" | "double_list" => "tf.float32",
                _ => "tf.int64",
            };
            let fixed = feature.present == self.records && feature.min_values == feature.max_values;
            let spec = if fixed {
                let shape = match feature.min_values {
                    1 => "[]".to_owned(),
                    n => format!("[{n}]"),
                };
                format!("tf.io.FixedLenFeature({shape}, {dtype})")
            } else {
                format!("tf.io.VarLenFeature({dtype})")
            };
            let _ = writeln!(out, "    {literal}: {spec},");
        }
        out.push_str("}\n");
        out
    }
}

/// A Python string literal: JSON's escapes are valid Python too.
pub(crate) fn python_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"))
}

/// A Python variable name made from a feature name: `image/class/label` → `image_class_label`.
fn python_identifier(name: &str) -> String {
    let mut identifier: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if identifier.is_empty() || identifier.starts_with(|c: char| c.is_ascii_digit()) {
        identifier.insert(0, 'f');
    }
    if is_python_keyword(&identifier) {
        identifier.push('_');
    }
    identifier
}

fn is_python_keyword(word: &str) -> bool {
    const KEYWORDS: [&str; 35] = [
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    KEYWORDS.contains(&word) || ["flow", "reader", "record", "tf"].contains(&word)
}

#[cfg(test)]
mod tests {
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
            (label.name.as_str(), label.present, label.kinds.clone()),
            ("label", 1, vec!["int32_list".to_owned()])
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
                of::bytes_feature([b"\xff\xd8\xff\xe0 jpeg".to_vec()]),
            ),
            ("class/label", of::int32_feature([7])),
            ("ids", of::int64_feature([1, 2, 3])),
        ]);
        builder.add_ofrecord(&record).unwrap();
        builder.sample_ofrecord(&record);
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
}
