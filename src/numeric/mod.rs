//! List payloads at the wire level, and the numeric conversions both the wire path and the
//! typed path share, so the two cannot disagree on a value.

use std::ops::Range;

use crate::spec::{Rounding, Rule};
use crate::wire::{self, Cursor};
use crate::{Error, ErrorKind, FeatureKind, NumericType};

/// Which message family a `Feature` belongs to: the same field number means different kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Tf,
    Of,
}

impl Dialect {
    pub(crate) fn kind_of_field(self, field: u32) -> Option<FeatureKind> {
        match (self, field) {
            (_, 1) => Some(FeatureKind::Bytes),
            (_, 2) => Some(FeatureKind::Float),
            (Dialect::Tf, 3) => Some(FeatureKind::Int64),
            (Dialect::Of, 3) => Some(FeatureKind::Double),
            (Dialect::Of, 4) => Some(FeatureKind::Int32),
            (Dialect::Of, 5) => Some(FeatureKind::Int64),
            _ => None,
        }
    }

    /// The field number of `kind`; every kind this returns `None` for has been converted away
    /// by the direction's default mapping before anything is written.
    pub(crate) fn field_of_kind(self, kind: FeatureKind) -> Option<u32> {
        match (self, kind) {
            (_, FeatureKind::Bytes) => Some(1),
            (_, FeatureKind::Float) => Some(2),
            (Dialect::Tf, FeatureKind::Int64) => Some(3),
            (Dialect::Tf, _) => None,
            (Dialect::Of, FeatureKind::Double) => Some(3),
            (Dialect::Of, FeatureKind::Int32) => Some(4),
            (Dialect::Of, FeatureKind::Int64) => Some(5),
        }
    }

    /// The kind a feature of `kind` takes when written in this dialect with no cast asked.
    pub(crate) fn default_target(self, kind: FeatureKind) -> FeatureKind {
        match (self, kind) {
            (Dialect::Tf, FeatureKind::Int32) => FeatureKind::Int64,
            (Dialect::Tf, FeatureKind::Double) => FeatureKind::Float,
            (_, kind) => kind,
        }
    }
}

impl NumericType {
    pub(crate) fn kind(self) -> FeatureKind {
        match self {
            NumericType::Int32 => FeatureKind::Int32,
            NumericType::Int64 => FeatureKind::Int64,
            NumericType::Float => FeatureKind::Float,
            NumericType::Double => FeatureKind::Double,
        }
    }
}

impl FeatureKind {
    pub(crate) fn is_integer(self) -> bool {
        matches!(self, FeatureKind::Int32 | FeatureKind::Int64)
    }

    fn numeric_type(self) -> Option<NumericType> {
        match self {
            FeatureKind::Bytes => None,
            FeatureKind::Float => Some(NumericType::Float),
            FeatureKind::Double => Some(NumericType::Double),
            FeatureKind::Int32 => Some(NumericType::Int32),
            FeatureKind::Int64 => Some(NumericType::Int64),
        }
    }
}

/// The values of one numeric list, in the vector of its kind: integers in `ints`, floats in
/// `f32s`, doubles in `f64s`. Floats stay f32 so that every bit (NaN payloads included)
/// survives a list that is not converted. Reused across records.
#[derive(Clone, Debug, Default)]
pub(crate) struct Numbers {
    pub(crate) ints: Vec<i64>,
    pub(crate) f32s: Vec<f32>,
    pub(crate) f64s: Vec<f64>,
}

impl Numbers {
    pub(crate) fn clear(&mut self) {
        self.ints.clear();
        self.f32s.clear();
        self.f64s.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.ints.len() + self.f32s.len() + self.f64s.len()
    }

    /// How many values the vector of `kind` holds.
    fn kind_len(&self, kind: FeatureKind) -> usize {
        match kind {
            FeatureKind::Int32 | FeatureKind::Int64 => self.ints.len(),
            FeatureKind::Float => self.f32s.len(),
            FeatureKind::Double => self.f64s.len(),
            FeatureKind::Bytes => 0,
        }
    }

