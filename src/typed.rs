//! The typed path: prost messages, encoders that keep every map entry whole, conversions
//! that share their numeric rules with the wire path, and builders.

use std::collections::BTreeMap;

use prost::Message;

use crate::numeric::{self, Dialect, Numbers};
use crate::proto::{oneflow as of_pb, tensorflow as tf_pb};
use crate::spec::{CompiledSpec, Disposition, Rounding, Rule};
use crate::wire;
use crate::{Error, ErrorKind, FeatureKind, MappingSpec, SequencePolicy};

fn decode_error(err: prost::DecodeError) -> Error {
    // prost does not say where it failed; the wire visitors do, for callers who need it.
    Error::new(ErrorKind::Malformed {
        reason: if err.to_string().contains("UTF-8") {
            "feature name is not valid UTF-8"
        } else {
            "message does not parse"
        },
        offset: 0,
    })
}

/// Parses a serialized `tf.train.Example`.
pub fn decode_example(bytes: &[u8]) -> Result<tf_pb::Example, Error> {
    tf_pb::Example::decode(bytes).map_err(decode_error)
}

/// Parses a serialized `tf.train.SequenceExample`.
pub fn decode_sequence_example(bytes: &[u8]) -> Result<tf_pb::SequenceExample, Error> {
    tf_pb::SequenceExample::decode(bytes).map_err(decode_error)
}

/// Parses a serialized OneFlow `OFRecord`.
pub fn decode_ofrecord(bytes: &[u8]) -> Result<of_pb::OfRecord, Error> {
    of_pb::OfRecord::decode(bytes).map_err(decode_error)
}

/// Appends one map entry with both its key and its value, even when either is empty:
/// TensorFlow rejects entries without them, and prost's own map encoder leaves them out.
fn put_map_entry<V: Message>(out: &mut Vec<u8>, key: &str, value: &V) {
    let value_len = value.encoded_len();
    let entry_len = wire::field_size(key.len()) + wire::field_size(value_len);
    wire::put_tag(out, 1, wire::LEN);
    wire::put_varint(out, entry_len as u64);
    wire::put_tag(out, 1, wire::LEN);
    wire::put_varint(out, key.len() as u64);
    out.extend_from_slice(key.as_bytes());
    wire::put_tag(out, 2, wire::LEN);
    wire::put_varint(out, value_len as u64);
    value.encode_raw(out);
}

fn map_len<V: Message>(map: &BTreeMap<String, V>) -> usize {
    map.iter()
        .map(|(k, v)| {
            wire::field_size(wire::field_size(k.len()) + wire::field_size(v.encoded_len()))
        })
        .sum()
}

fn put_map<V: Message>(out: &mut Vec<u8>, map: &BTreeMap<String, V>) {
    for (key, value) in map {
        put_map_entry(out, key, value);
    }
}

fn put_features(out: &mut Vec<u8>, field: u32, features: &tf_pb::Features) {
    wire::put_tag(out, field, wire::LEN);
    wire::put_varint(out, map_len(&features.feature) as u64);
    put_map(out, &features.feature);
}

/// Appends a serialized `tf.train.Example` to `out`, in key order, every map entry whole.
pub fn encode_example(example: &tf_pb::Example, out: &mut Vec<u8>) {
    if let Some(features) = &example.features {
        put_features(out, 1, features);
    }
}

/// Appends a serialized `tf.train.SequenceExample` to `out`, every map entry whole.
pub fn encode_sequence_example(seq: &tf_pb::SequenceExample, out: &mut Vec<u8>) {
    if let Some(context) = &seq.context {
        put_features(out, 1, context);
    }
    if let Some(lists) = &seq.feature_lists {
        wire::put_tag(out, 2, wire::LEN);
        wire::put_varint(out, map_len(&lists.feature_list) as u64);
        put_map(out, &lists.feature_list);
    }
}

/// Appends a serialized OneFlow `OFRecord` to `out`, in key order, every map entry whole.
pub fn encode_ofrecord(record: &of_pb::OfRecord, out: &mut Vec<u8>) {
    put_map(out, &record.feature);
}

