//! The human-readable report of a conversion: what was written and how to open it, what
//! was skipped, what failed.

use std::io::{self, Write};

use indicatif::HumanBytes;
use ofconvert_engine::{DatasetStatus, DatasetSummary, Direction, FrontEnd, Summary};

use crate::progress::{plural, plural_u64};
use crate::style::Style;

/// Tells what an interrupted run finished, what it removed, and how to finish it.
pub fn write_interrupted(out: &mut impl Write, summary: &Summary) -> io::Result<()> {
    let done = summary
        .datasets
        .iter()
        .filter(|d| matches!(d.status, DatasetStatus::Converted | DatasetStatus::Kept))
        .count();
    let left: Vec<&DatasetSummary> = summary
        .datasets
        .iter()
        .filter(|d| d.status == DatasetStatus::Interrupted)
        .collect();
    writeln!(
        out,
        "ofconvert: interrupted: {done} of {} dataset{} finished and published in {}; the \
         temporary files of the {} not finished were removed:",
        summary.datasets.len(),
        plural(summary.datasets.len()),
        summary.output,
        left.len(),
    )?;
    for dataset in &left {
        writeln!(out, "  {}", dataset.name)?;
    }
    writeln!(
        out,
        "Run the same command with --resume (in place of --overwrite, if given) to finish: \
         it keeps the finished datasets."
    )
}

/// Prints a conversion's end: the `--json` summary (with its warnings) or the report on
/// stdout, then the warnings (unless `quiet`) and the failures on stderr. A closed stdout
/// (`| head`) must not hide the exit status: write errors are ignored.
pub fn print_summary(summary: &Summary, json: bool, quiet: bool) -> serde_json::Result<()> {
    let mut out = io::stdout().lock();
    if json {
        let _ = serde_json::to_writer_pretty(&mut out, &summary.to_json());
        let _ = writeln!(out);
    } else if !quiet {
        let _ = write_report(&mut out, summary);
    }
    let _ = out.flush();
    let style = Style::stderr();
    if !quiet {
        let _ = write_warnings(&mut io::stderr().lock(), summary, style);
    }
    let _ = write_failures(&mut io::stderr().lock(), summary, style);
    Ok(())
}

