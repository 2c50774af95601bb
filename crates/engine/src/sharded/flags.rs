//! A run's settings as the flags that ask for them, in a front end's words: what tells a
//! worker which of its flags differ from those of the run it was started into
//! (`--parts 2 in the run's plan, --parts 3 here`), rather than the settings' JSON.

use crate::front_end::{FrontEnd, OptionValue};
use crate::options::{Direction, OnCorrupt, OnEmpty, Settings};
use crate::recode::ImagePolicy;

/// The settings that differ between the run's plan (`stored`) and a worker (`given`), each
/// as both sides ask for it: `--parts 2 in the run's plan, --parts 3 here`, joined by `; `.
pub(crate) fn differing(stored: &Settings, given: &Settings, front_end: FrontEnd) -> String {
    let (stored_flags, given_flags) = (flags(stored, front_end), flags(given, front_end));
    let mut differs: Vec<String> = stored_flags
        .iter()
        .zip(&given_flags)
        .filter(|(was, is)| was != is)
        .map(|(was, is)| format!("{was} in the run's plan, {is} here"))
        .collect();
    if stored.mapping != given.mapping {
        differs.push(mapping_difference(stored, given, front_end));
    } else if (&stored.mapping_spec, &stored.mapping_fingerprint)
        != (&given.mapping_spec, &given.mapping_fingerprint)
    {
        // The same words meaning another mapping: another version of ofconvert.
        differs.push(format!(
            "the same mapping flags map otherwise (the run's plan: {}; here: {}): run every \
             worker with the same version of ofconvert",
            stored.mapping_spec, given.mapping_spec
        ));
    }
    differs.join("; ")
}

/// Every setting but the mapping, in a fixed order, as the flag (or keyword) that asks for
/// it, or says that it is left at its default.
fn flags(settings: &Settings, words: FrontEnd) -> Vec<String> {
    let number = |name: &str, value: Option<u64>| match value {
        Some(value) => words.option(name, OptionValue::Number(&value.to_string())),
        None => unset(words, name),
    };
    let text = |name: &str, value: &str| words.option(name, OptionValue::Text(value));
    let on_by_default = |name: &str, on: bool| match (on, words) {
        (false, _) => words.switch_off(name),
        (true, FrontEnd::CommandLine) => format!("without {}", words.switch_off(name)),
        (true, FrontEnd::Python) => format!("{name}=True"),
    };
    let images = match settings.images {
        ImagePolicy::Keep => text("images", "keep"),
        ImagePolicy::Raw => text("images", "raw"),
        ImagePolicy::Jpeg { quality } => format!(
            "{} {}",
            text("images", "jpeg"),
            words.option("jpeg_quality", OptionValue::Number(&quality.to_string()))
        ),
    };
    vec![
        match settings.direction {
            Direction::TfToOf => words.command("tf2of", "").trim_end().to_owned(),
            Direction::OfToTf => words.command("of2tf", "").trim_end().to_owned(),
        },
        text("part_prefix", &settings.part_prefix),
        number("part_digits", Some(settings.part_digits as u64)),
        number("parts", settings.sizing.parts),
        number("records_per_part", settings.sizing.records_per_part),
        number("max_part_bytes", settings.sizing.max_part_bytes),
        match settings.compression.as_str() {
            crate::options::AS_RECORDED => unset(words, "compression"),
            compression => text("compression", compression),
        },
        text("to", settings.to.name()),
        text("array_record_options", &settings.array_record_options),
        on_by_default("verify", settings.verify_checksums),
        text(
            "on_corrupt",
            match settings.on_corrupt {
                OnCorrupt::Fail => "fail",
                OnCorrupt::Skip => "skip",
            },
        ),
        text(
            "empty",
            match settings.on_empty {
                OnEmpty::Error => "error",
                OnEmpty::Skip => "skip",
            },
        ),
        images,
        on_by_default("side_files", settings.side_files),
    ]
}

/// An option left out: `without --parts`, `parts=None`.
fn unset(words: FrontEnd, name: &str) -> String {
    match words {
        FrontEnd::CommandLine => format!("without {}", words.name(name)),
        FrontEnd::Python => format!("{name}=None"),
    }
}