/// A list's values in a form both dialects can hold.
enum Values {
    Bytes(Vec<Vec<u8>>),
    Numbers(FeatureKind, Numbers),
}

fn tf_values(feature: &tf_pb::Feature) -> Option<Values> {
    use tf_pb::feature::Kind;
    Some(match feature.kind.as_ref()? {
        Kind::BytesList(l) => Values::Bytes(l.value.clone()),
        Kind::FloatList(l) => Values::Numbers(FeatureKind::Float, floats(&l.value)),
        Kind::Int64List(l) => Values::Numbers(FeatureKind::Int64, ints(l.value.iter().copied())),
    })
}

fn of_values(feature: &of_pb::Feature) -> Option<Values> {
    use of_pb::feature::Kind;
    Some(match feature.kind.as_ref()? {
        Kind::BytesList(l) => Values::Bytes(l.value.clone()),
        Kind::FloatList(l) => Values::Numbers(FeatureKind::Float, floats(&l.value)),
        Kind::DoubleList(l) => Values::Numbers(
            FeatureKind::Double,
            Numbers {
                f64s: l.value.clone(),
                ..Numbers::default()
            },
        ),
        Kind::Int32List(l) => Values::Numbers(
            FeatureKind::Int32,
            ints(l.value.iter().map(|&v| i64::from(v))),
        ),
        Kind::Int64List(l) => Values::Numbers(FeatureKind::Int64, ints(l.value.iter().copied())),
    })
}

fn ints(values: impl Iterator<Item = i64>) -> Numbers {
    Numbers {
        ints: values.collect(),
        ..Numbers::default()
    }
}

fn floats(values: &[f32]) -> Numbers {
    Numbers {
        f32s: values.to_vec(),
        ..Numbers::default()
    }
}

/// Applies a feature's rule and the dialect's default mapping to its values.
fn apply(
    values: Values,
    rule: Option<&Rule>,
    to: Dialect,
    rounding: Rounding,
) -> Result<Values, Error> {
    match values {
        Values::Bytes(bytes) => {
            numeric::check_bytes_rule(rule)?;
            Ok(Values::Bytes(bytes))
        }
        Values::Numbers(kind, mut numbers) => {
            let transformed = numeric::transform(&mut numbers, kind, rule, to, rounding)?;
            Ok(Values::Numbers(transformed.kind, numbers))
        }
    }
}

fn to_tf_feature(values: Option<Values>) -> tf_pb::Feature {
    use tf_pb::feature::Kind;
    let kind = values.map(|values| match values {
        Values::Bytes(value) => Kind::BytesList(tf_pb::BytesList { value }),
        Values::Numbers(FeatureKind::Int64 | FeatureKind::Int32, n) => {
            Kind::Int64List(tf_pb::Int64List { value: n.ints })
        }
        // The default mapping leaves only float among the float kinds for TF.
        Values::Numbers(_, n) => Kind::FloatList(tf_pb::FloatList { value: n.f32s }),
    });
    tf_pb::Feature { kind }
}

fn to_of_feature(values: Option<Values>) -> of_pb::Feature {
    use of_pb::feature::Kind;
    let kind = values.map(|values| match values {
        Values::Bytes(value) => Kind::BytesList(of_pb::BytesList { value }),
        Values::Numbers(FeatureKind::Int32, n) => Kind::Int32List(of_pb::Int32List {
            value: n.ints.iter().map(|&v| v as i32).collect(),
        }),
        Values::Numbers(FeatureKind::Int64 | FeatureKind::Bytes, n) => {
            Kind::Int64List(of_pb::Int64List { value: n.ints })
        }
        Values::Numbers(FeatureKind::Double, n) => {
            Kind::DoubleList(of_pb::DoubleList { value: n.f64s })
        }
        Values::Numbers(FeatureKind::Float, n) => {
            Kind::FloatList(of_pb::FloatList { value: n.f32s })
        }
    });
    of_pb::Feature { kind }
}

