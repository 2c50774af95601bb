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

mod json;
mod numbers;

use json::{json_map, of_feature_json, tf_feature_lists_json, tf_features_json, JsonObject};
use numbers::{write_f32, write_f64, write_int};

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
