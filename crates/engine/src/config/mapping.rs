//! The mapping rules a conversion takes, and `diff` for the records of its side A
//! ([`MappingRules`]): the spec the transcoder applies, the words manifests record it in,
//! and the rules checked against the data before converting. A rule names features by their
//! input names; the `*_if_present` rules apply where a dataset has the feature and pass
//! over one that has not (trees whose datasets differ), while the others fail a dataset
//! without it, as a misspelt name would otherwise do nothing in silence.

use ofconvert_bridge::{MappingSpec, SequencePolicy};

use super::values::{Cast, Offset, Preset, Rename};
use crate::front_end::{FrontEnd, OptionValue};
use crate::planning::rules::{NamedRule, Needs};

/// The input keys of the inception scripts' ImageNet records that the `imagenet` preset
/// renames: a dataset with none of them is not what the preset is for.
pub const IMAGENET_KEYS: [&str; 15] = [
    "image/encoded",
    "image/format",
    "image/filename",
    "image/colorspace",
    "image/class/synset",
    "image/class/text",
    "image/object/bbox/xmin",
    "image/object/bbox/xmax",
    "image/object/bbox/ymin",
    "image/object/bbox/ymax",
    "image/height",
    "image/width",
    "image/channels",
    "image/class/label",
    "image/object/bbox/label",
];

/// The mapping rules `tf2of` and `of2tf` take, in a [`ConvertConfig`](super::ConvertConfig),
/// and `diff` takes for the records of its side A: the same words, parsed the same way,
/// mapping the same way. A rule whose feature a record lacks does nothing to it; a
/// conversion fails a dataset without the feature of a rule not `_if_present`, `diff` fails
/// none.
#[derive(Clone, Debug, Default)]
pub struct MappingRules {
    /// A mapping preset (`tf2of`, `diff`).
    pub preset: Option<Preset>,
    /// Features renamed.
    pub rename: Vec<Rename>,
    /// Features cast.
    pub cast: Vec<Cast>,
    /// Integer features offset.
    pub offset: Vec<Offset>,
    /// The only features kept, when not empty.
    pub keep: Vec<String>,
    /// Features left out.
    pub drop: Vec<String>,
    /// Features renamed where a dataset has them (a dataset without is no failure).
    pub rename_if_present: Vec<Rename>,
    /// Features cast where a dataset has them.
    pub cast_if_present: Vec<Cast>,
    /// Integer features offset where a dataset has them.
    pub offset_if_present: Vec<Offset>,
    /// Features kept (with [`keep`](MappingRules::keep)'s) where a dataset has them.
    pub keep_if_present: Vec<String>,
    /// Features left out where a dataset has them.
    pub drop_if_present: Vec<String>,
    /// Doubles (and integers cast to a float type) rounded to the nearest float (`of2tf`,
    /// `diff`).
    pub lossy: bool,
}

impl MappingRules {
    /// The mapping the rules make, as a conversion given them maps (SequenceExamples
    /// flattened, as `diff` reads them); `None` when no rule is given.
    pub fn spec(&self) -> Option<MappingSpec> {
        let (spec, words) = self.described();
        if words.is_empty() {
            return None;
        }
        Some(spec.sequence(SequencePolicy::Flatten))
    }

    /// The mapping the rules make, and how they were asked for in the command line's words,
    /// which manifests record (the same words whichever front end asked, so that a run
    /// resumed by the other reads alike). A rule applies where its feature is whether or not
    /// it must be there: `--drop` and `--drop-if-present` map alike.
    pub(super) fn described(&self) -> (MappingSpec, Vec<String>) {
        let mut description = Vec::new();
        let mut spec = match self.preset {
            Some(Preset::Imagenet) => {
                description.push("--preset=imagenet".to_owned());
                MappingSpec::imagenet()
            }
            None => MappingSpec::new(),
        };
        for (flag, renames) in [
            ("rename", &self.rename),
            ("rename-if-present", &self.rename_if_present),
        ] {
            for rename in renames {
                spec = spec.rename(&rename.old, &rename.new);
                description.push(format!("--{flag}={rename}"));
            }
        }
        for (flag, casts) in [
            ("cast", &self.cast),
            ("cast-if-present", &self.cast_if_present),
        ] {
            for cast in casts {
                spec = spec.cast(&cast.name, cast.to);
                description.push(format!("--{flag}={cast}"));
            }
        }
        for (flag, offsets) in [
            ("offset", &self.offset),
            ("offset-if-present", &self.offset_if_present),
        ] {
            for offset in offsets {
                spec = spec.offset(&offset.name, offset.delta);
                description.push(format!("--{flag}={offset}"));
            }
        }
        if !self.keep.is_empty() || !self.keep_if_present.is_empty() {
            spec = spec.keep(self.keep.iter().chain(&self.keep_if_present).cloned());
            description.extend(self.keep.iter().map(|name| format!("--keep={name}")));
            description.extend(
                self.keep_if_present
                    .iter()
                    .map(|name| format!("--keep-if-present={name}")),
            );
        }
        for (flag, names) in [
            ("drop", &self.drop),
            ("drop-if-present", &self.drop_if_present),
        ] {
            for name in names {
                spec = spec.drop_feature(name);
                description.push(format!("--{flag}={name}"));
            }
        }
        if self.lossy {
            spec = spec.lossy(true);
            description.push("--lossy".to_owned());
        }
        (spec, description)
    }

