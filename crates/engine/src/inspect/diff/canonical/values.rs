//! The values of a feature as compared: bytes as bytes, integers by value (an int32 as
//! protobuf reads one), reals by their bits (a double being the float it holds exactly),
//! packed or not.

use ofconvert_bridge::FeatureKind;

use super::Feature;
use crate::scan::{for_each_bytes, for_each_integer};

/// A real number as compared: a float, or a double that no float holds exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Real {
    Float(u32),
    Double(u64),
}

impl Real {
    fn of_double(value: f64) -> Real {
        let narrow = value as f32;
        if f64::from(narrow).to_bits() == value.to_bits() {
            Real::Float(narrow.to_bits())
        } else {
            Real::Double(value.to_bits())
        }
    }
}

/// The values of a feature as compared.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Class {
    None,
    Bytes,
    Integer,
    Real,
}

pub(super) fn class(kind: Option<FeatureKind>) -> Class {
    match kind {
        None => Class::None,
        Some(FeatureKind::Bytes) => Class::Bytes,
        Some(FeatureKind::Int32 | FeatureKind::Int64) => Class::Integer,
        Some(FeatureKind::Float | FeatureKind::Double) => Class::Real,
    }
}

pub(super) fn bytes_values<'r>(feature: &Feature<'r>) -> Vec<&'r [u8]> {
    let mut values = Vec::new();
    for_each_bytes(feature.list, |value| values.push(value));
    values
}

pub(super) fn integers(feature: &Feature<'_>) -> Vec<i64> {
    let mut values = Vec::new();
    for_each_value(feature, |value| values.push(value));
    values
}

/// Calls `f` with each value of an integer feature, an int32 read as protobuf reads one
/// (the low 32 bits of its varint, however it was written).
pub(super) fn for_each_value(feature: &Feature<'_>, mut f: impl FnMut(i64)) {
    let int32 = feature.kind == Some(FeatureKind::Int32);
    for_each_integer(feature.list, |value| {
        f(if int32 {
            i64::from(value as i32)
        } else {
            value
        })
    });
}

pub(super) fn reals(feature: &Feature<'_>) -> Vec<Real> {
    let mut values = Vec::new();
    for_each_real(feature.list, feature.kind, |value| values.push(value));
    values
}

/// Calls `f` with each value of a serialized `FloatList` or `DoubleList`, packed or not.
pub(super) fn for_each_real(list: &[u8], kind: Option<FeatureKind>, mut f: impl FnMut(Real)) {
    let double = kind == Some(FeatureKind::Double);
    let width = if double { 8 } else { 4 };
    let mut emit = |bytes: &[u8]| {
        for chunk in bytes.chunks_exact(width) {
            f(if double {
                let bits = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
                Real::of_double(f64::from_bits(bits))
            } else {
                Real::Float(u32::from_le_bytes(chunk.try_into().unwrap_or_default()))
            });
        }
    };
    let mut at = 0;
    while at < list.len() {
        let Some((tag, used)) = varint(&list[at..]) else {
            return;
        };
        at += used;
        match tag & 7 {
            2 => {
                let Some((len, used)) = varint(&list[at..]) else {
                    return;
                };
                at += used;
                let Some(packed) = usize::try_from(len)
                    .ok()
                    .and_then(|len| list.get(at..at.checked_add(len)?))
                else {
                    return;
                };
                if tag >> 3 == 1 {
                    emit(packed);
                }
                at += packed.len();
            }
            1 | 5 => {
                let size = if tag & 7 == 1 { 8 } else { 4 };
                let Some(value) = list.get(at..at + size) else {
                    return;
                };
                if tag >> 3 == 1 && size == width {
                    emit(value);
                }
                at += size;
            }
            0 => {
                let Some((_, used)) = varint(&list[at..]) else {
                    return;
                };
                at += used;
            }
            _ => return,
        }
    }
}

pub(super) fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}
