//! The warnings of a conversion, for stderr: each said once, the datasets it concerns named
//! on its line (every dataset's in full with `-v`). Uses the engine's summary and `style`;
//! `report` calls it.

use std::io::{self, Write};

use ofconvert_engine::{Summary, IMAGE_ADVICE};

use crate::style::Style;

/// Writes the warnings, for stderr, each once: with `verbose` (`-v`), every dataset's in full;
/// else the same words of several datasets on one line naming them, the features missing
/// from some records on one line (each dataset with its features), and the images OneFlow
/// cannot decode on one line with the advice.
pub fn write_warnings(
    out: &mut impl Write,
    summary: &Summary,
    style: Style,
    verbose: bool,
) -> io::Result<()> {
    let prefix = style.warning_prefix();
    if verbose {
        for warning in summary.warnings() {
            writeln!(out, "{prefix} {warning}")?;
        }
        return Ok(());
    }
    let manifests: Vec<(&str, &ofconvert_engine::Manifest)> = summary
        .datasets
        .iter()
        .filter_map(|dataset| Some((dataset.name.as_str(), dataset.manifest.as_ref()?)))
        .collect();
    let advised = format!(": {IMAGE_ADVICE}");
    let mut same: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut missing: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut images: Vec<String> = Vec::new();
    for (name, manifest) in &manifests {
        for warning in &manifest.warnings {
            if let Some(what) = warning.strip_suffix(advised.as_str()) {
                images.push(format!("{name}: {what}"));
            } else if let Some(feature) = missing_feature(warning) {
                match missing.last_mut() {
                    Some((last, features)) if last == name => features.push(feature),
                    _ => missing.push((name, vec![feature])),
                }
            } else {
                match same.iter_mut().find(|(words, _)| words == warning) {
                    Some((_, names)) => names.push(name),
                    None => same.push((warning, vec![name])),
                }
            }
        }
    }
    for (warning, names) in same {
        match names.len() {
            1 => writeln!(out, "{prefix} {}: {warning}", names[0])?,
            n if n == manifests.len() => writeln!(out, "{prefix} all {n} datasets: {warning}")?,
            n => writeln!(
                out,
                "{prefix} {n} datasets ({}): {warning}",
                shown_names(&names)
            )?,
        }
    }
    if !missing.is_empty() {
        let each: Vec<String> = missing
            .iter()
            .map(|(name, features)| format!("{name}: {}", shown_names(features)))
            .collect();
        writeln!(
            out,
            "{prefix} features missing from some records, on which a OneFlow decoder of them \
             aborts (-v says how many): {}",
            each.join("; ")
        )?;
    }
    // One line a dataset: joined, five datasets made one line of a thousand characters.
    match &images[..] {
        [] => {}
        [one] => writeln!(out, "{prefix} {one}: {IMAGE_ADVICE}")?,
        several => {
            writeln!(
                out,
                "{prefix} {} datasets hold images OneFlow cannot decode: {IMAGE_ADVICE}",
                several.len()
            )?;
            for dataset in several {
                writeln!(out, "  {dataset}")?;
            }
        }
    }
    Ok(())
}

/// The feature a warning says is missing from some records, quoted.
fn missing_feature(warning: &str) -> Option<&str> {
    let quoted = warning.strip_prefix("feature ")?;
    let end = quoted.find("\" is missing from ")?;
    Some(&quoted[..=end])
}

/// Names in a line: the first few, then how many more.
pub fn shown_names(names: &[impl AsRef<str>]) -> String {
    const SHOWN: usize = 8;
    let mut shown: Vec<&str> = names.iter().take(SHOWN).map(AsRef::as_ref).collect();
    let more = format!("and {} more", names.len().saturating_sub(SHOWN));
    if names.len() > SHOWN {
        shown.push(&more);
    }
    shown.join(", ")
}
