//! Reads the text-format and JSON renderings back, to check that the printers lose nothing
//! but NaN payloads (protobuf's text and JSON spell every NaN the same way).
//!
//! Messages, text and JSON all become a [`Shape`], and the three must be equal.

use std::collections::BTreeMap;

use ofconvert_bridge::proto::{oneflow as of_pb, tensorflow as tf_pb};
use serde_json::Value;

/// One value list; floats as bits with every NaN made the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum List {
    /// `bytes_list`.
    Bytes(Vec<Vec<u8>>),
    /// `float_list`.
    Float(Vec<u32>),
    /// `double_list`.
    Double(Vec<u64>),
    /// `int32_list`.
    Int32(Vec<i32>),
    /// `int64_list`.
    Int64(Vec<i64>),
}

/// A feature map; `None` for a `Feature` with no kind.
pub type Features = BTreeMap<String, Option<List>>;

/// What any of the three messages holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// `Example.features`, `SequenceExample.context` or the OFRecord's map.
    pub features: Option<Features>,
    /// `SequenceExample.feature_lists`.
    pub lists: Option<BTreeMap<String, Vec<Option<List>>>>,
}

fn float_bits(value: f32) -> u32 {
    if value.is_nan() {
        f32::NAN.to_bits()
    } else {
        value.to_bits()
    }
}

fn double_bits(value: f64) -> u64 {
    if value.is_nan() {
        f64::NAN.to_bits()
    } else {
        value.to_bits()
    }
}

fn tf_list(feature: &tf_pb::Feature) -> Option<List> {
    use tf_pb::feature::Kind;
    Some(match feature.kind.as_ref()? {
        Kind::BytesList(l) => List::Bytes(l.value.clone()),
        Kind::FloatList(l) => List::Float(l.value.iter().copied().map(float_bits).collect()),
        Kind::Int64List(l) => List::Int64(l.value.clone()),
    })
}

fn of_list(feature: &of_pb::Feature) -> Option<List> {
    use of_pb::feature::Kind;
    Some(match feature.kind.as_ref()? {
        Kind::BytesList(l) => List::Bytes(l.value.clone()),
        Kind::FloatList(l) => List::Float(l.value.iter().copied().map(float_bits).collect()),
        Kind::DoubleList(l) => List::Double(l.value.iter().copied().map(double_bits).collect()),
        Kind::Int32List(l) => List::Int32(l.value.clone()),
        Kind::Int64List(l) => List::Int64(l.value.clone()),
    })
}

fn tf_features(features: &tf_pb::Features) -> Features {
    features
        .feature
        .iter()
        .map(|(key, feature)| (key.clone(), tf_list(feature)))
        .collect()
}

/// The shape of an Example.
pub fn example_shape(example: &tf_pb::Example) -> Shape {
    Shape {
        features: example.features.as_ref().map(tf_features),
        lists: None,
    }
}

/// The shape of a SequenceExample.
pub fn sequence_shape(seq: &tf_pb::SequenceExample) -> Shape {
    Shape {
        features: seq.context.as_ref().map(tf_features),
        lists: seq.feature_lists.as_ref().map(|lists| {
            lists
                .feature_list
                .iter()
                .map(|(key, list)| (key.clone(), list.feature.iter().map(tf_list).collect()))
                .collect()
        }),
    }
}

/// The shape of an OFRecord (its map is always there, maybe empty).
pub fn ofrecord_shape(record: &of_pb::OfRecord) -> Shape {
    Shape {
        features: Some(
            record
                .feature
                .iter()
                .map(|(key, feature)| (key.clone(), of_list(feature)))
                .collect(),
        ),
        lists: None,
    }
}

/// Which message a rendering is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// `tf.train.Example`.
    Example,
    /// `tf.train.SequenceExample`.
    SequenceExample,
    /// `oneflow.OFRecord`.
    OfRecord,
}

// ---------------------------------------------------------------------------------------------
// Text format.

