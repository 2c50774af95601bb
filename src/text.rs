//! Protobuf text format and JSON renderings of Examples, SequenceExamples and OFRecords.
//!
//! The text functions print byte for byte what Python's
//! `google.protobuf.text_format.MessageToString(message)` prints: fields in field-number
//! order, map entries sorted by key, 2-space indentation, bytes with C escapes, floats as
//! Python spells the shortest decimal that survives a round trip through `f32`. That spelling
//! is stable across protobuf backends, unlike `print(message)` (whose map order and float
//! spelling depend on the backend), which makes it the one to diff against. Map keys that are
//! not ASCII are printed as UTF-8, as current protobuf releases do (`as_utf8` on by default).
//! Bytes values always escape non-ASCII bytes as octal.
//!
//! The JSON functions give protobuf's canonical JSON mapping, as
//! `google.protobuf.json_format.MessageToDict` builds it, on one line: camelCase field names,
//! 64-bit integers as strings, bytes in base64, `"NaN"`/`"Infinity"`/`"-Infinity"` for
//! non-finite numbers, unset and empty fields left out.
//!
//! ```
//! use ofconvert_bridge::proto::tensorflow::{feature::Kind, Example, Feature, Features, FloatList};
//! use ofconvert_bridge::text::{example_to_json, example_to_text};
//!
//! let mut features = Features::default();
//! features.feature.insert(
//!     "score".to_string(),
//!     Feature { kind: Some(Kind::FloatList(FloatList { value: vec![0.1, -0.0] })) },
//! );
//! let example = Example { features: Some(features) };
//!
//! assert_eq!(
//!     example_to_text(&example),
//!     "features {\n  feature {\n    key: \"score\"\n    value {\n      float_list {\n        \
//!      value: 0.1\n        value: -0.0\n      }\n    }\n  }\n}\n",
//! );
//! assert_eq!(
//!     example_to_json(&example),
//!     r#"{"features":{"feature":{"score":{"floatList":{"value":[0.1,-0.0]}}}}}"#,
//! );
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::proto::oneflow::{self, OfRecord};
use crate::proto::tensorflow::{self, Example, FeatureLists, Features, SequenceExample};

/// Renders `example` as `text_format.MessageToString(example)` does.
pub fn example_to_text(example: &Example) -> String {
    let mut out = String::new();
    write_example_text(&mut out, example);
    out
}

/// Renders `seq` as `text_format.MessageToString(seq)` does.
pub fn sequence_example_to_text(seq: &SequenceExample) -> String {
    let mut out = String::new();
    write_sequence_example_text(&mut out, seq);
    out
}

/// Renders `record` as `text_format.MessageToString(record)` does with OneFlow's
/// `record.proto`: doubles as Python's `repr`, and, the OFRecord being proto2, an empty map
/// key printed as `key: ""` where proto3's Example leaves it out.
pub fn ofrecord_to_text(record: &OfRecord) -> String {
    let mut out = String::new();
    write_ofrecord_text(&mut out, record);
    out
}

/// Renders `example` as one line of protobuf's canonical JSON (the value of
/// `json_format.MessageToDict(example)`).
pub fn example_to_json(example: &Example) -> String {
    let mut out = String::new();
    write_example_json(&mut out, example);
    out
}

/// Renders `seq` as one line of protobuf's canonical JSON.
pub fn sequence_example_to_json(seq: &SequenceExample) -> String {
    let mut out = String::new();
    write_sequence_example_json(&mut out, seq);
    out
}

/// Renders `record` as one line of protobuf's canonical JSON (int32 values as numbers,
/// int64 values as strings).
pub fn ofrecord_to_json(record: &OfRecord) -> String {
    let mut out = String::new();
    write_ofrecord_json(&mut out, record);
    out
}

/// Appends [`example_to_text`]'s rendering to `out`, so a caller printing many records can
/// reuse one buffer.
pub fn write_example_text(out: &mut String, example: &Example) {
    let mut text = TextWriter::new(out);
    if let Some(features) = &example.features {
        text.open("features");
        text.tf_features(features);
        text.close();
    }
}