/// Writes the report of what was converted (or kept) and how to open it.
pub fn write_report(out: &mut impl Write, summary: &Summary) -> io::Result<()> {
    let good: Vec<&DatasetSummary> = summary
        .datasets
        .iter()
        .filter(|dataset| {
            matches!(
                dataset.status,
                DatasetStatus::Converted | DatasetStatus::Kept
            )
        })
        .collect();
    let kept = good
        .iter()
        .filter(|dataset| dataset.status == DatasetStatus::Kept)
        .count();
    writeln!(
        out,
        "{} {} dataset{} ({} record{}, {} read, {} written) from {} into {} in {:.2} s{}",
        if good.is_empty() {
            "Wrote"
        } else {
            "Converted"
        },
        good.len(),
        plural(good.len()),
        summary.records,
        plural_u64(summary.records),
        HumanBytes(summary.input_bytes),
        HumanBytes(summary.output_bytes),
        summary.input,
        summary.output,
        summary.seconds,
        match kept {
            0 => String::new(),
            n => format!(" ({n} kept from an earlier run)"),
        }
    )?;
    if summary.datasets.is_empty() {
        let what = match summary.direction {
            Direction::TfToOf => "TFRecord files",
            Direction::OfToTf => "OneFlow datasets (directories of part-N files)",
        };
        writeln!(out, "No {what} found in {}.", summary.input)?;
    }
    let width = good.iter().map(|d| d.name.len()).max().unwrap_or(0);
    if !good.is_empty() {
        writeln!(out)?;
    }
    for dataset in &good {
        let Some(manifest) = &dataset.manifest else {
            continue;
        };
        writeln!(
            out,
            "  {:width$}  {} record{} in {} part{}{}",
            dataset.name,
            manifest.records,
            plural_u64(manifest.records),
            manifest.parts.len(),
            plural(manifest.parts.len()),
            if dataset.status == DatasetStatus::Kept {
                " (kept)"
            } else {
                ""
            },
        )?;
        if let Some(reader) = &manifest.oneflow {
            writeln!(out, "      {}", reader.python)?;
            for note in &reader.notes {
                writeln!(out, "      note: {note}")?;
            }
        }
        for feature in &manifest.schema.features {
            if let Some(images) = &feature.images {
                writeln!(
                    out,
                    "      images in {}: {}",
                    feature.name,
                    images.summary()
                )?;
            }
        }
        if let Some(reader) = &manifest.tensorflow {
            writeln!(out, "      {}", reader.python)?;
        }
        if let Some(described) = manifest
            .image_conversion
            .as_ref()
            .and_then(|conversion| conversion.describe())
        {
            writeln!(out, "      {described}")?;
        }
        for feature in &manifest.schema.features {
            if let Some(names) = &feature.class_names {
                writeln!(
                    out,
                    "      class names of {} ({}): {}",
                    feature.name,
                    names.len(),
                    shown_names(names)
                )?;
            }
        }
        if !manifest.side_files.is_empty() {
            let names: Vec<&str> = manifest
                .side_files
                .iter()
                .map(|f| f.name.as_str())
                .collect();
            writeln!(out, "      with {}", shown_names(&names))?;
        }
        if let Some(rounded) = manifest.rounded_values {
            writeln!(
                out,
                "      --lossy rounded {rounded} value{} to the nearest float",
                plural_u64(rounded)
            )?;
        }
        let skipped = &manifest.skipped;
        if skipped.empty > 0 {
            writeln!(
                out,
                "      skipped {} record{} without features",
                skipped.empty,
                plural_u64(skipped.empty)
            )?;
        }
        if skipped.corrupt > 0 {
            writeln!(
                out,
                "      skipped {} damaged record{}:",
                skipped.corrupt,
                plural_u64(skipped.corrupt)
            )?;
            for detail in &skipped.details {
                writeln!(out, "        {detail}")?;
            }
        }
    }
    if !good.is_empty() {
        writeln!(out)?;
        match summary.direction {
            Direction::TfToOf => writeln!(
                out,
                "Each dataset's ofconvert-manifest.json has its parts and schema; \
                 `ofconvert schema --oneflow DIR` prints the decoders for its features."
            )?,
            Direction::OfToTf => writeln!(
                out,
                "Each dataset's ofconvert-manifest.json has its files and schema; \
                 `ofconvert schema --tf DIR` prints the feature_description to parse them."
            )?,
        }
    }
    if summary.side_files > 0 {
        writeln!(
            out,
            "Carried {} side file{} (the other files of the datasets' folders) beside them; \
             --no-side-files leaves them out.",
            summary.side_files,
            plural(summary.side_files)
        )?;
    }
    if !summary.skipped_files.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "Skipped {} file{}:",
            summary.skipped_files.len(),
            plural(summary.skipped_files.len())
        )?;
        for skipped in &summary.skipped_files {
            writeln!(out, "  {}: {}", skipped.path, skipped.reason)?;
        }
    }
    Ok(())
}

/// Names in a line: the first few, then how many more.
fn shown_names(names: &[impl AsRef<str>]) -> String {
    const SHOWN: usize = 8;
    let mut shown: Vec<&str> = names.iter().take(SHOWN).map(AsRef::as_ref).collect();
    let more = format!("and {} more", names.len().saturating_sub(SHOWN));
    if names.len() > SHOWN {
        shown.push(&more);
    }
    shown.join(", ")
}

/// Writes the warnings, for stderr.
pub fn write_warnings(out: &mut impl Write, summary: &Summary, style: Style) -> io::Result<()> {
    for warning in summary.warnings() {
        writeln!(out, "{} {warning}", style.warning_prefix())?;
    }
    Ok(())
}

/// Writes the failures, for stderr: input that could not be read, datasets that failed.
pub fn write_failures(out: &mut impl Write, summary: &Summary, style: Style) -> io::Result<()> {
    let prefix = style.error_prefix();
    if !summary.unreadable.is_empty() {
        let count = summary.unreadable.len();
        writeln!(
            out,
            "{prefix} {count} input path{} could not be read; any records in {} are not in \
             the output:",
            plural(count),
            if count == 1 { "it" } else { "them" }
        )?;
        for unreadable in &summary.unreadable {
            writeln!(out, "  {}: {}", unreadable.path, unreadable.reason)?;
        }
    }
    if summary.failed == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "{prefix} {} dataset{} failed; nothing of {} was left in the output:",
        summary.failed,
        plural(summary.failed),
        if summary.failed == 1 { "it" } else { "them" }
    )?;
    for dataset in &summary.datasets {
        if dataset.status == DatasetStatus::Failed {
            writeln!(
                out,
                "  {}: {}",
                dataset.name,
                dataset.error.as_deref().unwrap_or("unknown error")
            )?;
        }
    }
    if let Some(hint) = ofconvert_engine::config::failure_hint(summary, FrontEnd::CommandLine) {
        writeln!(out, "{prefix} hint: {hint}")?;
    }
    Ok(())
}
