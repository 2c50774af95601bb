use super::*;
use ofconvert_bridge::{encode_example, encode_ofrecord, of, tf};

fn example(features: Vec<(&str, ofconvert_bridge::proto::tensorflow::Feature)>) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_example(&tf::example(features), &mut bytes);
    bytes
}

fn ofrecord(features: Vec<(&str, ofconvert_bridge::proto::oneflow::Feature)>) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_ofrecord(&of::record(features), &mut bytes);
    bytes
}

/// Asserts that `a` and `b` compare equal and have one digest.
fn same(canon: &mut Canon, a: (&[u8], Format), b: (&[u8], Format)) {
    assert_eq!(canon.compare(a.0, a.1, b.0, b.1), None);
    assert_eq!(canon.digest(a.0, a.1, true), canon.digest(b.0, b.1, false));
}

fn differ(canon: &mut Canon, a: (&[u8], Format), b: (&[u8], Format)) -> RecordDifference {
    assert_ne!(canon.digest(a.0, a.1, true), canon.digest(b.0, b.1, false));
    canon.compare(a.0, a.1, b.0, b.1).expect("they differ")
}

#[test]
fn an_example_equals_its_ofrecord_with_int32_widened_and_exact_doubles() {
    let mut canon = Canon::new(None);
    let tf_record = example(vec![
        ("image", tf::bytes_feature([b"\xff\xd8jpeg".to_vec()])),
        ("label", tf::int64_feature([-3, 7])),
        ("box", tf::float_feature([0.5, 0.25])),
    ]);
    let of_record = ofrecord(vec![
        ("box", of::double_feature([0.5, 0.25])),
        ("label", of::int32_feature([-3, 7])),
        ("image", of::bytes_feature([b"\xff\xd8jpeg".to_vec()])),
    ]);
    same(
        &mut canon,
        (&tf_record, Format::Tf),
        (&of_record, Format::Of),
    );
    // Either way round, and an int64 OFRecord is the same record.
    same(
        &mut canon,
        (&of_record, Format::Of),
        (&tf_record, Format::Tf),
    );
    let int64 = ofrecord(vec![
        ("image", of::bytes_feature([b"\xff\xd8jpeg".to_vec()])),
        ("label", of::int64_feature([-3, 7])),
        ("box", of::float_feature([0.5, 0.25])),
    ]);
    same(&mut canon, (&int64, Format::Of), (&of_record, Format::Of));

    // A double no float holds exactly is not the float nearest it.
    let tenth_float = ofrecord(vec![("x", of::float_feature([0.1]))]);
    let tenth_double = ofrecord(vec![("x", of::double_feature([0.1]))]);
    let found = differ(
        &mut canon,
        (&tenth_float, Format::Of),
        (&tenth_double, Format::Of),
    );
    assert_eq!(found.feature.as_deref(), Some("x"));
    assert_eq!(found.what, "values differ");
    // Printed so that the two can be told apart: the float as the double it is.
    assert_eq!(
        found.values,
        (
            Some("float_list [0.10000000149011612]".to_owned()),
            Some("double_list [0.1]".to_owned())
        )
    );
}

#[test]
fn an_int32_is_read_as_protobuf_reads_it_however_it_was_written() {
    let mut canon = Canon::new(None);
    // -1 as an int32 written the short way (a five-byte varint of its 32 bits), as some
    // encoders do: protobuf reads the low 32 bits.
    let list = [0x0a, 0x05, 0xff, 0xff, 0xff, 0xff, 0x0f];
    let feature = [&[0x22, list.len() as u8][..], &list].concat();
    let name = b"n";
    let entry = [
        &[0x0a, name.len() as u8][..],
        name,
        &[0x12, feature.len() as u8],
        &feature,
    ]
    .concat();
    let short = [&[0x0a, entry.len() as u8][..], &entry].concat();
    assert!(ofconvert_bridge::visit_ofrecord(&short, |_, _, _| {}).is_ok());
    let example = example(vec![("n", tf::int64_feature([-1]))]);
    same(&mut canon, (&short, Format::Of), (&example, Format::Tf));
}

#[test]
fn order_of_features_does_not_count_and_the_last_of_a_name_wins() {
    let mut canon = Canon::new(None);
    let ab = ofrecord(vec![
        ("a", of::int64_feature([1])),
        ("b", of::bytes_feature([b"x".to_vec()])),
    ]);
    // The encoder sorts a map's keys; records concatenated are one map, in wire order.
    let ba = [
        ofrecord(vec![("b", of::bytes_feature([b"x".to_vec()]))]),
        ofrecord(vec![("a", of::int64_feature([1]))]),
    ]
    .concat();
    assert_ne!(ab, ba);
    same(&mut canon, (&ab, Format::Of), (&ba, Format::Of));
    // `a` twice: its last value counts.
    let twice = [ofrecord(vec![("a", of::int64_feature([9]))]), ba.clone()].concat();
    same(&mut canon, (&twice, Format::Of), (&ab, Format::Of));
    let other_last = [ba, ofrecord(vec![("a", of::int64_feature([9]))])].concat();
    let found = differ(&mut canon, (&other_last, Format::Of), (&ab, Format::Of));
    assert_eq!(
        found.values,
        (
            Some("int64_list [9]".to_owned()),
            Some("int64_list [1]".to_owned())
        )
    );
}

