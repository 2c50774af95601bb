//! The human-readable report of a conversion: what was written and how to open it, what
//! was skipped, what failed.

use std::io::{self, Write};

use indicatif::HumanBytes;
use ofconvert_engine::{DatasetStatus, DatasetSummary, Direction, Finished, FrontEnd, Summary};

use crate::progress::{plural, plural_u64};
use crate::style::Style;
use crate::warnings::{shown_names, write_warnings};

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
        "ofconvert: interrupted: {done} of {} dataset{} finished and published in {}; not \
         finished, {}:",
        summary.datasets.len(),
        plural(summary.datasets.len()),
        summary.output,
        left.len(),
    )?;
    for dataset in &left {
        match dataset.finished.filter(|finished| finished.parts > 0) {
            Some(finished) => writeln!(
                out,
                "  {}: {} part{} finished ({} record{}), kept for --resume",
                dataset.name,
                finished.parts,
                plural(finished.parts),
                finished.records,
                plural_u64(finished.records),
            )?,
            None => writeln!(out, "  {}: no part finished", dataset.name)?,
        }
    }
    writeln!(
        out,
        "Run the same command with --resume (in place of --overwrite, if given) to finish: \
         it keeps the finished datasets and parts."
    )
}

/// What a report ends: a conversion, or a commit publishing what workers converted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// `tf2of`, `of2tf`.
    Converted,
    /// `commit`.
    Published,
}

/// How much a report says: each dataset's notes and warnings in full with `verbose`, each
/// said once for all otherwise.
#[derive(Clone, Copy, Debug, Default)]
pub struct Detail {
    /// Every fact of every dataset, as the manifest has it.
    pub verbose: bool,
}

/// Prints a conversion's end: the `--json` summary (with its warnings), or the report on
/// stdout, then the warnings (unless `quiet`) and the failures on stderr, and last the line
/// that says what was done. A closed stdout (`| head`) must not hide the exit status: write
/// errors are ignored.
pub fn print_summary(
    summary: &Summary,
    json: bool,
    quiet: bool,
    detail: Detail,
    ending: Ending,
) -> serde_json::Result<()> {
    let mut out = io::stdout().lock();
    if json {
        let _ = serde_json::to_writer_pretty(&mut out, &summary.to_json());
        let _ = writeln!(out);
    } else if !quiet {
        let _ = write_report(&mut out, summary, detail);
    }
    let _ = out.flush();
    let style = Style::stderr();
    if !quiet {
        let _ = write_warnings(&mut io::stderr().lock(), summary, style, detail.verbose);
    }
    let _ = write_failures(&mut io::stderr().lock(), summary, style);
    if !json && !quiet {
        let _ = write_ending(&mut out, summary, ending);
        let _ = out.flush();
    }
    Ok(())
}

/// The datasets converted or kept.
fn good(summary: &Summary) -> Vec<&DatasetSummary> {
    summary
        .datasets
        .iter()
        .filter(|dataset| {
            matches!(
                dataset.status,
                DatasetStatus::Converted | DatasetStatus::Kept
            )
        })
        .collect()
}

/// The last line: what was done, in how long.
pub fn write_ending(out: &mut impl Write, summary: &Summary, ending: Ending) -> io::Result<()> {
    let good = good(summary);
    if summary.datasets.is_empty() {
        let what = match summary.direction {
            Direction::TfToOf => "TFRecord files",
            Direction::OfToTf => "OneFlow datasets (directories of part-N files)",
        };
        return writeln!(
            out,
            "No {what} found in {}: nothing written.",
            summary.input
        );
    }
    // A folder of files without records is no dataset to count.
    let good: Vec<_> = good.into_iter().filter(|d| !d.files_only).collect();
    let kept = good
        .iter()
        .filter(|dataset| dataset.status == DatasetStatus::Kept)
        .count();
    let (verb, from) = match ending {
        Ending::Converted if good.is_empty() => ("Wrote", format!(" from {}", summary.input)),
        Ending::Converted => ("Converted", format!(" from {}", summary.input)),
        Ending::Published => ("Published", String::new()),
    };
    let mut line = format!(
        "{verb} {} dataset{} ({} record{}, {} read, {} written){from} into {} in {:.2} s",
        good.len(),
        plural(good.len()),
        summary.records,
        plural_u64(summary.records),
        HumanBytes(summary.input_bytes),
        HumanBytes(summary.output_bytes),
        summary.output,
        summary.seconds,
    );
    if kept > 0 {
        line.push_str(&format!(" ({kept} kept from an earlier run)"));
    }
    if summary.kept_parts > 0 {
        line.push_str(&format!(
            "; {} part{} ({} record{}) kept from an earlier run, not read nor written again",
            summary.kept_parts,
            plural(summary.kept_parts),
            summary.kept_records,
            plural_u64(summary.kept_records)
        ));
    }
    if summary.failed > 0 {
        line.push_str(&format!("; {} failed (above)", summary.failed));
    }
    if let Some(finished) = finished_of_interrupted(summary) {
        line = format!("Interrupted: {line}; {finished}");
    }
    writeln!(out, "{line}.")
}

