//! The default mapping in one pass over a record.
//!
//! A `Features` map as TensorFlow and OneFlow's writers lay it out (each entry: key, then
//! value, every length in its shortest form) converts to the other format's map by changing
//! one tag byte per integer list: the bytes are copied once and rewritten where they lie,
//! while each entry is validated as the general path would. Anything else — a key written
//! twice, an entry out of the usual order, a length in a longer form than needed, a double list
//! or an int32 list that int64 would read differently, a name that is not ASCII, a damaged
//! byte — makes the pass give up, and the general path, which gives the same bytes for
//! everything this pass accepts, converts the record or says what is wrong with it.

use std::ops::Range;

use crate::message::{each_overridden, next_top_level_field};
use crate::numeric::{self, Dialect};
use crate::wire::{self, Cursor};
use crate::FeatureKind;

/// One feature as the pass wrote it: where its name and value list lie in the output.
#[derive(Clone, Debug)]
pub(crate) struct Written {
    pub(crate) key: Range<usize>,
    /// `None` for a `Feature` with no kind set.
    pub(crate) kind: Option<FeatureKind>,
    pub(crate) count: usize,
    pub(crate) list: Range<usize>,
}

/// What the pass found in the last record it converted, and its scratch space.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pass {
    /// The features written, in order; empty when the pass gave the record up.
    pub(crate) written: Vec<Written>,
    order: Vec<usize>,
}

/// The tag byte of a length-delimited field `n` (for the fields 1–15 a one-byte tag holds).
const fn len_tag(field: u8) -> u8 {
    (field << 3) | 2
}

const KEY: u8 = len_tag(1);
const VALUE: u8 = len_tag(2);
const ENTRY: u8 = len_tag(1);

/// A serialized Example into `out` (empty) as an OFRecord, listing its features; false, with
/// `out` and the pass's features cleared, when the general path must do it.
pub(crate) fn tf_to_of(example: &[u8], out: &mut Vec<u8>, pass: &mut Pass) -> bool {
    // TensorFlow writes an Example as one `features` field and nothing else.
    let mut cursor = Cursor::new(example);
    let body = match next_top_level_field(&mut cursor) {
        Ok(Some((1, body))) if cursor.at_end() => body,
        _ => return false,
    };
    out.extend_from_slice(&example[body]);
    rewrite_map(out, 0, Dialect::Tf, pass) || {
        out.clear();
        false
    }
}

/// A serialized OFRecord into `out` (empty) as an Example, as [`tf_to_of`] does.
pub(crate) fn of_to_tf(record: &[u8], out: &mut Vec<u8>, pass: &mut Pass) -> bool {
    wire::put_tag(out, 1, wire::LEN);
    wire::put_varint(out, record.len() as u64);
    let base = out.len();
    out.extend_from_slice(record);
    rewrite_map(out, base, Dialect::Of, pass) || {
        out.clear();
        false
    }
}

/// Converts the map entries in `buf[start..]`, a copy of a whole `Features` body (TensorFlow)
/// or OFRecord (OneFlow) written in the dialect `from`, into the other dialect in place, and
/// lists each feature in `pass`. False when the record needs the general path; `buf` then
/// holds bytes that mean nothing and the pass lists no features.
fn rewrite_map(buf: &mut [u8], start: usize, from: Dialect, pass: &mut Pass) -> bool {
    let Pass { written, order } = pass;
    written.clear();
    let done = rewrite_entries(buf, start, from, written).is_some()
        && !written.is_empty()
        && !has_repeated_key(buf, written, order);
    if !done {
        written.clear();
    }
    done
}

/// True when two features share a name: protobuf keeps the last, which the general path
/// does.
fn has_repeated_key(buf: &[u8], written: &mut [Written], order: &mut Vec<usize>) -> bool {
    let mut repeated = false;
    each_overridden(buf, written, |w| w.key.clone(), |_| repeated = true, order);
    repeated
}

fn rewrite_entries(
    buf: &mut [u8],
    start: usize,
    from: Dialect,
    written: &mut Vec<Written>,
) -> Option<()> {
    let end = buf.len();
    let mut pos = start;
    while pos < end {
        let entry_end = field(buf, &mut pos, ENTRY, end)?;
        let key_end = field(buf, &mut pos, KEY, entry_end)?;
        let key = pos..key_end;
        pos = key_end;
        if !buf[key.clone()].is_ascii() {
            return None;
        }
        let value_end = field(buf, &mut pos, VALUE, entry_end)?;
        if value_end != entry_end {
            return None;
        }
        if pos == value_end {
            written.push(Written {
                key,
                kind: None,
                count: 0,
                list: pos..pos,
            });
            continue;
        }
        let tag_at = pos;
        let (kind, to_tag) = convert_kind(from, buf[tag_at])?;
        let list_end = field(buf, &mut pos, buf[tag_at], value_end)?;
        if list_end != value_end {
            return None;
        }
        let list = pos..list_end;
        let count = match packed_count(&buf[list.clone()], kind) {
            Some(count) => count,
            None => {
                let info = numeric::scan_list(Cursor::new(buf).sub(list.clone()), kind).ok()?;
                if kind == FeatureKind::Int32 && !info.int32_canonical {
                    return None;
                }
                info.count
            }
        };
        buf[tag_at] = to_tag;
        written.push(Written {
            key,
            kind: Some(if kind == FeatureKind::Int32 {
                FeatureKind::Int64
            } else {
                kind
            }),
            count,
            list,
        });
        pos = list_end;
    }
    Some(())
}

