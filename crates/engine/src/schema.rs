//! Feature schemas: which features the records of a dataset carry, of which kind and length,
//! and how to read them in OneFlow or TensorFlow.

use std::collections::HashMap;
use std::fmt::Write as _;

use ofconvert_bridge::{FeatureKind, TfRecordType, Transcoder};
use serde::{Deserialize, Serialize};

use crate::detect::Format;
use crate::images::{ImageFacts, ImageTally};
use crate::scan::{for_each_bytes, for_each_integer, scan_features, Dialect};

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
    /// The kinds it was found with, `None` for a `Feature` with no kind set; written as
    /// `bytes_list`, `int64_list`, ... and `none`. More than one means trouble for readers.
    #[serde(with = "kind_names")]
    pub kinds: Vec<Option<FeatureKind>>,
    /// The fewest values it held in a record that has it.
    pub min_values: u64,
    /// The most values it held in a record that has it.
    pub max_values: u64,
    /// How many records have it.
    pub present: u64,
    /// For a bytes feature holding encoded images: `jpeg`, `png`, `gif`, `bmp` or `webp`
    /// when every value has that format, `mixed` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// For a bytes feature holding encoded images: what the header of every value says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImageFacts>,
    /// For an integer feature (int64 or int32) with values: the smallest and largest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integers: Option<IntegerRange>,
    /// For an integer feature of at most four values per record (a shape, a label): the
    /// values, when every record holds the same ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_values: Option<Vec<i64>>,
    /// For such a feature whose values differ between records: the first record (counted
    /// from 0) that differs from the first one holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<u64>,
}

/// The smallest and largest value of an integer feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntegerRange {
    /// The smallest value.
    pub min: i64,
    /// The largest value.
    pub max: i64,
}

impl IntegerRange {
    /// Whether every value fits OneFlow's `flow.int32`.
    pub fn fits_int32(&self) -> bool {
        self.min >= i64::from(i32::MIN) && self.max <= i64::from(i32::MAX)
    }

    fn widen(range: &mut Option<IntegerRange>, other: Option<IntegerRange>) {
        if let Some(other) = other {
            *range = Some(match *range {
                Some(mine) => IntegerRange {
                    min: mine.min.min(other.min),
                    max: mine.max.max(other.max),
                },
                None => other,
            });
        }
    }
}

