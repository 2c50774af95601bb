//! `tf2of`/`of2tf --shard K/N` (one worker of a conversion spread over many machines) and
//! `commit OUT` (publishing it once every worker is done).

use std::io::{self, Write};

use anyhow::Context as _;
use indicatif::HumanBytes;
use ofconvert_engine::{NamedRule, Options, Shard};

use crate::cli::{CommitArgs, ConvertArgs};
use crate::exit_codes::ExitCode;
use crate::progress::{plural, Progress};
use crate::style;
use crate::{inputs, report};

/// Runs worker `shard`'s share, drawing its progress, then says what it did and what is
/// left to do.
pub fn run_worker(
    options: Options,
    rules: &[NamedRule],
    args: &ConvertArgs,
    shard: Shard,
    quiet: bool,
) -> anyhow::Result<ExitCode> {
    crate::stop_on_signals(&options.interrupt)?;
    let mut plan = inputs::plan(&args.inputs, &args.output, &options)?;
    ofconvert_engine::check_rules(&mut plan, rules);
    let summary = Progress::new(quiet)
        .drive(|report| ofconvert_engine::convert_shard(plan, &options, shard, report))?;
    let mut out = io::stdout().lock();
    if args.json {
        let _ = serde_json::to_writer_pretty(&mut out, &summary);
        let _ = writeln!(out);
    } else if !quiet {
        let _ = writeln!(
            out,
            "Worker {shard}: converted {} part{} ({} records, {}){}{} into {}.",
            summary.converted,
            plural(summary.converted),
            summary.records,
            HumanBytes(summary.output_bytes),
            if summary.kept > 0 {
                format!(", kept {} finished before", summary.kept)
            } else {
                String::new()
            },
            if summary.planned {
                "; stored the run's plan"
            } else {
                ""
            },
            summary.output,
        );
        let _ = writeln!(
            out,
            "Once all {} workers are done: ofconvert commit {}",
            summary.workers, summary.output
        );
    }
    let _ = out.flush();
    for failure in &summary.failed {
        style::error!("{failure}");
    }
    if summary.interrupted {
        style::error!(
            "interrupted: run worker {shard} again to finish its share (the parts it finished \
             are kept)"
        );
        return Ok(ExitCode::Interrupted);
    }
    Ok(ExitCode::failure_if(!summary.failed.is_empty()))
}

/// Publishes the sharded run in `args.output`.
pub fn run_commit(args: &CommitArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    let summary = ofconvert_engine::commit(&args.output, args.verify)
        .with_context(|| format!("commit {}", args.output.display()))?;
    report::print_summary(&summary, args.json, quiet)?;
    Ok(ExitCode::failure_if(summary.failed > 0))
}
