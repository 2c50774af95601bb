//! The `ofconvert` command line as a library: [`run`] parses arguments, calls the
//! conversion engine, draws progress from the calling thread and returns the exit status.
//! The `ofconvert` binary is `main` around it, and the Python package's `ofconvert` command
//! calls the same function, so that both are one program.

mod cat;
mod cli;
mod config;
mod diff;
mod exit_codes;
mod inspect;
mod man;
mod preview;
mod progress;
mod report;
mod shard;
mod shown;
mod signals;
mod style;
mod warnings;

use std::fmt;
use std::io::{self, Write};
use std::time::Duration;

use clap::{CommandFactory, Parser as _};
use ofconvert_engine::config::{self as engine_config, ConvertConfig, Ran};
use ofconvert_engine::FrontEnd;

use crate::cli::{Cli, Command, ConvertArgs};
use crate::exit_codes::ExitCode;
use crate::progress::Progress;

/// A mistake in how the tool was called, found after clap's own checks.
#[derive(Debug)]
pub(crate) struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Runs the command line `args` (the program's name first, as `std::env::args_os` gives
/// it) and returns the exit status: 0 all good, 1 some input failed, 2 a usage error, 130
/// interrupted. It prints what the command prints, draws progress on stderr and handles
/// SIGINT and SIGTERM as the binary does; a second signal ends the process at once.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    ignore_file_size_signal();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            // Help and --version are printed on stdout and exit 0; mistakes on stderr, 2.
            let _ = err.print();
            return err.exit_code();
        }
    };
    let code = match run_command(cli) {
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
    code.status()
}

/// Every subcommand with the long names of its flags, globals included (`help` and
/// `version` left out), in the order `--help` lists them: what another front end of the
/// same program (the Python package) checks that it takes too.
pub fn flags() -> Vec<(String, Vec<String>)> {
    let mut cli = Cli::command();
    cli.build();
    cli.get_subcommands()
        .filter(|command| command.get_name() != "help")
        .map(|command| {
            let names = command
                .get_arguments()
                .filter_map(|arg| arg.get_long())
                .filter(|long| !matches!(*long, "help" | "version"))
                .map(str::to_owned)
                .collect();
            (command.get_name().to_owned(), names)
        })
        .collect()
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

fn run_command(cli: Cli) -> anyhow::Result<ExitCode> {
    let (threads, output, network) = cli.command.shared();
    let jobs = threads.or(cli.threads).jobs;
    let output = output.or(cli.verbosity);
    let (quiet, detail) = (
        output.quiet,
        report::Detail {
            verbose: output.verbose,
        },
    );
    let network = network.or(cli.network);
    let defaults = ofconvert_engine::NetworkBounds::default();
    ofconvert_engine::set_network_bounds(ofconvert_engine::NetworkBounds {
        retries: network.retries.unwrap_or(defaults.retries),
        retry_timeout: network
            .retry_timeout
            .map_or(defaults.retry_timeout, Duration::from_secs_f64),
        request_timeout: network
            .request_timeout
            .map_or(defaults.request_timeout, Duration::from_secs_f64),
    });
    ofconvert_engine::set_anonymous(network.anonymous);
    ofconvert_engine::set_transfers_in_flight(
        network
            .in_flight
            .unwrap_or(ofconvert_engine::DEFAULT_TRANSFERS),
    );
    let code = match &cli.command {
        Command::Tf2of(args) => convert(config::tf2of(args, jobs), &args.common, quiet, detail),
        Command::Of2tf(args) => convert(config::of2tf(args, jobs), &args.common, quiet, detail),
        Command::Commit(args) => shard::run_commit(args, quiet, detail),
        Command::Cat(args) => cat::run(args),
        Command::Count(args) => inspect::count(args, jobs, quiet),
        Command::Verify(args) => inspect::verify(args, jobs, quiet),
        Command::Schema(args) => inspect::schema(args, jobs, quiet),
        Command::Index(args) => inspect::index(args, jobs, quiet),
        Command::Diff(args) => diff::run(args, jobs, quiet),
        Command::Completions(args) => {
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "ofconvert", &mut script);
            print_all(&script)
        }
        Command::Man(args) => man::run(args),
    };
    if detail.verbose {
        report::write_failed_tries(&mut io::stderr().lock());
    }
    code
}

/// Writes `bytes` to stdout; a closed pipe (`| head`) is no failure.
pub(crate) fn print_all(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(err) if err.kind() != io::ErrorKind::BrokenPipe => Err(err.into()),
        _ => Ok(ExitCode::Success),
    }
}

/// Runs a conversion (or a worker's share of one) on a worker thread while this thread
/// draws its progress, then reports.
fn convert(
    config: ConvertConfig,
    args: &ConvertArgs,
    quiet: bool,
    detail: report::Detail,
) -> anyhow::Result<ExitCode> {
    let options = config.options()?;
    let _on_signals = signals::stop_on_signals(&options.interrupt)?;
    let plan = config.plan(&options)?;
    let ran = Progress::new(quiet)
        .each_dataset(detail.verbose)
        .drive(|report| config.convert(plan, &options, report));
    let summary = match ran {
        Ok(Ran::Whole(summary)) => summary,
        Ok(Ran::Share(summary)) => return shard::report_worker(&summary, args.json, quiet),
        Ok(Ran::Dry(preview)) => return preview::print_preview(&preview, args.json),
        Err(err) if config.shard.is_some() => return Err(err.into()),
        Err(err) => return Err(anyhow::Error::new(err).context("the conversion could not start")),
    };
    report::print_summary(
        &summary,
        args.json,
        quiet,
        detail,
        report::Ending::Converted,
    )?;
    if summary.datasets.is_empty() && !args.json && quiet {
        style::error!("nothing to convert in {}", summary.input);
    }
    if summary.datasets.is_empty() {
        let input = std::path::Path::new(&summary.input);
        let hint = engine_config::nothing_found(
            input,
            config.direction,
            &config.part_prefix,
            FrontEnd::CommandLine,
        );
        if let Some(hint) = hint {
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
