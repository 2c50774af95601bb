//! `cat`: records as protobuf text format (what Python's `text_format.MessageToString`
//! prints) or JSON lines.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use ofconvert_bridge::text;
use ofconvert_bridge::TfRecordType;
use ofconvert_engine::{error_chain, Checksums, ErrorKind, Format, RecordReader};

use crate::cli::CatArgs;
use crate::exit_codes::ExitCode;
use crate::shown;
use crate::style::error;

/// Why printing a file stopped.
enum Stop {
    /// Writing to stdout failed (a closed pipe ends `cat` quietly).
    Output(io::Error),
    /// The file could not be read to its end, or a record could not be printed.
    Input(String),
}

impl From<io::Error> for Stop {
    fn from(err: io::Error) -> Stop {
        Stop::Output(err)
    }
}

pub fn run(args: &CatArgs) -> anyhow::Result<ExitCode> {
    let format = args.format;
    let (files, mut failed, missing) = files_of(&args.files, format, args.message);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    // As `head` and `tail` do: a line naming each file when there are several, never with
    // -q, always with -v.
    let verbosity = args.verbosity;
    let headers = !args.json && !verbosity.quiet && (verbosity.verbose || files.len() > 1);
    for (index, path) in files.iter().enumerate() {
        let result = (|| {
            if headers {
                if index > 0 {
                    writeln!(out)?;
                }
                writeln!(out, "==> {} <==", path.display())?;
            }
            if args.message {
                print_message(&mut out, path, format, args)
            } else {
                print_file(&mut out, path, format, args)
            }
        })();
        match result {
            Ok(problems) => failed |= problems,
            Err(Stop::Output(err)) if err.kind() == io::ErrorKind::BrokenPipe => {
                return Ok(ExitCode::Success)
            }
            Err(Stop::Output(err)) => return Err(err.into()),
            Err(Stop::Input(message)) => {
                failed = true;
                flush_then_report(&mut out, &message)?;
            }
        }
    }
    match out.flush() {
        Err(err) if err.kind() != io::ErrorKind::BrokenPipe => Err(err.into()),
        _ if missing => Ok(ExitCode::Usage),
        _ => Ok(ExitCode::failure_if(failed)),
    }
}

/// The files to print: each file named, and the record files under each directory named,
/// as `count` finds them. Reports what it cannot find; also says whether something failed
/// and whether a path named does not exist.
fn files_of(
    paths: &[PathBuf],
    format: Option<Format>,
    message: bool,
) -> (Vec<PathBuf>, bool, bool) {
    let (mut files, mut failed, mut missing) = (Vec::new(), false, false);
    for path in paths {
        let found = ofconvert_engine::expand_paths(std::slice::from_ref(path), format);
        if found.directories.is_empty() {
            // A file named: what it holds, or why it cannot be read, is said as it is printed.
            match found.errors.first().map(|err| err.kind()) {
                Some(ErrorKind::InputMissing) => {
                    error!("{}: no such file or directory", path.display());
                    (failed, missing) = (true, true);
                }
                // It cannot be reached: a bucket that is not there, credentials refused.
                Some(ErrorKind::Io(_)) => {
                    for err in &found.errors {
                        error!("{}", error_chain(err));
                    }
                    failed = true;
                }
                _ => files.push(path.clone()),
            }
        } else if message {
            files.push(path.clone());
        } else {
            for err in &found.errors {
                error!("{}", error_chain(err));
                failed = true;
            }
            files.extend(found.files.into_iter().map(|(file, _)| file));
        }
    }
    (files, failed, missing)
}

