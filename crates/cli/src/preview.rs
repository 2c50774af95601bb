//! What a dry run (`--dry-run`) prints: the conversion it would do.

use std::io::{self, Write};

use indicatif::HumanBytes;
use ofconvert_engine::{Direction, Preview};

use crate::exit_codes::ExitCode;
use crate::progress::{plural, plural_u64};

/// Prints what a dry run found the conversion would do (`--json`: as an object); exit 1
/// when it would fail something.
pub fn print_preview(preview: &Preview, json: bool) -> anyhow::Result<ExitCode> {
    let mut out = io::stdout().lock();
    let written = if json {
        serde_json::to_writer_pretty(&mut out, preview)
            .map_err(io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        write_preview(&mut out, preview)
    };
    match written.and_then(|()| out.flush()) {
        Err(err) if err.kind() != io::ErrorKind::BrokenPipe => return Err(err.into()),
        _ => {}
    }
    Ok(ExitCode::failure_if(
        preview.would_fail() || preview.datasets.is_empty(),
    ))
}

fn write_preview(out: &mut impl Write, preview: &Preview) -> io::Result<()> {
    let width = preview
        .datasets
        .iter()
        .map(|d| d.name.len())
        .max()
        .unwrap_or(0);
    let what = match preview.direction {
        Direction::TfToOf => "part",
        Direction::OfToTf => "TFRecord file",
    };
    for dataset in &preview.datasets {
        if dataset.files_only {
            let count = dataset.side_files;
            writeln!(
                out,
                "  {:width$}  no records -> {count} side file{} in {}",
                dataset.name,
                plural(count),
                dataset.output
            )?;
            continue;
        }
        let mut line = format!(
            "  {:width$}  {} input{} ({})",
            dataset.name,
            dataset.inputs,
            plural(dataset.inputs),
            HumanBytes(dataset.input_bytes)
        );
        if let Some(records) = dataset.records {
            line.push_str(&format!(", {records} record{}", plural_u64(records)));
        }
        match &dataset.problem {
            Some(problem) => line.push_str(&format!(": would fail: {problem}")),
            None => line.push_str(&format!(
                " -> {} {what}{} in {}",
                dataset.parts,
                plural(dataset.parts),
                dataset.output
            )),
        }
        if dataset.side_files > 0 && dataset.problem.is_none() {
            line.push_str(&format!(
                ", with {} side file{}",
                dataset.side_files,
                plural(dataset.side_files)
            ));
        }
        writeln!(out, "{line}")?;
    }
    for skipped in &preview.skipped_files {
        writeln!(out, "  skipped {}: {}", skipped.path, skipped.reason)?;
    }
    for unreadable in &preview.unreadable {
        writeln!(
            out,
            "  cannot read {}: {}",
            unreadable.path, unreadable.reason
        )?;
    }
    let failing = preview
        .datasets
        .iter()
        .filter(|d| d.problem.is_some())
        .count();
    let datasets = preview.datasets.iter().filter(|d| !d.files_only).count();
    writeln!(
        out,
        "Dry run: would convert {} dataset{} from {} into {}{}; nothing was written.",
        datasets - failing,
        plural(datasets - failing),
        preview.input,
        preview.output,
        match failing {
            0 => String::new(),
            n => format!(" ({n} would fail)"),
        }
    )
}