/// A text-format field: a nested message or a scalar with its spelling.
#[derive(Debug)]
enum Node {
    Message(String, Vec<Node>),
    Scalar(String, String),
}

/// Parses the printer's layout strictly: two spaces per level, `name {`, `}` and
/// `name: value` lines, each ending in a newline.
fn parse_layout(text: &str) -> Vec<Node> {
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "text does not end in a newline"
    );
    let mut stack: Vec<(String, Vec<Node>)> = vec![(String::new(), Vec::new())];
    for line in text.split_terminator('\n') {
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        if body == "}" {
            assert!(stack.len() > 1, "unbalanced closing brace");
            let (name, children) = stack.pop().expect("checked");
            assert_eq!(indent, 2 * (stack.len() - 1), "bad indentation: {line:?}");
            stack
                .last_mut()
                .expect("the root stays")
                .1
                .push(Node::Message(name, children));
            continue;
        }
        assert_eq!(indent, 2 * (stack.len() - 1), "bad indentation: {line:?}");
        let opened = body.strip_suffix(" {").filter(|name| {
            name.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        });
        if let Some(name) = opened {
            stack.push((name.to_string(), Vec::new()));
        } else {
            let (name, value) = body
                .split_once(": ")
                .unwrap_or_else(|| panic!("not a field: {line:?}"));
            stack
                .last_mut()
                .expect("the root stays")
                .1
                .push(Node::Scalar(name.to_string(), value.to_string()));
        }
    }
    assert_eq!(stack.len(), 1, "unclosed message");
    stack.pop().expect("the root stays").1
}

/// Undoes text_format's C escapes in a quoted string.
fn unquote(spelled: &str) -> Vec<u8> {
    let inner = spelled
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or_else(|| panic!("not a quoted string: {spelled:?}"));
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        i += 1;
        if byte == b'"' {
            panic!("unescaped quote in {spelled:?}");
        }
        if byte != b'\\' {
            out.push(byte);
            continue;
        }
        let escaped = *bytes
            .get(i)
            .unwrap_or_else(|| panic!("dangling backslash in {spelled:?}"));
        i += 1;
        out.push(match escaped {
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'"' | b'\'' | b'\\' => escaped,
            b'0'..=b'3' => {
                let digits = bytes
                    .get(i..i + 2)
                    .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)))
                    .unwrap_or_else(|| panic!("bad octal escape in {spelled:?}"));
                i += 2;
                (escaped - b'0') * 64 + (digits[0] - b'0') * 8 + (digits[1] - b'0')
            }
            other => panic!("unknown escape \\{} in {spelled:?}", char::from(other)),
        });
    }
    out
}

fn text_f64(spelled: &str) -> f64 {
    match spelled {
        "nan" => f64::NAN,
        "inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        _ => {
            assert!(
                spelled.contains('.') || spelled.contains('e'),
                "{spelled:?} reads as an integer in Python"
            );
            spelled
                .parse()
                .unwrap_or_else(|_| panic!("not a float: {spelled:?}"))
        }
    }
}

fn text_list(name: &str, values: &[Node]) -> List {
    let spellings: Vec<&str> = values
        .iter()
        .map(|node| match node {
            Node::Scalar(field, value) if field == "value" => value.as_str(),
            other => panic!("unexpected {other:?} in {name}"),
        })
        .collect();
    let parse_int = |s: &&str| -> i64 {
        s.parse()
            .unwrap_or_else(|_| panic!("not an integer: {s:?}"))
    };
    match name {
        "bytes_list" => List::Bytes(spellings.iter().map(|s| unquote(s)).collect()),
        "float_list" => List::Float(
            spellings
                .iter()
                .map(|s| float_bits(text_f64(s) as f32))
                .collect(),
        ),
        "double_list" => List::Double(spellings.iter().map(|s| double_bits(text_f64(s))).collect()),
        "int32_list" => List::Int32(
            spellings
                .iter()
                .map(|s| i32::try_from(parse_int(s)).expect("int32 in range"))
                .collect(),
        ),
        "int64_list" => List::Int64(spellings.iter().map(parse_int).collect()),
        other => panic!("unknown list {other}"),
    }
}