/// Keeps stdout and stderr in order when both go to a terminal.
fn flush_then_report(out: &mut impl Write, message: &str) -> io::Result<()> {
    match out.flush() {
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    error!("{message}");
    Ok(())
}

/// Prints the records of one framed file; `Ok(true)` when some records could not be
/// printed but the file could still be read past them.
fn print_file(
    out: &mut impl Write,
    path: &Path,
    format: Option<Format>,
    args: &CatArgs,
) -> Result<bool, Stop> {
    let mut reader = RecordReader::open(path, format, Checksums::Verify)
        .map_err(|err| Stop::Input(error_chain(&err)))?;
    let format = reader.format();
    for _ in 0..args.skip {
        match reader.skip() {
            Ok(Some(_)) => {}
            Ok(None) => return Ok(false),
            Err(err) => return Err(Stop::Input(error_chain(&err))),
        }
    }
    let mut buf = Vec::new();
    let mut rendered = String::new();
    // Records printed, and records shown either way (printed, or an error in their place),
    // which `-n` bounds.
    let (mut printed, mut shown) = (0u64, 0u64);
    let mut problems = false;
    while args.count.is_none_or(|count| shown < count) {
        shown += 1;
        let at = match reader.read(&mut buf) {
            Ok(Some(at)) => at,
            Ok(None) => break,
            Err(err) => {
                let message = error_chain(&err);
                if !reader.recover(&err) {
                    return Err(Stop::Input(message));
                }
                problems = true;
                flush_then_report(out, &message)?;
                continue;
            }
        };
        rendered.clear();
        let result = match &args.raw {
            Some(encoding) => {
                render_raw(&buf, at, encoding, args, &mut rendered);
                Ok(())
            }
            None => render(&buf, format, args, &mut rendered),
        };
        if let Err(err) = result {
            problems = true;
            let message = format!(
                "{}: offset {} (record #{}): {err} (--raw prints its bytes)",
                path.display(),
                at.offset,
                at.index
            );
            flush_then_report(out, &message)?;
            continue;
        }
        // Records in text format are told apart by a blank line; raw records take a line.
        if printed > 0 && !args.json && args.raw.is_none() {
            writeln!(out)?;
        }
        out.write_all(rendered.as_bytes())?;
        if args.json {
            writeln!(out)?;
        }
        printed += 1;
    }
    Ok(problems)
}

/// Prints a file that holds one bare serialized message.
fn print_message(
    out: &mut impl Write,
    path: &Path,
    format: Option<Format>,
    args: &CatArgs,
) -> Result<bool, Stop> {
    let json = args.json;
    let failed = |err: io::Error| Stop::Input(format!("{}: {err}", path.display()));
    let (storage, at) = ofconvert_engine::storage_for(path).map_err(failed)?;
    let bytes = storage
        .read(&at)
        .map_err(failed)?
        .ok_or_else(|| failed(io::Error::from(io::ErrorKind::NotFound)))?;
    let format = match format {
        Some(format) => format,
        None if render(&bytes, Format::Tf, args, &mut String::new()).is_ok() => Format::Tf,
        None => Format::Of,
    };
    let mut rendered = String::new();
    render(&bytes, format, args, &mut rendered)
        .map_err(|err| Stop::Input(format!("{}: {err}", path.display())))?;
    out.write_all(rendered.as_bytes())?;
    if json {
        writeln!(out)?;
    }
    Ok(false)
}

/// Renders one serialized record: an Example or SequenceExample for TFRecord, an
/// OFRecord for OFRecord.
fn render(
    bytes: &[u8],
    format: Format,
    args: &CatArgs,
    out: &mut String,
) -> Result<(), ofconvert_bridge::Error> {
    if args.json {
        let mut json = String::new();
        render_message(bytes, format, true, None, &mut json)?;
        out.push_str(&shown::readable_json(&json, args.max_bytes));
        Ok(())
    } else {
        render_message(bytes, format, false, args.max_bytes, out)
    }
}

/// Renders one record's bytes as they are, in `encoding` (hex or base64), cut past
/// `--max-bytes`: a line `record #I, offset O, N bytes: ...`, or a JSON object.
fn render_raw(
    bytes: &[u8],
    at: ofconvert_engine::RecordAt,
    encoding: &str,
    args: &CatArgs,
    out: &mut String,
) {
    use std::fmt::Write as _;
    let kept = &bytes[..args
        .max_bytes
        .map_or(bytes.len(), |max| max.min(bytes.len()))];
    let mut encoded = match encoding {
        "base64" => shown::base64_encode(kept),
        _ => kept.iter().fold(String::new(), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        }),
    };
    if kept.len() < bytes.len() {
        encoded.push_str("...");
    }
    let (index, offset, size) = (at.index, at.offset, bytes.len());
    if args.json {
        let object = serde_json::json!({
            "record": index,
            "offset": offset,
            "bytes": size,
            encoding: encoded,
        });
        out.push_str(&object.to_string());
    } else {
        let _ = writeln!(
            out,
            "record #{index}, offset {offset}, {size} bytes: {encoded}"
        );
    }
}

/// Renders one record as the bridge does, its bytes values cut past `max` bytes.
fn render_message(
    bytes: &[u8],
    format: Format,
    json: bool,
    max: Option<usize>,
    out: &mut String,
) -> Result<(), ofconvert_bridge::Error> {
    match format {
        Format::Tf => match ofconvert_bridge::classify_tf_record(bytes)? {
            TfRecordType::Example => {
                let mut example = ofconvert_bridge::decode_example(bytes)?;
                if let Some(max) = max {
                    shown::shorten_example(&mut example, max);
                }
                if json {
                    text::write_example_json(out, &example);
                } else {
                    text::write_example_text(out, &example);
                }
            }
            TfRecordType::SequenceExample => {
                let mut sequence = ofconvert_bridge::decode_sequence_example(bytes)?;
                if let Some(max) = max {
                    shown::shorten_sequence_example(&mut sequence, max);
                }
                if json {
                    text::write_sequence_example_json(out, &sequence);
                } else {
                    text::write_sequence_example_text(out, &sequence);
                }
            }
        },
        Format::Of => {
            let mut record = ofconvert_bridge::decode_ofrecord(bytes)?;
            if let Some(max) = max {
                shown::shorten_ofrecord(&mut record, max);
            }
            if json {
                text::write_ofrecord_json(out, &record);
            } else {
                text::write_ofrecord_text(out, &record);
            }
        }
    }
    Ok(())
}
