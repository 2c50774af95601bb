//! Parsing the protobuf messages both record formats are made of (map entries, `Feature`s,
//! the top level of an `Example`) over the wire-level cursor, with no conversion: what the
//! transcoder and the visitors share.

use std::ops::Range;

use crate::numeric::{self, Dialect};
use crate::wire::{self, Cursor};
use crate::{Error, ErrorKind, FeatureKind};

/// A map entry split into key and value, before anything is converted.
#[derive(Clone, Debug)]
pub(crate) struct RawEntry {
    pub(crate) key: Range<usize>,
    pub(crate) value: Option<Range<usize>>,
    /// A later entry has the same key; protobuf keeps the last one.
    pub(crate) loses: bool,
}

/// One parsed map entry: its key and, when set, the kind and list of its `Feature`.
pub(crate) struct ParsedEntry {
    pub(crate) key: Range<usize>,
    pub(crate) list: Option<(FeatureKind, Range<usize>)>,
}

/// Reads the next field of a map-typed message: it must be field 1, length-delimited.
pub(crate) fn map_entry(
    cursor: &mut Cursor<'_>,
    unknown: &'static str,
) -> Result<Range<usize>, Error> {
    let at = cursor.pos();
    let (field, wire_type) = cursor.tag()?;
    if field != 1 || wire_type != wire::LEN {
        return Err(Error::malformed(unknown, at));
    }
    cursor.len_delimited()
}

/// Splits a map entry into its key (empty when absent) and value. Each may appear once:
/// a repeated one would need protobuf's merge semantics, which no real writer relies on.
pub(crate) fn entry_fields(
    entry: &mut Cursor<'_>,
) -> Result<(Range<usize>, Option<Range<usize>>), Error> {
    let start = entry.pos();
    let mut key = None;
    let mut value = None;
    while !entry.at_end() {
        let at = entry.pos();
        let (field, wire_type) = entry.tag()?;
        let slot = match (field, wire_type) {
            (1, wire::LEN) => &mut key,
            (2, wire::LEN) => &mut value,
            _ => return Err(Error::malformed("unexpected field in a map entry", at)),
        };
        if slot.is_some() {
            return Err(Error::malformed("repeated field in a map entry", at));
        }
        *slot = Some(entry.len_delimited()?);
    }
    Ok((key.unwrap_or(start..start), value))
}

/// Parses a `Feature`: at most one kind, of the dialect's known kinds.
pub(crate) fn parse_feature(
    mut feature: Cursor<'_>,
    dialect: Dialect,
) -> Result<Option<(FeatureKind, Range<usize>)>, Error> {
    let mut found = None;
    while !feature.at_end() {
        let at = feature.pos();
        let (field, wire_type) = feature.tag()?;
        let Some(kind) = dialect.kind_of_field(field) else {
            return Err(ErrorKind::UnknownFeatureKind { field }.into());
        };
        if wire_type != wire::LEN {
            return Err(Error::malformed("Feature kind with a wrong wire type", at));
        }
        if found.is_some() {
            return Err(ErrorKind::AmbiguousFeature.into());
        }
        found = Some((kind, feature.len_delimited()?));
    }
    Ok(found)
}

/// A map key's bytes, which protobuf requires to be UTF-8 (`string` fields).
pub(crate) fn feature_name<'a>(input: &'a [u8], key: &Range<usize>) -> Result<&'a [u8], Error> {
    let name = &input[key.clone()];
    if !name.is_ascii() {
        std::str::from_utf8(name)
            .map_err(|_| Error::malformed("feature name is not valid UTF-8", key.start))?;
    }
    Ok(name)
}

/// Parses and validates one map entry of `Features` / `OFRecord`.
pub(crate) fn parse_entry(
    input: &[u8],
    key: Range<usize>,
    value: Option<Range<usize>>,
    dialect: Dialect,
) -> Result<ParsedEntry, Error> {
    let name = feature_name(input, &key)?;
    let list = match value {
        None => None,
        Some(value) => {
            parse_feature(Cursor::new(input).sub(value), dialect).map_err(|e| e.in_feature(name))?
        }
    };
    Ok(ParsedEntry { key, list })
}