/// Kinds as the protobuf field names, `none` for a kind-less `Feature`.
mod kind_names {
    use ofconvert_bridge::FeatureKind;
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};

    const ALL: [FeatureKind; 5] = [
        FeatureKind::Bytes,
        FeatureKind::Float,
        FeatureKind::Double,
        FeatureKind::Int32,
        FeatureKind::Int64,
    ];

    pub(super) fn name(kind: Option<FeatureKind>) -> &'static str {
        kind.map_or("none", FeatureKind::list_name)
    }

    pub fn serialize<S: Serializer>(
        kinds: &[Option<FeatureKind>],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(kinds.iter().map(|kind| name(*kind)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<Option<FeatureKind>>, D::Error> {
        Vec::<String>::deserialize(deserializer)?
            .iter()
            .map(|text| match text.as_str() {
                "none" => Ok(None),
                other => ALL
                    .into_iter()
                    .find(|kind| kind.list_name() == other)
                    .map(Some)
                    .ok_or_else(|| D::Error::custom(format!("unknown feature kind {other:?}"))),
            })
            .collect()
    }
}

/// Bit of the kind-less `Feature` in [`Stats::kinds`], after the five list kinds.
const KINDLESS: u8 = 1 << 5;

const KIND_BITS: [(u8, Option<FeatureKind>); 6] = [
    (1, Some(FeatureKind::Bytes)),
    (1 << 1, Some(FeatureKind::Float)),
    (1 << 2, Some(FeatureKind::Double)),
    (1 << 3, Some(FeatureKind::Int32)),
    (1 << 4, Some(FeatureKind::Int64)),
    (KINDLESS, None),
];

fn kind_bit(kind: Option<FeatureKind>) -> u8 {
    KIND_BITS
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or(KINDLESS, |(bit, _)| *bit)
}

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
    /// Made at the first bytes value; kept in the schema only if some value is an image.
    images: Option<Box<ImageTally>>,
    integers: Option<IntegerRange>,
    same: Same,
}

/// Whether an integer feature holds the same few values in every record.
#[derive(Clone, Debug, Default)]
enum Same {
    /// No values seen yet.
    #[default]
    Unseen,
    /// The values of every record so far, and the first record that held them.
    Values(Vec<i64>, u64),
    /// Values differ, first in this record; or a record held too many to keep.
    Differ(Option<u64>),
}

/// The most values per record [`Same`] keeps.
const SAME_MAX: usize = 4;

impl Same {
    fn observe(&mut self, values: &[i64], record: u64) {
        match self {
            Same::Unseen if values.len() <= SAME_MAX => {
                *self = Same::Values(values.to_vec(), record)
            }
            Same::Unseen => *self = Same::Differ(None),
            Same::Values(first, _) if first.as_slice() != values => {
                *self = Same::Differ(Some(record))
            }
            _ => {}
        }
    }

    /// Adds what a later builder saw, `offset` records on.
    fn merge(&mut self, other: &Same, offset: u64) {
        match (&*self, other) {
            (_, Same::Unseen) | (Same::Differ(_), _) => {}
            (Same::Unseen, Same::Values(values, record)) => {
                *self = Same::Values(values.clone(), record + offset)
            }
            (Same::Unseen, Same::Differ(record)) => {
                *self = Same::Differ(record.map(|r| r + offset))
            }
            (Same::Values(mine, _), Same::Values(theirs, record)) if mine != theirs => {
                *self = Same::Differ(Some(record + offset))
            }
            (Same::Values(..), Same::Values(..)) => {}
            (Same::Values(..), Same::Differ(record)) => {
                *self = Same::Differ(record.map(|r| r + offset))
            }
        }
    }
}

impl Stats {
    fn new(name: &[u8]) -> Stats {
        Stats {
            name: name.to_vec(),
            kinds: 0,
            min_values: u64::MAX,
            max_values: 0,
            present: 0,
            last_seen: 0,
            images: None,
            integers: None,
            same: Same::Unseen,
        }
    }
}

/// Collects a [`Schema`] record by record, from the wire-level visitors of the bridge, and
/// from a second walk over the values: every image header, every integer.
///
/// Records of one dataset usually list the same keys in the same order, so each lookup first
/// tries the feature that followed the previous one; only a surprise costs a hash lookup.
#[derive(Clone, Debug, Default)]
pub struct SchemaBuilder {
    records: u64,
    features: Vec<Stats>,
    by_name: HashMap<Vec<u8>, usize>,
    cursor: usize,
    /// The features of the record being added, in wire order, for the value walk.
    order: Vec<usize>,
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
        if result.is_ok() {
            self.observe_values(record, Dialect::OfRecord);
        }
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
        if result.is_ok() {
            self.observe_values(example, Dialect::Example);
        }
        self.end_record();
        result
    }

    /// Adds the record `transcoder` just wrote into `output` (`written_as` an OFRecord or
    /// an Example), from what the transcoder planned: the same features a parse of `output`
    /// finds, without parsing it again.
    pub fn add_transcoded(&mut self, transcoder: &Transcoder, output: &[u8], written_as: Format) {
        transcoder.visit_output(output, |name, kind, values| {
            self.observe(name, kind, values)
        });
        self.observe_values(
            output,
            match written_as {
                Format::Of => Dialect::OfRecord,
                Format::Tf => Dialect::Example,
            },
        );
        self.end_record();
    }

    fn observe(&mut self, name: &[u8], kind: Option<FeatureKind>, values: usize) {
        let record = self.records + 1;
        let index = self.index_of(name);
        self.cursor = index + 1;
        self.order.push(index);
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

    fn index_of(&mut self, name: &[u8]) -> usize {
        match self.features.get(self.cursor) {
            Some(stats) if stats.name == name => self.cursor,
            _ => match self.by_name.get(name) {
                Some(&index) => index,
                None => {
                    self.features.push(Stats::new(name));
                    self.by_name.insert(name.to_vec(), self.features.len() - 1);
                    self.features.len() - 1
                }
            },
        }
    }

    /// Walks the values of the record just observed: image headers of bytes values, the
    /// range of integers.
    fn observe_values(&mut self, record: &[u8], dialect: Dialect) {
        let index = self.records;
        let mut position = 0;
        let SchemaBuilder {
            features,
            by_name,
            order,
            ..
        } = self;
        scan_features(record, dialect, |name, kind, list| {
            let slot = match order.get(position) {
                Some(&slot) if features[slot].name == name => Some(slot),
                _ => by_name.get(name).copied(),
            };
            position += 1;
            let Some(stats) = slot.and_then(|slot| features.get_mut(slot)) else {
                return;
            };
            match kind {
                FeatureKind::Bytes => {
                    let tally = stats.images.get_or_insert_with(Default::default);
                    for_each_bytes(list, |value| tally.add(value, index));
                }
                FeatureKind::Int64 | FeatureKind::Int32 => {
                    let mut range: Option<IntegerRange> = None;
                    let (mut few, mut count) = ([0i64; SAME_MAX + 1], 0);
                    for_each_integer(list, |value| {
                        if count <= SAME_MAX {
                            few[count] = value;
                        }
                        count += 1;
                        IntegerRange::widen(
                            &mut range,
                            Some(IntegerRange {
                                min: value,
                                max: value,
                            }),
                        )
                    });
                    IntegerRange::widen(&mut stats.integers, range);
                    stats.same.observe(&few[..count.min(SAME_MAX + 1)], index);
                }
                _ => {}
            }
        });
    }

    fn end_record(&mut self) {
        self.records += 1;
        self.cursor = 0;
        self.order.clear();
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
                    if let Some(theirs) = &stats.images {
                        mine.images
                            .get_or_insert_with(Default::default)
                            .merge(theirs, offset);
                    }
                    IntegerRange::widen(&mut mine.integers, stats.integers);
                    mine.same.merge(&stats.same, offset);
                }
                None => {
                    self.by_name.insert(stats.name.clone(), self.features.len());
                    let images = stats.images.as_ref().map(|theirs| {
                        let mut shifted = Box::<ImageTally>::default();
                        shifted.merge(theirs, offset);
                        shifted
                    });
                    let mut same = Same::Unseen;
                    same.merge(&stats.same, offset);
                    self.features.push(Stats {
                        last_seen: stats.last_seen + offset,
                        images,
                        same,
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
            .map(|stats| {
                let images = stats
                    .images
                    .filter(|tally| tally.has_images())
                    .map(|tally| tally.facts());
                FeatureSchema {
                    name: String::from_utf8_lossy(&stats.name).into_owned(),
                    kinds: KIND_BITS
                        .iter()
                        .filter(|(bit, _)| stats.kinds & bit != 0)
                        .map(|(_, kind)| *kind)
                        .collect(),
                    min_values: stats.min_values,
                    max_values: stats.max_values,
                    present: stats.present,
                    image: images
                        .as_ref()
                        .map(|facts| facts.single_format().to_owned()),
                    images,
                    integers: stats.integers,
                    same_values: match &stats.same {
                        Same::Values(values, _) => Some(values.clone()),
                        _ => None,
                    },
                    first_difference: match stats.same {
                        Same::Differ(record) => record,
                        _ => None,
                    },
                }
            })
            .collect();
        features.sort_by(|a, b| a.name.cmp(&b.name));
        Schema {
            records: self.records,
            features,
        }
    }
}

impl FeatureSchema {
    /// The only kind, when there is exactly one and it is set.
    pub fn single_kind(&self) -> Option<FeatureKind> {
        match self.kinds.as_slice() {
            [Some(kind)] => Some(*kind),
            _ => None,
        }
    }

    /// The kinds as protobuf field names, `none` for a kind-less `Feature`.
    pub fn kind_names(&self) -> Vec<&'static str> {
        self.kinds
            .iter()
            .map(|kind| kind_names::name(*kind))
            .collect()
    }
}

/// How to get images OneFlow cannot decode into a form it can, in a warning.
const IMAGE_FIX: &str = "convert with --images jpeg (re-encodes those as RGB JPEG) or \
                         --images raw (decodes every image to its pixels)";

impl FeatureSchema {
    /// Whether OneFlow 0.9's `OFRecordImageDecoder` reads every value: one 8-bit colour
    /// JPEG per record.
    fn oneflow_image_decodable(&self) -> bool {
        self.images.as_ref().is_some_and(|facts| {
            facts.oneflow_cannot_decode == 0 && self.min_values == 1 && self.max_values == 1
        })
    }

    /// For a feature whose kinds are all numeric (some int64, some float...): the dtype
    /// one raw decoder reads them all with, as OneFlow casts what is stored.
    fn common_numeric_dtype(&self) -> Option<&'static str> {
        if self.kinds.is_empty()
            || self
                .kinds
                .iter()
                .any(|kind| matches!(kind, None | Some(FeatureKind::Bytes)))
        {
            return None;
        }
        let has = |kind| self.kinds.contains(&Some(kind));
        Some(match self.kinds.as_slice() {
            [Some(kind)] => oneflow_dtype(*kind),
            _ if has(FeatureKind::Double) => "flow.float64",
            _ if has(FeatureKind::Float) => "flow.float32",
            // int32 and int64 together.
            _ => "flow.int64",
        })
    }
}

fn oneflow_dtype(kind: FeatureKind) -> &'static str {
    match kind {
        FeatureKind::Float => "flow.float32",
        FeatureKind::Double => "flow.float64",
        FeatureKind::Int32 => "flow.int32",
        FeatureKind::Int64 | FeatureKind::Bytes => "flow.int64",
    }
}

