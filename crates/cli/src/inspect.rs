//! `count`, `verify`, `schema` and `index`: the engine looks, this prints.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ofconvert_engine::layout::{DEFAULT_PART_DIGITS, DEFAULT_PART_PREFIX, INDEX_SUFFIX};
use ofconvert_engine::{
    error_chain, Checksums, ErrorKind, Event, Expanded, Format, OneflowReader, ProgressFn, Schema,
    MANIFEST_NAME,
};
use serde_json::json;

use crate::cli::{CountArgs, FormatArg, IndexArgs, SchemaArgs, VerifyArgs};
use crate::exit_codes::ExitCode;
use crate::progress::{plural, plural_u64, Progress};
use crate::style::{error, warning};

fn format_of(arg: Option<FormatArg>) -> Option<Format> {
    arg.map(|format| match format {
        FormatArg::Tf => Format::Tf,
        FormatArg::Of => Format::Of,
    })
}

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

/// Finds the record files; reports the paths that are not, what could not be searched, and
/// the directories named that hold no record file (an empty answer is no success).
fn expand(paths: &[PathBuf], format: Option<Format>) -> (Expanded, Outcome) {
    let expanded = ofconvert_engine::expand_paths(paths, format);
    let mut outcome = Outcome::default();
    for err in &expanded.errors {
        error!("{}", error_chain(err));
        outcome.failed = true;
        outcome.missing |= matches!(err.kind(), ErrorKind::InputMissing);
    }
    for skipped in &expanded.skipped {
        warning!("skipped {}: {}", skipped.path, skipped.reason);
    }
    for unpublished in &expanded.unpublished {
        let why = if unpublished.interrupted {
            "an ofconvert run writing it was killed or has not finished (`--resume` finishes it)"
        } else {
            "a run that did not finish (`--resume` finishes it), or parts ofconvert did not write"
        };
        warning!(
            "{}: OneFlow parts without {MANIFEST_NAME}: not a published dataset: {why}",
            unpublished.dir.display()
        );
    }
    outcome.failed |= report_empty_directories(&expanded.directories, &expanded.files);
    (expanded, outcome)
}

/// Names each directory of `directories` under which none of `files` lies; true if there is
/// one.
fn report_empty_directories(directories: &[PathBuf], files: &[(PathBuf, Format)]) -> bool {
    let mut any = false;
    for dir in directories {
        if !files.iter().any(|(file, _)| file.starts_with(dir)) {
            error!("no record files found under {}", dir.display());
            any = true;
        }
    }
    any
}