/// How the mapping rules differ: those only in the run's plan, those only here (or both
/// lists whole when the same rules come in another order).
fn mapping_difference(stored: &Settings, given: &Settings, words: FrontEnd) -> String {
    let rules = |mapping: &[String]| -> Vec<String> {
        mapping
            .iter()
            .map(|rule| mapping_rule(rule, words))
            .collect()
    };
    let (was, is) = (rules(&stored.mapping), rules(&given.mapping));
    let only = |these: &[String], those: &[String]| -> Vec<String> {
        these
            .iter()
            .filter(|rule| !those.contains(rule))
            .cloned()
            .collect()
    };
    let (only_was, only_is) = (only(&was, &is), only(&is, &was));
    let listed = |rules: &[String]| {
        if rules.is_empty() {
            "no mapping rules".to_owned()
        } else {
            rules.join(" ")
        }
    };
    if only_was.is_empty() && only_is.is_empty() {
        return format!(
            "mapping rules in another order: {} in the run's plan, {} here",
            listed(&was),
            listed(&is)
        );
    }
    let mut parts = Vec::new();
    if !only_was.is_empty() {
        parts.push(format!("{} only in the run's plan", listed(&only_was)));
    }
    if !only_is.is_empty() {
        parts.push(format!("{} only here", listed(&only_is)));
    }
    parts.join("; ")
}

/// A mapping rule as a manifest records it (the command line's `--rename=OLD=NEW`) in
/// `words`.
pub(crate) fn mapping_rule(rule: &str, words: FrontEnd) -> String {
    let Some(flag) = rule.strip_prefix("--") else {
        return rule.to_owned();
    };
    let (flag, value) = match flag.split_once('=') {
        Some((flag, value)) => (flag, Some(value)),
        None => (flag, None),
    };
    let name = flag.replace('-', "_");
    let Some(value) = value else {
        return words.switch(&name);
    };
    // A new name may hold a `=` (a rename splits at the first); types and numbers never do.
    let pair = match name.as_str() {
        "rename" | "rename_if_present" => value.split_once('='),
        "cast" | "cast_if_present" | "offset" | "offset_if_present" => value.rsplit_once('='),
        _ => None,
    };
    match (name.as_str(), pair) {
        ("offset" | "offset_if_present", Some((key, delta))) => {
            words.rule(&name, key, OptionValue::Number(delta))
        }
        (_, Some((key, to))) => words.rule(&name, key, OptionValue::Text(to)),
        ("keep" | "drop" | "keep_if_present" | "drop_if_present", None) => {
            words.listed(&name, value)
        }
        _ => words.option(&name, OptionValue::Text(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;

    fn settings(change: impl FnOnce(&mut Options)) -> Settings {
        let mut options = Options::new(Direction::TfToOf);
        change(&mut options);
        options.settings()
    }

    #[test]
    fn differing_settings_are_named_as_the_front_end_asks_for_them() {
        let stored = settings(|options| options.sizing.parts = Some(2));
        let given = settings(|options| {
            options.sizing.parts = Some(3);
            options.verify_checksums = false;
        });
        assert_eq!(
            differing(&stored, &given, FrontEnd::CommandLine),
            "--parts 2 in the run's plan, --parts 3 here; without --no-verify in the run's \
             plan, --no-verify here"
        );
        assert_eq!(
            differing(&stored, &given, FrontEnd::Python),
            "parts=2 in the run's plan, parts=3 here; verify=True in the run's plan, \
             verify=False here"
        );
        let default_sizing = settings(|_| {});
        assert_eq!(
            differing(&stored, &default_sizing, FrontEnd::CommandLine),
            "--parts 2 in the run's plan, without --parts here"
        );
        assert_eq!(
            differing(&stored, &default_sizing, FrontEnd::Python),
            "parts=2 in the run's plan, parts=None here"
        );
    }

    #[test]
    fn mapping_rules_that_differ_are_named_one_by_one() {
        let mut stored = settings(|_| {});
        stored.mapping = vec!["--rename=a=b=c".to_owned(), "--drop=x".to_owned()];
        let mut given = settings(|_| {});
        given.mapping = vec!["--drop=x".to_owned(), "--offset=label=-1".to_owned()];
        assert_eq!(
            differing(&stored, &given, FrontEnd::CommandLine),
            "--rename a=b=c only in the run's plan; --offset label=-1 only here"
        );
        assert_eq!(
            differing(&stored, &given, FrontEnd::Python),
            "rename={\"a\": \"b=c\"} only in the run's plan; offset={\"label\": -1} only here"
        );
        assert_eq!(mapping_rule("--lossy", FrontEnd::Python), "lossy=True");
        assert_eq!(
            mapping_rule("--preset=imagenet", FrontEnd::Python),
            "preset=\"imagenet\""
        );
        assert_eq!(mapping_rule("--keep=a", FrontEnd::Python), "keep=[\"a\"]");
        assert_eq!(
            mapping_rule("--cast=x=int32", FrontEnd::CommandLine),
            "--cast x=int32"
        );
    }
}