impl Schema {
    /// What would make OneFlow's reader or decoders abort or read wrong values: a feature
    /// missing from some records, a kind that varies or is not set, bytes lists a bytes
    /// decoder cannot read, images its image decoder cannot decode, integers that do not
    /// fit the `flow.int32` OneFlow's examples decode them as.
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
            if feature.kinds.contains(&None) {
                warnings.push(format!(
                    "feature \"{name}\" has no kind set in some records: OneFlow aborts on it"
                ));
            }
            let set_kinds: Vec<&str> = feature
                .kinds
                .iter()
                .flatten()
                .map(|kind| kind.list_name())
                .collect();
            if set_kinds.len() > 1 {
                let kinds = set_kinds.join(", ");
                warnings.push(match feature.common_numeric_dtype() {
                    Some(dtype) => format!(
                        "feature \"{name}\" changes kind between records ({kinds}): one \
                         OFRecordRawDecoder with dtype={dtype} reads it, as OneFlow casts what \
                         is stored"
                    ),
                    None => format!(
                        "feature \"{name}\" changes kind between records ({kinds}): no single \
                         decoder reads it"
                    ),
                });
            }
            if let Some(facts) = &feature.images {
                if facts.oneflow_cannot_decode > 0 {
                    let total: u64 = facts.formats.values().sum();
                    warnings.push(format!(
                        "feature \"{name}\": {} of {total} images are ones OneFlow 0.9's \
                         OFRecordImageDecoder cannot decode ({}; the first in record #{}): PNG, \
                         GIF, BMP, WebP and CMYK JPEGs crash the process, grayscale JPEGs \
                         decode to garbage; {IMAGE_FIX}",
                        facts.oneflow_cannot_decode,
                        facts.undecodable_description(),
                        facts.first_undecodable.unwrap_or(0),
                    ));
                }
            }
            if feature.single_kind() == Some(FeatureKind::Bytes)
                && feature.images.is_none()
                && (feature.min_values, feature.max_values) != (1, 1)
            {
                warnings.push(format!(
                    "feature \"{name}\" holds {} to {} bytes values per record: \
                     OFRecordBytesDecoder aborts on a record that does not hold exactly one",
                    feature.min_values, feature.max_values
                ));
            }
            if let Some(range) = feature.integers {
                if !range.fits_int32() {
                    warnings.push(format!(
                        "feature \"{name}\" holds integers from {} to {}, beyond int32: decode \
                         it with dtype=flow.int64 (a flow.int32 decoder wraps them silently)",
                        range.min, range.max
                    ));
                }
            }
        }
        warnings
    }

    /// Python lines that read these features in OneFlow, given the `OFRecordReader(...)`
    /// call that opens the dataset. No line it prints makes OneFlow 0.9 abort or crash on
    /// these records: where a decoder would, a comment says why and what works instead.
    pub fn oneflow_snippet(&self, reader: &str) -> String {
        let mut out = String::from("import oneflow as flow\n\n");
        if self.records == 0 {
            out.push_str(
                "# no records: there is nothing to read (OFRecordReader aborts on a dataset \
                 without records)\n",
            );
            return out;
        }
        let _ = writeln!(out, "reader = {reader}");
        out.push_str("record = reader()\n");
        for feature in &self.features {
            let literal = python_string(&feature.name);
            let variable = python_identifier(&feature.name);
            let line = match feature.single_kind() {
                Some(FeatureKind::Bytes) => self.bytes_line(feature, &literal, &variable),
                Some(kind) => raw_line(feature, &literal, &variable, oneflow_dtype(kind)),
                None => match feature.common_numeric_dtype() {
                    Some(dtype) => {
                        let mut line = raw_line(feature, &literal, &variable, dtype);
                        let _ = write!(line, "  # kinds {}", feature.kind_names().join(", "));
                        line
                    }
                    None => format!(
                        "# {literal}: kinds {}: no OneFlow decoder reads it",
                        feature.kind_names().join(", ")
                    ),
                },
            };
            if feature.present < self.records && !line.starts_with('#') {
                // A decoder aborts on the records without the feature: left commented out.
                let _ = write!(
                    out,
                    "# {literal}: missing from {} of {} records, on which a decoder aborts: ",
                    self.records - feature.present,
                    self.records
                );
            }
            out.push_str(&line);
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
                let _ = writeln!(
                    out,
                    "    # {literal}: kinds {}",
                    feature.kind_names().join(", ")
                );
                continue;
            };
            let dtype = match kind {
                FeatureKind::Bytes => "tf.string",
                FeatureKind::Float | FeatureKind::Double => "tf.float32",
                FeatureKind::Int32 | FeatureKind::Int64 => "tf.int64",
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

impl Schema {
    /// The decoder line of a bytes feature: the raw decoder for pixels `--images raw` wrote
    /// (one shape in every record), the image decoder only where OneFlow 0.9 decodes every
    /// value, the bytes decoder where each record holds one value, else a comment.
    fn bytes_line(&self, feature: &FeatureSchema, literal: &str, variable: &str) -> String {
        let (min, max) = (feature.min_values, feature.max_values);
        if (min, max) != (1, 1) {
            return format!(
                "# {literal}: {min} to {max} bytes values per record; OneFlow's decoders read \
                 exactly one"
            );
        }
        let shape_name = format!("{}/shape", feature.name);
        if let Some(shape) = self.features.iter().find(|f| f.name == shape_name) {
            return match (&shape.same_values, shape.present == self.records) {
                (Some(dims), true) if dims.len() == 3 => format!(
                    "{variable} = flow.nn.OFRecordRawDecoder({literal}, shape=({}, {}, {}), \
                     dtype=flow.uint8)(record)",
                    dims[0], dims[1], dims[2]
                ),
                _ => format!(
                    "# {literal}: raw pixels whose shape differs between records ({} first \
                     differs from the first record's): OFRecordRawDecoder reads one shape; \
                     read {} and the bytes with OFRecordBytesDecoder",
                    shape
                        .first_difference
                        .map_or("some record".to_owned(), |r| format!("record #{r}")),
                    python_string(&shape_name)
                ),
            };
        }
        if feature.oneflow_image_decodable() {
            return format!(
                "{variable} = flow.nn.OFRecordImageDecoder({literal}, color_space=\"RGB\")(record)"
            );
        }
        let mut line = format!("{variable} = flow.nn.OFRecordBytesDecoder({literal})(record)");
        if let Some(facts) = &feature.images {
            let _ = write!(
                line,
                "  # encoded images, not decoded here: OFRecordImageDecoder cannot decode {} of \
                 them ({}; it decodes colour JPEGs only, and color_space=\"GRAY\" aborts); \
                 tf2of --images jpeg or --images raw makes them readable",
                facts.oneflow_cannot_decode,
                facts.undecodable_description()
            );
        }
        line
    }
}

fn raw_line(feature: &FeatureSchema, literal: &str, variable: &str, dtype: &str) -> String {
    if feature.min_values == feature.max_values {
        format!(
            "{variable} = flow.nn.OFRecordRawDecoder({literal}, shape=({},), \
             dtype={dtype})(record)",
            feature.min_values
        )
    } else {
        // With truncate, OneFlow copies min(count, prod(shape)) values and zero-fills the
        // rest: the longest list sets the shape, nothing is cut.
        format!(
            "{variable} = flow.nn.OFRecordRawDecoder({literal}, shape=({},), dtype={dtype}, \
             truncate=True)(record)  # {} to {} values per record: shorter ones are zero-padded",
            feature.max_values, feature.min_values, feature.max_values
        )
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
            snippet
                .contains("img = flow.nn.OFRecordBytesDecoder(\"img\")(record)  # encoded images"),
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
        to_of.add_transcoded(&transcoder, &ofrecord, Format::Of);
        transcoder.of_to_tf(&ofrecord, &mut back).unwrap();
        let mut to_tf = SchemaBuilder::new();
        to_tf.add_transcoded(&transcoder, &back, Format::Tf);
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
}
