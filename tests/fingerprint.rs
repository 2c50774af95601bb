//! `MappingSpec::fingerprint`: derived from the spec alone, stable, and different for specs
//! that do different things.

use ofconvert_bridge::{MappingSpec, NumericType, SequencePolicy};

fn base() -> MappingSpec {
    MappingSpec::new()
        .rename("image/encoded", "encoded")
        .cast("image/class/label", NumericType::Int32)
        .offset("image/class/label", -1)
        .keep(["image/encoded", "image/class/label"])
}

#[test]
fn specs_differing_in_one_rule_have_different_fingerprints() {
    let variants = [
        base(),
        base().rename("image/class/label", "label"),
        base().cast("image/class/label", NumericType::Int64),
        base().offset("image/class/label", 0),
        base().keep(["image/format"]),
        base().drop_feature("image/format"),
        base().sequence(SequencePolicy::Flatten),
        base().raw_feature("raw"),
        base().lossy(true),
        MappingSpec::new(),
        MappingSpec::imagenet(),
    ];
    for (i, a) in variants.iter().enumerate() {
        for b in &variants[i + 1..] {
            assert_ne!(a.fingerprint(), b.fingerprint(), "{a} / {b}");
        }
    }
}

#[test]
fn the_fingerprint_follows_what_the_spec_does_not_how_it_was_built() {
    let reordered = MappingSpec::new()
        .keep(["image/class/label"])
        .offset("image/class/label", -1)
        .keep(["image/encoded", "image/class/label"])
        .rename("image/encoded", "encoded")
        .cast("image/class/label", NumericType::Int32);
    assert_eq!(reordered.fingerprint(), base().fingerprint());
    assert_eq!(reordered.to_string(), base().to_string());
    // Names that would collide if they were not quoted.
    let a = MappingSpec::new().rename("a; drop b", "c");
    let b = MappingSpec::new().rename("a", "c").drop_feature("b");
    assert_ne!(a.fingerprint(), b.fingerprint());
}

#[test]
fn the_fingerprint_is_the_same_in_every_run() {
    // Known values (FNV-1a computed independently): a change here changes what --resume
    // accepts, so it must be deliberate.
    assert_eq!(MappingSpec::new().to_string(), "identity");
    assert_eq!(MappingSpec::new().fingerprint(), 0xe90f_184c_6aa3_ffbb);
    assert_eq!(
        base().to_string(),
        "offset \"image/class/label\" by -1; cast \"image/class/label\" to int32; \
         rename \"image/encoded\" to \"encoded\"; keep [\"image/class/label\", \"image/encoded\"]"
    );
}