/// Inserts under the rule's output name; a second feature under one name is a clash.
fn insert<V>(out: &mut BTreeMap<String, V>, name: String, value: V) -> Result<(), Error> {
    if out.contains_key(&name) {
        return Err(ErrorKind::NameClash { name }.into());
    }
    out.insert(name, value);
    Ok(())
}

fn output_name(name: &str, rule: Option<&Rule>) -> String {
    rule.and_then(|r| r.rename.clone())
        .unwrap_or_else(|| name.to_owned())
}

fn convert_features<F, T>(
    input: &BTreeMap<String, F>,
    spec: &CompiledSpec,
    values_of: fn(&F) -> Option<Values>,
    to: Dialect,
    build: fn(Option<Values>) -> T,
    out: &mut BTreeMap<String, T>,
) -> Result<(), Error> {
    for (name, feature) in input {
        let rule = match spec.lookup(name.as_bytes()) {
            Disposition::Drop => continue,
            Disposition::Keep(rule) => rule,
        };
        let values = values_of(feature)
            .map(|v| apply(v, rule, to, spec.rounding))
            .transpose()
            .map_err(|e| e.in_feature(name.as_bytes()))?;
        insert(out, output_name(name, rule), build(values))?;
    }
    Ok(())
}

/// Converts a `tf.train.Example` to an `OFRecord` under `spec` (the typed twin of
/// [`Transcoder::tf_to_of`](crate::Transcoder::tf_to_of)).
pub fn example_to_ofrecord(
    example: &tf_pb::Example,
    spec: &MappingSpec,
) -> Result<of_pb::OfRecord, Error> {
    let spec = spec.compile()?;
    let mut feature = BTreeMap::new();
    if let Some(features) = &example.features {
        convert_features(
            &features.feature,
            &spec,
            tf_values,
            Dialect::Of,
            to_of_feature,
            &mut feature,
        )?;
    }
    if feature.is_empty() {
        return Err(ErrorKind::EmptyRecord.into());
    }
    Ok(of_pb::OfRecord { feature })
}

/// Converts a `tf.train.SequenceExample` to an `OFRecord` by flattening it (see
/// [`SequencePolicy::Flatten`]); fails with [`ErrorKind::SequenceExample`] when `spec`
/// refuses sequences and the record has feature lists.
pub fn sequence_example_to_ofrecord(
    seq: &tf_pb::SequenceExample,
    spec: &MappingSpec,
) -> Result<of_pb::OfRecord, Error> {
    let spec = spec.compile()?;
    let mut feature = BTreeMap::new();
    if let Some(context) = &seq.context {
        convert_features(
            &context.feature,
            &spec,
            tf_values,
            Dialect::Of,
            to_of_feature,
            &mut feature,
        )?;
    }
    if let Some(lists) = &seq.feature_lists {
        if spec.sequence == SequencePolicy::Refuse {
            return Err(ErrorKind::SequenceExample.into());
        }
        for (name, list) in &lists.feature_list {
            let rule = match spec.lookup(name.as_bytes()) {
                Disposition::Drop => continue,
                Disposition::Keep(rule) => rule,
            };
            flatten_list(name, list, rule, &spec, &mut feature)
                .map_err(|e| e.in_feature(name.as_bytes()))?;
        }
    }
    if feature.is_empty() {
        return Err(ErrorKind::EmptyRecord.into());
    }
    Ok(of_pb::OfRecord { feature })
}

