//! A transcoder and a record checker kept over many records, as a worker keeps them: the
//! single pass then meets names it has seen in the record before, and skips the checks it
//! made on them. Each record must still come out as a fresh transcoder on the general path
//! makes it, and each check answer as the full walk answers.

use super::*;
use ofconvert_bridge::RecordChecker;

/// A record's entries: name, kind field, list.
type Entries = Vec<(String, u32, List)>;

/// Where a byte changes, and how.
type Damage = (prop::sample::Index, u8);

/// A run of records over a few names: each record takes its names in turn from `names`,
/// one for each of its lists, so that consecutive records often share every name, in order,
/// and sometimes differ: another name in one place, one name copied over another (a name
/// twice, of the length the shape knows there), more or fewer names. A record may have one
/// byte changed.
fn runs() -> impl Strategy<Value = Vec<(Entries, Option<Damage>)>> {
    let record = (
        prop::collection::vec(tf_list(), 1..5),
        prop::option::weighted(0.2, (any::<prop::sample::Index>(), key())),
        prop::option::weighted(
            0.2,
            (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
        ),
        prop::option::weighted(0.2, (any::<prop::sample::Index>(), 1..=255u8)),
    );
    (
        prop::collection::vec(key(), 1..5),
        prop::collection::vec(record, 1..10),
    )
        .prop_map(|(names, records)| {
            records
                .into_iter()
                .map(|(lists, renamed, copied, damage)| {
                    let mut entries: Vec<(String, u32, List)> = lists
                        .into_iter()
                        .enumerate()
                        .map(|(i, (field, list))| (names[i % names.len()].clone(), field, list))
                        .collect();
                    if let Some((at, name)) = renamed {
                        let at = at.index(entries.len());
                        entries[at].0 = name;
                    }
                    if let Some((to, from)) = copied {
                        let from = entries[from.index(entries.len())].0.clone();
                        let to = to.index(entries.len());
                        entries[to].0 = from;
                    }
                    (entries, damage)
                })
                .collect()
        })
}

/// The field of an int64 list in an OFRecord.
const OF_INT64: u32 = 5;

proptest! {
    #[test]
    fn a_kept_transcoder_and_checker_answer_as_fresh_general_ones(records in runs()) {
        let spec = MappingSpec::new();
        // A rule for an absent feature sends every record down the general path.
        let general = spec.clone().rename("\u{1}absent", "\u{1}renamed");
        let mut kept = Transcoder::new(spec).unwrap();
        let mut checker = RecordChecker::new();
        for (entries, damage) in records {
            let of_entries: Vec<_> = entries
                .iter()
                .map(|(k, f, l)| (k.clone(), if *f == 3 { OF_INT64 } else { *f }, l.clone()))
                .collect();
            let mut inputs = [(example_bytes(&join(&entries)), true), (join(&of_entries), false)];
            if let Some((at, flip)) = damage {
                for (input, _) in &mut inputs {
                    let at = at.index(input.len());
                    input[at] ^= flip;
                }
            }
            for (input, forward) in inputs {
                let run = |transcoder: &mut Transcoder| {
                    // Appended after bytes already there, as into a file's buffer.
                    let mut out = b"before".to_vec();
                    let result = match forward {
                        true => transcoder.tf_to_of_appending(&input, &mut out),
                        false => transcoder.of_to_tf_appending(&input, &mut out),
                    };
                    let mut features = Vec::new();
                    if result.is_ok() {
                        transcoder.visit_output_lists(&out, |name, kind, count, list| {
                            features.push((name.to_vec(), kind, count, list.to_vec()));
                        });
                        // The single pass's own list, when it took the record, says the same.
                        let listed: Vec<_> = transcoder
                            .single_pass_features()
                            .iter()
                            .map(|f| (out[f.name.clone()].to_vec(), f.kind, f.values, out[f.list.clone()].to_vec()))
                            .collect();
                        assert!(listed.is_empty() || listed == features, "{listed:?} {features:?}");
                    }
                    (result.map_err(|e| e.to_string()), out, features)
                };
                let fast = run(&mut kept);
                let slow = run(&mut Transcoder::new(general.clone()).unwrap());
                prop_assert_eq!(&fast, &slow, "{:?}", input);
                if fast.0.is_err() {
                    prop_assert_eq!(&fast.1, b"before");
                }
                let (checked, walked) = match forward {
                    true => (
                        checker.check_example(&input).map(|_| ()).map_err(|e| e.to_string()),
                        visit_example(&input, |_, _, _| {}).map(|_| ()).map_err(|e| e.to_string()),
                    ),
                    false => (
                        checker.check_ofrecord(&input).map_err(|e| e.to_string()),
                        visit_ofrecord(&input, |_, _, _| {}).map_err(|e| e.to_string()),
                    ),
                };
                prop_assert_eq!(checked, walked, "{:?}", input);
            }
        }
    }
}

/// The shape an output reports changes with its names and only with them.
#[test]
fn records_with_the_same_names_in_order_share_a_shape() {
    let mut transcoder = Transcoder::new(MappingSpec::new()).unwrap();
    let mut out = Vec::new();
    let mut shape = |names: &[&str], value: i64| {
        let entries: Vec<_> = names
            .iter()
            .map(|name| (name.to_string(), 3, List::Varint(vec![value as u64], true)))
            .collect();
        transcoder
            .tf_to_of(&example_bytes(&join(&entries)), &mut out)
            .map(|()| transcoder.output_shape())
    };
    let first = shape(&["a", "image/class/label/long"], 1).unwrap();
    assert!(first.is_some());
    assert_eq!(shape(&["a", "image/class/label/long"], 2).unwrap(), first);
    let other = shape(&["a", "image/class/label/lung"], 2).unwrap();
    assert!(other.is_some() && other != first);
    assert!(shape(&["a", "b", "c"], 2).unwrap() != other);
    // A name twice is the general path's: no shape.
    assert_eq!(shape(&["a", "a"], 2).unwrap(), None);
    assert!(shape(&["a", "b", "c"], 3).unwrap().is_some());
}
