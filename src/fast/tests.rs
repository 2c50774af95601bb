use super::fields::{bytes_count, float_count, int64_count, varint_count};
use super::*;

fn entry(key: &[u8], feature: &[u8]) -> Vec<u8> {
    let mut body = vec![KEY, key.len() as u8];
    body.extend_from_slice(key);
    body.extend_from_slice(&[VALUE, feature.len() as u8]);
    body.extend_from_slice(feature);
    let mut out = vec![ENTRY, body.len() as u8];
    out.extend_from_slice(&body);
    out
}

fn run(map: &[u8], from: Dialect) -> Option<(Vec<u8>, Vec<Written>)> {
    let mut buf = map.to_vec();
    let mut pass = Pass::default();
    rewrite_map(&mut buf, 0, from, &mut pass).then_some((buf, pass.written))
}

#[test]
fn int64_tags_change_and_everything_else_is_copied() {
    let mut map = entry(b"label", &[0x1a, 2, 0x08, 7]);
    map.extend(entry(b"name", &[0x0a, 3, 0x0a, 1, b'x']));
    map.extend(entry(b"none", &[]));
    let (out, written) = run(&map, Dialect::Tf).unwrap();
    let mut expected = map.clone();
    expected[2 + 7 + 2] = 0x2a;
    assert_eq!(out, expected);
    let kinds: Vec<_> = written.iter().map(|w| (w.kind, w.values)).collect();
    assert_eq!(
        kinds,
        [
            (Some(FeatureKind::Int64), 1),
            (Some(FeatureKind::Bytes), 1),
            (None, 0)
        ]
    );
    assert_eq!(&out[written[1].name.clone()], b"name");
    assert_eq!(&out[written[1].list.clone()], &[0x0a, 1, b'x']);
    let (back, _) = run(&out, Dialect::Of).unwrap();
    assert_eq!(back, map);
}

#[test]
fn what_the_general_path_must_decide_is_left_to_it() {
    let cases: [(&str, Vec<u8>, Dialect); 9] = [
        (
            "repeated key",
            [entry(b"a", &[]), entry(b"a", &[])].concat(),
            Dialect::Tf,
        ),
        (
            "value before key",
            vec![ENTRY, 5, VALUE, 0, KEY, 1, b'a'],
            Dialect::Tf,
        ),
        (
            "long-form length",
            vec![ENTRY, 0x85, 0x00, KEY, 1, b'a', VALUE, 0],
            Dialect::Tf,
        ),
        (
            "double list",
            entry(b"d", &[0x1a, 8, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]),
            Dialect::Of,
        ),
        (
            "unknown kind",
            entry(b"i", &[0x22, 2, 0x08, 0x7f]),
            Dialect::Tf,
        ),
        (
            "int32 beyond int32",
            entry(b"i", &[0x22, 6, 0x08, 0x80, 0x80, 0x80, 0x80, 0x08]),
            Dialect::Of,
        ),
        ("non-ASCII name", entry("é".as_bytes(), &[]), Dialect::Tf),
        (
            "damaged list",
            entry(b"f", &[0x12, 3, 0x0a, 5, 0]),
            Dialect::Tf,
        ),
        ("no entries", Vec::new(), Dialect::Tf),
    ];
    for (what, map, from) in cases {
        assert!(run(&map, from).is_none(), "{what}");
    }
    // An int32 list of sign-extended values reads the same as int64.
    let minus_one = [
        0x22, 11, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1,
    ];
    let (out, written) = run(&entry(b"i", &minus_one), Dialect::Of).unwrap();
    assert_eq!(out[2 + 3 + 2], 0x1a);
    assert_eq!(written[0].kind, Some(FeatureKind::Int64));
}

#[test]
fn packed_varints_are_counted_only_when_whole_and_within_64_bits() {
    let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    assert_eq!(varint_count(&max), Some(1));
    assert_eq!(
        varint_count(&[max.as_slice(), &[0, 0x7f]].concat()),
        Some(3)
    );
    let mut overflow = max;
    overflow[9] = 0x02;
    assert_eq!(varint_count(&overflow), None);
    assert_eq!(varint_count(&[0xff; 10]), None);
    assert_eq!(varint_count(&[0x05, 0x80]), None);
    assert_eq!(int64_count(&[0x0a, 3, 1, 0x80, 1]), Some(2));
    assert_eq!(float_count(&[0x0a, 5, 0, 0, 0x80, 0x3f, 0]), None);
    assert_eq!(float_count(&[0x0d, 0, 0, 0x80, 0x3f]), None);
    assert_eq!(bytes_count(&[0x0a, 0, 0x0a, 1, b'x']), Some(2));
}

#[test]
fn lengths_of_more_than_one_byte_are_read() {
    let value = vec![b'v'; 300];
    // BytesList { value } as a Feature, then the entry around it.
    let mut list = vec![0x0a, 0xac, 0x02];
    list.extend_from_slice(&value);
    let mut feature = vec![0x0a, 0xaf, 0x02];
    feature.extend_from_slice(&list);
    let mut body = vec![KEY, 1, b'k', VALUE, 0xb2, 0x02];
    body.extend_from_slice(&feature);
    let mut map = vec![ENTRY, 0xb8, 0x02];
    map.extend_from_slice(&body);
    let (out, written) = run(&map, Dialect::Tf).unwrap();
    assert_eq!(out, map);
    assert_eq!(written[0].values, 1);
    assert_eq!(&out[written[0].list.clone()], &list[..]);
}

#[test]
fn a_repeated_name_among_many_features_is_left_to_the_general_path() {
    let names: Vec<Vec<u8>> = (0..20).map(|i| format!("f{i}").into_bytes()).collect();
    let map: Vec<u8> = names.iter().flat_map(|name| entry(name, &[])).collect();
    assert_eq!(run(&map, Dialect::Tf).unwrap().1.len(), 20);
    let repeated = [map.clone(), entry(b"f7", &[])].concat();
    assert!(run(&repeated, Dialect::Tf).is_none());
}
