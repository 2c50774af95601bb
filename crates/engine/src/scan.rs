//! A second, value-level walk over records the bridge has already validated: the bytes of
//! each bytes value and the numbers of each integer list, for the facts a schema keeps
//! about values (image headers, integer ranges). Nothing is allocated; anything that does
//! not parse ends the walk quietly, as the record was checked before.

use ofconvert_bridge::FeatureKind;

/// Which message a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// An OFRecord: a map of features at the top level; five kinds.
    OfRecord,
    /// A `tf.train.Example` (or the context of a `SequenceExample`): the map inside field 1;
    /// three kinds.
    Example,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, at: 0 }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.bytes.get(self.at)?;
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// The next field: its number, wire type, and for a length-delimited one its bytes.
    fn field(&mut self) -> Option<(u64, u8, &'a [u8])> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let tag = self.varint()?;
        let wire_type = (tag & 7) as u8;
        let payload: &'a [u8] = match wire_type {
            0 => {
                let start = self.at;
                self.varint()?;
                &self.bytes[start..self.at]
            }
            1 => self.take(8)?,
            2 => {
                let len = usize::try_from(self.varint()?).ok()?;
                self.take(len)?
            }
            5 => self.take(4)?,
            _ => return None,
        };
        Some((tag >> 3, wire_type, payload))
    }

    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(len)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }
}

/// Calls `f(name, kind, list)` for every feature of `record` that has a kind, with `list`
/// the serialized value list (`BytesList`, `Int64List`, ...), in wire order.
pub(crate) fn scan_features(
    record: &[u8],
    dialect: Dialect,
    mut f: impl FnMut(&[u8], FeatureKind, &[u8]),
) {
    match dialect {
        Dialect::OfRecord => scan_map(record, Dialect::OfRecord, &mut f),
        Dialect::Example => {
            let mut top = Cursor::new(record);
            while let Some((field, wire_type, features)) = top.field() {
                if field == 1 && wire_type == 2 {
                    scan_map(features, Dialect::Example, &mut f);
                }
            }
        }
    }
}

fn scan_map(map: &[u8], dialect: Dialect, f: &mut impl FnMut(&[u8], FeatureKind, &[u8])) {
    let mut entries = Cursor::new(map);
    while let Some((field, wire_type, entry)) = entries.field() {
        if field != 1 || wire_type != 2 {
            continue;
        }
        let (mut name, mut feature) = (&[][..], None);
        let mut fields = Cursor::new(entry);
        while let Some((field, wire_type, value)) = fields.field() {
            match (field, wire_type) {
                (1, 2) => name = value,
                (2, 2) => feature = Some(value),
                _ => {}
            }
        }
        let Some(feature) = feature else {
            continue;
        };
        let mut kinds = Cursor::new(feature);
        let mut last = None;
        while let Some((field, wire_type, list)) = kinds.field() {
            if wire_type == 2 {
                last = kind_of(field, dialect).map(|kind| (kind, list));
            }
        }
        if let Some((kind, list)) = last {
            f(name, kind, list);
        }
    }
}

/// Calls `f(name, kind, list)` for every feature of a record in wire order, those with no
/// kind set included (`None`, an empty list): for comparing records, where a `Feature`
/// without a kind is not the same as no feature. For an Example, its features (those of
/// every `features` field, as protobuf merges them).
pub(crate) fn scan_entries<'a>(
    record: &'a [u8],
    dialect: Dialect,
    mut f: impl FnMut(&'a [u8], Option<FeatureKind>, &'a [u8]),
) {
    match dialect {
        Dialect::OfRecord => entries_of_map(record, dialect, &mut f),
        Dialect::Example => {
            let mut top = Cursor::new(record);
            while let Some((field, wire_type, features)) = top.field() {
                if field == 1 && wire_type == 2 {
                    entries_of_map(features, dialect, &mut f);
                }
            }
        }
    }
}

fn entries_of_map<'a>(
    map: &'a [u8],
    dialect: Dialect,
    f: &mut impl FnMut(&'a [u8], Option<FeatureKind>, &'a [u8]),
) {
    let mut entries = Cursor::new(map);
    while let Some((field, wire_type, entry)) = entries.field() {
        if field != 1 || wire_type != 2 {
            continue;
        }
        let (mut name, mut feature) = (&[][..], &[][..]);
        let mut fields = Cursor::new(entry);
        while let Some((field, wire_type, value)) = fields.field() {
            match (field, wire_type) {
                (1, 2) => name = value,
                (2, 2) => feature = value,
                _ => {}
            }
        }
        let mut kinds = Cursor::new(feature);
        let mut last = (None, &[][..]);
        while let Some((field, wire_type, list)) = kinds.field() {
            if wire_type == 2 {
                if let Some(kind) = kind_of(field, dialect) {
                    last = (Some(kind), list);
                }
            }
        }
        f(name, last.0, last.1);
    }
}

