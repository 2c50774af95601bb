//! `count`, `verify`, `schema` and `index`: the engine's reports find and look, this prints.

use std::io::{self, Write};

use ofconvert_engine::reports::{self, Found};
use ofconvert_engine::{error_chain, Checksums, Event, FrontEnd, ProgressFn, Schema};

use crate::cli::{CountArgs, IndexArgs, SchemaArgs, VerifyArgs};
use crate::exit_codes::ExitCode;
use crate::progress::{plural, plural_u64, Progress};
use crate::style::{error, warning};

fn jobs_of(jobs: Option<u64>) -> usize {
    jobs.map_or(0, |jobs| jobs as usize)
}

/// How an inspection went, for its exit code.
#[derive(Clone, Copy, Debug, Default)]
struct Outcome {
    /// Some file could not be read, or held a problem.
    failed: bool,
    /// A path named on the command line does not exist.
    missing: bool,
}

impl Outcome {
    fn exit_code(self) -> ExitCode {
        if self.missing {
            ExitCode::Usage
        } else {
            ExitCode::failure_if(self.failed)
        }
    }
}

/// Prints what is wrong with the paths found and what to know about them; the outcome so
/// far (an empty answer is no success).
fn report_found(found: &Found) -> Outcome {
    for err in &found.errors {
        error!("{}", error_chain(err));
    }
    for line in &found.warnings {
        warning!("{line}");
    }
    Outcome {
        failed: !found.errors.is_empty(),
        missing: found.missing(),
    }
}

