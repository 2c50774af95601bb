//! Feature schemas: which features the records of a dataset carry, of which kind and length,
//! and how to read them in OneFlow or TensorFlow.
//!
//! A leaf layer: it uses only `images` (what an image's header says) and `scan` (walks over
//! a record's wire form), so that the run, the inspections and the manifest can all gather
//! and print schemas.

use std::collections::{BTreeMap, HashMap};

use ofconvert_bridge::{FeatureKind, TfRecordType, Transcoder};
use serde::{Deserialize, Serialize};

use crate::images::{ImageFacts, ImageTally};
use crate::scan::{scan_features, Dialect};

mod render;
mod stats;

pub use render::IMAGE_ADVICE;

pub(crate) use render::python_string;
use stats::{same_name, Same, Stats, KIND_BITS};

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
    /// The names of the classes its integers number, where TFDS names them (a
    /// `ClassLabel`): value `i` is class `class_names[i]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_names: Option<Vec<String>>,
}

impl Schema {
    /// The class names of its features, by feature name.
    pub fn class_names(&self) -> BTreeMap<String, Vec<String>> {
        self.features
            .iter()
            .filter_map(|feature| Some((feature.name.clone(), feature.class_names.clone()?)))
            .collect()
    }

    /// Gives the features named in `names` their class names (others keep theirs).
    pub fn set_class_names(&mut self, names: &BTreeMap<String, Vec<String>>) {
        for feature in &mut self.features {
            if let Some(names) = names.get(&feature.name) {
                feature.class_names = Some(names.clone());
            }
        }
    }
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

    pub(super) fn serialize<S: Serializer>(
        kinds: &[Option<FeatureKind>],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(kinds.iter().map(|kind| name(*kind)))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
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

/// Collects a [`Schema`] record by record, from the wire-level visitors of the bridge, and
/// from a second walk over the values: every image header, every integer.
///
/// Records of one dataset usually list the same keys in the same order, so each lookup first
/// tries the feature that followed the previous one; only a surprise costs a hash lookup.
///
/// It serializes (as its records and features; the lookup table is rebuilt when read), so
/// that the workers of a sharded run can hand what they saw to the run's commit.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(from = "SavedBuilder", into = "SavedBuilder")]
pub struct SchemaBuilder {
    records: u64,
    features: Vec<Stats>,
    by_name: HashMap<Vec<u8>, usize>,
    cursor: usize,
    /// The features of the record being added, in wire order, for the value walk.
    order: Vec<usize>,
    /// The last shape of a transcoder's output met ([`Transcoder::output_shape`]) and where
    /// the features of that shape are, in order: the next record of the same shape has its
    /// features found without comparing a name.
    shape: Option<u64>,
    shape_slots: Vec<usize>,
}

/// What a [`SchemaBuilder`] is written as: the rest is rebuilt or belongs to one record.
#[derive(Serialize, Deserialize)]
struct SavedBuilder {
    records: u64,
    features: Vec<Stats>,
}

impl From<SchemaBuilder> for SavedBuilder {
    fn from(builder: SchemaBuilder) -> SavedBuilder {
        SavedBuilder {
            records: builder.records,
            features: builder.features,
        }
    }
}

impl From<SavedBuilder> for SchemaBuilder {
    fn from(saved: SavedBuilder) -> SchemaBuilder {
        let by_name = saved
            .features
            .iter()
            .enumerate()
            .map(|(index, stats)| (stats.name.clone(), index))
            .collect();
        SchemaBuilder {
            records: saved.records,
            features: saved.features,
            by_name,
            cursor: 0,
            order: Vec::new(),
            shape: None,
            shape_slots: Vec::new(),
        }
    }
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
            let index = self.observe(name, kind, values);
            self.order.push(index);
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
            let index = self.observe(name, kind, values);
            self.order.push(index);
        });
        if result.is_ok() {
            self.observe_values(example, Dialect::Example);
        }
        self.end_record();
        result
    }

    /// Adds the record `transcoder` just wrote into `output`, from what the transcoder
    /// planned: the same features and values a parse of `output` finds, without parsing it
    /// again. When the record has the names of the one before (the transcoder's
    /// [`output_shape`](Transcoder::output_shape) says so), no name is looked up.
    pub fn add_transcoded(&mut self, transcoder: &Transcoder, output: &[u8]) {
        let record = self.records;
        let shape = transcoder.output_shape();
        if shape.is_some() && shape == self.shape {
            let features = transcoder.single_pass_features();
            for (feature, &slot) in features.iter().zip(&self.shape_slots) {
                let (Some(stats), Some(list)) = (
                    self.features.get_mut(slot),
                    output.get(feature.list.clone()),
                ) else {
                    continue;
                };
                stats.observe_at(record + 1, feature.kind, feature.values);
                if let Some(kind) = feature.kind {
                    stats.observe_list(kind, list, record);
                }
            }
        } else {
            self.shape_slots.clear();
            transcoder.visit_output_lists(output, |name, kind, values, list| {
                let index = self.observe(name, kind, values);
                self.shape_slots.push(index);
                if let Some(kind) = kind {
                    self.features[index].observe_list(kind, list, record);
                }
            });
            self.shape = shape;
        }
        self.end_record();
    }

    #[inline]
    fn observe(&mut self, name: &[u8], kind: Option<FeatureKind>, values: usize) -> usize {
        let record = self.records + 1;
        let index = self.index_of(name);
        self.cursor = index + 1;
        self.features[index].observe_at(record, kind, values);
        index
    }

    fn index_of(&mut self, name: &[u8]) -> usize {
        match self.features.get(self.cursor) {
            Some(stats) if same_name(&stats.name, name) => self.cursor,
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
            if let Some(stats) = slot.and_then(|slot| features.get_mut(slot)) {
                stats.observe_list(kind, list, index);
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
                    class_names: None,
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

#[cfg(test)]
mod tests;
