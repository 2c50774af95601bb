//! Protobuf's canonical JSON mapping of the messages' parts.

use std::collections::BTreeMap;

use super::numbers::{push_fmt, write_f32, write_f64, write_int};
use crate::proto::oneflow;
use crate::proto::tensorflow::{self, FeatureLists, Features};

/// An open JSON object; writes the separators between members.
pub(super) struct JsonObject<'a> {
    pub(super) out: &'a mut String,
    empty: bool,
}

impl<'a> JsonObject<'a> {
    pub(super) fn open(out: &'a mut String) -> Self {
        out.push('{');
        JsonObject { out, empty: true }
    }

    pub(super) fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
        json_string(self.out, key);
        self.out.push(':');
    }

    pub(super) fn close(self) {
        self.out.push('}');
    }
}

pub(super) fn tf_features_json(out: &mut String, features: &Features) {
    let mut json = JsonObject::open(out);
    if !features.feature.is_empty() {
        json.key("feature");
        json_map(json.out, &features.feature, tf_feature_json);
    }
    json.close();
}

pub(super) fn tf_feature_lists_json(out: &mut String, lists: &FeatureLists) {
    let mut json = JsonObject::open(out);
    if !lists.feature_list.is_empty() {
        json.key("featureList");
        json_map(json.out, &lists.feature_list, |out, list| {
            let mut json = JsonObject::open(out);
            if !list.feature.is_empty() {
                json.key("feature");
                json.out.push('[');
                for (index, feature) in list.feature.iter().enumerate() {
                    if index > 0 {
                        json.out.push(',');
                    }
                    tf_feature_json(json.out, feature);
                }
                json.out.push(']');
            }
            json.close();
        });
    }
    json.close();
}

pub(super) fn json_map<V>(
    out: &mut String,
    map: &BTreeMap<String, V>,
    value: impl Fn(&mut String, &V),
) {
    let mut json = JsonObject::open(out);
    for (key, entry) in map {
        json.key(key);
        value(json.out, entry);
    }
    json.close();
}

fn tf_feature_json(out: &mut String, feature: &tensorflow::Feature) {
    use tensorflow::feature::Kind;
    let mut json = JsonObject::open(out);
    match &feature.kind {
        None => {}
        Some(Kind::BytesList(list)) => {
            json_list(&mut json, "bytesList", &list.value, |out, value| {
                json_bytes(out, value)
            })
        }
        Some(Kind::FloatList(list)) => json_list(&mut json, "floatList", &list.value, json_f32),
        Some(Kind::Int64List(list)) => json_list(&mut json, "int64List", &list.value, json_i64),
    }
    json.close();
}

pub(super) fn of_feature_json(out: &mut String, feature: &oneflow::Feature) {
    use oneflow::feature::Kind;
    let mut json = JsonObject::open(out);
    match &feature.kind {
        None => {}
        Some(Kind::BytesList(list)) => {
            json_list(&mut json, "bytesList", &list.value, |out, value| {
                json_bytes(out, value)
            })
        }
        Some(Kind::FloatList(list)) => json_list(&mut json, "floatList", &list.value, json_f32),
        Some(Kind::DoubleList(list)) => json_list(&mut json, "doubleList", &list.value, json_f64),
        Some(Kind::Int32List(list)) => json_list(&mut json, "int32List", &list.value, json_i32),
        Some(Kind::Int64List(list)) => json_list(&mut json, "int64List", &list.value, json_i64),
    }
    json.close();
}

/// A list message: `{"value":[...]}`, or `{}` when empty (MessageToDict leaves out empty
/// repeated fields but keeps the message itself, since the oneof marks it present).
fn json_list<T>(json: &mut JsonObject<'_>, name: &str, values: &[T], write: fn(&mut String, &T)) {
    json.key(name);
    let mut list = JsonObject::open(json.out);
    if !values.is_empty() {
        list.key("value");
        list.out.push('[');
        for (index, value) in values.iter().enumerate() {
            if index > 0 {
                list.out.push(',');
            }
            write(list.out, value);
        }
        list.out.push(']');
    }
    list.close();
}

fn json_i32(out: &mut String, value: &i32) {
    write_int(out, *value);
}

fn json_i64(out: &mut String, value: &i64) {
    push_fmt(out, format_args!("\"{value}\""));
}

fn json_f32(out: &mut String, value: &f32) {
    if !json_non_finite(out, f64::from(*value)) {
        write_f32(out, *value);
    }
}

fn json_f64(out: &mut String, value: &f64) {
    if !json_non_finite(out, *value) {
        write_f64(out, *value);
    }
}

/// Writes the string JSON uses for NaN or an infinity; false (nothing written) for finite
/// values, whose Python spelling is also a valid JSON number.
fn json_non_finite(out: &mut String, value: f64) -> bool {
    let spelled = if value.is_nan() {
        "\"NaN\""
    } else if value == f64::INFINITY {
        "\"Infinity\""
    } else if value == f64::NEG_INFINITY {
        "\"-Infinity\""
    } else {
        return false;
    };
    out.push_str(spelled);
    true
}

fn json_string(out: &mut String, value: &str) {
    out.push('"');
    let mut run_start = 0;
    for (at, byte) in value.bytes().enumerate() {
        if byte < 0x20 || byte == b'"' || byte == b'\\' {
            out.push_str(value.get(run_start..at).unwrap_or_default());
            match byte {
                b'"' => out.push_str("\\\""),
                b'\\' => out.push_str("\\\\"),
                b'\n' => out.push_str("\\n"),
                b'\r' => out.push_str("\\r"),
                b'\t' => out.push_str("\\t"),
                _ => push_fmt(out, format_args!("\\u{byte:04x}")),
            }
            run_start = at + 1;
        }
    }
    out.push_str(value.get(run_start..).unwrap_or_default());
    out.push('"');
}

/// Standard base64 with padding, as `base64.b64encode` (and so MessageToDict) writes bytes.
fn json_bytes(out: &mut String, value: &[u8]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out.push('"');
    out.reserve(value.len().div_ceil(3) * 4 + 1);
    for chunk in value.chunks(3) {
        let (bits, len) = match *chunk {
            [a, b, c] => (u32::from(a) << 16 | u32::from(b) << 8 | u32::from(c), 4),
            [a, b] => (u32::from(a) << 16 | u32::from(b) << 8, 3),
            [a] => (u32::from(a) << 16, 2),
            _ => (0, 0),
        };
        for position in 0..4 {
            out.push(if position < len {
                let sextet = (bits >> (18 - 6 * position)) & 63;
                ALPHABET
                    .get(sextet as usize)
                    .map_or('=', |&symbol| char::from(symbol))
            } else {
                '='
            });
        }
    }
    out.push('"');
}