/// The number of values of a list in the form TensorFlow writes it (bytes values one field
/// each; numbers packed in one field, or none), once its every byte is checked; `None` for any
/// other form, valid or not, and for int32 lists, which [`numeric::scan_list`] checks.
#[inline]
fn packed_count(list: &[u8], kind: FeatureKind) -> Option<usize> {
    match kind {
        FeatureKind::Bytes => {
            let (mut at, mut count) = (0, 0);
            while at < list.len() {
                at = field(list, &mut at, len_tag(1), list.len())?;
                count += 1;
            }
            Some(count)
        }
        FeatureKind::Float | FeatureKind::Int64 => {
            if list.is_empty() {
                return Some(0);
            }
            let mut at = 0;
            if field(list, &mut at, len_tag(1), list.len())? != list.len() {
                return None;
            }
            let values = &list[at..];
            if kind == FeatureKind::Float {
                return values.len().is_multiple_of(4).then_some(values.len() / 4);
            }
            varint_count(values)
        }
        FeatureKind::Double | FeatureKind::Int32 => None,
    }
}

/// How many varints `packed` holds, when it is nothing but whole varints that fit 64 bits.
#[inline]
fn varint_count(packed: &[u8]) -> Option<usize> {
    let (mut count, mut run) = (0, 0);
    for &byte in packed {
        if byte < 0x80 {
            // The tenth byte of a varint holds bit 63 alone.
            if run == 9 && byte > 1 {
                return None;
            }
            count += 1;
            run = 0;
        } else {
            run += 1;
            if run == 10 {
                return None;
            }
        }
    }
    (run == 0).then_some(count)
}

/// The kind a list tag of `from` holds and the tag the other dialect gives it, for the kinds
/// whose bytes both read the same way.
fn convert_kind(from: Dialect, tag: u8) -> Option<(FeatureKind, u8)> {
    // TensorFlow: bytes 1, float 2, int64 3. OneFlow: bytes 1, float 2, double 3, int32 4,
    // int64 5.
    Some(match (from, tag) {
        (_, 0x0a) => (FeatureKind::Bytes, 0x0a),
        (_, 0x12) => (FeatureKind::Float, 0x12),
        (Dialect::Tf, 0x1a) => (FeatureKind::Int64, len_tag(5)),
        (Dialect::Of, 0x22) => (FeatureKind::Int32, len_tag(3)),
        (Dialect::Of, 0x2a) => (FeatureKind::Int64, len_tag(3)),
        _ => return None,
    })
}

/// Reads the one-byte `tag` at `*pos` and the shortest-form length after it, leaving `*pos`
/// at the field's first byte; returns where the field ends, which must be within `end`
/// (itself within `buf`).
#[inline(always)]
fn field(buf: &[u8], pos: &mut usize, tag: u8, end: usize) -> Option<usize> {
    let at = *pos;
    // A tag and at least one byte of length.
    if at + 1 >= end || buf[at] != tag {
        return None;
    }
    let first = buf[at + 1];
    let (len, start) = if first < 0x80 {
        (usize::from(first), at + 2)
    } else {
        long_length(buf, at + 1, end)?
    };
    let field_end = start + len;
    if field_end > end {
        return None;
    }
    *pos = start;
    Some(field_end)
}

