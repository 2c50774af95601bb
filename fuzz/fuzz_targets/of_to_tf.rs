//! The wire transcoder, OFRecord payload to TFRecord, against the typed path.
//!
//! Input: `[spec][record...]`; `spec` picks one of the mapping specs of `specs::pick`, bit 3
//! making it lossy (double to float rounds instead of failing). Never panics; when the wire
//! path accepts, its output parses and equals the typed path's; under the identity spec a
//! record without int32 or double lists converts back to the same OFRecord; the transcoder
//! is as good as new afterwards.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ofconvert_bridge::proto::oneflow::feature::Kind;
use ofconvert_bridge::{decode_ofrecord, Transcoder};
use ofconvert_fuzz::agree::{canonical_of, check_of_to_tf, check_reuse};
use ofconvert_fuzz::specs;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let variant = specs::pick(selector);
    let mut transcoder = Transcoder::new(variant.spec.clone()).expect("the fuzzed specs are valid");
    let mut example = Vec::new();
    if check_of_to_tf(&variant, &mut transcoder, input, &mut example) && variant.identity {
        let original = decode_ofrecord(input).expect("checked by check_of_to_tf");
        let widened = original
            .feature
            .values()
            .any(|feature| matches!(feature.kind, Some(Kind::Int32List(_) | Kind::DoubleList(_))));
        if !widened {
            let mut back = Vec::new();
            transcoder
                .tf_to_of(&example, &mut back)
                .unwrap_or_else(|e| {
                    panic!("an Example made from an OFRecord does not convert back: {e}")
                });
            let back = decode_ofrecord(&back).expect("checked by tf_to_of's own fuzzing");
            assert_eq!(
                canonical_of(&back),
                canonical_of(&original),
                "of -> tf -> of changed the OFRecord"
            );
        }
    }
    check_reuse(&variant, &mut transcoder);
});
