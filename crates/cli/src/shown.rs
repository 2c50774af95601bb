//! How `cat` shows bytes values to a reader: in `--json`, bytes that are UTF-8 text as that
//! text (base64, protobuf's JSON mapping, only for the others); with `--max-bytes N`, values
//! longer than N bytes cut to N and marked `... (123456 bytes)`.

use ofconvert_bridge::proto::{oneflow, tensorflow};

/// The mark after a value cut to its first bytes.
fn cut_mark(length: usize) -> String {
    format!("... ({length} bytes)")
}

fn shorten_value(value: &mut Vec<u8>, max: usize) {
    if value.len() > max {
        let mark = cut_mark(value.len());
        value.truncate(max);
        value.extend_from_slice(mark.as_bytes());
    }
}

fn shorten_tf_features(features: &mut tensorflow::Features, max: usize) {
    for feature in features.feature.values_mut() {
        shorten_tf_feature(feature, max);
    }
}

fn shorten_tf_feature(feature: &mut tensorflow::Feature, max: usize) {
    if let Some(tensorflow::feature::Kind::BytesList(list)) = &mut feature.kind {
        for value in &mut list.value {
            shorten_value(value, max);
        }
    }
}

/// Cuts the long bytes values of an Example for text format.
pub fn shorten_example(example: &mut tensorflow::Example, max: usize) {
    if let Some(features) = &mut example.features {
        shorten_tf_features(features, max);
    }
}

/// Cuts the long bytes values of a SequenceExample for text format.
pub fn shorten_sequence_example(sequence: &mut tensorflow::SequenceExample, max: usize) {
    if let Some(context) = &mut sequence.context {
        shorten_tf_features(context, max);
    }
    if let Some(lists) = &mut sequence.feature_lists {
        for list in lists.feature_list.values_mut() {
            for feature in &mut list.feature {
                shorten_tf_feature(feature, max);
            }
        }
    }
}

/// Cuts the long bytes values of an OFRecord for text format.
pub fn shorten_ofrecord(record: &mut oneflow::OfRecord, max: usize) {
    for feature in record.feature.values_mut() {
        if let Some(oneflow::feature::Kind::BytesList(list)) = &mut feature.kind {
            for value in &mut list.value {
                shorten_value(value, max);
            }
        }
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, byte)| n | u32::from(*byte) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut n, mut bits) = (0u32, 0u32);
    for byte in text.bytes().filter(|byte| *byte != b'=') {
        let digit = ALPHABET.iter().position(|c| *c == byte)? as u32;
        n = n << 6 | digit;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((n >> bits) as u8);
        }
    }
    Some(out)
}

/// A JSON string literal of `text`.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// How one base64 value of the JSON mapping is shown.
fn shown(base64: &str, max: Option<usize>) -> String {
    let Some(bytes) = base64_decode(base64) else {
        return format!("\"{base64}\"");
    };
    let cut = max.filter(|max| bytes.len() > *max);
    let head = &bytes[..cut.unwrap_or(bytes.len())];
    let mark = cut.map(|_| cut_mark(bytes.len())).unwrap_or_default();
    match std::str::from_utf8(head) {
        Ok(text) => json_string(&format!("{text}{mark}")),
        // Cut inside a character: the text up to it.
        Err(err) if cut.is_some() && err.error_len().is_none() => {
            let text = std::str::from_utf8(&head[..err.valid_up_to()]).unwrap_or_default();
            json_string(&format!("{text}{mark}"))
        }
        Err(_) if cut.is_some() => json_string(&format!("{}{mark}", base64_encode(head))),
        Err(_) => format!("\"{base64}\""),
    }
}

/// Rewrites the bytes values of one record's JSON (as the bridge renders it, on one line):
/// text as text, and long values cut past `max` bytes.
pub fn readable_json(json: &str, max: Option<usize>) -> String {
    const LIST: &str = "\"bytesList\":{\"value\":[";
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(at) = rest.find(LIST) {
        let start = at + LIST.len();
        out.push_str(&rest[..start]);
        // Base64 strings hold no quote, comma or bracket: the list ends at the first `]`.
        let Some(end) = rest[start..].find(']') else {
            break;
        };
        let values: Vec<String> = rest[start..start + end]
            .split(',')
            .filter(|item| !item.is_empty())
            .map(|item| shown(item.trim_matches('"'), max))
            .collect();
        out.push_str(&values.join(","));
        rest = &rest[start + end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for bytes in [&b""[..], b"f", b"fo", b"foo", b"foob", b"\xff\xd8\xff\xe0"] {
            let encoded = base64_encode(bytes);
            assert_eq!(base64_decode(&encoded).as_deref(), Some(bytes), "{encoded}");
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
    }

    #[test]
    fn text_is_shown_as_text_and_binary_stays_base64() {
        let json = r#"{"feature":{"a":{"bytesList":{"value":["aGVsbG8=","/9j/"]}}}}"#;
        assert_eq!(
            readable_json(json, None),
            r#"{"feature":{"a":{"bytesList":{"value":["hello","/9j/"]}}}}"#
        );
        assert_eq!(
            readable_json(json, Some(2)),
            r#"{"feature":{"a":{"bytesList":{"value":["he... (5 bytes)","/9g=... (3 bytes)"]}}}}"#
        );
    }
}
