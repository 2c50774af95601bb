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
//!
//! The records of a dataset mostly carry the same names in the same order. The pass keeps
//! the names of the last record it took (its [`Shape`]): a record whose every name matches
//! the one at the same place, no more and no fewer, has names already known to be ASCII and
//! distinct, so those two checks are skipped, and the shape's id tells a caller gathering
//! statistics that the features are where they were.
//!
//! The same walk, without the copy, tells [`check_example`] and [`check_ofrecord`] that a
//! record is sound, which is what verifying a file asks of each record.

use std::ops::Range;

use crate::message::each_overridden;
use crate::numeric::{self, Dialect};
use crate::wire::{self, Cursor};
use crate::FeatureKind;

mod fields;
mod shape;

use fields::{bytes_count, float_count, int64_count, len_tag, take_field};
use shape::Shape;

/// One feature as the single pass wrote it (see [`Transcoder::single_pass_features`]).
///
/// [`Transcoder::single_pass_features`]: crate::Transcoder::single_pass_features
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenFeature {
    /// Where its name lies in the output.
    pub name: Range<usize>,
    /// Its kind, `None` for a `Feature` with no kind set.
    pub kind: Option<FeatureKind>,
    /// How many values it holds.
    pub values: usize,
    /// Where its serialized value list (`BytesList`, `Int64List`, ... without its tag and
    /// length) lies in the output; empty for a `Feature` with no kind.
    pub list: Range<usize>,
}

/// The name the pass's code uses.
type Written = WrittenFeature;

/// What the pass found in the last record it converted, and its scratch space.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pass {
    /// The features written, in order; empty when the pass gave the record up.
    pub(crate) written: Vec<Written>,
    order: Vec<usize>,
    shape: Shape,
}

impl Pass {
    /// The id of the names of the last record the pass took, in order: two records with the
    /// same id have the same names in the same order. `None` when the pass gave the last
    /// record up.
    pub(crate) fn shape(&self) -> Option<u64> {
        (!self.written.is_empty()).then_some(self.shape.id)
    }
}

const KEY: u8 = len_tag(1);
const VALUE: u8 = len_tag(2);
const ENTRY: u8 = len_tag(1);
const FEATURES: u8 = len_tag(1);

/// A serialized Example appended to `out` as an OFRecord, listing its features; false, with
/// `out` as it was and the pass's features cleared, when the general path must do it.
pub(crate) fn tf_to_of(example: &[u8], out: &mut Vec<u8>, pass: &mut Pass) -> bool {
    let Some(body) = example_body(example) else {
        pass.written.clear();
        return false;
    };
    let start = out.len();
    out.extend_from_slice(&example[body..]);
    rewrite_map(out, start, Dialect::Tf, pass) || {
        out.truncate(start);
        false
    }
}

/// A serialized OFRecord appended to `out` as an Example, as [`tf_to_of`] does.
pub(crate) fn of_to_tf(record: &[u8], out: &mut Vec<u8>, pass: &mut Pass) -> bool {
    let start = out.len();
    wire::put_tag(out, 1, wire::LEN);
    wire::put_varint(out, record.len() as u64);
    let base = out.len();
    out.extend_from_slice(record);
    rewrite_map(out, base, Dialect::Of, pass) || {
        out.truncate(start);
        false
    }
}

/// Whether the pass takes a serialized Example as it is: its features sound, as
/// [`crate::visit_example`] would find them. False when only the general walk can tell.
pub(crate) fn check_example(example: &[u8], pass: &mut Pass) -> bool {
    match example_body(example) {
        Some(body) => take_map(example, body, Dialect::Tf, pass),
        None => {
            pass.written.clear();
            false
        }
    }
}

/// Whether the pass takes a serialized OFRecord as it is, as [`check_example`] does.
pub(crate) fn check_ofrecord(record: &[u8], pass: &mut Pass) -> bool {
    take_map(record, 0, Dialect::Of, pass)
}