/// Appends [`sequence_example_to_text`]'s rendering to `out`.
pub fn write_sequence_example_text(out: &mut String, seq: &SequenceExample) {
    let mut text = TextWriter::new(out);
    if let Some(context) = &seq.context {
        text.open("context");
        text.tf_features(context);
        text.close();
    }
    if let Some(lists) = &seq.feature_lists {
        text.open("feature_lists");
        text.tf_feature_lists(lists);
        text.close();
    }
}

/// Appends [`ofrecord_to_text`]'s rendering to `out`.
pub fn write_ofrecord_text(out: &mut String, record: &OfRecord) {
    let mut text = TextWriter::new(out);
    for (key, feature) in &record.feature {
        text.open("feature");
        text.map_key(key, KeyPresence::Explicit);
        text.open("value");
        text.of_feature(feature);
        text.close();
        text.close();
    }
}

/// Appends [`example_to_json`]'s rendering to `out`.
pub fn write_example_json(out: &mut String, example: &Example) {
    let mut json = JsonObject::open(out);
    if let Some(features) = &example.features {
        json.key("features");
        tf_features_json(json.out, features);
    }
    json.close();
}

/// Appends [`sequence_example_to_json`]'s rendering to `out`.
pub fn write_sequence_example_json(out: &mut String, seq: &SequenceExample) {
    let mut json = JsonObject::open(out);
    if let Some(context) = &seq.context {
        json.key("context");
        tf_features_json(json.out, context);
    }
    if let Some(lists) = &seq.feature_lists {
        json.key("featureLists");
        tf_feature_lists_json(json.out, lists);
    }
    json.close();
}

/// Appends [`ofrecord_to_json`]'s rendering to `out`.
pub fn write_ofrecord_json(out: &mut String, record: &OfRecord) {
    let mut json = JsonObject::open(out);
    if !record.feature.is_empty() {
        json.key("feature");
        json_map(json.out, &record.feature, of_feature_json);
    }
    json.close();
}

/// Python's spelling of an `f32` in text format: the shortest `%.{6..9}g` that rounds back
/// to the same `f32` (through a double, as Python parses it), then Python's `repr` of that
/// double: `"0.0"`, `"-0.0"`, `"-0.7910465"`, `"3.4028235e+38"`, `"1.4013e-45"`, `"inf"`,
/// `"-inf"`, `"nan"`.
///
/// ```
/// use ofconvert_bridge::text::format_f32;
///
/// assert_eq!(format_f32(0.1), "0.1");
/// assert_eq!(format_f32(f32::MAX), "3.4028235e+38");
/// assert_eq!(format_f32(1e-5), "1e-05");
/// ```
pub fn format_f32(value: f32) -> String {
    let mut out = String::new();
    write_f32(&mut out, value);
    out
}

/// Python's `repr` of a double: the shortest decimal that round-trips, in exponent form when
/// the decimal exponent is below -4 or at least 16, with `.0` on integral values otherwise.
///
/// ```
/// use ofconvert_bridge::text::format_f64;
///
/// assert_eq!(format_f64(0.1), "0.1");
/// assert_eq!(format_f64(1e15), "1000000000000000.0");
/// assert_eq!(format_f64(1e16), "1e+16");
/// assert_eq!(format_f64(f64::NAN), "nan");
/// ```
pub fn format_f64(value: f64) -> String {
    let mut out = String::new();
    write_f64(&mut out, value);
    out
}

/// Whether a map entry's empty key is printed: proto2 entries (OFRecord) track presence and
/// print `key: ""`; proto3 entries (Example) leave default values out.
#[derive(Clone, Copy)]
enum KeyPresence {
    Explicit,
    Implicit,
}

/// The indentation state of a text-format rendering.
struct TextWriter<'a> {
    out: &'a mut String,
    indent: usize,
}

impl<'a> TextWriter<'a> {
    fn new(out: &'a mut String) -> Self {
        TextWriter { out, indent: 0 }
    }

