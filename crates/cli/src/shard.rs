//! `tf2of`/`of2tf --shard K/N` (one worker of a conversion spread over many machines) and
//! `commit OUT` (publishing it once every worker is done).

use std::io::{self, Write};

use anyhow::Context as _;
use indicatif::HumanBytes;
use ofconvert_engine::{FrontEnd, Shard, ShardSummary};

use crate::cli::CommitArgs;
use crate::exit_codes::ExitCode;
use crate::progress::plural;
use crate::report;
use crate::style;

/// Says what a worker did and what is left to do.
pub fn report_worker(summary: &ShardSummary, json: bool, quiet: bool) -> anyhow::Result<ExitCode> {
    let shard = Shard {
        index: summary.worker,
        count: summary.workers,
    };
    let mut out = io::stdout().lock();
    if json {
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
    let summary = ofconvert_engine::commit(&args.output, args.verify, FrontEnd::CommandLine)
        .with_context(|| format!("commit {}", args.output.display()))?;
    report::print_summary(&summary, args.json, quiet)?;
    Ok(ExitCode::failure_if(summary.failed > 0))
}