fn text_feature(children: &[Node]) -> Option<List> {
    match children {
        [] => None,
        [Node::Message(name, values)] => Some(text_list(name, values)),
        other => panic!("a Feature with {other:?}"),
    }
}

/// A map entry: an optional `key` line, then `value { ... }`.
fn text_entry(children: &[Node]) -> (String, &[Node]) {
    let (key, rest) = match children {
        [Node::Scalar(field, key), rest @ ..] if field == "key" => (unquote(key), rest),
        rest => (Vec::new(), rest),
    };
    let key = String::from_utf8(key).expect("map keys print as UTF-8");
    match rest {
        [Node::Message(field, value)] if field == "value" => (key, value.as_slice()),
        other => panic!("a map entry with {other:?}"),
    }
}

fn text_features(entries: &[Node]) -> Features {
    let mut features = Features::new();
    for entry in entries {
        let Node::Message(field, children) = entry else {
            panic!("unexpected {entry:?} in a feature map");
        };
        assert_eq!(field, "feature");
        let (key, value) = text_entry(children);
        assert!(
            features.insert(key, text_feature(value)).is_none(),
            "a key printed twice"
        );
    }
    features
}

/// Reads a text rendering of `message` back.
pub fn text_shape(text: &str, message: Message) -> Shape {
    let nodes = parse_layout(text);
    let mut shape = Shape::default();
    if message == Message::OfRecord {
        shape.features = Some(text_features(&nodes));
        return shape;
    }
    for node in &nodes {
        let Node::Message(field, children) = node else {
            panic!("unexpected {node:?} at the top");
        };
        match (message, field.as_str()) {
            (Message::Example, "features") | (Message::SequenceExample, "context") => {
                assert!(shape.features.is_none(), "{field} printed twice");
                shape.features = Some(text_features(children));
            }
            (Message::SequenceExample, "feature_lists") => {
                assert!(shape.lists.is_none(), "{field} printed twice");
                let mut lists = BTreeMap::new();
                for entry in children {
                    let Node::Message(field, children) = entry else {
                        panic!("unexpected {entry:?} in feature_lists");
                    };
                    assert_eq!(field, "feature_list");
                    let (key, steps) = text_entry(children);
                    let steps = steps
                        .iter()
                        .map(|step| match step {
                            Node::Message(field, step) if field == "feature" => text_feature(step),
                            other => panic!("unexpected {other:?} in a FeatureList"),
                        })
                        .collect();
                    assert!(lists.insert(key, steps).is_none(), "a key printed twice");
                }
                shape.lists = Some(lists);
            }
            _ => panic!("unexpected field {field} in a {message:?}"),
        }
    }
    shape
}

// ---------------------------------------------------------------------------------------------
// JSON.

fn base64(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    assert_eq!(text.len() % 4, 0, "base64 without padding: {text:?}");
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let padding = chunk.iter().rev().take_while(|&&b| b == b'=').count();
        assert!(padding <= 2, "bad padding in {text:?}");
        let mut bits = 0u32;
        for &symbol in chunk {
            let sextet = if symbol == b'=' {
                0
            } else {
                ALPHABET
                    .iter()
                    .position(|&s| s == symbol)
                    .unwrap_or_else(|| panic!("not base64: {text:?}")) as u32
            };
            bits = bits << 6 | sextet;
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - padding]);
    }
    out
}

fn object(value: &Value) -> &serde_json::Map<String, Value> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
}

fn json_f64(value: &Value) -> f64 {
    match value {
        Value::String(s) => match s.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            other => panic!("a float spelled {other:?}"),
        },
        Value::Number(n) => n.as_f64().unwrap_or_else(|| panic!("not a float: {n}")),
        other => panic!("not a float: {other}"),
    }
}