/// Splits every entry of a map-typed message into key and value.
pub(crate) fn collect_entries(
    mut map: Cursor<'_>,
    unknown: &'static str,
    into: &mut Vec<RawEntry>,
) -> Result<(), Error> {
    while !map.at_end() {
        let range = map_entry(&mut map, unknown)?;
        let (key, value) = entry_fields(&mut map.sub(range))?;
        into.push(RawEntry {
            key,
            value,
            loses: false,
        });
    }
    Ok(())
}

/// Checks a `FeatureList`'s steps parse, without converting them.
pub(crate) fn validate_feature_list(
    input: &[u8],
    value: Option<Range<usize>>,
) -> Result<(), Error> {
    let mut steps = Cursor::new(input).sub(value.unwrap_or(0..0));
    while !steps.at_end() {
        let step = map_entry(&mut steps, "unknown field in FeatureList")?;
        if let Some((kind, list)) = parse_feature(steps.sub(step), Dialect::Tf)? {
            numeric::scan_list(Cursor::new(input).sub(list), kind)?;
        }
    }
    Ok(())
}

/// The next `features` (1) or `feature_lists` (2) field of an Example or SequenceExample,
/// `None` at the end. Unknown fields are skipped, as TensorFlow's parser skips them; a known
/// field of the wrong wire type, or bytes that are not protobuf, make it
/// [`ErrorKind::NotAnExample`].
pub(crate) fn next_top_level_field(
    cursor: &mut Cursor<'_>,
) -> Result<Option<(u32, std::ops::Range<usize>)>, Error> {
    let not_an_example = |_| Error::new(ErrorKind::NotAnExample);
    while !cursor.at_end() {
        let (field, wire_type) = cursor.tag().map_err(not_an_example)?;
        if field > 2 {
            cursor.skip(wire_type).map_err(not_an_example)?;
            continue;
        }
        if wire_type != wire::LEN {
            return Err(ErrorKind::NotAnExample.into());
        }
        let range = cursor.len_delimited().map_err(not_an_example)?;
        return Ok(Some((field, range)));
    }
    Ok(None)
}

/// Marks each entry that a later one with the same key overrides, as protobuf parsers do
/// (the entries come unmarked from [`collect_entries`]).
pub(crate) fn mark_losers(input: &[u8], entries: &mut [RawEntry], order: &mut Vec<usize>) {
    each_overridden(input, entries, |e| e.key.clone(), |e| e.loses = true, order);
}

/// Calls `overridden` with each of `items` whose key (`key(item)`, a range of `input`) a
/// later item repeats; `order` is scratch space.
pub(crate) fn each_overridden<T>(
    input: &[u8],
    items: &mut [T],
    key: impl Fn(&T) -> Range<usize>,
    mut overridden: impl FnMut(&mut T),
    order: &mut Vec<usize>,
) {
    if items.len() < 2 {
        return;
    }
    let name = |item: &T| &input[key(item)];
    // Most records have a handful of features: comparing pairs beats sorting them.
    if items.len() <= 16 {
        for i in 0..items.len() {
            let this = name(&items[i]);
            // Names of one record tend to share their length and a prefix (`feature0`,
            // `feature1`): their last bytes tell most of them apart without a `memcmp`.
            let repeated = items[i + 1..].iter().any(|later| {
                let other = name(later);
                other.last() == this.last() && other == this
            });
            if repeated {
                overridden(&mut items[i]);
            }
        }
        return;
    }
    order.clear();
    order.extend(0..items.len());
    order.sort_by(|&a, &b| name(&items[a]).cmp(name(&items[b])).then(a.cmp(&b)));
    for pair in order.windows(2) {
        if name(&items[pair[0]]) == name(&items[pair[1]]) {
            overridden(&mut items[pair[0]]);
        }
    }
}
