//! Values shown in a difference, cut short: from the start, or from the first value (and
//! the first byte of a bytes value) that differs when that lies past what the start shows.

use ofconvert_bridge::FeatureKind;

use super::first::At;
use super::{class, for_each_real, for_each_value, Class, Feature, Real};
use crate::scan::for_each_bytes;

/// Values shown of a list, and bytes of a bytes value, in a difference.
const SHOWN_VALUES: usize = 8;
const SHOWN_BYTES: usize = 48;

/// Bytes shown before the first that differs, when the bytes shown start past the value's
/// start.
const BYTES_BEFORE: usize = 8;

/// A feature's kind and values, cut short.
pub(super) fn show(feature: &Feature<'_>) -> String {
    show_at(feature, None)
}

/// [`show`], from where `at` says the values differ when the start would not show it: the
/// first value that differs and those after it, or the value alone around its first byte
/// that differs.
pub(super) fn show_at(feature: &Feature<'_>, at: Option<At>) -> String {
    let kind = feature.kind.map_or("none", FeatureKind::list_name);
    let byte = at
        .and_then(|at| at.byte)
        .filter(|byte| *byte >= SHOWN_BYTES);
    let first = match at {
        Some(at) if at.value >= SHOWN_VALUES || byte.is_some() => at.value,
        _ => 0,
    };
    let room = if byte.is_some() { 1 } else { SHOWN_VALUES };
    let mut shown = Vec::new();
    let mut count = 0usize;
    let mut keep = |text: &dyn Fn() -> String| {
        if count >= first && shown.len() < room {
            shown.push(text());
        }
        count += 1;
    };
    match class(feature.kind) {
        Class::None => {}
        Class::Bytes => for_each_bytes(feature.list, |value| {
            keep(&|| show_bytes_around(value, byte));
        }),
        Class::Integer => for_each_value(feature, |value| keep(&|| value.to_string())),
        Class::Real => for_each_real(feature.list, feature.kind, |value| {
            keep(&|| match value {
                // Widened: the shortest form of a float's own width is the shortest that
                // reads back as that float, and a double beside it (0.1 against 0.1f32) would
                // print alike. Every float is a double exactly, so the double's shortest form
                // tells any two values apart.
                Real::Float(bits) => {
                    ofconvert_bridge::text::format_f64(f64::from(f32::from_bits(bits)))
                }
                Real::Double(bits) => ofconvert_bridge::text::format_f64(f64::from_bits(bits)),
            })
        }),
    }
    let from = match (first, byte) {
        (0, None) => String::new(),
        (_, Some(_)) => format!("value {first} "),
        (_, None) => format!("from value {first}: "),
    };
    if first > 0 && shown.is_empty() {
        return format!("{kind} [{count} values, none from value {first}]");
    }
    let more = match count.saturating_sub(first + shown.len()) {
        0 => String::new(),
        n => format!(", ... ({n} more)"),
    };
    format!("{kind} [{from}{}{more}]", shown.join(", "))
}

/// Bytes as text format spells them (printable ASCII as is, the rest escaped), cut short:
/// from the start, or from a little before `byte` when the start would not show it (the
/// offset they start at said first).
pub(super) fn show_bytes_around(bytes: &[u8], byte: Option<usize>) -> String {
    let start = match byte {
        Some(byte) if byte >= SHOWN_BYTES => (byte - BYTES_BEFORE).min(bytes.len()),
        _ => 0,
    };
    let end = bytes.len().min(start + SHOWN_BYTES);
    let mut text = match start {
        0 => String::from("\""),
        start => format!("from byte {start}: \""),
    };
    for &byte in &bytes[start..end] {
        match byte {
            b'"' => text.push_str("\\\""),
            b'\\' => text.push_str("\\\\"),
            b'\n' => text.push_str("\\n"),
            0x20..=0x7e => text.push(char::from(byte)),
            _ => text.push_str(&format!("\\{byte:03o}")),
        }
    }
    text.push('"');
    if end < bytes.len() {
        text.push_str("...");
    }
    if start > 0 || end < bytes.len() {
        text.push_str(&format!(" ({} bytes)", bytes.len()));
    }
    text
}