    fn pad(&mut self) {
        self.out.extend(std::iter::repeat_n(' ', self.indent));
    }

    fn open(&mut self, name: &str) {
        self.pad();
        self.out.push_str(name);
        self.out.push_str(" {\n");
        self.indent += 2;
    }

    fn close(&mut self) {
        self.indent = self.indent.saturating_sub(2);
        self.pad();
        self.out.push_str("}\n");
    }

    /// Starts a scalar field line; the caller writes the value and the newline.
    fn scalar(&mut self, name: &str) {
        self.pad();
        self.out.push_str(name);
        self.out.push_str(": ");
    }

    fn map_key(&mut self, key: &str, presence: KeyPresence) {
        if key.is_empty() && matches!(presence, KeyPresence::Implicit) {
            return;
        }
        self.scalar("key");
        self.out.push('"');
        escape_str(self.out, key);
        self.out.push_str("\"\n");
    }

    fn tf_features(&mut self, features: &Features) {
        for (key, feature) in &features.feature {
            self.open("feature");
            self.map_key(key, KeyPresence::Implicit);
            self.open("value");
            self.tf_feature(feature);
            self.close();
            self.close();
        }
    }

    fn tf_feature_lists(&mut self, lists: &FeatureLists) {
        for (key, list) in &lists.feature_list {
            self.open("feature_list");
            self.map_key(key, KeyPresence::Implicit);
            self.open("value");
            for feature in &list.feature {
                self.open("feature");
                self.tf_feature(feature);
                self.close();
            }
            self.close();
            self.close();
        }
    }

    fn tf_feature(&mut self, feature: &tensorflow::Feature) {
        use tensorflow::feature::Kind;
        match &feature.kind {
            None => {}
            Some(Kind::BytesList(list)) => self.bytes_list(&list.value),
            Some(Kind::FloatList(list)) => self.numbers("float_list", &list.value, write_f32),
            Some(Kind::Int64List(list)) => self.numbers("int64_list", &list.value, write_int),
        }
    }

    fn of_feature(&mut self, feature: &oneflow::Feature) {
        use oneflow::feature::Kind;
        match &feature.kind {
            None => {}
            Some(Kind::BytesList(list)) => self.bytes_list(&list.value),
            Some(Kind::FloatList(list)) => self.numbers("float_list", &list.value, write_f32),
            Some(Kind::DoubleList(list)) => self.numbers("double_list", &list.value, write_f64),
            Some(Kind::Int32List(list)) => self.numbers("int32_list", &list.value, write_int),
            Some(Kind::Int64List(list)) => self.numbers("int64_list", &list.value, write_int),
        }
    }

    fn bytes_list(&mut self, values: &[Vec<u8>]) {
        self.open("bytes_list");
        for value in values {
            self.scalar("value");
            self.out.push('"');
            escape_bytes(self.out, value);
            self.out.push_str("\"\n");
        }
        self.close();
    }

    fn numbers<T: Copy>(&mut self, list: &str, values: &[T], write: fn(&mut String, T)) {
        self.open(list);
        for &value in values {
            self.scalar("value");
            write(self.out, value);
            self.out.push('\n');
        }
        self.close();
    }
}

/// Whether text_format escapes this byte of a `string` field: ASCII controls, DEL, quotes and
/// backslash. Bytes of multi-byte UTF-8 characters are printed as they are.
fn str_byte_needs_escape(byte: u8) -> bool {
    matches!(byte, 0x00..=0x1f | 0x7f | b'"' | b'\'' | b'\\')
}

/// Writes one byte as text_format's `CEscape` does: the six named escapes, printable ASCII
/// as itself, anything else as three octal digits.
fn push_ascii_escaped(out: &mut String, byte: u8) {
    match byte {
        b'\n' => out.push_str("\\n"),
        b'\r' => out.push_str("\\r"),
        b'\t' => out.push_str("\\t"),
        b'"' => out.push_str("\\\""),
        b'\'' => out.push_str("\\'"),
        b'\\' => out.push_str("\\\\"),
        0x20..=0x7e => out.push(char::from(byte)),
        _ => {
            out.push('\\');
            out.push(char::from(b'0' + (byte >> 6)));
            out.push(char::from(b'0' + ((byte >> 3) & 7)));
            out.push(char::from(b'0' + (byte & 7)));
        }
    }
}