#[test]
fn a_missing_feature_a_kind_and_a_feature_without_kind_differ() {
    let mut canon = Canon::new(None);
    let with = ofrecord(vec![
        ("a", of::int64_feature([1])),
        ("b", of::float_feature([2.0])),
    ]);
    let without = ofrecord(vec![("a", of::int64_feature([1]))]);
    let found = differ(&mut canon, (&with, Format::Of), (&without, Format::Of));
    assert_eq!(found.feature.as_deref(), Some("b"));
    assert_eq!(found.what, "only in A");
    assert_eq!(found.values, (Some("float_list [2.0]".to_owned()), None));
    let found = differ(&mut canon, (&without, Format::Of), (&with, Format::Of));
    assert_eq!(found.what, "only in B");

    let bytes = ofrecord(vec![("a", of::bytes_feature([b"1".to_vec()]))]);
    let found = differ(&mut canon, (&without, Format::Of), (&bytes, Format::Of));
    assert_eq!(found.what, "kinds differ");

    let kindless = ofrecord(vec![(
        "a",
        ofconvert_bridge::proto::oneflow::Feature { kind: None },
    )]);
    let found = differ(&mut canon, (&kindless, Format::Of), (&without, Format::Of));
    assert_eq!(found.values.0.as_deref(), Some("none []"));
}

#[test]
fn empty_records_and_payloads_that_are_no_examples() {
    let mut canon = Canon::new(None);
    // An Example without features is an OFRecord of no bytes.
    same(
        &mut canon,
        (&example(vec![]), Format::Tf),
        (&[], Format::Of),
    );
    // Payloads that are no Example compare as bytes.
    let tensor = b"\xff\xff not protobuf".to_vec();
    same(&mut canon, (&tensor, Format::Tf), (&tensor, Format::Tf));
    let other = b"\xff\xfe not protobuf".to_vec();
    let found = differ(&mut canon, (&tensor, Format::Tf), (&other, Format::Tf));
    assert_eq!(found.feature, None);
    assert!(found
        .values
        .0
        .unwrap()
        .starts_with("not a record: \"\\377\\377 not"));
}

#[test]
fn values_are_cut_short_and_shown_where_they_differ() {
    let mut canon = Canon::new(None);
    // The first values alike: shown from the first that differs.
    let (long, short) = (
        ofrecord(vec![("many", of::int64_feature(0..20))]),
        ofrecord(vec![("many", of::int64_feature((0..12).chain([99])))]),
    );
    let found = differ(&mut canon, (&long, Format::Of), (&short, Format::Of));
    assert_eq!(found.what, "values differ at value 12");
    assert_eq!(
        found.values,
        (
            Some("int64_list [from value 12: 12, 13, 14, 15, 16, 17, 18, 19]".to_owned()),
            Some("int64_list [from value 12: 99]".to_owned())
        )
    );
    let short = ofrecord(vec![("many", of::int64_feature(0..12))]);
    let found = differ(&mut canon, (&long, Format::Of), (&short, Format::Of));
    assert_eq!(
        found.values.1.as_deref(),
        Some("int64_list [12 values, none from value 12]")
    );
    // Near the start, as they are: the difference is in sight.
    let (a, b) = (
        ofrecord(vec![("many", of::int64_feature(0..20))]),
        ofrecord(vec![("many", of::int64_feature([0, 5]))]),
    );
    let found = differ(&mut canon, (&a, Format::Of), (&b, Format::Of));
    assert_eq!(found.what, "values differ at value 1");
    assert_eq!(
        found.values.0.as_deref(),
        Some("int64_list [0, 1, 2, 3, 4, 5, 6, 7, ... (12 more)]")
    );

    // A long bytes value alike for 600 bytes: shown from a little before the byte, which the
    // report places in each record.
    let mut image = vec![b'z'; 1000];
    let a = ofrecord(vec![("image", of::bytes_feature([image.clone()]))]);
    image[600] = b'!';
    let b = ofrecord(vec![("image", of::bytes_feature([image]))]);
    let found = differ(&mut canon, (&a, Format::Of), (&b, Format::Of));
    assert_eq!(found.what, "values differ at byte 600");
    let shown = found.values.1.unwrap();
    assert!(
        shown.starts_with("bytes_list [value 0 from byte 592: \"zzzzzzzz!zzz"),
        "{shown}"
    );
    assert!(shown.ends_with("zzz\"... (1000 bytes)]"), "{shown}");
    // 600 bytes into the value, in each record.
    let value_at = |record: &[u8], byte: Option<u64>| {
        let start = byte.expect("a byte") as usize - 600;
        record[start..start + 1000].to_vec()
    };
    let (a_byte, b_byte) = found.bytes;
    assert_eq!(value_at(&a, a_byte), vec![b'z'; 1000]);
    assert_eq!(value_at(&b, b_byte)[600], b'!');
    // An Example against an OFRecord: each laid out its own way.
    let example = example(vec![("image", tf::bytes_feature([vec![b'z'; 1000]]))]);
    let found = differ(&mut canon, (&example, Format::Tf), (&b, Format::Of));
    assert_eq!(value_at(&example, found.bytes.0), vec![b'z'; 1000]);
    assert_eq!(value_at(&b, found.bytes.1)[600], b'!');
    assert_ne!(found.bytes.0, found.bytes.1);
}