    /// The rules in `words`, each with the input features it names, for the engine to
    /// check against the data before converting: a misspelt name fails its dataset rather
    /// than doing nothing. The `*_if_present` rules need nothing of a dataset, but a feature
    /// none of the run's datasets has is warned about.
    pub(super) fn named(&self, words: FrontEnd) -> Vec<NamedRule> {
        let mut rules = Vec::new();
        if let Some(Preset::Imagenet) = self.preset {
            rules.push(NamedRule {
                rule: words.option("preset", OptionValue::Text("imagenet")),
                features: IMAGENET_KEYS.iter().map(|key| key.to_string()).collect(),
                needs: Needs::Any,
            });
        }
        let each = |if_present: bool| {
            if if_present {
                Needs::Somewhere
            } else {
                Needs::Each
            }
        };
        for (name, renames, if_present) in [
            ("rename", &self.rename, false),
            ("rename_if_present", &self.rename_if_present, true),
        ] {
            for rename in renames {
                let rule = words.rule(name, &rename.old, OptionValue::Text(&rename.new));
                rules.push(NamedRule::one(rule, &rename.old, each(if_present)));
            }
        }
        for (name, casts, if_present) in [
            ("cast", &self.cast, false),
            ("cast_if_present", &self.cast_if_present, true),
        ] {
            for cast in casts {
                let to = cast.to.to_string();
                let rule = words.rule(name, &cast.name, OptionValue::Text(&to));
                rules.push(NamedRule::one(rule, &cast.name, each(if_present)));
            }
        }
        for (name, offsets, if_present) in [
            ("offset", &self.offset, false),
            ("offset_if_present", &self.offset_if_present, true),
        ] {
            for offset in offsets {
                let delta = offset.delta.to_string();
                let rule = words.rule(name, &offset.name, OptionValue::Number(&delta));
                rules.push(NamedRule::one(rule, &offset.name, each(if_present)));
            }
        }
        for (name, keep, needs) in [
            ("keep", &self.keep, Needs::Keep),
            (
                "keep_if_present",
                &self.keep_if_present,
                Needs::KeepSomewhere,
            ),
        ] {
            for feature in keep {
                rules.push(NamedRule::one(words.listed(name, feature), feature, needs));
            }
        }
        for (name, drop, if_present) in [
            ("drop", &self.drop, false),
            ("drop_if_present", &self.drop_if_present, true),
        ] {
            for feature in drop {
                let rule = words.listed(name, feature);
                rules.push(NamedRule::one(rule, feature, each(if_present)));
            }
        }
        rules
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_if_present_map_as_the_others_and_are_named_as_asked() {
        let py = MappingRules {
            rename_if_present: vec![Rename::new("a", "b").unwrap()],
            offset_if_present: vec![Offset::new("label", -1).unwrap()],
            drop_if_present: vec!["x".to_owned()],
            ..MappingRules::default()
        };
        let rules: Vec<(String, Needs)> = py
            .named(FrontEnd::Python)
            .into_iter()
            .map(|rule| (rule.rule, rule.needs))
            .collect();
        assert_eq!(
            rules,
            [
                (
                    "rename_if_present={\"a\": \"b\"}".to_owned(),
                    Needs::Somewhere
                ),
                (
                    "offset_if_present={\"label\": -1}".to_owned(),
                    Needs::Somewhere
                ),
                ("drop_if_present=[\"x\"]".to_owned(), Needs::Somewhere),
            ]
        );
        let (spec, words) = py.described();
        assert_eq!(
            words,
            [
                "--rename-if-present=a=b",
                "--offset-if-present=label=-1",
                "--drop-if-present=x"
            ]
        );
        let strict = MappingRules {
            rename: vec![Rename::new("a", "b").unwrap()],
            offset: vec![Offset::new("label", -1).unwrap()],
            drop: vec!["x".to_owned()],
            ..MappingRules::default()
        };
        assert_eq!(strict.described().0.to_string(), spec.to_string());
    }

    #[test]
    fn the_rules_diff_takes_map_as_a_conversion_given_them() {
        assert_eq!(MappingRules::default().spec(), None);
        let rules = MappingRules {
            preset: Some(Preset::Imagenet),
            rename: vec![Rename::new("a", "b").unwrap()],
            drop_if_present: vec!["x".to_owned()],
            ..MappingRules::default()
        };
        let expected = MappingSpec::imagenet()
            .rename("a", "b")
            .drop_feature("x")
            .sequence(SequencePolicy::Flatten);
        assert_eq!(rules.spec(), Some(expected));
    }
}
