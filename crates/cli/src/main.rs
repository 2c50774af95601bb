//! `ofconvert`: the command line over the conversion engine. It parses arguments, calls the
//! engine, draws progress from the main thread and picks the exit code.

mod cat;
mod cli;
mod config;
mod diff;
mod exit_codes;
mod hints;
mod inputs;
mod inspect;
mod progress;
mod report;
mod shard;
mod shown;
mod style;
mod values;

use std::fmt;
use std::io::{self, Write};
use std::time::Duration;

use anyhow::Context as _;
use clap::{CommandFactory, Parser};
use ofconvert_engine::{NamedRule, Options};

use crate::cli::{Cli, Command, ConvertArgs};
use crate::exit_codes::ExitCode;
use crate::progress::Progress;

/// A mistake in how the tool was called, found after clap's own checks.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn main() {
    ignore_file_size_signal();
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        Err(err) => {
            style::error!("{err:#}");
            let usage = err.downcast_ref::<UsageError>().is_some()
                || err
                    .downcast_ref::<ofconvert_engine::Error>()
                    .is_some_and(ofconvert_engine::Error::is_usage);
            if usage {
                ExitCode::Usage
            } else {
                ExitCode::Failure
            }
        }
    };
    code.exit()
}

/// SIGINT (Ctrl-C) and SIGTERM set `interrupt`: the conversion stops at the next record,
/// removes its temporary files and reports what it finished. A second signal ends the
/// process at once, with the status a shell gives a Ctrl-C.
pub(crate) fn stop_on_signals(interrupt: &ofconvert_engine::Interrupt) -> io::Result<()> {
    #[cfg(unix)]
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // The exit is registered first, so it sees the flag as the previous signal left it.
        signal_hook::flag::register_conditional_shutdown(signal, 130, interrupt.flag())?;
        signal_hook::flag::register(signal, interrupt.flag())?;
    }
    #[cfg(not(unix))]
    let _ = interrupt;
    Ok(())
}

/// Past a file-size limit (`ulimit -f`) the kernel sends SIGXFSZ, which kills the process
/// on the spot: no message, the dataset half published, its temporary files left behind.
/// Ignored, the write fails with EFBIG instead, which fails that dataset, names the file and
/// cleans up like any other I/O error.
fn ignore_file_size_signal() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists; SIG_IGN installs
    // no handler code.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let jobs = cli.jobs;
    let quiet = cli.quiet;
    ofconvert_engine::set_network_bounds(ofconvert_engine::NetworkBounds {
        retries: cli.retries,
        retry_timeout: Duration::from_secs_f64(cli.retry_timeout),
        request_timeout: Duration::from_secs_f64(cli.request_timeout),
    });
    match &cli.command {
        Command::Tf2of(args) => {
            let options = config::tf2of_options(args, jobs).map_err(UsageError)?;
            let rules = config::named_rules(&args.common.mapping, args.preset);
            convert(options, &rules, &args.common, quiet)
        }
        Command::Of2tf(args) => {
            if args.common.inputs.len() > 1 {
                return Err(UsageError(
                    "of2tf takes one input: a OneFlow dataset or a tree of them".to_owned(),
                )
                .into());
            }
            let options = config::of2tf_options(args, jobs).map_err(UsageError)?;
            let rules = config::named_rules(&args.common.mapping, None);
            convert(options, &rules, &args.common, quiet)
        }
        Command::Commit(args) => shard::run_commit(args, quiet),
        Command::Cat(args) => cat::run(args),
        Command::Count(args) => inspect::count(args, jobs, quiet),
        Command::Verify(args) => inspect::verify(args, jobs, quiet),
        Command::Schema(args) => inspect::schema(args, jobs, quiet),
        Command::Index(args) => inspect::index(args, quiet),
        Command::Diff(args) => diff::run(args, jobs, quiet),
        Command::Completions(args) => {
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "ofconvert", &mut script);
            print_all(&script)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page)?;
            print_all(&page)
        }
    }
}

/// Writes `bytes` to stdout; a closed pipe (`| head`) is no failure.
fn print_all(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(err) if err.kind() != io::ErrorKind::BrokenPipe => Err(err.into()),
        _ => Ok(ExitCode::Success),
    }
}

/// Runs a conversion on a worker thread while this thread draws its progress, then
/// reports.
fn convert(
    options: Options,
    rules: &[NamedRule],
    args: &ConvertArgs,
    quiet: bool,
) -> anyhow::Result<ExitCode> {
    if let Some(shard) = args.shard {
        return shard::run_worker(options, rules, args, shard, quiet);
    }
    stop_on_signals(&options.interrupt)?;
    let direction = options.direction;
    let mut plan = inputs::plan(&args.inputs, &args.output, &options)?;
    ofconvert_engine::check_rules(&mut plan, rules);
    let plan_input = plan.input.clone();
    let output_existed = args.output.exists();
    let summary = Progress::new(quiet)
        .drive(|report| ofconvert_engine::convert(plan, &options, report))
        .context("the conversion could not start")?;
    if !output_existed {
        // A run that wrote nothing leaves no empty directory behind (one that holds
        // something is not removed).
        let _ = std::fs::remove_dir(&args.output);
    }
    report::print_summary(&summary, args.json, quiet)?;
    if summary.datasets.is_empty() && !args.json && quiet {
        style::error!("nothing to convert in {}", summary.input);
    }
    if summary.datasets.is_empty() {
        if let Some(hint) = hints::nothing_found(&plan_input, direction, &args.part_prefix) {
            style::error!("hint: {hint}");
        }
    }
    if summary.interrupted {
        let _ = report::write_interrupted(&mut io::stderr().lock(), &summary);
        return Ok(ExitCode::Interrupted);
    }
    Ok(ExitCode::failure_if(
        summary.failed > 0 || summary.datasets.is_empty() || !summary.unreadable.is_empty(),
    ))
}
