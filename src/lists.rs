//! A record's value lists read straight out of its bytes, for a caller that copies values
//! into its own buffers (columns of a batch, arrays of a language binding) without building
//! a message per record.
//!
//! ```
//! use ofconvert_bridge::{encode_example, tf, visit_lists, FeatureKind};
//!
//! let example = tf::example([
//!     ("label", tf::int64_feature([7])),
//!     ("box", tf::float_feature([0.1, 0.9])),
//!     ("jpeg", tf::bytes_feature([b"\xff\xd8".to_vec()])),
//! ]);
//! let mut record = Vec::new();
//! encode_example(&example, &mut record);
//!
//! let (mut labels, mut boxes, mut images) = (Vec::new(), Vec::new(), Vec::new());
//! visit_lists(&record, true, |name, list| {
//!     let Some(list) = list else { return Ok(()) };
//!     match (name, list.kind()) {
//!         (b"label", FeatureKind::Int64) => list.append_i64(&mut labels).map(drop),
//!         (b"box", FeatureKind::Float) => list.append_f32(&mut boxes).map(drop),
//!         _ => list.for_each_bytes(|value| images.push(value.to_vec())).map(drop),
//!     }
//! })?;
//! assert_eq!((labels, boxes, images), (vec![7], vec![0.1, 0.9], vec![b"\xff\xd8".to_vec()]));
//! # Ok::<(), ofconvert_bridge::Error>(())
//! ```

use crate::message::{entry_fields, map_entry, next_top_level_field, parse_entry};
use crate::numeric::{for_each_value, Dialect, Value};
use crate::wire::{self, Cursor};
use crate::{Error, FeatureKind};

/// The value list of one feature, as it lies in a serialized record. Its values are checked
/// as they are read: a list that does not parse is an error of the read that met it.
#[derive(Clone, Copy)]
pub struct ValueList<'a> {
    kind: FeatureKind,
    input: &'a [u8],
    range: (usize, usize),
    name: &'a [u8],
}

impl std::fmt::Debug for ValueList<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueList")
            .field("kind", &self.kind)
            .field("bytes", &(self.range.1 - self.range.0))
            .finish()
    }
}

impl<'a> ValueList<'a> {
    /// The kind of the list.
    pub fn kind(&self) -> FeatureKind {
        self.kind
    }

    fn cursor(&self) -> Cursor<'a> {
        Cursor::new(self.input).sub(self.range.0..self.range.1)
    }

    fn walk(&self, f: impl FnMut(Value)) -> Result<(), Error> {
        for_each_value(self.cursor(), self.kind, f).map_err(|err| err.in_feature(self.name))
    }

    /// How many values the list holds.
    ///
    /// # Errors
    ///
    /// When the list does not parse.
    pub fn count(&self) -> Result<usize, Error> {
        if self.kind == FeatureKind::Bytes {
            return self.for_each_bytes(|_| {});
        }
        let mut count = 0;
        self.walk(|_| count += 1)?;
        Ok(count)
    }

    /// Appends the values of an int64 list (or an int32 list, widened) to `out`; returns
    /// how many. Any other kind appends nothing.
    ///
    /// # Errors
    ///
    /// When the list does not parse.
    pub fn append_i64(&self, out: &mut Vec<i64>) -> Result<usize, Error> {
        let before = out.len();
        let int32 = self.kind == FeatureKind::Int32;
        self.walk(|value| {
            if let Value::Int(raw) = value {
                // Protobuf reads an int32 varint by truncating it to its low 32 bits.
                out.push(if int32 {
                    i64::from(raw as i32)
                } else {
                    raw as i64
                });
            }
        })?;
        Ok(out.len() - before)
    }

    /// Appends the values of an int32 list to `out`; returns how many.
    ///
    /// # Errors
    ///
    /// When the list does not parse.
    pub fn append_i32(&self, out: &mut Vec<i32>) -> Result<usize, Error> {
        let before = out.len();
        self.walk(|value| {
            if let Value::Int(raw) = value {
                out.push(raw as i32);
            }
        })?;
        Ok(out.len() - before)
    }

    /// Appends the values of a float list to `out`, every bit kept; returns how many.
    ///
    /// # Errors
    ///
    /// When the list does not parse.
    pub fn append_f32(&self, out: &mut Vec<f32>) -> Result<usize, Error> {
        let before = out.len();
        self.walk(|value| {
            if let Value::Float(bits) = value {
                out.push(f32::from_bits(bits));
            }
        })?;
        Ok(out.len() - before)
    }

    /// Appends the values of a double list to `out`; returns how many.
    ///
    /// # Errors
    ///
    /// When the list does not parse.
    pub fn append_f64(&self, out: &mut Vec<f64>) -> Result<usize, Error> {
        let before = out.len();
        self.walk(|value| {
            if let Value::Double(bits) = value {
                out.push(f64::from_bits(bits));
            }
        })?;
        Ok(out.len() - before)
    }

    /// Calls `f` with each value of a bytes list; returns how many.
    ///
    /// # Errors
    ///
    /// When the list does not parse.
    pub fn for_each_bytes(&self, mut f: impl FnMut(&'a [u8])) -> Result<usize, Error> {
        let mut cursor = self.cursor();
        let mut count = 0;
        while !cursor.at_end() {
            let at = cursor.pos();
            let (field, wire_type) = cursor.tag().map_err(|e| e.in_feature(self.name))?;
            if field != 1 || wire_type != wire::LEN {
                let err = Error::malformed("unexpected field in a bytes list", at);
                return Err(err.in_feature(self.name));
            }
            let range = cursor
                .len_delimited()
                .map_err(|e| e.in_feature(self.name))?;
            f(&self.input[range]);
            count += 1;
        }
        Ok(count)
    }
}

