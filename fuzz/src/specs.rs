//! The mapping specs the transcoder targets choose from with their first input byte.
//!
//! The rules name one-letter features so that mutations find them quickly, and combine
//! renames, casts, offsets, keep/drop and flattening in ways that can clash or overflow.

use ofconvert_bridge::{MappingSpec, NumericType, SequencePolicy};

/// The name records that are not Examples are wrapped under, in the variants that wrap them.
pub const RAW_FEATURE: &str = "raw";

/// One spec to fuzz with, and what the checks need to know about it.
pub struct Variant {
    /// The spec, `lossy` included.
    pub spec: MappingSpec,
    /// The same spec without `raw_feature`, when the spec wraps non-Examples.
    pub without_raw: Option<MappingSpec>,
    /// Whether SequenceExamples are flattened.
    pub flatten: bool,
    /// The variant is the identity mapping (lossless both ways).
    pub identity: bool,
}

/// Picks a variant: the low three bits choose the spec, bit 3 makes it lossy.
pub fn pick(selector: u8) -> Variant {
    let lossy = selector & 0x08 != 0;
    let (base, raw, flatten) = match selector & 0x07 {
        0 => (MappingSpec::new(), false, false),
        1 => (MappingSpec::imagenet(), false, false),
        2 => (
            MappingSpec::new().sequence(SequencePolicy::Flatten),
            false,
            true,
        ),
        3 => (MappingSpec::new(), true, false),
        4 => (
            MappingSpec::new()
                .rename("a", "b")
                .rename("b", "a")
                .cast("a", NumericType::Int32)
                .offset("c", -1)
                .cast("c", NumericType::Float)
                .cast("d", NumericType::Double)
                .offset("e", i64::MIN)
                .cast("e", NumericType::Int64)
                .drop_feature("f")
                .rename("g", "h"),
            false,
            false,
        ),
        5 => (
            MappingSpec::new()
                .keep(["a", "b", "c", "image/class/label"])
                .sequence(SequencePolicy::Flatten)
                .rename("b", "a/lengths")
                .cast("c", NumericType::Int32),
            false,
            true,
        ),
        6 => (
            MappingSpec::imagenet().sequence(SequencePolicy::Flatten),
            true,
            true,
        ),
        _ => (
            MappingSpec::new()
                .cast("a", NumericType::Float)
                .offset("b", 1)
                .cast("b", NumericType::Int32)
                .cast("c", NumericType::Double)
                .cast("d", NumericType::Int64)
                .sequence(SequencePolicy::Flatten),
            false,
            true,
        ),
    };
    let identity = base.is_identity() && !raw;
    let base = base.lossy(lossy);
    if raw {
        Variant {
            spec: base.clone().raw_feature(RAW_FEATURE),
            without_raw: Some(base),
            flatten,
            identity,
        }
    } else {
        Variant {
            spec: base,
            without_raw: None,
            flatten,
            identity,
        }
    }
}
