//! Feature names as messages speak of them: the names a record's features have, and what is
//! said of a name asked for that none of them is (almost always a typo, `image/clas/label`):
//! the names there are, and the closest one. The command line's rule checks and the Python
//! datasets' `features=` both say it in these words.

use std::collections::BTreeSet;

use crate::naming::names::Format;

/// Adds the names of the features of `payload` (a record of `format`: an `Example`, its
/// context and feature lists for a `SequenceExample`, or an OFRecord) to `names`; false,
/// adding none, when it does not parse.
pub fn record_feature_names(payload: &[u8], format: Format, names: &mut BTreeSet<String>) -> bool {
    let mut found = Vec::new();
    let mut add = |name: &[u8], _: Option<ofconvert_bridge::FeatureKind>, _: usize| {
        found.push(String::from_utf8_lossy(name).into_owned());
    };
    let parsed = match format {
        Format::Tf => ofconvert_bridge::visit_example(payload, &mut add).is_ok(),
        Format::Of => ofconvert_bridge::visit_ofrecord(payload, &mut add).is_ok(),
    };
    if parsed {
        names.extend(found);
    }
    parsed
}

/// What is said of the feature `wanted` that none of `names` (the features of the records
/// `read` describes: `its first 1000 records`) is: `no feature "x" in {read}; the dataset
/// has: a, b; did you mean "y"?`, the last part when a name is close enough to be meant.
pub fn no_such_feature(wanted: &str, read: &str, names: &BTreeSet<String>) -> String {
    let mut message = format!(
        "no feature {wanted:?} in {read}; the dataset has: {}",
        listed(names)
    );
    if let Some(near) = closest(wanted, names) {
        message.push_str(&format!("; did you mean {near:?}?"));
    }
    message
}

/// The Levenshtein distance between two names, in characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// The name of `names` closest to `wanted`, when it is close enough to be a likely typo
/// (a third of its characters differ, or two).
pub(crate) fn closest<'a>(wanted: &str, names: &'a BTreeSet<String>) -> Option<&'a str> {
    let (name, far) = names
        .iter()
        .map(|name| (name, distance(wanted, name)))
        .min_by_key(|(_, far)| *far)?;
    (far <= (wanted.chars().count() / 3).max(2)).then_some(name.as_str())
}

/// `a, b, c` (at most 20, then how many more).
pub(crate) fn listed(names: &BTreeSet<String>) -> String {
    const SHOWN: usize = 20;
    let mut text = names
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn distances() {
        assert_eq!(distance("image/clas/label", "image/class/label"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("same", "same"), 0);
        let names = names(&["label", "image/class/label", "image/encoded"]);
        assert_eq!(
            closest("image/clas/label", &names),
            Some("image/class/label")
        );
        assert_eq!(closest("nosuch", &names), None);
    }

    #[test]
    fn a_missing_feature_is_said_with_the_names_there_are_and_the_closest() {
        let have = names(&["id", "label"]);
        assert_eq!(
            no_such_feature("labl", "its 3 records", &have),
            "no feature \"labl\" in its 3 records; the dataset has: id, label; did you mean \
             \"label\"?"
        );
        assert_eq!(
            no_such_feature("weights", "its 3 records", &have),
            "no feature \"weights\" in its 3 records; the dataset has: id, label"
        );
        let many: BTreeSet<String> = (0..25).map(|n| format!("f{n:02}")).collect();
        assert!(listed(&many).ends_with("f19 and 5 more"));
    }

    #[test]
    fn a_record_s_names_are_those_of_its_features_and_nothing_of_a_damaged_one() {
        let example = ofconvert_bridge::tf::example([
            ("label", ofconvert_bridge::tf::int64_feature([3])),
            (
                "image",
                ofconvert_bridge::tf::bytes_feature([b"x".to_vec()]),
            ),
        ]);
        let mut payload = Vec::new();
        ofconvert_bridge::encode_example(&example, &mut payload);
        let mut seen = BTreeSet::new();
        assert!(record_feature_names(&payload, Format::Tf, &mut seen));
        assert_eq!(seen, names(&["image", "label"]));
        let mut none = BTreeSet::new();
        assert!(!record_feature_names(
            &payload[..payload.len() - 1],
            Format::Tf,
            &mut none
        ));
        assert!(none.is_empty());
    }
}