fn flatten_list(
    name: &str,
    list: &tf_pb::FeatureList,
    rule: Option<&Rule>,
    spec: &CompiledSpec,
    out: &mut BTreeMap<String, of_pb::Feature>,
) -> Result<(), Error> {
    let mut lengths = Vec::with_capacity(list.feature.len());
    let mut joined: Option<Values> = None;
    for step in &list.feature {
        let Some(values) = tf_values(step) else {
            lengths.push(0);
            continue;
        };
        match (&mut joined, values) {
            (None, values) => {
                lengths.push(count(&values) as i64);
                joined = Some(values);
            }
            (Some(Values::Bytes(all)), Values::Bytes(more)) => {
                lengths.push(more.len() as i64);
                all.extend(more);
            }
            (Some(Values::Numbers(kind, all)), Values::Numbers(step_kind, more))
                if *kind == step_kind =>
            {
                lengths.push(more.len() as i64);
                all.append(&more);
            }
            _ => return Err(ErrorKind::MixedSequenceKinds.into()),
        }
    }
    let out_name = output_name(name, rule);
    if let Some(values) = joined {
        let values = apply(values, rule, Dialect::Of, spec.rounding)?;
        insert(out, out_name.clone(), to_of_feature(Some(values)))?;
    }
    insert(
        out,
        format!("{out_name}/lengths"),
        of::int64_feature(lengths),
    )
}

fn count(values: &Values) -> usize {
    match values {
        Values::Bytes(v) => v.len(),
        Values::Numbers(_, n) => n.len(),
    }
}

/// Converts an `OFRecord` to a `tf.train.Example` under `spec` (the typed twin of
/// [`Transcoder::of_to_tf`](crate::Transcoder::of_to_tf)).
pub fn ofrecord_to_example(
    record: &of_pb::OfRecord,
    spec: &MappingSpec,
) -> Result<tf_pb::Example, Error> {
    let spec = spec.compile()?;
    let mut feature = BTreeMap::new();
    convert_features(
        &record.feature,
        &spec,
        of_values,
        Dialect::Tf,
        to_tf_feature,
        &mut feature,
    )?;
    Ok(tf_pb::Example {
        features: Some(tf_pb::Features { feature }),
    })
}

/// Builders for TensorFlow messages, like the `_bytes_feature` / `_int64_feature` helpers of
/// TensorFlow's tutorials.
pub mod tf {
    use crate::proto::tensorflow::{
        feature::Kind, BytesList, Example, Feature, Features, FloatList, Int64List,
    };

    /// A bytes feature.
    pub fn bytes_feature<I, B>(values: I) -> Feature
    where
        I: IntoIterator<Item = B>,
        B: Into<Vec<u8>>,
    {
        Feature {
            kind: Some(Kind::BytesList(BytesList {
                value: values.into_iter().map(Into::into).collect(),
            })),
        }
    }

    /// A float feature.
    pub fn float_feature(values: impl IntoIterator<Item = f32>) -> Feature {
        Feature {
            kind: Some(Kind::FloatList(FloatList {
                value: values.into_iter().collect(),
            })),
        }
    }

    /// An int64 feature.
    pub fn int64_feature(values: impl IntoIterator<Item = i64>) -> Feature {
        Feature {
            kind: Some(Kind::Int64List(Int64List {
                value: values.into_iter().collect(),
            })),
        }
    }

    /// An Example from `(name, feature)` pairs; a repeated name keeps the last feature.
    pub fn example<I, K>(features: I) -> Example
    where
        I: IntoIterator<Item = (K, Feature)>,
        K: Into<String>,
    {
        Example {
            features: Some(Features {
                feature: features.into_iter().map(|(k, f)| (k.into(), f)).collect(),
            }),
        }
    }
}

/// Builders for OneFlow messages.
pub mod of {
    use crate::proto::oneflow::{
        feature::Kind, BytesList, DoubleList, Feature, FloatList, Int32List, Int64List, OfRecord,
    };

    /// A bytes feature.
    pub fn bytes_feature<I, B>(values: I) -> Feature
    where
        I: IntoIterator<Item = B>,
        B: Into<Vec<u8>>,
    {
        Feature {
            kind: Some(Kind::BytesList(BytesList {
                value: values.into_iter().map(Into::into).collect(),
            })),
        }
    }

    /// A float feature.
    pub fn float_feature(values: impl IntoIterator<Item = f32>) -> Feature {
        Feature {
            kind: Some(Kind::FloatList(FloatList {
                value: values.into_iter().collect(),
            })),
        }
    }

    /// A double feature.
    pub fn double_feature(values: impl IntoIterator<Item = f64>) -> Feature {
        Feature {
            kind: Some(Kind::DoubleList(DoubleList {
                value: values.into_iter().collect(),
            })),
        }
    }

