//! `diff A B`: the engine compares, this prints one line when the records are the same,
//! the first difference when they are not, and picks the exit status as diff(1) and
//! cmp(1) do: 0 the same, 1 different, 2 when they could not be compared.

use std::io::{self, Write};

use ofconvert_engine::{error_chain, DiffOptions, DiffReport, Difference, Place};

use crate::cli::DiffArgs;
use crate::exit_codes::ExitCode;
use crate::progress::{plural, plural_u64, Progress};
use crate::style::error;

pub fn run(args: &DiffArgs, jobs: Option<u64>, quiet: bool) -> anyhow::Result<ExitCode> {
    let options = DiffOptions {
        format_a: args.format_a,
        format_b: args.format_b,
        unordered: args.unordered,
        jobs: jobs.map_or(0, |jobs| jobs as usize),
        mapping: crate::config::diff_mapping(args).spec(),
    };
    let compared = Progress::bar_only(quiet)
        .drive(|report| ofconvert_engine::diff(&args.a, &args.b, &options, report));
    let report = match compared {
        Ok(report) => report,
        Err(err) => {
            // Neither the same nor different: could not tell (diff(1)'s "trouble").
            error!("cannot compare: {}", error_chain(&err));
            return Ok(ExitCode::Usage);
        }
    };
    let mut out = io::stdout().lock();
    let written = if args.json {
        serde_json::to_writer_pretty(&mut out, &report.to_json())
            .map_err(io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        write_report(&mut out, &report)
    };
    match written.and_then(|()| out.flush()) {
        Err(err) if err.kind() != io::ErrorKind::BrokenPipe => return Err(err.into()),
        _ => {}
    }
    Ok(ExitCode::failure_if(!report.same()))
}

fn write_report(out: &mut impl Write, report: &DiffReport) -> io::Result<()> {
    let Some(difference) = &report.difference else {
        return writeln!(
            out,
            "same: {} record{} in {} dataset{} ({} {}, {} {}){}{} in {:.2} s",
            report.records,
            plural_u64(report.records),
            report.datasets,
            plural(report.datasets),
            report.a_kind,
            report.a,
            report.b_kind,
            report.b,
            if report.mapped { ", A mapped" } else { "" },
            if report.unordered {
                ", as multisets"
            } else {
                ""
            },
            report.seconds,
        );
    };
    write_difference(out, difference)
}

fn write_difference(out: &mut impl Write, difference: &Difference) -> io::Result<()> {
    let mut line = format!("differ: dataset {}", difference.dataset);
    if let Some(record) = difference.record {
        line.push_str(&format!(", record #{record}"));
    }
    if let Some(feature) = &difference.feature {
        line.push_str(&format!(", feature {feature:?}"));
    }
    writeln!(out, "{line}: {}", difference.what)?;
    for (side, value, place) in [
        ("A", &difference.a, &difference.a_place),
        ("B", &difference.b, &difference.b_place),
    ] {
        let place = place.as_ref().map(show_place);
        match (value, place) {
            (Some(value), Some(place)) => writeln!(out, "  {side}: {value}  ({place})")?,
            (Some(value), None) => writeln!(out, "  {side}: {value}")?,
            (None, Some(place)) => writeln!(out, "  {side}: {place}")?,
            (None, None) => {}
        }
    }
    Ok(())
}

fn show_place(place: &Place) -> String {
    let mut shown = format!(
        "{}: offset {} (record #{})",
        place.path, place.offset, place.record
    );
    if let Some(byte) = place.byte {
        shown.push_str(&format!(", byte {byte} of the record"));
    }
    shown
}