/// Runs `work` on a worker thread while this thread draws the bytes it reads: a bar on a
/// terminal, as the converters draw, and nothing elsewhere.
fn with_progress<T: Send>(
    found: &Found,
    quiet: bool,
    work: impl FnOnce(ProgressFn<'_>) -> T + Send,
) -> T {
    let mut progress = Progress::bar_only(quiet);
    progress.handle(Event::Started {
        datasets: 0,
        files: found.files.len(),
        bytes: found.bytes(),
    });
    progress.drive(work)
}

/// Ends quietly when stdout is closed (`| head`): that is not a failure.
fn finish_output(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

pub fn count(args: &CountArgs, jobs: Option<u64>, quiet: bool) -> anyhow::Result<ExitCode> {
    let found = reports::find(&args.paths, args.format, FrontEnd::CommandLine);
    let mut outcome = report_found(&found);
    let checksums = if args.no_verify {
        Checksums::Ignore
    } else {
        Checksums::Verify
    };
    let (report, errors) = with_progress(&found, quiet, |progress| {
        reports::count(&found, checksums, jobs_of(jobs), progress)
    });
    for err in &errors {
        outcome.failed = true;
        error!("{}", error_chain(err));
    }
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let written = (|| {
        if args.json {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        } else {
            let width = report.total.to_string().len().max(7);
            for count in &report.files {
                writeln!(out, "{:>width$}  {}", count.records, count.path)?;
            }
            if report.files.len() > 1 {
                writeln!(out, "{:>width$}  total", report.total)?;
            }
        }
        out.flush()
    })();
    finish_output(written)?;
    Ok(outcome.exit_code())
}

pub fn verify(args: &VerifyArgs, jobs: Option<u64>, quiet: bool) -> anyhow::Result<ExitCode> {
    let found = reports::find(&args.paths, args.format, FrontEnd::CommandLine);
    let mut outcome = report_found(&found);
    let report = with_progress(&found, quiet, |progress| {
        reports::verify(&found, jobs_of(jobs), progress)
    });
    let (good, problems, results) = (report.good_records, report.problems, &report.files);
    // Parts a run was still writing, or left when it was killed, are no sound dataset.
    outcome.failed |= !report.sound();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let written = (|| {
        if args.json {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        } else {
            for result in results {
                if result.problems.is_empty() {
                    if !quiet {
                        writeln!(
                            out,
                            "OK      {}: {} record{}",
                            result.path,
                            result.good_records,
                            plural_u64(result.good_records)
                        )?;
                    }
                    continue;
                }
                writeln!(
                    out,
                    "FAILED  {}: {} problem{}, {} good record{}",
                    result.path,
                    result.problems.len(),
                    plural(result.problems.len()),
                    result.good_records,
                    plural_u64(result.good_records)
                )?;
                for problem in &result.problems {
                    writeln!(out, "  {problem}")?;
                }
            }
            if !quiet {
                // The line counts everything that makes verify fail, not the files' problems
                // alone.
                let mut line = format!(
                    "verified {} file{}: {good} good record{}, {problems} problem{}",
                    results.len(),
                    plural(results.len()),
                    plural_u64(good),
                    plural(problems)
                );
                let (unreadable, unfinished) = (report.unreadable.len(), report.unfinished.len());
                if unreadable > 0 {
                    line.push_str(&format!(
                        "; {unreadable} path{} could not be read",
                        plural(unreadable)
                    ));
                }
                if unfinished > 0 {
                    line.push_str(&format!(
                        "; {unfinished} dataset{} an ofconvert run did not finish",
                        plural(unfinished)
                    ));
                }
                writeln!(out, "{line}")?;
            }
        }
        out.flush()
    })();
    finish_output(written)?;
    Ok(outcome.exit_code())
}

pub fn schema(args: &SchemaArgs, jobs: Option<u64>, quiet: bool) -> anyhow::Result<ExitCode> {
    let found = reports::find(&args.paths, args.format, FrontEnd::CommandLine);
    let mut outcome = report_found(&found);
    if args.json {
        let (schema, errors) = with_progress(&found, quiet, |progress| {
            reports::schema(&found, jobs_of(jobs), args.sample, progress)
        });
        for err in &errors {
            outcome.failed = true;
            error!("{}", error_chain(err));
        }
        let mut text = serde_json::to_string_pretty(&reports::schema_json(&schema))?;
        text.push('\n');
        let stdout = io::stdout();
        let mut out = stdout.lock();
        finish_output(out.write_all(text.as_bytes()).and_then(|()| out.flush()))?;
        return Ok(outcome.exit_code());
    }
    // One section per dataset, each with its own reader: one schema merged over several
    // datasets reads as features missing from most records.
    let (datasets, errors) = with_progress(&found, quiet, |progress| {
        reports::schemas(&found, jobs_of(jobs), args.sample, progress)
    });
    for err in &errors {
        outcome.failed = true;
        error!("{}", error_chain(err));
    }
    let several = datasets.len() > 1;
    let text = if args.oneflow || args.tf {
        reports::schema_code(&datasets, args.oneflow)
    } else {
        let mut text = String::new();
        for (index, (dataset, schema, _)) in datasets.iter().enumerate() {
            if several {
                if index > 0 {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "== {}\n",
                    reports::dataset_heading(dataset, schema)
                ));
            }
            text.push_str(&table(schema, dataset.files.len()));
        }
        text
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    finish_output(out.write_all(text.as_bytes()).and_then(|()| out.flush()))?;
    // The warnings are about OneFlow's reader and decoders: nothing to TensorFlow's parser.
    if !args.tf {
        for (dataset, schema, _) in &datasets {
            for warning in schema.warnings() {
                if several {
                    warning!("{}: {warning}", dataset.name());
                } else {
                    warning!("{warning}");
                }
            }
        }
    }
    Ok(outcome.exit_code())
}

fn table(schema: &Schema, files: usize) -> String {
    let mut rows = vec![[
        "feature".to_owned(),
        "kind".to_owned(),
        "values".to_owned(),
        "present".to_owned(),
    ]];
    for feature in &schema.features {
        let values = if feature.min_values == feature.max_values {
            feature.min_values.to_string()
        } else {
            format!("{}..{}", feature.min_values, feature.max_values)
        };
        let mut kind = feature.kind_names().join(",");
        if let Some(image) = &feature.image {
            kind.push_str(&format!(" ({image})"));
        }
        rows.push([
            feature.name.clone(),
            kind,
            values,
            feature.present.to_string(),
        ]);
    }
    let mut widths = [0usize; 4];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = format!(
        "{} record{} in {} file{}\n\n",
        schema.records,
        plural_u64(schema.records),
        files,
        plural(files)
    );
    for row in &rows {
        let line = format!(
            "{:w0$}  {:w1$}  {:>w2$}  {:>w3$}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
        text.push_str(line.trim_end());
        text.push('\n');
    }
    for feature in &schema.features {
        if let Some(images) = &feature.images {
            text.push_str(&format!("\n{}: {}\n", feature.name, images.summary()));
            for (label, counts) in [("JPEG", &images.jpeg_color), ("PNG", &images.png_color)] {
                if !counts.is_empty() {
                    let counts: Vec<String> = counts
                        .iter()
                        .map(|(name, n)| format!("{name} {n}"))
                        .collect();
                    text.push_str(&format!("  {label}: {}\n", counts.join(", ")));
                }
            }
            if images.oneflow_cannot_decode > 0 {
                text.push_str(&format!(
                    "  OneFlow 0.9 cannot decode: {}\n",
                    images.undecodable_description()
                ));
            }
        }
    }
    for feature in &schema.features {
        if let Some(names) = &feature.class_names {
            const SHOWN: usize = 20;
            let mut shown = names[..names.len().min(SHOWN)].join(", ");
            if names.len() > SHOWN {
                shown.push_str(&format!(", and {} more", names.len() - SHOWN));
            }
            text.push_str(&format!(
                "\n{}: {} class names (TFDS): {shown}\n",
                feature.name,
                names.len()
            ));
        }
    }
    text
}

pub fn index(args: &IndexArgs, jobs: Option<u64>, quiet: bool) -> anyhow::Result<ExitCode> {
    let found = reports::find_tfrecords(&args.paths, args.format);
    let mut outcome = report_found(&found);
    let (report, errors) = with_progress(&found, quiet, |progress| {
        reports::index(&found, args.output_dir.as_deref(), jobs_of(jobs), progress)
    });
    for message in &errors {
        outcome.failed = true;
        error!("{message}");
    }
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let written = (|| {
        if args.json {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        } else if !quiet {
            for file in &report.files {
                writeln!(
                    out,
                    "{}: {} record{}",
                    file.index,
                    file.records,
                    plural_u64(file.records)
                )?;
            }
        }
        out.flush()
    })();
    finish_output(written)?;
    Ok(outcome.exit_code())
}
