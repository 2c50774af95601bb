//! `verify_file` reports, record by record, what the full walk of each payload reports:
//! sound records laid out as the writers lay them out are walked once, as the converter
//! walks them, and every other one, damaged or unusual, is judged by the full walk.

use std::path::Path;

use ofconvert_bridge::{visit_example, visit_ofrecord};
use ofconvert_engine::{error_chain, verify_file, Format};

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field(out: &mut Vec<u8>, number: u32, payload: &[u8]) {
    varint(out, u64::from(number) << 3 | 2);
    varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// A map entry `name -> Feature { kind: list }`, the list given as its serialized message.
fn entry(name: &[u8], kind: u32, list: &[u8]) -> Vec<u8> {
    let mut feature = Vec::new();
    field(&mut feature, kind, list);
    let mut body = Vec::new();
    field(&mut body, 1, name);
    field(&mut body, 2, &feature);
    let mut out = Vec::new();
    field(&mut out, 1, &body);
    out
}

fn packed(values: &[u64]) -> Vec<u8> {
    let mut raw = Vec::new();
    values.iter().for_each(|&v| varint(&mut raw, v));
    let mut list = Vec::new();
    field(&mut list, 1, &raw);
    list
}

fn bytes_list(values: &[&[u8]]) -> Vec<u8> {
    let mut list = Vec::new();
    values.iter().for_each(|v| field(&mut list, 1, v));
    list
}

fn floats(values: &[f32]) -> Vec<u8> {
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut list = Vec::new();
    field(&mut list, 1, &raw);
    list
}

/// The tutorial's four features in a dialect (`int64` is the int64 list's field number),
/// with `label` as the first feature's value.
fn tutorial(int64: u32, label: u64) -> Vec<u8> {
    [
        entry(b"feature0", int64, &packed(&[label])),
        entry(b"feature1", int64, &packed(&[label * 3, 1 << 40])),
        entry(b"feature2", 1, &bytes_list(&[b"cat"])),
        entry(b"feature3", 2, &floats(&[0.25])),
    ]
    .concat()
}

/// Records of one dialect's map (`int64`: its int64 field): sound ones of one shape, and
/// between them, each kind of damage and each unusual layout the full walk judges.
fn maps(int64: u32) -> Vec<Vec<u8>> {
    let good = |label| tutorial(int64, label);
    let mut cut_varint = good(1);
    // The first feature's one-byte value becomes the start of a varint that never ends.
    let at = cut_varint.iter().position(|&b| b == 1).unwrap();
    cut_varint[at] = 0x81;
    let mut cut_bytes = good(2);
    let at = cut_bytes.windows(3).position(|w| w == b"cat").unwrap();
    cut_bytes[at - 1] = 9;
    let long_varint = [
        good(3),
        entry(b"x", int64, &{
            let mut raw = vec![0xff; 10];
            raw.push(0x01);
            let mut list = Vec::new();
            field(&mut list, 1, &raw);
            list
        }),
    ]
    .concat();
    let mut two_kinds = Vec::new();
    field(&mut two_kinds, 1, &bytes_list(&[b"a"]));
    field(&mut two_kinds, 2, &floats(&[1.0]));
    let ambiguous = {
        let mut body = Vec::new();
        field(&mut body, 1, b"both");
        field(&mut body, 2, &two_kinds);
        let mut out = Vec::new();
        field(&mut out, 1, &body);
        out
    };
    let odd_floats = {
        let mut list = Vec::new();
        field(&mut list, 1, &[0, 0, 0x80, 0x3f, 0]);
        entry(b"f", 2, &list)
    };
    let stray_field = {
        let mut body = Vec::new();
        field(&mut body, 1, b"k");
        field(&mut body, 3, b"");
        let mut out = Vec::new();
        field(&mut out, 1, &body);
        out
    };
    let mut cut_short = good(4);
    cut_short.truncate(cut_short.len() - 3);
    vec![
        good(0),
        good(1),
        cut_varint,
        good(2),
        cut_bytes,
        long_varint,
        entry(b"kind 9", 9, &packed(&[1])),
        ambiguous,
        odd_floats,
        stray_field,
        cut_short,
        entry(b"\xff\xfe", int64, &packed(&[1])),
        entry("é".as_bytes(), int64, &packed(&[1])),
        [good(5), entry(b"feature0", 1, &bytes_list(&[b"again"]))].concat(),
        // Unpacked integers and floats, as old writers wrote them.
        entry(b"unpacked", int64, &[0x08, 5, 0x08, 6]),
        entry(b"floats", 2, &[0x0d, 0, 0, 0x80, 0x3f]),
        good(6),
        good(7),
    ]
}

fn examples() -> Vec<Vec<u8>> {
    let mut records: Vec<Vec<u8>> = maps(3)
        .into_iter()
        .map(|map| {
            let mut example = Vec::new();
            field(&mut example, 1, &map);
            example
        })
        .collect();
    // Not protobuf at all; an empty Example; a SequenceExample, sound and with kinds mixed
    // over its steps; an Example with an unknown top-level field.
    records.push(vec![0xff, 0xff, 0xff]);
    records.push(Vec::new());
    let steps = |kinds: &[u32]| {
        let mut steps = Vec::new();
        for &kind in kinds {
            let mut feature = Vec::new();
            field(&mut feature, kind, &packed(&[1]));
            field(&mut steps, 1, &feature);
        }
        let mut body = Vec::new();
        field(&mut body, 1, b"frames");
        field(&mut body, 2, &steps);
        let mut lists = Vec::new();
        field(&mut lists, 1, &body);
        let mut example = Vec::new();
        field(&mut example, 1, &tutorial(3, 9));
        field(&mut example, 2, &lists);
        example
    };
    records.push(steps(&[3, 3]));
    records.push(steps(&[3, 2]));
    let mut extra = Vec::new();
    field(&mut extra, 1, &tutorial(3, 10));
    field(&mut extra, 7, b"ignored");
    records.push(extra);
    records
}

fn ofrecords() -> Vec<Vec<u8>> {
    let mut records = maps(5);
    // OneFlow's own kinds: doubles, int32 sign-extended and not, int32 beyond its range.
    let doubles = {
        let raw: Vec<u8> = [0.1f64, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut list = Vec::new();
        field(&mut list, 1, &raw);
        entry(b"d", 3, &list)
    };
    records.push([tutorial(5, 11), doubles].concat());
    records.push(entry(b"i32", 4, &packed(&[(-1i64) as u64, 7])));
    records.push(entry(b"i32", 4, &packed(&[u64::from(u32::MAX)])));
    records.push(entry(b"i32", 4, &packed(&[1 << 40])));
    // OFRecord files cannot hold an empty record: the writer refuses it.
    records.retain(|record| !record.is_empty());
    records
}

/// What the full walk says of each record: `None` when it is sound, else the error's text.
fn walked(records: &[Vec<u8>], format: Format) -> Vec<Option<String>> {
    records
        .iter()
        .map(|record| {
            let result = match format {
                Format::Tf => visit_example(record, |_, _, _| {}).map(|_| ()),
                Format::Of => visit_ofrecord(record, |_, _, _| {}),
            };
            result.err().map(|err| err.to_string())
        })
        .collect()
}

fn check(path: &Path, records: &[Vec<u8>], format: Format) {
    let expected = walked(records, format);
    let bad = expected.iter().filter(|e| e.is_some()).count();
    // The list must hold both, and kinds of damage enough to mean something.
    assert!(bad >= 8 && records.len() - bad >= 8, "{expected:?}");
    let verification = verify_file(path, format);
    assert_eq!(verification.good_records, (records.len() - bad) as u64);
    let problems: Vec<String> = verification
        .problems
        .iter()
        .map(|p| error_chain(p))
        .collect();
    let mut problems = problems.iter();
    for (index, expected) in expected.iter().enumerate() {
        let Some(expected) = expected else {
            continue;
        };
        let problem = problems.next().expect("a problem for each bad record");
        let place = format!("(record #{index})");
        assert!(
            problem.contains(&place) && problem.contains(expected.as_str()),
            "record {index}: {problem:?}, expected {expected:?}"
        );
    }
    assert_eq!(problems.next(), None);
}

#[test]
fn verify_reports_what_the_full_walk_reports_of_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let tf_path = dir.path().join("records.tfrecord");
    let examples = examples();
    let mut writer = ofconvert_tfrecord::Writer::new(std::fs::File::create(&tf_path).unwrap());
    for example in &examples {
        writer.write_record(example).unwrap();
    }
    writer.finish().unwrap();
    check(&tf_path, &examples, Format::Tf);

    let of_path = dir.path().join("part-00000");
    let ofrecords = ofrecords();
    let mut writer = ofconvert_ofrecord::Writer::new(std::fs::File::create(&of_path).unwrap());
    for record in &ofrecords {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap();
    check(&of_path, &ofrecords, Format::Of);
}
