//! The wire transcoder, TFRecord payload to OFRecord, against the typed path.
//!
//! Input: `[spec][record...]`; `spec` picks one of the mapping specs of `specs::pick`
//! (identity, ImageNet preset, flatten, raw feature, renames/casts/offsets, ...). Never
//! panics; when the wire path accepts, its output parses and equals the typed path's; under
//! the identity spec the output converts back to the same Example; the transcoder is as good
//! as new afterwards.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ofconvert_bridge::{decode_example, Transcoder};
use ofconvert_fuzz::agree::{canonical_tf, check_reuse, check_tf_to_of};
use ofconvert_fuzz::specs;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let variant = specs::pick(selector);
    let mut transcoder = Transcoder::new(variant.spec.clone()).expect("the fuzzed specs are valid");
    let mut ofrecord = Vec::new();
    if check_tf_to_of(&variant, &mut transcoder, input, &mut ofrecord) && variant.identity {
        let mut back = Vec::new();
        transcoder
            .of_to_tf(&ofrecord, &mut back)
            .unwrap_or_else(|e| {
                panic!("an OFRecord made from an Example does not convert back: {e}")
            });
        let original = decode_example(input).expect("checked by check_tf_to_of");
        let back = decode_example(&back).expect("checked by of_to_tf's own fuzzing");
        assert_eq!(
            canonical_tf(&back),
            canonical_tf(&original),
            "tf -> of -> tf changed the Example"
        );
    }
    check_reuse(&variant, &mut transcoder);
});
