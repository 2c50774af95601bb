//! Where two records found different first differ: the value of the feature, the byte
//! within a bytes value, and that byte's offset in each side's record, so that a
//! difference names the byte (two images alike in their first hundred bytes otherwise show
//! as two identical prefixes).

use ofconvert_bridge::FeatureKind;

use super::{bytes_values, class, integers, reals, varint, Class, Feature};
use crate::naming::names::Format;
use crate::scan::{for_each_bytes, scan_entries, Dialect};

/// Where two lists of one class first differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct At {
    /// The first value that differs (or that one side has and the other lacks).
    pub(super) value: usize,
    /// In a bytes value both sides have, the first byte that differs (the end of the shorter
    /// one, when one begins the other).
    pub(super) byte: Option<usize>,
    /// Whether either side holds more than one value.
    several: bool,
}

impl At {
    /// The words that say where, after "values differ": the byte of a bytes value, and the
    /// value in a list of several.
    pub(super) fn words(self) -> String {
        match (self.byte, self.several) {
            (Some(byte), false) => format!(" at byte {byte}"),
            (Some(byte), true) => format!(" at byte {byte} of value {}", self.value),
            (None, true) => format!(" at value {}", self.value),
            (None, false) => String::new(),
        }
    }
}

/// Where the values of `a` and `b`, features of one class found to differ, first differ.
pub(super) fn first_at(a: &Feature<'_>, b: &Feature<'_>) -> Option<At> {
    match class(a.kind) {
        Class::None => None,
        Class::Bytes => {
            let (x, y) = (bytes_values(a), bytes_values(b));
            let mut at = first_unequal(&x, &y)?;
            at.byte = x
                .get(at.value)
                .zip(y.get(at.value))
                .map(|(x, y)| common(x, y));
            Some(at)
        }
        Class::Integer => first_unequal(&integers(a), &integers(b)),
        Class::Real => first_unequal(&reals(a), &reals(b)),
    }
}

/// Where the values `x` and `y` first differ, or where the shorter list ends.
fn first_unequal<T: PartialEq>(x: &[T], y: &[T]) -> Option<At> {
    let same = x.iter().zip(y).take_while(|(x, y)| x == y).count();
    (same < x.len().max(y.len())).then_some(At {
        value: same,
        byte: None,
        several: x.len().max(y.len()) > 1,
    })
}

/// How many bytes `x` and `y` begin with alike.
pub(super) fn common(x: &[u8], y: &[u8]) -> usize {
    x.iter().zip(y).take_while(|(x, y)| x == y).count()
}

/// The offset in `record` (a payload of `format`) of the byte `at` names in the feature
/// `name` (the last of that name, as the record is read), or of the start of its value
/// when `at` names none; `None` when the record has no such value.
pub(super) fn offset_in(record: &[u8], format: Format, name: &[u8], at: At) -> Option<u64> {
    let dialect = match format {
        Format::Tf => Dialect::Example,
        Format::Of => Dialect::OfRecord,
    };
    let mut list = None;
    scan_entries(record, dialect, |found, kind, values| {
        if found == name {
            list = Some((kind, values));
        }
    });
    let (kind, list) = list?;
    let value = nth_value(list, kind?, at.value)?;
    if at.byte.is_some_and(|byte| byte > value.len()) {
        return None;
    }
    let start = value.as_ptr() as usize - record.as_ptr() as usize;
    Some((start + at.byte.unwrap_or(0)) as u64)
}

/// The bytes that hold value `index` of a serialized list of `kind` (packed or not): a
/// bytes value, a varint, a float or a double.
fn nth_value(list: &[u8], kind: FeatureKind, index: usize) -> Option<&[u8]> {
    let mut values = Vec::new();
    match class(Some(kind)) {
        Class::Bytes => for_each_bytes(list, |value| values.push(value)),
        Class::Integer => each_number(list, None, &mut values),
        Class::Real => each_number(
            list,
            Some(if kind == FeatureKind::Double { 8 } else { 4 }),
            &mut values,
        ),
        Class::None => {}
    }
    values.get(index).copied()
}

/// The bytes of each number of field 1 of `list`: varints, or (`width` given) fixed-width
/// values of that width, packed or one a field, as the comparison reads them.
fn each_number<'a>(list: &'a [u8], width: Option<usize>, out: &mut Vec<&'a [u8]>) {
    let mut at = 0;
    while at < list.len() {
        let Some((tag, used)) = varint(&list[at..]) else {
            return;
        };
        at += used;
        let (field, wire) = (tag >> 3, tag & 7);
        let taken = match wire {
            0 => varint(&list[at..]).map(|(_, used)| used),
            1 => Some(8),
            5 => Some(4),
            2 => varint(&list[at..]).and_then(|(len, used)| {
                at += used;
                usize::try_from(len).ok()
            }),
            _ => None,
        };
        let Some(value) = taken.and_then(|len| list.get(at..at.checked_add(len)?)) else {
            return;
        };
        at += value.len();
        if field != 1 {
            continue;
        }
        match (wire, width) {
            (2, Some(width)) => out.extend(value.chunks_exact(width)),
            (2, None) => {
                let mut rest = value;
                while let Some((_, used)) = varint(rest) {
                    out.push(&rest[..used]);
                    rest = &rest[used..];
                }
            }
            (0, None) => out.push(value),
            (1 | 5, Some(width)) if value.len() == width => out.push(value),
            _ => {}
        }
    }
}
