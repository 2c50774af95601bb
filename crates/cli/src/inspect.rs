//! `count`, `verify`, `schema` and `index`: the engine looks, this prints.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ofconvert_engine::{error_chain, Expanded, Format, OneflowReader, Schema};
use serde_json::json;

use crate::cli::{CountArgs, FormatArg, IndexArgs, SchemaArgs, VerifyArgs};
use crate::exit_codes::ExitCode;
use crate::progress::{plural, plural_u64};

fn format_of(arg: Option<FormatArg>) -> Option<Format> {
    arg.map(|format| match format {
        FormatArg::Tf => Format::Tf,
        FormatArg::Of => Format::Of,
    })
}

fn jobs_of(jobs: Option<u64>) -> usize {
    jobs.map_or(0, |jobs| jobs as usize)
}

/// Finds the record files; reports the paths that are not and what could not be searched,
/// and says whether any named path was an error.
fn expand(paths: &[PathBuf], format: Option<Format>) -> (Expanded, bool) {
    let expanded = ofconvert_engine::expand_paths(paths, format);
    for err in &expanded.errors {
        eprintln!("ofconvert: {}", error_chain(err));
    }
    for skipped in &expanded.skipped {
        eprintln!("ofconvert: skipped {}: {}", skipped.path, skipped.reason);
    }
    let failed = !expanded.errors.is_empty();
    (expanded, failed)
}

/// Ends quietly when stdout is closed (`| head`): that is not a failure.
fn finish_output(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

pub fn count(args: &CountArgs, jobs: Option<u64>) -> anyhow::Result<ExitCode> {
    let (expanded, mut failed) = expand(&args.paths, format_of(args.format));
    let results = ofconvert_engine::count_files(&expanded.files, !args.no_verify, jobs_of(jobs));
    let mut counts = Vec::new();
    for result in results {
        match result {
            Ok(count) => counts.push(count),
            Err(err) => {
                failed = true;
                eprintln!("ofconvert: {}", error_chain(&err));
            }
        }
    }
    let total: u64 = counts.iter().map(|count| count.records).sum();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let written = (|| {
        if args.json {
            let value = json!({ "files": counts, "total": total });
            serde_json::to_writer_pretty(&mut out, &value)?;
            writeln!(out)?;
        } else {
            let width = total.to_string().len().max(7);
            for count in &counts {
                writeln!(out, "{:>width$}  {}", count.records, count.path)?;
            }
            if counts.len() > 1 {
                writeln!(out, "{total:>width$}  total")?;
            }
        }
        out.flush()
    })();
    finish_output(written)?;
    Ok(ExitCode::failure_if(failed))
}

pub fn verify(args: &VerifyArgs, jobs: Option<u64>, quiet: bool) -> anyhow::Result<ExitCode> {
    let (expanded, mut failed) = expand(&args.paths, format_of(args.format));
    let results = ofconvert_engine::verify_files(&expanded.files, jobs_of(jobs));
    let problems: usize = results.iter().map(|r| r.problems.len()).sum();
    let good: u64 = results.iter().map(|r| r.good_records).sum();
    failed |= problems > 0;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let written = (|| {
        if args.json {
            let files: Vec<_> = results
                .iter()
                .map(|result| {
                    json!({
                        "path": result.path.display().to_string(),
                        "format": result.format,
                        "good_records": result.good_records,
                        "problems": result.problems.iter().map(|p| error_chain(p)).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let value = json!({ "files": files, "good_records": good, "problems": problems });
            serde_json::to_writer_pretty(&mut out, &value)?;
            writeln!(out)?;
        } else {
            for result in &results {
                if result.problems.is_empty() {
                    if !quiet {
                        writeln!(
                            out,
                            "OK      {}: {} record{}",
                            result.path.display(),
                            result.good_records,
                            plural_u64(result.good_records)
                        )?;
                    }
                    continue;
                }
                writeln!(
                    out,
                    "FAILED  {}: {} problem{}, {} good record{}",
                    result.path.display(),
                    result.problems.len(),
                    plural(result.problems.len()),
                    result.good_records,
                    plural_u64(result.good_records)
                )?;
                for problem in &result.problems {
                    writeln!(out, "  {}", error_chain(problem))?;
                }
            }
            if !quiet {
                writeln!(
                    out,
                    "verified {} file{}: {good} good record{}, {problems} problem{}",
                    results.len(),
                    plural(results.len()),
                    plural_u64(good),
                    plural(problems)
                )?;
            }
        }
        out.flush()
    })();
    finish_output(written)?;
    Ok(ExitCode::failure_if(failed))
}

pub fn schema(args: &SchemaArgs, jobs: Option<u64>) -> anyhow::Result<ExitCode> {
    let format = format_of(args.format);
    let (expanded, mut failed) = expand(&args.paths, format);
    let (schema, errors) = ofconvert_engine::collect_schema(&expanded.files, jobs_of(jobs));
    for err in &errors {
        failed = true;
        eprintln!("ofconvert: {}", error_chain(err));
    }
    let text = if args.json {
        let mut text = serde_json::to_string_pretty(&schema)?;
        text.push('\n');
        text
    } else if args.oneflow {
        schema.oneflow_snippet(&oneflow_reader(&args.paths, &expanded))
    } else if args.tf {
        schema.tf_snippet()
    } else {
        table(&schema, expanded.files.len())
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    finish_output(out.write_all(text.as_bytes()).and_then(|()| out.flush()))?;
    // The warnings are about OneFlow's reader and decoders: nothing to TensorFlow's parser.
    if !args.json && !args.tf {
        for warning in schema.warnings() {
            eprintln!("warning: {warning}");
        }
    }
    Ok(ExitCode::failure_if(failed))
}

/// The `OFRecordReader(...)` call for the schema's records: the dataset's own when one
/// OneFlow dataset directory was given, else the one `tf2of` would make of the files.
fn oneflow_reader(paths: &[PathBuf], expanded: &Expanded) -> String {
    if let [dir] = paths {
        if let Some(reader) = ofconvert_engine::oneflow_reader_for(dir, "part-") {
            return reader.python;
        }
    }
    let parts = expanded
        .files
        .iter()
        .filter(|(path, _)| std::fs::metadata(path).is_ok_and(|meta| meta.len() > 0))
        .count()
        .max(1);
    OneflowReader::new(Path::new("OUT"), parts as u64, "part-", 5).python
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
    text
}

pub fn index(args: &IndexArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let (expanded, mut failed) = expand(&args.paths, Some(Format::Tf));
    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir).map_err(|err| ofconvert_engine::Error::io(dir, err))?;
    }
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut written = Ok(());
    for (path, _) in &expanded.files {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".idx");
        let index = match &args.output_dir {
            Some(dir) => dir.join(name),
            None => path.with_file_name(name),
        };
        match ofconvert_engine::write_index(path, &index) {
            Ok(records) if !quiet && written.is_ok() => {
                written = writeln!(
                    out,
                    "{}: {records} record{}",
                    index.display(),
                    plural_u64(records)
                );
            }
            Ok(_) => {}
            Err(err) => {
                failed = true;
                eprintln!("ofconvert: {}", error_chain(&err));
            }
        }
    }
    finish_output(written.and_then(|()| out.flush()))?;
    Ok(ExitCode::failure_if(failed))
}
