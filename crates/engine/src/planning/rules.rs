//! Mapping rules checked against the data before anything is written: a rule that names a
//! feature no record has is almost always a typo (`image/clas/label`), and applied as it
//! stands it would change nothing and pass in silence.
//!
//! The check reads the first records of each dataset; a dataset whose rules miss fails
//! (its [`DatasetPlan::problem`]) with the rule named as the caller spells it, the
//! features the records do have, and the closest name.

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::{Error, ErrorKind};
use crate::feature_names::{closest, listed, no_such_feature, record_feature_names};
use crate::naming::names::Format;
use crate::options::Checksums;
use crate::options::Direction;
use crate::planning::dataset::{DatasetPlan, Plan};
use crate::records::RecordReader;
use crate::storage::Storage;

/// How many records of each dataset the check reads, at most.
pub const RULE_SAMPLE: u64 = 1000;

/// A mapping rule as the caller states it, with the input features it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedRule {
    /// The rule as the user wrote it, for messages: `--rename image/clas/label=label`.
    pub rule: String,
    /// The input features it names.
    pub features: Vec<String>,
    /// What the rule needs of the data.
    pub needs: Needs,
}

/// What a rule needs to find in a dataset's records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Each feature it names (`--rename`, `--cast`, `--offset`, `--drop`).
    Each,
    /// At least one of the features it names (a preset's keys).
    Any,
    /// Each feature it names, and every record must keep at least one of them (`--keep`:
    /// a record left with no feature cannot be written).
    Keep,
    /// Nothing of a dataset (`--drop-if-present` and the other `-if-present` rules, for
    /// trees whose datasets differ); a feature that none of the run's datasets has is
    /// warned about, as a likely typo.
    Somewhere,
    /// What [`Somewhere`](Needs::Somewhere) needs, and every record must keep at least one
    /// of the features kept (`--keep-if-present`).
    KeepSomewhere,
}

impl Needs {
    /// Whether the rule keeps the features it names (and drops the others).
    fn keeps(self) -> bool {
        matches!(self, Needs::Keep | Needs::KeepSomewhere)
    }

    /// Whether the rule asks nothing of a single dataset.
    fn anywhere(self) -> bool {
        matches!(self, Needs::Somewhere | Needs::KeepSomewhere)
    }
}

impl NamedRule {
    /// A rule about one feature.
    pub fn one(rule: impl Into<String>, feature: impl Into<String>, needs: Needs) -> NamedRule {
        NamedRule {
            rule: rule.into(),
            features: vec![feature.into()],
            needs,
        }
    }
}

/// The feature names of a dataset's first records.
#[derive(Debug, Default)]
struct Sample {
    /// Every name seen.
    names: BTreeSet<String>,
    /// Records read, and whether that was all of them.
    read: u64,
    whole: bool,
    /// The names of each record read, with its file and index.
    records: Vec<(usize, u64, BTreeSet<String>)>,
}

/// Reads up to `limit` records of `dataset` and collects their feature names. Records that
/// do not parse, and damage, end nothing here: the conversion reports them.
fn sample(
    storage: &dyn Storage,
    dataset: &DatasetPlan,
    format: Format,
    limit: u64,
    keep_records: bool,
) -> Sample {
    let mut sample = Sample::default();
    let mut read = 0u64;
    let mut buf = Vec::new();
    for (file, input) in dataset.inputs.iter().enumerate() {
        let opened =
            RecordReader::open_at(storage, &input.path, format, Checksums::Verify, None, None);
        let Ok(mut reader) = opened else {
            continue;
        };
        while read < limit {
            let Ok(Some(at)) = reader.read(&mut buf) else {
                break;
            };
            read += 1;
            let mut names = BTreeSet::new();
            if !record_feature_names(&buf, format, &mut names) {
                continue;
            }
            sample.names.extend(names.iter().cloned());
            if keep_records {
                sample.records.push((file, at.index, names));
            }
        }
        if read >= limit {
            break;
        }
    }
    sample.read = read;
    sample.whole = read < limit;
    sample
}