fn json_feature(value: &Value) -> Option<List> {
    let fields = object(value);
    let (name, list) = match fields.len() {
        0 => return None,
        1 => fields.iter().next().expect("one field"),
        _ => panic!("a Feature with two kinds: {value}"),
    };
    let list = object(list);
    let values: &[Value] = match list.get("value") {
        None => &[],
        Some(Value::Array(values)) => {
            assert!(!values.is_empty(), "an empty list printed: {value}");
            values
        }
        Some(other) => panic!("not an array: {other}"),
    };
    assert!(list.len() <= 1, "unexpected fields in {value}");
    let string = |v: &Value| -> String {
        v.as_str()
            .unwrap_or_else(|| panic!("not a string: {v}"))
            .to_string()
    };
    Some(match name.as_str() {
        "bytesList" => List::Bytes(values.iter().map(|v| base64(&string(v))).collect()),
        "floatList" => List::Float(
            values
                .iter()
                .map(|v| float_bits(json_f64(v) as f32))
                .collect(),
        ),
        "doubleList" => List::Double(values.iter().map(|v| double_bits(json_f64(v))).collect()),
        "int32List" => List::Int32(
            values
                .iter()
                .map(|v| {
                    v.as_i64()
                        .and_then(|n| i32::try_from(n).ok())
                        .unwrap_or_else(|| panic!("not an int32: {v}"))
                })
                .collect(),
        ),
        "int64List" => List::Int64(
            values
                .iter()
                .map(|v| {
                    string(v)
                        .parse()
                        .unwrap_or_else(|_| panic!("not an int64 string: {v}"))
                })
                .collect(),
        ),
        other => panic!("unknown list {other}"),
    })
}

/// A JSON map `{"<field>": {key: value}}`, the field left out when the map is empty.
fn json_map<'a>(value: &'a Value, field: &str) -> serde_json::map::Iter<'a> {
    static EMPTY: std::sync::OnceLock<serde_json::Map<String, Value>> = std::sync::OnceLock::new();
    let fields = object(value);
    assert!(
        fields.keys().all(|k| k == field),
        "unexpected fields in {value}"
    );
    match fields.get(field) {
        Some(map) => {
            let map = object(map);
            assert!(!map.is_empty(), "an empty map printed: {value}");
            map.iter()
        }
        None => EMPTY.get_or_init(serde_json::Map::new).iter(),
    }
}

fn json_features(value: &Value, field: &str) -> Features {
    json_map(value, field)
        .map(|(key, feature)| (key.clone(), json_feature(feature)))
        .collect()
}

/// Reads a JSON rendering of `message` back; panics unless it is valid JSON.
pub fn json_shape(json: &str, message: Message) -> Shape {
    let value: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("invalid JSON: {e}"));
    let mut shape = Shape::default();
    if message == Message::OfRecord {
        shape.features = Some(json_features(&value, "feature"));
        return shape;
    }
    for (field, inner) in object(&value) {
        match (message, field.as_str()) {
            (Message::Example, "features") | (Message::SequenceExample, "context") => {
                shape.features = Some(json_features(inner, "feature"));
            }
            (Message::SequenceExample, "featureLists") => {
                let lists = json_map(inner, "featureList")
                    .map(|(key, list)| {
                        let fields = object(list);
                        assert!(fields.keys().all(|k| k == "feature"), "fields in {list}");
                        let steps = match fields.get("feature") {
                            None => Vec::new(),
                            Some(Value::Array(steps)) => {
                                assert!(!steps.is_empty(), "an empty list printed: {list}");
                                steps.iter().map(json_feature).collect()
                            }
                            Some(other) => panic!("not an array: {other}"),
                        };
                        (key.clone(), steps)
                    })
                    .collect();
                shape.lists = Some(lists);
            }
            _ => panic!("unexpected field {field} in a {message:?}"),
        }
    }
    shape
}