fn kind_of(field: u64, dialect: Dialect) -> Option<FeatureKind> {
    Some(match (field, dialect) {
        (1, _) => FeatureKind::Bytes,
        (2, _) => FeatureKind::Float,
        (3, Dialect::OfRecord) => FeatureKind::Double,
        (3, Dialect::Example) | (5, Dialect::OfRecord) => FeatureKind::Int64,
        (4, Dialect::OfRecord) => FeatureKind::Int32,
        _ => return None,
    })
}

/// Calls `f` with each value of a serialized `BytesList`.
#[inline(always)]
pub(crate) fn for_each_bytes<'a>(list: &'a [u8], mut f: impl FnMut(&'a [u8])) {
    // The form TensorFlow writes, values shorter than 128 bytes: a tag and a one-byte length
    // each. Anything else goes to the general walk from where this one stops.
    let mut at = 0;
    while let [0x0a, len @ 0..=0x7f, rest @ ..] = &list[at..] {
        let Some(value) = rest.get(..usize::from(*len)) else {
            return;
        };
        f(value);
        at += 2 + value.len();
    }
    if at < list.len() {
        each_bytes_field(&list[at..], &mut f);
    }
}

/// [`for_each_bytes`] of a list in any other form.
#[cold]
fn each_bytes_field<'a>(list: &'a [u8], f: &mut impl FnMut(&'a [u8])) {
    let mut values = Cursor::new(list);
    while let Some((field, wire_type, value)) = values.field() {
        if field == 1 && wire_type == 2 {
            f(value);
        }
    }
}

/// Calls `f` with each value of a serialized `Int64List` or `Int32List`, packed or not
/// (negative int32 values are sign-extended varints, the same as int64).
pub(crate) fn for_each_integer(list: &[u8], mut f: impl FnMut(i64)) {
    // The form TensorFlow writes: one packed field, shorter than 128 bytes.
    if let [0x0a, len @ 0..=0x7f, packed @ ..] = list {
        if usize::from(*len) == packed.len() {
            let mut numbers = Cursor::new(packed);
            while let Some(number) = numbers.varint() {
                f(number as i64);
            }
            return;
        }
    }
    let mut values = Cursor::new(list);
    while let Some((field, wire_type, value)) = values.field() {
        if field != 1 {
            continue;
        }
        let mut numbers = Cursor::new(value);
        if wire_type == 2 || wire_type == 0 {
            while let Some(number) = numbers.varint() {
                f(number as i64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofconvert_bridge::{encode_example, encode_ofrecord, of, tf};

    #[test]
    fn finds_bytes_and_integers_in_both_dialects() {
        let mut record = Vec::new();
        encode_ofrecord(
            &of::record([
                ("img", of::bytes_feature([b"ab".to_vec(), b"c".to_vec()])),
                ("n", of::int32_feature([-5, 7])),
                ("f", of::float_feature([1.0])),
            ]),
            &mut record,
        );
        let mut seen = Vec::new();
        scan_features(&record, Dialect::OfRecord, |name, kind, list| {
            let mut values = Vec::new();
            match kind {
                FeatureKind::Bytes => for_each_bytes(list, |v| values.push(v.len() as i64)),
                FeatureKind::Int32 => for_each_integer(list, |v| values.push(v)),
                _ => {}
            }
            seen.push((String::from_utf8_lossy(name).into_owned(), kind, values));
        });
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            seen,
            vec![
                ("f".to_owned(), FeatureKind::Float, vec![]),
                ("img".to_owned(), FeatureKind::Bytes, vec![2, 1]),
                ("n".to_owned(), FeatureKind::Int32, vec![-5, 7]),
            ]
        );

        let mut example = Vec::new();
        encode_example(
            &tf::example([("big", tf::int64_feature([i64::MIN, 1 << 40]))]),
            &mut example,
        );
        let mut numbers = Vec::new();
        scan_features(&example, Dialect::Example, |_, kind, list| {
            assert_eq!(kind, FeatureKind::Int64);
            for_each_integer(list, |v| numbers.push(v));
        });
        assert_eq!(numbers, vec![i64::MIN, 1 << 40]);
        // Cut anywhere, nothing panics.
        for end in 0..example.len() {
            scan_features(&example[..end], Dialect::Example, |_, _, list| {
                for_each_integer(list, |_| {})
            });
        }
    }

    #[test]
    fn bytes_values_of_any_length_come_in_order() {
        let values = [
            vec![1u8; 3],
            vec![2; 200],
            vec![],
            vec![3; 127],
            vec![4; 128],
        ];
        let mut list = Vec::new();
        for value in &values {
            list.push(0x0a);
            let mut len = value.len();
            while len >= 0x80 {
                list.push(len as u8 | 0x80);
                len >>= 7;
            }
            list.push(len as u8);
            list.extend_from_slice(value);
        }
        let mut seen = Vec::new();
        for_each_bytes(&list, |value| seen.push(value.to_vec()));
        assert_eq!(seen, values);
        // A value cut short ends the walk.
        let mut seen = 0;
        for_each_bytes(&list[..list.len() - 1], |_| seen += 1);
        assert_eq!(seen, 4);
    }
}