/// Where the `Features` map of an Example starts, when the Example is that one field and
/// nothing else, as TensorFlow writes it; it then runs to the end.
#[inline]
fn example_body(example: &[u8]) -> Option<usize> {
    match take_field(example, FEATURES)? {
        (body, []) => Some(example.len() - body.len()),
        _ => None,
    }
}

/// Converts the map entries in `buf[start..]`, a copy of a whole `Features` body (TensorFlow)
/// or OFRecord (OneFlow) written in the dialect `from`, into the other dialect in place, and
/// lists each feature in `pass`. False when the record needs the general path; `buf` then
/// holds bytes that mean nothing and the pass lists no features.
fn rewrite_map(buf: &mut [u8], start: usize, from: Dialect, pass: &mut Pass) -> bool {
    if !take_map(buf, start, from, pass) {
        return false;
    }
    for feature in &pass.written {
        if let Some(FeatureKind::Int64) = feature.kind {
            // The list's tag sits before its length.
            let tag_at = feature.list.start - 1 - wire::varint_len(feature.list.len() as u64);
            buf[tag_at] = match from {
                Dialect::Tf => len_tag(5),
                Dialect::Of => len_tag(3),
            };
        }
    }
    true
}

/// Walks and validates the map entries in `buf[start..]`, listing each feature in `pass`.
/// False, with no features listed, when the record needs the general path.
fn take_map(buf: &[u8], start: usize, from: Dialect, pass: &mut Pass) -> bool {
    let Pass {
        written,
        order,
        shape,
    } = pass;
    written.clear();
    let taken = match walk_entries(buf, start, from, written, shape) {
        // An empty record is the general path's to refuse, whatever the shape.
        _ if written.is_empty() => false,
        Some(true) if written.len() == shape.len() => true,
        Some(_) if !has_repeated_key(buf, written, order) => {
            shape.remember(buf, written);
            true
        }
        _ => false,
    };
    if !taken {
        written.clear();
    }
    taken
}

/// True when two features share a name: protobuf keeps the last, which the general path
/// does.
fn has_repeated_key(buf: &[u8], written: &mut [Written], order: &mut Vec<usize>) -> bool {
    let mut repeated = false;
    each_overridden(buf, written, |w| w.name.clone(), |_| repeated = true, order);
    repeated
}

/// Walks the map entries of `buf[start..]`, listing each feature in `written`; `None` when
/// the record needs the general path, else whether every name matched `shape`'s at the
/// same place (it then is ASCII; any other name is checked to be).
#[inline]
fn walk_entries(
    buf: &[u8],
    start: usize,
    from: Dialect,
    written: &mut Vec<Written>,
    shape: &Shape,
) -> Option<bool> {
    let mut pos = start;
    let mut same = true;
    while pos < buf.len() {
        let entry = match short_entry(buf, pos) {
            Some(entry) => entry,
            None => any_entry(buf, pos)?,
        };
        pos = entry.end;
        let key = &buf[entry.key.clone()];
        if !shape.matches(written.len(), key) {
            same = false;
            if !key.is_ascii() {
                return None;
            }
        }
        let Some(tag) = entry.tag else {
            written.push(Written {
                name: entry.key,
                kind: None,
                values: 0,
                list: entry.end..entry.end,
            });
            continue;
        };
        let list = &buf[entry.list.clone()];
        // TensorFlow: bytes 1, float 2, int64 3. OneFlow: bytes 1, float 2, double 3, int32
        // 4, int64 5. An int32 list that reads the same as int64 is written as int64; a
        // double list is the general path's.
        let (kind, count) = match (from, tag) {
            (_, 0x0a) => (FeatureKind::Bytes, bytes_count(list)),
            (_, 0x12) => (FeatureKind::Float, float_count(list)),
            (Dialect::Tf, 0x1a) | (Dialect::Of, 0x2a) => (FeatureKind::Int64, int64_count(list)),
            (Dialect::Of, 0x22) => (FeatureKind::Int64, None),
            _ => return None,
        };
        let count = match count {
            Some(count) => count,
            None => scanned_count(buf, entry.list.clone(), list_kind(from, tag)?)?,
        };
        written.push(Written {
            name: entry.key,
            kind: Some(kind),
            values: count,
            list: entry.list,
        });
    }
    Some(same)
}

