//! The cheap check: an Example and an OFRecord written the same way, byte for byte but for
//! the tag of each int64 list, are the same record.

use super::varint;

/// Whether Example `example` and OFRecord `record` hold the same features written the
/// same way: the Example's `Features` and the OFRecord byte for byte alike, but for the tag
/// of each int64 list (3 in an Example, 5 in an OFRecord), as writers of both formats lay
/// them out (one field holding the features; each map entry a key then a `Feature` of one
/// list). Equal records converted by `tf2of` or `of2tf` pass without being transcoded;
/// `false` says nothing (the records are then compared the long way).
pub(super) fn same_layout(example: &[u8], record: &[u8]) -> bool {
    let Some((0x0a, len, used)) = header(example) else {
        return false;
    };
    let features = &example[used..];
    if len != features.len() || features.len() != record.len() {
        return false;
    }
    let mut at = 0;
    while at < features.len() {
        // A map entry: its tag and length, the key field, then the value field holding a
        // `Feature` of one list.
        let (Some(entry), Some(other)) = (header(&features[at..]), header(&record[at..])) else {
            return false;
        };
        if entry.0 != 0x0a || entry != other {
            return false;
        }
        let body = at + entry.2..at + entry.2 + entry.1;
        let (Some(body_a), Some(body_b)) = (features.get(body.clone()), record.get(body.clone()))
        else {
            return false;
        };
        let Some(key) = header(body_a).filter(|key| key.0 == 0x0a) else {
            return false;
        };
        let value_at = key.2 + key.1;
        if body_a.get(..value_at) != body_b.get(..value_at) {
            return false;
        }
        let (Some(value_a), Some(value_b)) = (body_a.get(value_at..), body_b.get(value_at..))
        else {
            return false;
        };
        let Some(value) = header(value_a).filter(|value| value.0 == 0x12) else {
            return false;
        };
        if value.2 + value.1 != value_a.len() || value_a.get(..value.2) != value_b.get(..value.2) {
            return false;
        }
        let (feature_a, feature_b) = (&value_a[value.2..], &value_b[value.2..]);
        if !feature_a.is_empty() {
            let Some(list) = header(feature_a) else {
                return false;
            };
            let tags = (list.0, feature_b[0]);
            // bytes_list and float_list keep their tags; int64_list is 3 in an Example and
            // 5 in an OFRecord.
            if !matches!(tags, (0x0a, 0x0a) | (0x12, 0x12) | (0x1a, 0x2a))
                || list.2 + list.1 != feature_a.len()
                || feature_a[1..] != feature_b[1..]
            {
                return false;
            }
        }
        at = body.end;
    }
    true
}

/// A field's one-byte tag, its length and the bytes the two take, when `bytes` starts with
/// a length-delimited field whose tag fits a byte.
pub(super) fn header(bytes: &[u8]) -> Option<(u8, usize, usize)> {
    let (&tag, rest) = bytes.split_first()?;
    if tag & 0x80 != 0 || tag & 7 != 2 {
        return None;
    }
    let (len, used) = varint(rest)?;
    Some((tag, usize::try_from(len).ok()?, 1 + used))
}
