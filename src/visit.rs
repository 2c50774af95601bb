//! Wire-level walks over a record's features, for schemas and verification.

use crate::fast::{self, Pass};
use crate::message::{
    entry_fields, feature_name, map_entry, next_top_level_field, parse_entry, parse_feature,
};
use crate::numeric::{self, Dialect};
use crate::wire::Cursor;
use crate::{Error, ErrorKind, FeatureKind};

/// Which TensorFlow message a record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TfRecordType {
    /// A `tf.train.Example`.
    Example,
    /// A `tf.train.SequenceExample` (it has `feature_lists`).
    SequenceExample,
}

/// Calls `f(name, kind, value_count)` for each feature of a serialized OFRecord, in wire
/// order, validating every value. `kind` is `None` for a `Feature` with no kind set.
pub fn visit_ofrecord(
    record: &[u8],
    mut f: impl FnMut(&[u8], Option<FeatureKind>, usize),
) -> Result<(), Error> {
    let mut cursor = Cursor::new(record);
    while !cursor.at_end() {
        let range = map_entry(&mut cursor, "unknown field in OFRecord")?;
        visit_entry(record, cursor.sub(range), Dialect::Of, &mut f)?;
    }
    Ok(())
}

/// Calls `f(name, kind, value_count)` for each feature of a serialized `tf.train.Example`,
/// validating every value, and says which message it was. For a `SequenceExample`, the
/// context features come first, then one call per feature list with the total number of
/// values over its steps (kind `None` when no step sets one).
pub fn visit_example(
    example: &[u8],
    mut f: impl FnMut(&[u8], Option<FeatureKind>, usize),
) -> Result<TfRecordType, Error> {
    let mut record_type = TfRecordType::Example;
    let mut cursor = Cursor::new(example);
    while let Some((field, range)) = next_top_level_field(&mut cursor)? {
        let mut message = cursor.sub(range);
        while !message.at_end() {
            if field == 1 {
                let entry = map_entry(&mut message, "unknown field in Features")?;
                visit_entry(example, message.sub(entry), Dialect::Tf, &mut f)?;
            } else {
                record_type = TfRecordType::SequenceExample;
                let entry = map_entry(&mut message, "unknown field in FeatureLists")?;
                visit_feature_list(example, message.sub(entry), &mut f)?;
            }
        }
        if field == 2 {
            record_type = TfRecordType::SequenceExample;
        }
    }
    Ok(record_type)
}

/// Checks records as [`visit_example`] and [`visit_ofrecord`] do, without reporting their
/// features, for a caller that only asks whether each record is sound (verifying a file).
///
/// A record laid out as the writers of both formats lay it out is walked once, as the
/// transcoder's single pass walks it under the default mapping; any other record (and one
/// that is damaged) goes through the full walk, which says what is wrong. The answer is
/// the full walk's. Keeps scratch space from record to record: keep one per thread.
///
/// ```
/// use ofconvert_bridge::{tf, encode_example, RecordChecker, TfRecordType};
///
/// let mut example = Vec::new();
/// encode_example(&tf::example([("label", tf::int64_feature([3]))]), &mut example);
/// let mut checker = RecordChecker::new();
/// assert_eq!(checker.check_example(&example).unwrap(), TfRecordType::Example);
/// assert!(checker.check_example(&example[..example.len() - 1]).is_err());
/// ```
#[derive(Clone, Debug, Default)]
pub struct RecordChecker {
    pass: Pass,
}

impl RecordChecker {
    /// A checker with no scratch space yet.
    pub fn new() -> Self {
        RecordChecker::default()
    }

    /// What [`visit_example`] returns on `example`.
    ///
    /// # Errors
    ///
    /// Those of [`visit_example`].
    pub fn check_example(&mut self, example: &[u8]) -> Result<TfRecordType, Error> {
        if fast::check_example(example, &mut self.pass) {
            return Ok(TfRecordType::Example);
        }
        visit_example(example, |_, _, _| {})
    }

    /// What [`visit_ofrecord`] returns on `record`.
    ///
    /// # Errors
    ///
    /// Those of [`visit_ofrecord`].
    pub fn check_ofrecord(&mut self, record: &[u8]) -> Result<(), Error> {
        if fast::check_ofrecord(record, &mut self.pass) {
            return Ok(());
        }
        visit_ofrecord(record, |_, _, _| {})
    }
}

/// Tells an `Example` from a `SequenceExample` by their top-level fields, without looking
/// inside them; anything else is [`ErrorKind::NotAnExample`].
pub fn classify_tf_record(bytes: &[u8]) -> Result<TfRecordType, Error> {
    let mut cursor = Cursor::new(bytes);
    let mut record_type = TfRecordType::Example;
    while let Some((field, _)) = next_top_level_field(&mut cursor)? {
        if field == 2 {
            record_type = TfRecordType::SequenceExample;
        }
    }
    Ok(record_type)
}

fn visit_entry(
    input: &[u8],
    mut entry: Cursor<'_>,
    dialect: Dialect,
    f: &mut impl FnMut(&[u8], Option<FeatureKind>, usize),
) -> Result<(), Error> {
    let (key, value) = entry_fields(&mut entry)?;
    let parsed = parse_entry(input, key, value, dialect)?;
    let name = &input[parsed.key];
    match parsed.list {
        None => f(name, None, 0),
        Some((kind, range)) => {
            let info = numeric::scan_list(Cursor::new(input).sub(range), kind)
                .map_err(|e| e.in_feature(name))?;
            f(name, Some(kind), info.count);
        }
    }
    Ok(())
}

fn visit_feature_list(
    input: &[u8],
    mut entry: Cursor<'_>,
    f: &mut impl FnMut(&[u8], Option<FeatureKind>, usize),
) -> Result<(), Error> {
    let (key, value) = entry_fields(&mut entry)?;
    let name = feature_name(input, &key)?;
    let mut kind = None;
    let mut total = 0;
    let mut steps = Cursor::new(input).sub(value.unwrap_or(0..0));
    while !steps.at_end() {
        let step = map_entry(&mut steps, "unknown field in FeatureList")?;
        let parsed = parse_feature(steps.sub(step), Dialect::Tf).map_err(|e| e.in_feature(name))?;
        let Some((step_kind, list)) = parsed else {
            continue;
        };
        if kind.is_some_and(|k| k != step_kind) {
            return Err(Error::from(ErrorKind::MixedSequenceKinds).in_feature(name));
        }
        kind = Some(step_kind);
        total += numeric::scan_list(Cursor::new(input).sub(list), step_kind)
            .map_err(|e| e.in_feature(name))?
            .count;
    }
    f(name, kind, total);
    Ok(())
}