    pub(crate) fn append(&mut self, other: &Numbers) {
        self.ints.extend_from_slice(&other.ints);
        self.f32s.extend_from_slice(&other.f32s);
        self.f64s.extend_from_slice(&other.f64s);
    }
}

/// What a scan of a list payload found.
pub(crate) struct ListInfo {
    pub(crate) count: usize,
    /// For int32 lists: every value was written sign-extended to 64 bits, as conforming
    /// encoders do, so the same bytes read as int64 give the same numbers.
    pub(crate) int32_canonical: bool,
}

/// Validates a list message of `kind` without keeping its values.
pub(crate) fn scan_list(cursor: Cursor<'_>, kind: FeatureKind) -> Result<ListInfo, Error> {
    let mut info = ListInfo {
        count: 0,
        int32_canonical: true,
    };
    for_each_value(cursor, kind, |value| {
        info.count += 1;
        if let Value::Int(raw) = value {
            let wide = raw as i64;
            if kind == FeatureKind::Int32 && i32::try_from(wide).is_err() {
                info.int32_canonical = false;
            }
        }
    })?;
    Ok(info)
}

/// Decodes a numeric list message into `numbers` (cleared first).
pub(crate) fn decode_numbers(
    cursor: Cursor<'_>,
    kind: FeatureKind,
    numbers: &mut Numbers,
) -> Result<(), Error> {
    numbers.clear();
    for_each_value(cursor, kind, |value| match value {
        // Protobuf reads an int32 varint by truncating it to its low 32 bits.
        Value::Int(raw) if kind == FeatureKind::Int32 => numbers.ints.push(i64::from(raw as i32)),
        Value::Int(raw) => numbers.ints.push(raw as i64),
        Value::Float(bits) => numbers.f32s.push(f32::from_bits(bits)),
        Value::Double(bits) => numbers.f64s.push(f64::from_bits(bits)),
        Value::Bytes => {}
    })
}

pub(crate) enum Value {
    Int(u64),
    Float(u32),
    Double(u64),
    Bytes,
}

/// Walks every value of a list message, packed or not, validating as it goes.
pub(crate) fn for_each_value(
    mut cursor: Cursor<'_>,
    kind: FeatureKind,
    mut f: impl FnMut(Value),
) -> Result<(), Error> {
    while !cursor.at_end() {
        let at = cursor.pos();
        let (field, wire_type) = cursor.tag()?;
        if field != 1 {
            return Err(Error::malformed("unknown field in a value list", at));
        }
        match (kind, wire_type) {
            (FeatureKind::Bytes, wire::LEN) => {
                cursor.len_delimited()?;
                f(Value::Bytes);
            }
            (FeatureKind::Int32 | FeatureKind::Int64, wire::VARINT) => {
                f(Value::Int(cursor.varint()?))
            }
            (FeatureKind::Float, wire::FIXED32) => f(Value::Float(cursor.fixed32()?)),
            (FeatureKind::Double, wire::FIXED64) => f(Value::Double(cursor.fixed64()?)),
            (FeatureKind::Bytes, _) => {
                return Err(Error::malformed("bytes value with a wrong wire type", at))
            }
            (_, wire::LEN) => {
                let range = cursor.len_delimited()?;
                let mut packed = cursor.sub(range.clone());
                match kind {
                    FeatureKind::Float if range.len() % 4 == 0 => {
                        while !packed.at_end() {
                            f(Value::Float(packed.fixed32()?));
                        }
                    }
                    FeatureKind::Double if range.len() % 8 == 0 => {
                        while !packed.at_end() {
                            f(Value::Double(packed.fixed64()?));
                        }
                    }
                    FeatureKind::Int32 | FeatureKind::Int64 => {
                        while !packed.at_end() {
                            f(Value::Int(packed.varint()?));
                        }
                    }
                    _ => {
                        return Err(Error::malformed(
                            "packed length is not a multiple of the value size",
                            range.start,
                        ))
                    }
                }
            }
            _ => return Err(Error::malformed("numeric value with a wrong wire type", at)),
        }
    }
    Ok(())
}