/// `CEscape(value, as_utf8=False)`: how text_format prints a `bytes` field, every byte
/// outside printable ASCII as octal.
fn escape_bytes(out: &mut String, value: &[u8]) {
    out.reserve(value.len());
    for &byte in value {
        push_ascii_escaped(out, byte);
    }
}

/// `CEscape(value, as_utf8=True)`: how text_format prints a `string` field such as a map key
/// in the protobuf releases where `as_utf8` is on by default (7.36 made the fixtures). Only
/// ASCII controls, DEL, quotes and backslashes are escaped; other characters are printed as
/// they are. Releases that default to `as_utf8=False` print non-ASCII bytes as octal.
fn escape_str(out: &mut String, value: &str) {
    let mut run_start = 0;
    for (at, byte) in value.bytes().enumerate() {
        if str_byte_needs_escape(byte) {
            out.push_str(value.get(run_start..at).unwrap_or_default());
            push_ascii_escaped(out, byte);
            run_start = at + 1;
        }
    }
    out.push_str(value.get(run_start..).unwrap_or_default());
}

fn write_int<T: std::fmt::Display>(out: &mut String, value: T) {
    push_fmt(out, format_args!("{value}"));
}

/// Formats into a `String`, which cannot fail: `fmt::Write for String` only ever returns
/// `Ok`, so there is no error to propagate.
fn push_fmt(out: &mut String, args: std::fmt::Arguments<'_>) {
    let _infallible = out.write_fmt(args);
}

fn write_f32(out: &mut String, value: f32) {
    if !value.is_finite() || value == 0.0 {
        write_special(out, f64::from(value));
        return;
    }
    // Python's type_checkers.ToShortestFloat: try 6, 7, 8... significant digits until the
    // decimal, parsed as a double and narrowed to f32, gives the value back. Nine digits
    // always suffice for an f32, so the loop ends there at the latest.
    let wide = f64::from(value);
    let start = out.len();
    let mut precision = 6;
    loop {
        out.truncate(start);
        push_fmt(out, format_args!("{:.*e}", precision - 1, wide));
        let round_trips = out
            .get(start..)
            .and_then(|decimal| decimal.parse::<f64>().ok())
            .is_some_and(|parsed| parsed as f32 == value);
        if round_trips || precision >= 9 {
            break;
        }
        precision += 1;
    }
    relayout_as_python(out, start);
}

fn write_f64(out: &mut String, value: f64) {
    if !value.is_finite() || value == 0.0 {
        write_special(out, value);
        return;
    }
    let start = out.len();
    push_fmt(out, format_args!("{value:e}"));
    // Rust's `{:e}` gives the fewest digits that round-trip, as repr does, but when two such
    // decimals are equally close (839.37481689453125 → ...312 or ...313) it may pick the
    // other one: repr takes the correctly rounded one, ties to even. That is `{:.N$e}` with
    // the same digit count, whenever it round-trips.
    let shortest_end = out.len();
    let digit_count = out.get(start..).map_or(1, |shortest| {
        shortest
            .bytes()
            .take_while(|&b| b != b'e')
            .filter(u8::is_ascii_digit)
            .count()
    });
    push_fmt(
        out,
        format_args!("{:.*e}", digit_count.saturating_sub(1), value),
    );
    let rounded_round_trips = out
        .get(shortest_end..)
        .and_then(|rounded| rounded.parse::<f64>().ok())
        .is_some_and(|parsed| parsed == value);
    if rounded_round_trips {
        out.drain(start..shortest_end);
    } else {
        out.truncate(shortest_end);
    }
    relayout_as_python(out, start);
}