/// What is wrong with `rules` on `sample`, if anything.
fn judge(rules: &[NamedRule], sample: &Sample, dataset: &DatasetPlan) -> Option<String> {
    if sample.names.is_empty() {
        // No record could be read or parsed: nothing to judge by.
        return None;
    }
    let read = if sample.whole {
        format!("its {} records", sample.read)
    } else {
        format!("its first {} records", sample.read)
    };
    let has = |name: &String| sample.names.contains(name);
    for rule in rules {
        let missing: Vec<&String> = rule.features.iter().filter(|name| !has(name)).collect();
        let fails = match rule.needs {
            Needs::Each | Needs::Keep => !missing.is_empty(),
            Needs::Any => missing.len() == rule.features.len(),
            Needs::Somewhere | Needs::KeepSomewhere => false,
        };
        if !fails {
            continue;
        }
        let mut message = match rule.needs {
            Needs::Any => format!(
                "{} matches nothing: none of the {} features it maps ({}, ...) is in {read}",
                rule.rule,
                rule.features.len(),
                rule.features[..rule.features.len().min(2)].join(", ")
            ),
            _ => {
                let missing = no_such_feature(missing[0], &read, &sample.names);
                return Some(format!("{} matches nothing: {missing}", rule.rule));
            }
        };
        message.push_str(&format!("; the dataset has: {}", listed(&sample.names)));
        return Some(message);
    }
    let kept: BTreeSet<&String> = rules
        .iter()
        .filter(|rule| rule.needs.keeps())
        .flat_map(|rule| &rule.features)
        .collect();
    if kept.is_empty() {
        return None;
    }
    for (file, index, names) in &sample.records {
        if !names.is_empty() && !names.iter().any(|name| kept.contains(name)) {
            let keep: Vec<String> = rules
                .iter()
                .filter(|rule| rule.needs.keeps())
                .map(|rule| rule.rule.clone())
                .collect();
            let names: BTreeSet<String> = names.clone();
            return Some(format!(
                "{} leaves record #{index} of {} with no feature (it has: {}); OneFlow \
                 cannot read an empty record",
                keep.join(" "),
                dataset.inputs[*file].path.display(),
                listed(&names)
            ));
        }
    }
    None
}

/// Checks `rules` against the first [`RULE_SAMPLE`] records of every dataset of `plan`
/// that has no problem yet; a dataset whose rules name features its records do not have
/// fails before anything of it is written. A rule that needs its feature only somewhere in
/// the run ([`Needs::Somewhere`]) and finds it nowhere is a warning of every dataset.
pub fn check_rules(plan: &mut Plan, rules: &[NamedRule]) {
    if rules.is_empty() {
        return;
    }
    let format = match plan.direction {
        Direction::TfToOf => Format::Tf,
        Direction::OfToTf => Format::Of,
    };
    let keep = rules.iter().any(|rule| rule.needs.keeps());
    let mut seen = BTreeSet::new();
    for dataset in plan.datasets.iter_mut() {
        if dataset.problem.is_some() {
            continue;
        }
        let sample = sample(&*plan.input_storage, dataset, format, RULE_SAMPLE, keep);
        seen.extend(sample.names.iter().cloned());
        if let Some(message) = judge(rules, &sample, dataset) {
            let source = dataset
                .inputs
                .first()
                .and_then(|input| input.path.parent())
                .unwrap_or(Path::new("."))
                .to_path_buf();
            let why =
                ofconvert_bridge::Error::from(ofconvert_bridge::ErrorKind::InvalidSpec(message));
            dataset.problem = Some(Error::new(ErrorKind::Mapping(why)).in_file(&source));
        }
    }
    for warning in nowhere(rules, &seen) {
        for dataset in plan.datasets.iter_mut() {
            if dataset.problem.is_none() {
                dataset.warnings.push(warning.clone());
            }
        }
    }
}

/// What is said of each rule that needs its feature only somewhere in the run and found it
/// in none of the features `seen` (none when nothing could be read: nothing to judge by).
fn nowhere(rules: &[NamedRule], seen: &BTreeSet<String>) -> Vec<String> {
    if seen.is_empty() {
        return Vec::new();
    }
    let mut warnings = Vec::new();
    for rule in rules.iter().filter(|rule| rule.needs.anywhere()) {
        for feature in rule.features.iter().filter(|name| !seen.contains(*name)) {
            let mut warning = format!(
                "{} matches nothing: no dataset of the run has a feature {feature:?} in the \
                 records read",
                rule.rule
            );
            if let Some(near) = closest(feature, seen) {
                warning.push_str(&format!("; did you mean {near:?}?"));
            }
            warnings.push(warning);
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_for_features_where_present_is_warned_about_only_when_none_has_it() {
        let seen: BTreeSet<String> = ["feature0", "label"]
            .into_iter()
            .map(String::from)
            .collect();
        let rule = |feature: &str| {
            NamedRule::one(
                format!("--drop-if-present {feature}"),
                feature,
                Needs::Somewhere,
            )
        };
        assert!(nowhere(&[rule("feature0")], &seen).is_empty());
        assert_eq!(
            nowhere(&[rule("featur0")], &seen),
            [
                "--drop-if-present featur0 matches nothing: no dataset of the run has a feature \
              \"featur0\" in the records read; did you mean \"feature0\"?"
            ]
        );
        assert!(nowhere(&[rule("featur0")], &BTreeSet::new()).is_empty());
    }
}