/// Writes `numbers` as a packed list message of `kind` into `out` and returns the range it
/// took. An empty list is an empty message, as protobuf encoders write it.
pub(crate) fn encode_numbers(
    kind: FeatureKind,
    numbers: &Numbers,
    out: &mut Vec<u8>,
) -> Range<usize> {
    let start = out.len();
    let payload_len = match kind {
        FeatureKind::Int32 | FeatureKind::Int64 => numbers
            .ints
            .iter()
            .map(|&v| wire::varint_len(v as u64))
            .sum(),
        FeatureKind::Float => numbers.f32s.len() * 4,
        FeatureKind::Double => numbers.f64s.len() * 8,
        FeatureKind::Bytes => 0,
    };
    if payload_len > 0 {
        wire::put_tag(out, 1, wire::LEN);
        wire::put_varint(out, payload_len as u64);
        match kind {
            // Negative int32 values are sign-extended to ten bytes, exactly like int64.
            FeatureKind::Int32 | FeatureKind::Int64 => {
                for &v in &numbers.ints {
                    wire::put_varint(out, v as u64);
                }
            }
            FeatureKind::Float => {
                for &v in &numbers.f32s {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            FeatureKind::Double => {
                for &v in &numbers.f64s {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            FeatureKind::Bytes => {}
        }
    }
    start..out.len()
}

/// A bytes feature takes no cast and no offset: the error its rule asks for, if any.
pub(crate) fn check_bytes_rule(rule: Option<&Rule>) -> Result<(), ErrorKind> {
    match rule {
        Some(Rule { cast: Some(to), .. }) => Err(ErrorKind::InvalidCast {
            from: FeatureKind::Bytes,
            to: *to,
        }),
        Some(Rule {
            offset: Some(_), ..
        }) => Err(ErrorKind::InvalidOffset {
            kind: FeatureKind::Bytes,
        }),
        _ => Ok(()),
    }
}

/// What [`transform`] made of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Transformed {
    /// The kind the values now have.
    pub(crate) kind: FeatureKind,
    /// How many values rounding changed, which only [`Rounding::Allow`] lets happen. A value
    /// counts once, however many steps rounded it.
    pub(crate) rounded: usize,
}

/// Applies a feature's offset and cast, then the dialect's default mapping. `numbers` holds
/// the values of a list of kind `from`.
pub(crate) fn transform(
    numbers: &mut Numbers,
    from: FeatureKind,
    rule: Option<&Rule>,
    target: Dialect,
    rounding: Rounding,
) -> Result<Transformed, ErrorKind> {
    let mut kind = from;
    let mut rounded = 0;
    if let Some(delta) = rule.and_then(|r| r.offset) {
        if !kind.is_integer() {
            return Err(ErrorKind::InvalidOffset { kind });
        }
        for v in &mut numbers.ints {
            *v = v.checked_add(delta).ok_or_else(|| ErrorKind::OutOfRange {
                value: format!("{v} + {delta}"),
                to: NumericType::Int64,
            })?;
        }
        convert(numbers, kind, kind, rounding)?;
    }
    if let Some(to) = rule.and_then(|r| r.cast) {
        if kind == FeatureKind::Bytes {
            return Err(ErrorKind::InvalidCast { from: kind, to });
        }
        let cast = to.kind();
        let narrowed_next = target.default_target(cast) != cast;
        if kind.is_integer() && narrowed_next && rounding == Rounding::Allow {
            // Cast to double, then narrowed to float: both steps may round one value, which
            // still counts once.
            rounded += round_ints_through_double(numbers);
            kind = FeatureKind::Float;
        } else {
            rounded += convert(numbers, kind, cast, rounding)?;
            kind = cast;
        }
    }
    let to = target.default_target(kind);
    rounded += convert(numbers, kind, to, rounding)?;
    Ok(Transformed { kind: to, rounded })
}

/// Integers to double to float, as a lossy cast to double in a direction that narrows
/// doubles does it; returns how many values changed. No integer overflows a float.
fn round_ints_through_double(numbers: &mut Numbers) -> usize {
    let mut rounded = 0;
    numbers.f32s.clear();
    for &v in &numbers.ints {
        let narrow = v as f64 as f32;
        if narrow as i128 != i128::from(v) {
            rounded += 1;
        }
        numbers.f32s.push(narrow);
    }
    numbers.ints.clear();
    rounded
}

/// Narrows one double to float; returns the float and whether it differs from `value`.
///
/// A finite double beyond float's range would become an infinity: that is not rounding, so
/// it fails even when `lossy`. A value that only loses precision, or underflows to a
/// subnormal or zero, fails unless `lossy`. NaN and the infinities are kept as they are.
fn narrow_double(value: f64, lossy: bool) -> Result<(f32, bool), ErrorKind> {
    let narrow = value as f32;
    if narrow.is_infinite() && value.is_finite() {
        return Err(ErrorKind::FloatOverflow { value });
    }
    // A NaN never equals itself, yet narrowing keeps it a NaN.
    let changed = f64::from(narrow) != value && !value.is_nan();
    if changed && !lossy {
        return Err(ErrorKind::InexactDouble { value });
    }
    Ok((narrow, changed))
}

/// Converts values of kind `from` to kind `to`, failing on any value that changes, except
/// float rounding when allowed; returns how many values rounding changed.
fn convert(
    numbers: &mut Numbers,
    from: FeatureKind,
    to: FeatureKind,
    rounding: Rounding,
) -> Result<usize, ErrorKind> {
    let lossy = rounding == Rounding::Allow;
    let Some(to_type) = to.numeric_type() else {
        return Ok(0);
    };
    let out_of_range = |value: String| ErrorKind::OutOfRange { value, to: to_type };
    if from == to || (from.is_integer() && to.is_integer()) {
        if to == FeatureKind::Int32 {
            if let Some(v) = numbers.ints.iter().find(|v| i32::try_from(**v).is_err()) {
                return Err(out_of_range(v.to_string()));
            }
        }
        return Ok(0);
    }
    let mut rounded = 0;
    match (from, to) {
        (FeatureKind::Int32 | FeatureKind::Int64, FeatureKind::Float) => {
            numbers.f32s.clear();
            for &v in &numbers.ints {
                let f = v as f32;
                if f as i128 != i128::from(v) {
                    if !lossy {
                        return Err(out_of_range(v.to_string()));
                    }
                    rounded += 1;
                }
                numbers.f32s.push(f);
            }
            numbers.ints.clear();
        }
        (FeatureKind::Int32 | FeatureKind::Int64, _) => {
            numbers.f64s.clear();
            for &v in &numbers.ints {
                let f = v as f64;
                if f as i128 != i128::from(v) {
                    if !lossy {
                        return Err(out_of_range(v.to_string()));
                    }
                    rounded += 1;
                }
                numbers.f64s.push(f);
            }
            numbers.ints.clear();
        }
        (FeatureKind::Float, FeatureKind::Double) => {
            numbers.f64s.clear();
            numbers
                .f64s
                .extend(numbers.f32s.iter().map(|&v| f64::from(v)));
            numbers.f32s.clear();
        }
        (FeatureKind::Double, FeatureKind::Float) => {
            numbers.f32s.clear();
            for &v in &numbers.f64s {
                let (narrow, changed) = narrow_double(v, lossy)?;
                rounded += usize::from(changed);
                numbers.f32s.push(narrow);
            }
            numbers.f64s.clear();
        }
        (_, _) => {
            let (min, max_exclusive) = if to == FeatureKind::Int32 {
                (f64::from(i32::MIN), f64::from(i32::MAX) + 1.0)
            } else {
                // 2^63 is the first double past i64::MAX.
                (i64::MIN as f64, 9_223_372_036_854_775_808.0)
            };
            let values: Vec<f64> = if from == FeatureKind::Float {
                numbers.f32s.iter().map(|&v| f64::from(v)).collect()
            } else {
                numbers.f64s.clone()
            };
            numbers.ints.clear();
            for f in values {
                if f.fract() != 0.0 || f < min || f >= max_exclusive || f.is_nan() {
                    return Err(out_of_range(format!("{f:?}")));
                }
                numbers.ints.push(f as i64);
            }
            numbers.f32s.clear();
            numbers.f64s.clear();
        }
    }
    debug_assert_eq!(numbers.len(), numbers.kind_len(to));
    Ok(rounded)
}

#[cfg(test)]
mod tests;