/// NaN, infinities and zeros, as Python's `str(float)` spells them (NaN never shows a sign).
fn write_special(out: &mut String, value: f64) {
    out.push_str(if value.is_nan() {
        "nan"
    } else if value == f64::INFINITY {
        "inf"
    } else if value == f64::NEG_INFINITY {
        "-inf"
    } else if value.is_sign_negative() {
        "-0.0"
    } else {
        "0.0"
    });
}

/// Rewrites the Rust exponent form that `out` holds from `start` on (`-1.2300e-7`) into
/// Python's `repr` of the same decimal (`-1.23e-07`), trailing zeros dropped. For an f32 the
/// decimal has at most 9 significant digits, few enough that the double Python parses from it
/// prints back as the same digits; for an f64 they already are repr's digits.
fn relayout_as_python(out: &mut String, start: usize) {
    let mut digits = [0u8; 17];
    let mut count = 0;
    let mut negative = false;
    let mut exponent: i32 = 0;
    let mut exponent_negative = false;
    let mut in_exponent = false;
    for byte in out.bytes().skip(start) {
        match byte {
            b'-' if in_exponent => exponent_negative = true,
            b'-' => negative = true,
            b'e' => in_exponent = true,
            b'0'..=b'9' if in_exponent => {
                exponent = exponent
                    .saturating_mul(10)
                    .saturating_add(i32::from(byte - b'0'));
            }
            b'0'..=b'9' => {
                if let Some(slot) = digits.get_mut(count) {
                    *slot = byte;
                    count += 1;
                }
            }
            _ => {}
        }
    }
    if exponent_negative {
        exponent = -exponent;
    }
    while count > 1 && digits.get(count - 1) == Some(&b'0') {
        count -= 1;
    }
    let digits = digits.get(..count).unwrap_or_default();
    out.truncate(start);
    if negative {
        out.push('-');
    }
    push_python_decimal(out, digits, exponent);
}

/// Lays out `d.ddd × 10^exponent` as Python's float repr does.
fn push_python_decimal(out: &mut String, digits: &[u8], exponent: i32) {
    let (first, rest) = digits.split_first().unwrap_or((&b'0', &[]));
    if !(-4..16).contains(&exponent) {
        out.push(char::from(*first));
        if !rest.is_empty() {
            out.push('.');
            push_digits(out, rest);
        }
        push_fmt(
            out,
            format_args!(
                "e{}{:02}",
                if exponent < 0 { '-' } else { '+' },
                exponent.unsigned_abs()
            ),
        );
    } else if exponent < 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n(
            '0',
            exponent.unsigned_abs() as usize - 1,
        ));
        push_digits(out, digits);
    } else {
        let integral = exponent.unsigned_abs() as usize + 1;
        let (int_part, frac_part) = digits.split_at(integral.min(digits.len()));
        push_digits(out, int_part);
        out.extend(std::iter::repeat_n('0', integral - int_part.len()));
        out.push('.');
        if frac_part.is_empty() {
            out.push('0');
        } else {
            push_digits(out, frac_part);
        }
    }
}

fn push_digits(out: &mut String, digits: &[u8]) {
    out.extend(digits.iter().map(|&digit| char::from(digit)));
}

/// An open JSON object; writes the separators between members.
struct JsonObject<'a> {
    out: &'a mut String,
    empty: bool,
}

impl<'a> JsonObject<'a> {
    fn open(out: &'a mut String) -> Self {
        out.push('{');
        JsonObject { out, empty: true }
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
        json_string(self.out, key);
        self.out.push(':');
    }

    fn close(self) {
        self.out.push('}');
    }
}

fn tf_features_json(out: &mut String, features: &Features) {
    let mut json = JsonObject::open(out);
    if !features.feature.is_empty() {
        json.key("feature");
        json_map(json.out, &features.feature, tf_feature_json);
    }
    json.close();
}

fn tf_feature_lists_json(out: &mut String, lists: &FeatureLists) {
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

fn json_map<V>(out: &mut String, map: &BTreeMap<String, V>, value: impl Fn(&mut String, &V)) {
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

fn of_feature_json(out: &mut String, feature: &oneflow::Feature) {
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