/// Calls `f(name, list)` for each feature of a serialized record in wire order: the
/// `features` of a `tf.train.Example` (the `context` of a `SequenceExample`, whose feature
/// lists are passed over) when `tensorflow`, else an OFRecord's features. `list` is `None`
/// for a `Feature` with no kind set. A name that comes again overrides the earlier entry,
/// as protobuf parsers read it: the caller keeps the last. Errors of `f` end the walk and are
/// returned as they are. Returns whether the record is a `SequenceExample` (it has feature
/// lists).
///
/// # Errors
///
/// When the record's structure does not parse (the lists' values are checked when read).
pub fn visit_lists<'a, E: From<Error>>(
    record: &'a [u8],
    tensorflow: bool,
    mut f: impl FnMut(&'a [u8], Option<ValueList<'a>>) -> Result<(), E>,
) -> Result<bool, E> {
    let dialect = if tensorflow { Dialect::Tf } else { Dialect::Of };
    let mut visit_map = |mut map: Cursor<'a>, unknown: &'static str| -> Result<(), E> {
        while !map.at_end() {
            let entry = map_entry(&mut map, unknown)?;
            let (key, value) = entry_fields(&mut map.sub(entry))?;
            let parsed = parse_entry(record, key, value, dialect)?;
            let name = &record[parsed.key];
            let list = parsed.list.map(|(kind, range)| ValueList {
                kind,
                input: record,
                range: (range.start, range.end),
                name,
            });
            f(name, list)?;
        }
        Ok(())
    };
    let mut cursor = Cursor::new(record);
    if !tensorflow {
        return visit_map(cursor, "unknown field in OFRecord").map(|()| false);
    }
    let mut sequence = false;
    while let Some((field, range)) = next_top_level_field(&mut cursor)? {
        if field == 1 {
            visit_map(cursor.sub(range), "unknown field in Features")?;
        } else {
            sequence = true;
        }
    }
    Ok(sequence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{encode_example, encode_ofrecord, of, tf};

    fn tf_lists(record: &[u8]) -> Result<Vec<(String, Option<FeatureKind>, usize)>, Error> {
        let mut seen = Vec::new();
        let sequence = visit_lists(record, true, |name, list| {
            let count = list.map(|list| list.count()).transpose()?.unwrap_or(0);
            seen.push((
                String::from_utf8_lossy(name).into_owned(),
                list.map(|l| l.kind()),
                count,
            ));
            Ok::<(), Error>(())
        })?;
        seen.push((format!("sequence: {sequence}"), None, 0));
        Ok(seen)
    }

    #[test]
    fn every_kind_of_both_formats_comes_out_with_its_values() {
        let mut record = Vec::new();
        encode_ofrecord(
            &of::record([
                ("d", of::double_feature([1.5, -2.0])),
                ("i", of::int32_feature([-3, 4])),
                ("l", of::int64_feature([i64::MIN])),
                ("f", of::float_feature([f32::NAN])),
                ("b", of::bytes_feature([b"x".to_vec(), Vec::new()])),
            ]),
            &mut record,
        );
        let (mut d, mut i, mut wide, mut l, mut f, mut b) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        visit_lists(&record, false, |name, list| {
            let list = list.expect("a kind");
            match name {
                b"d" => list.append_f64(&mut d).map(drop),
                b"i" => list
                    .append_i32(&mut i)
                    .and_then(|_| list.append_i64(&mut wide))
                    .map(drop),
                b"l" => list.append_i64(&mut l).map(drop),
                b"f" => list.append_f32(&mut f).map(drop),
                _ => list.for_each_bytes(|v| b.push(v.to_vec())).map(drop),
            }
        })
        .unwrap();
        assert_eq!(
            (d, i, wide, l),
            (vec![1.5, -2.0], vec![-3, 4], vec![-3, 4], vec![i64::MIN])
        );
        assert_eq!(f[0].to_bits(), f32::NAN.to_bits());
        assert_eq!(b, vec![b"x".to_vec(), Vec::new()]);
    }

    #[test]
    fn a_kindless_feature_is_none_and_a_sequence_examples_lists_are_passed_over() {
        let mut record = Vec::new();
        encode_example(
            &tf::example([
                ("a", tf::int64_feature([1, 2, 3])),
                ("none", Default::default()),
            ]),
            &mut record,
        );
        let mut seen = tf_lists(&record).unwrap();
        assert_eq!(
            seen,
            vec![
                ("a".to_owned(), Some(FeatureKind::Int64), 3),
                ("none".to_owned(), None, 0),
                ("sequence: false".to_owned(), None, 0),
            ]
        );
        // feature_lists (field 2) of a SequenceExample: nothing is called for them.
        let mut sequence = record.clone();
        sequence.extend_from_slice(&[0x12, 0x00]);
        seen[2].0 = "sequence: true".to_owned();
        assert_eq!(tf_lists(&sequence).unwrap(), seen);
    }

    #[test]
    fn damage_is_an_error_that_names_the_feature() {
        let mut record = Vec::new();
        encode_example(&tf::example([("f", tf::float_feature([1.0]))]), &mut record);
        // The float list's packed length 4 becomes 3.
        let at = record.len() - 5;
        assert_eq!(record[at], 4);
        record[at] = 3;
        let err = tf_lists(&record).unwrap_err();
        assert!(err.to_string().contains("\"f\""), "{err}");
        assert!(visit_lists(b"\xff", true, |_, _| Ok::<(), Error>(())).is_err());
    }
}