/// Runs `work` on a worker thread while this thread draws the bytes it reads: a bar on a
/// terminal, as the converters draw, and nothing elsewhere.
fn with_progress<T: Send>(
    expanded: &Expanded,
    quiet: bool,
    work: impl FnOnce(ProgressFn<'_>) -> T + Send,
) -> T {
    let mut progress = Progress::bar_only(quiet);
    progress.handle(Event::Started {
        datasets: 0,
        files: expanded.files.len(),
        bytes: expanded.sizes.iter().sum(),
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
    let (expanded, mut outcome) = expand(&args.paths, format_of(args.format));
    let files = &expanded.files;
    let results = with_progress(&expanded, quiet, |progress| {
        ofconvert_engine::count_files(
            files,
            if args.no_verify {
                Checksums::Ignore
            } else {
                Checksums::Verify
            },
            jobs_of(jobs),
            progress,
        )
    });
    let mut counts = Vec::new();
    for result in results {
        match result {
            Ok(count) => counts.push(count),
            Err(err) => {
                outcome.failed = true;
                error!("{}", error_chain(&err));
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
    Ok(outcome.exit_code())
}

pub fn verify(args: &VerifyArgs, jobs: Option<u64>, quiet: bool) -> anyhow::Result<ExitCode> {
    let (expanded, mut outcome) = expand(&args.paths, format_of(args.format));
    // Parts a run was still writing, or left when it was killed, are no sound dataset.
    outcome.failed |= expanded.unpublished.iter().any(|dir| dir.interrupted);
    let files = &expanded.files;
    let results = with_progress(&expanded, quiet, |progress| {
        ofconvert_engine::verify_files(files, jobs_of(jobs), progress)
    });
    let problems: usize = results.iter().map(|r| r.problems.len()).sum();
    let good: u64 = results.iter().map(|r| r.good_records).sum();
    outcome.failed |= problems > 0;
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
    Ok(outcome.exit_code())
}

pub fn schema(args: &SchemaArgs, jobs: Option<u64>, quiet: bool) -> anyhow::Result<ExitCode> {
    let format = format_of(args.format);
    let (expanded, mut outcome) = expand(&args.paths, format);
    let files = &expanded.files;
    let (schema, errors) = with_progress(&expanded, quiet, |progress| {
        ofconvert_engine::collect_schema(files, jobs_of(jobs), args.sample, progress)
    });
    for err in &errors {
        outcome.failed = true;
        error!("{}", error_chain(err));
    }
    let text = if args.json {
        let mut value = serde_json::to_value(&schema)?;
        value["warnings"] = json!(schema.warnings());
        let mut text = serde_json::to_string_pretty(&value)?;
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
            warning!("{warning}");
        }
    }
    Ok(outcome.exit_code())
}

/// The `OFRecordReader(...)` call for the schema's records: the dataset's own when one
/// OneFlow dataset directory was given, else the one `tf2of` would make of the files.
fn oneflow_reader(paths: &[PathBuf], expanded: &Expanded) -> String {
    if let [dir] = paths {
        if let Some(reader) = ofconvert_engine::oneflow_reader_for(dir, DEFAULT_PART_PREFIX) {
            return reader.python;
        }
    }
    let parts = expanded
        .sizes
        .iter()
        .filter(|size| **size > 0)
        .count()
        .max(1);
    OneflowReader::new(
        Path::new("OUT"),
        parts as u64,
        DEFAULT_PART_PREFIX,
        DEFAULT_PART_DIGITS,
    )
    .python
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

/// Where the index of `file` goes: beside it, or under `output_dir` at the path `file` has
/// relative to the directory named on the command line that holds it (a file named itself
/// keeps only its name).
fn index_path(file: &Path, roots: &[PathBuf], output_dir: Option<&Path>) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(INDEX_SUFFIX);
    let Some(output_dir) = output_dir else {
        return file.with_file_name(name);
    };
    let relative = roots
        .iter()
        .find_map(|root| file.strip_prefix(root).ok())
        .and_then(Path::parent)
        .unwrap_or(Path::new(""));
    output_dir.join(relative).join(name)
}

pub fn index(args: &IndexArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let found = ofconvert_engine::expand_paths(&args.paths, None);
    let mut outcome = Outcome::default();
    for err in &found.errors {
        error!("{}", error_chain(err));
        outcome.failed = true;
        outcome.missing |= matches!(err.kind(), ErrorKind::InputMissing);
    }
    for skipped in &found.skipped {
        warning!("skipped {}: {}", skipped.path, skipped.reason);
    }
    // OneFlow parts met in a directory are no TFRecord files to index: passed over. One
    // named on the command line is a mistake worth a word.
    let (mut files, mut sizes) = (Vec::new(), Vec::new());
    for ((path, format), size) in found.files.into_iter().zip(found.sizes) {
        match format {
            Format::Tf => {
                files.push((path, format));
                sizes.push(size);
            }
            Format::Of if args.paths.contains(&path) => {
                error!(
                    "{}: an OFRecord file: index writes indexes of TFRecord files",
                    path.display()
                );
                outcome.failed = true;
            }
            Format::Of => {}
        }
    }
    outcome.failed |= report_empty_directories(&found.directories, &files);
    let found = Expanded {
        files,
        sizes,
        directories: found.directories,
        ..Expanded::default()
    };
    let results = with_progress(&found, quiet, |progress| {
        write_indexes(&found, args, progress)
    });
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut written = Ok(());
    for result in results {
        match result {
            Ok((index, records)) if !quiet && written.is_ok() => {
                written = writeln!(
                    out,
                    "{}: {records} record{}",
                    index.display(),
                    plural_u64(records)
                );
            }
            Ok(_) => {}
            Err(message) => {
                outcome.failed = true;
                error!("{message}");
            }
        }
    }
    finish_output(written.and_then(|()| out.flush()))?;
    Ok(outcome.exit_code())
}

/// Writes the index of each file; for each, where it went and its records, or what went
/// wrong.
fn write_indexes(
    found: &Expanded,
    args: &IndexArgs,
    progress: ProgressFn<'_>,
) -> Vec<Result<(PathBuf, u64), String>> {
    let mut results = Vec::new();
    let mut sources: HashMap<PathBuf, PathBuf> = HashMap::new();
    for (path, _) in &found.files {
        let index = index_path(path, &found.directories, args.output_dir.as_deref());
        match sources.get(&index) {
            Some(source) if source == path => continue,
            Some(source) => {
                results.push(Err(format!(
                    "{}: not written: the index of {} went there in this run",
                    index.display(),
                    source.display()
                )));
                continue;
            }
            None => {
                sources.insert(index.clone(), path.clone());
            }
        }
        results.push(
            ofconvert_engine::write_index(path, &index, progress)
                .map(|records| (index, records))
                .map_err(|err| error_chain(&err)),
        );
    }
    results
}
