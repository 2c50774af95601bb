//! Values shown in a difference, cut short.

use ofconvert_bridge::FeatureKind;

use super::{class, for_each_real, for_each_value, Class, Feature, Real};
use crate::scan::for_each_bytes;

/// Values shown of a list, and bytes of a bytes value, in a difference.
const SHOWN_VALUES: usize = 8;
const SHOWN_BYTES: usize = 48;

/// A feature's kind and values, cut short.
pub(super) fn show(feature: &Feature<'_>) -> String {
    let kind = feature.kind.map_or("none", FeatureKind::list_name);
    let mut shown = Vec::new();
    let mut count = 0usize;
    let mut keep = |text: String| {
        count += 1;
        if shown.len() < SHOWN_VALUES {
            shown.push(text);
        }
    };
    match class(feature.kind) {
        Class::None => {}
        Class::Bytes => for_each_bytes(feature.list, |value| keep(show_bytes(value))),
        Class::Integer => for_each_value(feature, |value| keep(value.to_string())),
        Class::Real => for_each_real(feature.list, feature.kind, |value| {
            keep(match value {
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
    let more = match count.saturating_sub(SHOWN_VALUES) {
        0 => String::new(),
        n => format!(", ... ({n} more)"),
    };
    format!("{kind} [{}{more}]", shown.join(", "))
}

/// Bytes as text format spells them (printable ASCII as is, the rest escaped), cut short.
pub(super) fn show_bytes(bytes: &[u8]) -> String {
    let mut text = String::from("\"");
    for &byte in bytes.iter().take(SHOWN_BYTES) {
        match byte {
            b'"' => text.push_str("\\\""),
            b'\\' => text.push_str("\\\\"),
            b'\n' => text.push_str("\\n"),
            0x20..=0x7e => text.push(char::from(byte)),
            _ => text.push_str(&format!("\\{byte:03o}")),
        }
    }
    text.push('"');
    if bytes.len() > SHOWN_BYTES {
        text.push_str(&format!("... ({} bytes)", bytes.len()));
    }
    text
}