/// One map entry, split: where its key and its value list lie in the record, the list's
/// tag (`None` for a `Feature` with no kind), and where the entry ends.
struct Entry {
    key: Range<usize>,
    tag: Option<u8>,
    list: Range<usize>,
    end: usize,
}

/// The entry at `pos` when its every tag and length takes one byte, as a small record's
/// do, read two words at a time: the entry's tag and length with the key's, then the
/// value's with its list's. `None` for anything else, which [`any_entry`] reads.
#[inline(always)]
fn short_entry(buf: &[u8], pos: usize) -> Option<Entry> {
    let word = |at: usize| {
        buf.get(at..)
            .and_then(|bytes| bytes.first_chunk::<4>())
            .map(|bytes| u32::from_le_bytes(*bytes))
    };
    // ENTRY, its length, KEY, the key's length: tags as given, lengths under 128.
    let head = word(pos)?;
    if head & 0x80ff_80ff != u32::from_le_bytes([ENTRY, 0, KEY, 0]) {
        return None;
    }
    let key = pos + 4..pos + 4 + (head >> 24) as usize;
    let end = pos + 2 + ((head >> 8) & 0x7f) as usize;
    // VALUE, its length, the list's tag, the list's length: a Feature with one list.
    let value = word(key.end)?;
    if value & 0x8000_80ff != u32::from_le_bytes([VALUE, 0, 0, 0]) {
        return None;
    }
    let value_len = ((value >> 8) & 0x7f) as usize;
    let list_len = (value >> 24) as usize;
    // The lengths must nest: the list fills the value, the value ends the entry, within the
    // record.
    if value_len != list_len + 2 || end != key.end + 2 + value_len || end > buf.len() {
        return None;
    }
    Some(Entry {
        key,
        tag: Some((value >> 16) as u8),
        list: end - list_len..end,
        end,
    })
}

/// The entry at `pos` in any layout the pass takes (key, then value, lengths in their
/// shortest form), or `None`.
#[cold]
fn any_entry(buf: &[u8], pos: usize) -> Option<Entry> {
    let base = buf.as_ptr() as usize;
    let at = |part: &[u8]| part.as_ptr() as usize - base;
    let (entry, after) = take_field(buf.get(pos..)?, ENTRY)?;
    let (key, entry) = take_field(entry, KEY)?;
    let (value, []) = take_field(entry, VALUE)? else {
        return None;
    };
    let end = buf.len() - after.len();
    let key = at(key)..at(key) + key.len();
    let Some(&tag) = value.first() else {
        return Some(Entry {
            key,
            tag: None,
            list: end..end,
            end,
        });
    };
    let (list, []) = take_field(value, tag)? else {
        return None;
    };
    Some(Entry {
        key,
        tag: Some(tag),
        list: at(list)..at(list) + list.len(),
        end,
    })
}

/// The values of a list in any other form than TensorFlow's, checked by the general scan;
/// `None` when the list is damaged, or an int32 list int64 would read differently.
#[cold]
fn scanned_count(buf: &[u8], list: Range<usize>, kind: FeatureKind) -> Option<usize> {
    let info = numeric::scan_list(Cursor::new(buf).sub(list), kind).ok()?;
    (kind != FeatureKind::Int32 || info.int32_canonical).then_some(info.count)
}

/// The kind a list tag of `from` holds, for the kinds whose bytes both dialects read the
/// same way.
#[inline(always)]
fn list_kind(from: Dialect, tag: u8) -> Option<FeatureKind> {
    // TensorFlow: bytes 1, float 2, int64 3. OneFlow: bytes 1, float 2, double 3, int32 4,
    // int64 5.
    Some(match (from, tag) {
        (_, 0x0a) => FeatureKind::Bytes,
        (_, 0x12) => FeatureKind::Float,
        (Dialect::Tf, 0x1a) | (Dialect::Of, 0x2a) => FeatureKind::Int64,
        (Dialect::Of, 0x22) => FeatureKind::Int32,
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