    /// An int32 feature.
    pub fn int32_feature(values: impl IntoIterator<Item = i32>) -> Feature {
        Feature {
            kind: Some(Kind::Int32List(Int32List {
                value: values.into_iter().collect(),
            })),
        }
    }

    /// An int64 feature.
    pub fn int64_feature(values: impl IntoIterator<Item = i64>) -> Feature {
        Feature {
            kind: Some(Kind::Int64List(Int64List {
                value: values.into_iter().collect(),
            })),
        }
    }

    /// An OFRecord from `(name, feature)` pairs; a repeated name keeps the last feature.
    pub fn record<I, K>(features: I) -> OfRecord
    where
        I: IntoIterator<Item = (K, Feature)>,
        K: Into<String>,
    {
        OfRecord {
            feature: features.into_iter().map(|(k, f)| (k.into(), f)).collect(),
        }
    }
}

/// Typed access to an Example's features by name.
pub trait ExampleExt {
    /// The feature called `name`.
    fn feature(&self, name: &str) -> Option<&tf_pb::Feature>;

    /// The values of bytes feature `name`; `None` when absent or of another kind.
    fn bytes_values(&self, name: &str) -> Option<&[Vec<u8>]> {
        match self.feature(name)?.kind.as_ref()? {
            tf_pb::feature::Kind::BytesList(l) => Some(&l.value),
            _ => None,
        }
    }

    /// The values of float feature `name`.
    fn float_values(&self, name: &str) -> Option<&[f32]> {
        match self.feature(name)?.kind.as_ref()? {
            tf_pb::feature::Kind::FloatList(l) => Some(&l.value),
            _ => None,
        }
    }

    /// The values of int64 feature `name`.
    fn int64_values(&self, name: &str) -> Option<&[i64]> {
        match self.feature(name)?.kind.as_ref()? {
            tf_pb::feature::Kind::Int64List(l) => Some(&l.value),
            _ => None,
        }
    }
}

impl ExampleExt for tf_pb::Example {
    fn feature(&self, name: &str) -> Option<&tf_pb::Feature> {
        self.features.as_ref()?.feature.get(name)
    }
}

/// Typed access to an OFRecord's features by name.
pub trait OfRecordExt {
    /// The feature called `name`.
    fn feature(&self, name: &str) -> Option<&of_pb::Feature>;

    /// The values of bytes feature `name`; `None` when absent or of another kind.
    fn bytes_values(&self, name: &str) -> Option<&[Vec<u8>]> {
        match self.feature(name)?.kind.as_ref()? {
            of_pb::feature::Kind::BytesList(l) => Some(&l.value),
            _ => None,
        }
    }

    /// The values of float feature `name`.
    fn float_values(&self, name: &str) -> Option<&[f32]> {
        match self.feature(name)?.kind.as_ref()? {
            of_pb::feature::Kind::FloatList(l) => Some(&l.value),
            _ => None,
        }
    }

    /// The values of double feature `name`.
    fn double_values(&self, name: &str) -> Option<&[f64]> {
        match self.feature(name)?.kind.as_ref()? {
            of_pb::feature::Kind::DoubleList(l) => Some(&l.value),
            _ => None,
        }
    }

    /// The values of int32 feature `name`.
    fn int32_values(&self, name: &str) -> Option<&[i32]> {
        match self.feature(name)?.kind.as_ref()? {
            of_pb::feature::Kind::Int32List(l) => Some(&l.value),
            _ => None,
        }
    }

    /// The values of int64 feature `name`.
    fn int64_values(&self, name: &str) -> Option<&[i64]> {
        match self.feature(name)?.kind.as_ref()? {
            of_pb::feature::Kind::Int64List(l) => Some(&l.value),
            _ => None,
        }
    }
}

impl OfRecordExt for of_pb::OfRecord {
    fn feature(&self, name: &str) -> Option<&of_pb::Feature> {
        self.feature.get(name)
    }
}