/// A length of two to five bytes at `at`, in its shortest form (no trailing zero byte), and
/// where the bytes after it start.
#[cold]
#[inline(never)]
fn long_length(buf: &[u8], mut at: usize, end: usize) -> Option<(usize, usize)> {
    let mut value = 0usize;
    for i in 0..5 {
        if at >= end {
            return None;
        }
        let byte = buf[at];
        at += 1;
        value |= usize::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return (i == 0 || byte != 0).then_some((value, at));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &[u8], feature: &[u8]) -> Vec<u8> {
        let mut body = vec![KEY, key.len() as u8];
        body.extend_from_slice(key);
        body.extend_from_slice(&[VALUE, feature.len() as u8]);
        body.extend_from_slice(feature);
        let mut out = vec![ENTRY, body.len() as u8];
        out.extend_from_slice(&body);
        out
    }

    fn run(map: &[u8], from: Dialect) -> Option<(Vec<u8>, Vec<Written>)> {
        let mut buf = map.to_vec();
        let mut pass = Pass::default();
        rewrite_map(&mut buf, 0, from, &mut pass).then_some((buf, pass.written))
    }

    #[test]
    fn int64_tags_change_and_everything_else_is_copied() {
        let mut map = entry(b"label", &[0x1a, 2, 0x08, 7]);
        map.extend(entry(b"name", &[0x0a, 3, 0x0a, 1, b'x']));
        map.extend(entry(b"none", &[]));
        let (out, written) = run(&map, Dialect::Tf).unwrap();
        let mut expected = map.clone();
        expected[2 + 7 + 2] = 0x2a;
        assert_eq!(out, expected);
        let kinds: Vec<_> = written.iter().map(|w| (w.kind, w.count)).collect();
        assert_eq!(
            kinds,
            [
                (Some(FeatureKind::Int64), 1),
                (Some(FeatureKind::Bytes), 1),
                (None, 0)
            ]
        );
        assert_eq!(&out[written[1].key.clone()], b"name");
        assert_eq!(&out[written[1].list.clone()], &[0x0a, 1, b'x']);
        let (back, _) = run(&out, Dialect::Of).unwrap();
        assert_eq!(back, map);
    }

    #[test]
    fn what_the_general_path_must_decide_is_left_to_it() {
        let cases: [(&str, Vec<u8>, Dialect); 9] = [
            (
                "repeated key",
                [entry(b"a", &[]), entry(b"a", &[])].concat(),
                Dialect::Tf,
            ),
            (
                "value before key",
                vec![ENTRY, 5, VALUE, 0, KEY, 1, b'a'],
                Dialect::Tf,
            ),
            (
                "long-form length",
                vec![ENTRY, 0x85, 0x00, KEY, 1, b'a', VALUE, 0],
                Dialect::Tf,
            ),
            (
                "double list",
                entry(b"d", &[0x1a, 8, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]),
                Dialect::Of,
            ),
            (
                "unknown kind",
                entry(b"i", &[0x22, 2, 0x08, 0x7f]),
                Dialect::Tf,
            ),
            (
                "int32 beyond int32",
                entry(b"i", &[0x22, 6, 0x08, 0x80, 0x80, 0x80, 0x80, 0x08]),
                Dialect::Of,
            ),
            ("non-ASCII name", entry("é".as_bytes(), &[]), Dialect::Tf),
            (
                "damaged list",
                entry(b"f", &[0x12, 3, 0x0a, 5, 0]),
                Dialect::Tf,
            ),
            ("no entries", Vec::new(), Dialect::Tf),
        ];
        for (what, map, from) in cases {
            assert!(run(&map, from).is_none(), "{what}");
        }
        // An int32 list of sign-extended values reads the same as int64.
        let minus_one = [
            0x22, 11, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1,
        ];
        let (out, written) = run(&entry(b"i", &minus_one), Dialect::Of).unwrap();
        assert_eq!(out[2 + 3 + 2], 0x1a);
        assert_eq!(written[0].kind, Some(FeatureKind::Int64));
    }

    #[test]
    fn packed_varints_are_counted_only_when_whole_and_within_64_bits() {
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(varint_count(&max), Some(1));
        assert_eq!(
            varint_count(&[max.as_slice(), &[0, 0x7f]].concat()),
            Some(3)
        );
        let mut overflow = max;
        overflow[9] = 0x02;
        assert_eq!(varint_count(&overflow), None);
        assert_eq!(varint_count(&[0xff; 10]), None);
        assert_eq!(varint_count(&[0x05, 0x80]), None);
        assert_eq!(
            packed_count(&[0x0a, 3, 1, 0x80, 1], FeatureKind::Int64),
            Some(2)
        );
        assert_eq!(
            packed_count(&[0x0a, 5, 0, 0, 0x80, 0x3f, 0], FeatureKind::Float),
            None
        );
        assert_eq!(
            packed_count(&[0x0d, 0, 0, 0x80, 0x3f], FeatureKind::Float),
            None
        );
        assert_eq!(
            packed_count(&[0x0a, 0, 0x0a, 1, b'x'], FeatureKind::Bytes),
            Some(2)
        );
    }

    #[test]
    fn lengths_of_more_than_one_byte_are_read() {
        let value = vec![b'v'; 300];
        // BytesList { value } as a Feature, then the entry around it.
        let mut list = vec![0x0a, 0xac, 0x02];
        list.extend_from_slice(&value);
        let mut feature = vec![0x0a, 0xaf, 0x02];
        feature.extend_from_slice(&list);
        let mut body = vec![KEY, 1, b'k', VALUE, 0xb2, 0x02];
        body.extend_from_slice(&feature);
        let mut map = vec![ENTRY, 0xb8, 0x02];
        map.extend_from_slice(&body);
        let (out, written) = run(&map, Dialect::Tf).unwrap();
        assert_eq!(out, map);
        assert_eq!(written[0].count, 1);
        assert_eq!(&out[written[0].list.clone()], &list[..]);
    }

    #[test]
    fn a_repeated_name_among_many_features_is_left_to_the_general_path() {
        let names: Vec<Vec<u8>> = (0..20).map(|i| format!("f{i}").into_bytes()).collect();
        let map: Vec<u8> = names.iter().flat_map(|name| entry(name, &[])).collect();
        assert_eq!(run(&map, Dialect::Tf).unwrap().1.len(), 20);
        let repeated = [map.clone(), entry(b"f7", &[])].concat();
        assert!(run(&repeated, Dialect::Tf).is_none());
    }
}
