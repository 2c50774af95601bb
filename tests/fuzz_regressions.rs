//! Inputs the fuzz targets in `fuzz/` found problems with, kept as tests of the bridge.

use ofconvert_bridge::{visit_ofrecord, FeatureKind, MappingSpec, NumericType, Transcoder};

/// What a visitor reports: name, kind and value count of each feature.
type Reported = Vec<(Vec<u8>, Option<FeatureKind>, usize)>;

/// Found by `tf_to_of` (spec 4, which casts `d` to double): converting a float list to
/// double kept the floats beside the doubles, so `visit_output` reported the feature with
/// twice its values (and a debug build failed an assertion).
#[test]
fn a_float_list_cast_to_double_reports_each_value_once() {
    // Example { features { feature { key: "d" value { float_list { value: [0.5, -1.0] } } } } }
    let example = [
        0x0a, 0x13, 0x0a, 0x11, 0x0a, 0x01, b'd', 0x12, 0x0c, 0x12, 0x0a, 0x0a, 0x08, 0x00, 0x00,
        0x00, 0x3f, 0x00, 0x00, 0x80, 0xbf,
    ];
    let spec = MappingSpec::new().cast("d", NumericType::Double);
    let mut transcoder = Transcoder::new(spec).unwrap();
    let mut ofrecord = Vec::new();
    transcoder.tf_to_of(&example, &mut ofrecord).unwrap();

    let mut reported = Reported::new();
    transcoder.visit_output(&ofrecord, |name, kind, count| {
        reported.push((name.to_vec(), kind, count))
    });
    let mut visited = Reported::new();
    visit_ofrecord(&ofrecord, |name, kind, count| {
        visited.push((name.to_vec(), kind, count))
    })
    .unwrap();
    assert_eq!(visited, [(b"d".to_vec(), Some(FeatureKind::Double), 2)]);
    assert_eq!(reported, visited);
}
