//! The text-format and JSON printers, on anything that decodes as an Example, a
//! SequenceExample or an OFRecord.
//!
//! Never panics; the text reads back (strict layout, C escapes, Python float spellings) to
//! the same message, and so does the JSON, which must be valid JSON. Only NaN payloads may
//! be lost: protobuf spells every NaN the same way. The `write_*` variants append exactly
//! what the `*_to_*` functions return.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ofconvert_bridge::text;
use ofconvert_bridge::{decode_example, decode_ofrecord, decode_sequence_example};
use ofconvert_fuzz::render::{
    example_shape, json_shape, ofrecord_shape, sequence_shape, text_shape, Message,
};

/// `write` appends to what the buffer held, and nothing else.
fn appends(rendered: &str, write: impl FnOnce(&mut String)) {
    let mut buffer = String::from("kept\n");
    write(&mut buffer);
    assert_eq!(buffer.strip_prefix("kept\n"), Some(rendered));
}

fuzz_target!(|data: &[u8]| {
    if let Ok(example) = decode_example(data) {
        let shape = example_shape(&example);
        let rendered = text::example_to_text(&example);
        assert_eq!(text_shape(&rendered, Message::Example), shape, "{rendered}");
        appends(&rendered, |out| text::write_example_text(out, &example));
        let json = text::example_to_json(&example);
        assert_eq!(json_shape(&json, Message::Example), shape, "{json}");
        appends(&json, |out| text::write_example_json(out, &example));
    }
    if let Ok(seq) = decode_sequence_example(data) {
        let shape = sequence_shape(&seq);
        let rendered = text::sequence_example_to_text(&seq);
        assert_eq!(
            text_shape(&rendered, Message::SequenceExample),
            shape,
            "{rendered}"
        );
        appends(&rendered, |out| {
            text::write_sequence_example_text(out, &seq)
        });
        let json = text::sequence_example_to_json(&seq);
        assert_eq!(json_shape(&json, Message::SequenceExample), shape, "{json}");
        appends(&json, |out| text::write_sequence_example_json(out, &seq));
    }
    if let Ok(record) = decode_ofrecord(data) {
        let shape = ofrecord_shape(&record);
        let rendered = text::ofrecord_to_text(&record);
        assert_eq!(
            text_shape(&rendered, Message::OfRecord),
            shape,
            "{rendered}"
        );
        appends(&rendered, |out| text::write_ofrecord_text(out, &record));
        let json = text::ofrecord_to_json(&record);
        assert_eq!(json_shape(&json, Message::OfRecord), shape, "{json}");
        appends(&json, |out| text::write_ofrecord_json(out, &record));
    }
});