#[test]
fn an_example_and_its_ofrecord_laid_out_alike_need_no_transcoding() {
    let example = example(vec![
        ("image", tf::bytes_feature([vec![7u8; 300]])),
        ("label", tf::int64_feature([3, -1])),
        ("box", tf::float_feature([0.25])),
    ]);
    let mut transcoder = Transcoder::new(MappingSpec::new()).unwrap();
    let mut record = Vec::new();
    transcoder.tf_to_of(&example, &mut record).unwrap();
    assert!(same_layout(&example, &record));
    // The Example's features as they are, int64's tag unchanged, would read as a double
    // list in an OFRecord.
    let (_, _, header_len) = layout::header(&example).unwrap();
    let inner = &example[header_len..];
    assert_eq!(inner.len(), record.len());
    assert!(!same_layout(&example, inner));
    // One value changed: not alike, and told apart the long way.
    let mut changed = record.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    assert!(!same_layout(&example, &changed));
    let mut canon = Canon::new(None);
    assert!(canon
        .compare(&example, Format::Tf, &changed, Format::Of)
        .is_some());
    // An int32 label is the same record, though not laid out alike.
    let int32 = ofrecord(vec![
        ("box", of::float_feature([0.25])),
        ("image", of::bytes_feature([vec![7u8; 300]])),
        ("label", of::int32_feature([3, -1])),
    ]);
    assert!(!same_layout(&example, &int32));
    assert_eq!(
        canon.compare(&example, Format::Tf, &int32, Format::Of),
        None
    );
}

#[test]
fn side_a_mapped_is_compared_as_the_conversion_wrote_it() {
    use ofconvert_bridge::NumericType;
    let spec = MappingSpec::new()
        .rename("image/encoded", "encoded")
        .cast("label", NumericType::Int32)
        .offset("label", -1)
        .drop_feature("id");
    let mapping = Transcoder::new(spec).unwrap();
    let mut canon = Canon::new(Some(&mapping));
    // Big enough that an unmapped Example would be digested in place.
    let image = vec![9u8; 2 * COPY_SPARED];
    let source = example(vec![
        ("image/encoded", tf::bytes_feature([image.clone()])),
        ("label", tf::int64_feature([1])),
        ("id", tf::int64_feature([7])),
    ]);
    let converted = ofrecord(vec![
        ("encoded", of::bytes_feature([image.clone()])),
        ("label", of::int32_feature([0])),
    ]);
    same(&mut canon, (&source, Format::Tf), (&converted, Format::Of));
    differ(
        &mut Canon::new(None),
        (&source, Format::Tf),
        (&converted, Format::Of),
    );
    // A copy of the source is not what the mapping makes of it, bytes alike or not.
    let found = differ(&mut canon, (&source, Format::Tf), (&source, Format::Tf));
    assert_eq!(found.feature.as_deref(), Some("encoded"));
    assert_eq!(found.what, "only in A");
    // One value changed in the conversion.
    let tampered = ofrecord(vec![
        ("encoded", of::bytes_feature([image.clone()])),
        ("label", of::int32_feature([5])),
    ]);
    let found = differ(&mut canon, (&source, Format::Tf), (&tampered, Format::Of));
    assert_eq!(found.feature.as_deref(), Some("label"));
    assert_eq!(found.what, "values differ");
    assert_eq!(
        found.values,
        (
            Some("int32_list [0]".to_owned()),
            Some("int32_list [5]".to_owned())
        )
    );
    // An OFRecord on side A is mapped as of2tf maps it.
    let of_source = ofrecord(vec![
        ("id", of::int64_feature([7])),
        ("image/encoded", of::bytes_feature([image.clone()])),
        ("label", of::int64_feature([1])),
    ]);
    let written = example(vec![
        ("encoded", tf::bytes_feature([image])),
        ("label", tf::int64_feature([0])),
    ]);
    same(&mut canon, (&of_source, Format::Of), (&written, Format::Tf));
    // A record the mapping refuses is what the conversion would have failed on.
    let too_big = example(vec![("label", tf::int64_feature([1 << 40]))]);
    let found = canon
        .compare(&too_big, Format::Tf, &converted, Format::Of)
        .expect("refused");
    assert!(
        found.what.starts_with("A's record does not map: "),
        "{}",
        found.what
    );
    assert_eq!(found.feature.as_deref(), Some("label"));
    assert_ne!(
        canon.digest(&too_big, Format::Tf, true),
        canon.digest(&too_big, Format::Tf, false)
    );
}