/// What an interrupted run finished of the datasets it did not: parts and records kept for
/// `--resume`, in words; none when it was not interrupted.
fn finished_of_interrupted(summary: &Summary) -> Option<String> {
    if !summary.interrupted {
        return None;
    }
    let left = summary
        .datasets
        .iter()
        .filter(|d| d.status == DatasetStatus::Interrupted)
        .count();
    let Finished { parts, records } = summary.kept_for_resume();
    Some(format!(
        "{parts} part{} ({records} record{}) of the {} dataset{} not finished kept for --resume",
        plural(parts),
        plural_u64(records),
        left,
        plural(left),
    ))
}

/// How to run `ofconvert` here: under `cargo run` no `ofconvert` is on PATH.
fn program() -> &'static str {
    if std::env::var_os("CARGO_PKG_NAME").is_some_and(|name| name == "ofconvert") {
        "cargo run --release -p ofconvert --"
    } else {
        "ofconvert"
    }
}

/// Writes the report of what was converted (or kept) and how to open it.
pub fn write_report(out: &mut impl Write, summary: &Summary, detail: Detail) -> io::Result<()> {
    let good = good(summary);
    let width = good.iter().map(|d| d.name.len()).max().unwrap_or(0);
    // Notes that hold for several datasets are said once, after them all.
    let mut notes: Vec<(String, usize)> = Vec::new();
    for dataset in &good {
        let Some(manifest) = &dataset.manifest else {
            continue;
        };
        let kept = if dataset.status == DatasetStatus::Kept {
            " (kept)"
        } else {
            ""
        };
        // What the dataset holds on its first line: its records and parts, its images, the
        // files carried with it.
        let mut holds = if dataset.files_only {
            "no records".to_owned()
        } else {
            // OneFlow's datasets are of parts; TFRecord and ArrayRecord ones, of files.
            let unit = match summary.direction {
                Direction::TfToOf => "part",
                Direction::OfToTf => "file",
            };
            format!(
                "{} record{} in {} {unit}{}",
                manifest.records,
                plural_u64(manifest.records),
                manifest.parts.len(),
                plural(manifest.parts.len()),
            )
        };
        for feature in &manifest.schema.features {
            if let Some(images) = &feature.images {
                holds.push_str(&format!(
                    "; images in {}: {}",
                    feature.name,
                    images.summary()
                ));
            }
        }
        if !manifest.side_files.is_empty() {
            let names: Vec<&str> = manifest
                .side_files
                .iter()
                .map(|f| f.name.as_str())
                .collect();
            holds.push_str(&format!("; with {}", shown_names(&names)));
        }
        writeln!(out, "  {:width$}  {holds}{kept}", dataset.name)?;
        if dataset.files_only {
            write_results(out, manifest, None, detail)?;
            continue;
        }
        if let Some(reader) = &manifest.oneflow {
            // In a store, a comment line with the command that copies the parts comes first.
            for line in reader.python.lines() {
                writeln!(out, "      {line}")?;
            }
            for note in &reader.notes {
                if detail.verbose {
                    writeln!(out, "      note: {note}")?;
                } else if let Some(seen) = notes.iter_mut().find(|(seen, _)| seen == note) {
                    seen.1 += 1;
                } else {
                    notes.push((note.clone(), 1));
                }
            }
        }
        if let Some(reader) = &manifest.tensorflow {
            writeln!(out, "      {}", reader.python)?;
        }
        write_results(out, manifest, dataset.resumed.as_ref(), detail)?;
    }
    if !good.is_empty() {
        writeln!(out)?;
    }
    for (note, datasets) in &notes {
        match datasets {
            1 => writeln!(out, "note: {note}")?,
            n => writeln!(out, "note ({n} datasets): {note}")?,
        }
    }
    // What the manifests hold, and the files carried, on one line.
    let mut closing = Vec::new();
    if !good.is_empty() {
        let program = program();
        closing.push(match summary.direction {
            Direction::TfToOf => format!(
                "Each dataset's ofconvert-manifest.json has its parts and schema; \
                 `{program} schema --oneflow DIR` prints the decoders for its features."
            ),
            Direction::OfToTf => format!(
                "Each dataset's ofconvert-manifest.json has its files and schema; \
                 `{program} schema --tf DIR` prints the feature_description to parse them."
            ),
        });
    }
    if summary.side_files > 0 {
        closing.push(format!(
            "Carried {} side file{} (the other files of the datasets' folders, and those \
             outside them to the same place) beside them; --no-side-files leaves them out.",
            summary.side_files,
            plural(summary.side_files)
        ));
    }
    if !closing.is_empty() {
        writeln!(out, "{}", closing.join(" "))?;
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

/// What a dataset's conversion did besides copying records: images re-encoded, class
/// names, side files, values rounded, records skipped; with `verbose`, also its files.
fn write_results(
    out: &mut impl Write,
    manifest: &ofconvert_engine::Manifest,
    resumed: Option<&ofconvert_engine::Resumed>,
    detail: Detail,
) -> io::Result<()> {
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
    // The details (offsets) follow the last count line, which ends with a colon.
    let colon = |last: bool| {
        if last && !skipped.details.is_empty() {
            ":"
        } else {
            ""
        }
    };
    if skipped.recovered > 0 {
        writeln!(
            out,
            "      recovered {} record{} after a damaged length{}",
            skipped.recovered,
            plural_u64(skipped.recovered),
            colon(skipped.corrupt == 0)
        )?;
    }
    if skipped.corrupt > 0 {
        writeln!(
            out,
            "      skipped {} damaged record{}{}",
            skipped.corrupt,
            plural_u64(skipped.corrupt),
            colon(true)
        )?;
    }
    for detail in &skipped.details {
        writeln!(out, "        {detail}")?;
    }
    if let Some(resumed) = resumed {
        writeln!(
            out,
            "      kept {} part{} ({}) an earlier run finished",
            resumed.parts.len(),
            plural(resumed.parts.len()),
            HumanBytes(resumed.bytes)
        )?;
    }
    if detail.verbose {
        let kept =
            |name: &String, names: Option<&Vec<String>>| names.is_some_and(|n| n.contains(name));
        for input in &manifest.inputs {
            let verb = match kept(&input.path, resumed.map(|r| &r.inputs)) {
                true => "read by the earlier run:",
                false => "read",
            };
            writeln!(
                out,
                "      {verb} {} ({})",
                input.path,
                HumanBytes(input.bytes)
            )?;
        }
        for part in &manifest.parts {
            let verb = match kept(&part.name, resumed.map(|r| &r.parts)) {
                true => "kept",
                false => "wrote",
            };
            writeln!(
                out,
                "      {verb} {} ({}, {} record{})",
                part.name,
                HumanBytes(part.bytes),
                part.records,
                plural_u64(part.records)
            )?;
        }
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
    let left = summary
        .datasets
        .iter()
        .filter(|dataset| dataset.left.is_some())
        .count();
    let what_was_left = match (left, summary.failed) {
        (0, 1) => "nothing its conversion wrote was left in the output".to_owned(),
        (0, _) => "nothing their conversions wrote was left in the output".to_owned(),
        (left, failed) if left == failed => "what each left is below".to_owned(),
        _ => "what a conversion left is below, nothing of the others".to_owned(),
    };
    writeln!(
        out,
        "{prefix} {} dataset{} failed; {what_was_left}:",
        summary.failed,
        plural(summary.failed),
    )?;
    for dataset in &summary.datasets {
        if dataset.status == DatasetStatus::Failed {
            writeln!(
                out,
                "  {}: {}",
                dataset.name,
                dataset.error.as_deref().unwrap_or("unknown error")
            )?;
            if dataset.previous_kept {
                writeln!(
                    out,
                    "  {}: the dataset published there before is left as it was",
                    dataset.name
                )?;
            }
            if let Some(left) = &dataset.left {
                writeln!(out, "  {}: {left}", dataset.name)?;
            }
        }
    }
    if let Some(hint) = ofconvert_engine::config::failure_hint(summary, FrontEnd::CommandLine) {
        writeln!(out, "{prefix} hint: {hint}")?;
    }
    Ok(())
}

/// With `--verbose`: every request to a store that failed (no answer, a 429 or a 5xx) and
/// was tried again or ended the run, for stderr.
pub fn write_failed_tries(out: &mut impl Write) {
    let (count, tries) = ofconvert_engine::storage::take_failed_tries();
    if count == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "{count} request{} to a store failed and {} tried again (or ended the run):",
        if count == 1 { "" } else { "s" },
        if count == 1 { "was" } else { "were" }
    );
    for line in &tries {
        let _ = writeln!(out, "  {line}");
    }
    if count > tries.len() as u64 {
        let _ = writeln!(out, "  and {} more", count - tries.len() as u64);
    }
}
