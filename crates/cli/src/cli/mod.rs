//! The command line, as clap parses it: the program, its commands, and the groups of flags
//! several commands take (threads, verbosity, the network); each command's own arguments
//! are in `convert.rs` (tf2of, of2tf, commit) and `inspect.rs` (the others). The values it
//! takes are parsed by the engine's configuration (`ofconvert_engine::config`), which the
//! Python package shares; so are the checks that need more than one argument (`config.rs`
//! hands them over).

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use ofconvert_engine::config::{choice, Choice};
use ofconvert_engine::FrontEnd;

mod convert;
mod inspect;

pub use convert::{CommitArgs, ConvertArgs, MappingArgs, Of2tfArgs, Tf2ofArgs};
pub use inspect::{
    CatArgs, CompletionsArgs, CountArgs, DiffArgs, IndexArgs, ManArgs, SchemaArgs, VerifyArgs,
};

/// Convert TensorFlow TFRecord datasets to OneFlow OFRecord datasets and back, and inspect
/// record files of both formats.
#[derive(Debug, Parser)]
#[command(
    name = "ofconvert",
    version = env!("OFCONVERT_VERSION"),
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,

    /// Worker threads, for a command that takes them given before it.
    #[command(flatten)]
    pub threads: Threads,

    /// Quiet or verbose, for a command that takes them given before it.
    #[command(flatten)]
    pub verbosity: Verbosity,

    /// How requests to stores are made, for a command that reads or writes them given
    /// before it.
    #[command(flatten)]
    pub network: Network,
}

/// `-j/--jobs`, taken by the commands that work in parallel (before or after the command's
/// name: `ofconvert -j 2 tf2of ...` or `ofconvert tf2of -j 2 ...`).
#[derive(Clone, Copy, Debug, Default, Args)]
pub struct Threads {
    /// Worker threads (default: one per core).
    #[arg(long, short = 'j', value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..4096))]
    pub jobs: Option<u64>,
}

/// `-q/--quiet` and `-v/--verbose`, taken by the commands that draw progress or print a
/// report.
#[derive(Clone, Copy, Debug, Default, Args)]
pub struct Verbosity {
    /// Print no progress and no report, only errors (and --json output).
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,

    /// Say more: each dataset's notes and warnings in full, the files each read and wrote,
    /// and every request to a store that failed and was tried again.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

/// How every request to an object store or HTTP server is made, taken by the commands that
/// read or write them.
#[derive(Clone, Copy, Debug, Default, Args)]
pub struct Network {
    /// Times a failed request to an object store or HTTP server is tried again (5xx,
    /// 429/SlowDown, resets, timeouts, bodies cut short) before the run fails [default: 10].
    #[arg(long, value_name = "N")]
    pub retries: Option<usize>,

    /// Seconds after a request's first try past which it is not tried again
    /// [default: 180].
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub retry_timeout: Option<f64>,

    /// Seconds one try of a request may take, its body included [default: 60].
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub request_timeout: Option<f64>,

    /// Send requests to S3, GCS and Azure unsigned, as to a public bucket, whatever
    /// credentials the environment holds.
    #[arg(long)]
    pub anonymous: bool,

    /// Transfers each job keeps going at once with an object store: ranges read ahead and
    /// parts uploading while the next are written (each range up to 8 MiB, each upload up
    /// to 16 MiB in memory, 48 MiB for a multipart one) [default: 4].
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=256).map(|n| n as usize))]
    pub in_flight: Option<usize>,
}

impl Threads {
    /// These, or where not given, `outer` (given before the command's name).
    pub fn or(self, outer: Threads) -> Threads {
        Threads {
            jobs: self.jobs.or(outer.jobs),
        }
    }
}

impl Verbosity {
    /// These, or where not given, `outer`.
    pub fn or(self, outer: Verbosity) -> Verbosity {
        Verbosity {
            quiet: self.quiet || outer.quiet,
            verbose: self.verbose || outer.verbose,
        }
    }
}

impl Network {
    /// These, or where not given, `outer`.
    pub fn or(self, outer: Network) -> Network {
        Network {
            retries: self.retries.or(outer.retries),
            retry_timeout: self.retry_timeout.or(outer.retry_timeout),
            request_timeout: self.request_timeout.or(outer.request_timeout),
            anonymous: self.anonymous || outer.anonymous,
            in_flight: self.in_flight.or(outer.in_flight),
        }
    }
}

/// A count of at least 1 (parts, records): clap's own range check names the largest u64.
pub(crate) fn at_least_one(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("0: it must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{text} is not a whole number of at least 1")),
    }
}

/// A positive number of seconds.
pub(crate) fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs.is_finite() && secs < 1e9 => Ok(secs),
        _ => Err(format!("{text} is not a positive number of seconds")),
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Convert a tree of TFRecord files into OneFlow OFRecord datasets.
    ///
    /// Every directory's record files are grouped into datasets: shards named
    /// STEM-NNNNN-of-MMMMM form the family STEM, the other record files one more family. A
    /// directory with one family becomes one dataset at the same relative path under OUT;
    /// with several, each family gets a subdirectory named after it. Each dataset gets
    /// parts named part-NNNNN (one per input file by default) and an
    /// ofconvert-manifest.json that says how to open it in OneFlow.
    ///
    /// Mapping rules must match: a dataset whose first 1000 records lack a feature that
    /// --rename, --cast, --offset, --keep or --drop names (or all of --preset's keys) fails
    /// before anything of it is written, with its features and the closest name listed.
    #[command(
        name = "tf2of",
        mut_arg("no_verify", |arg| help(arg, "Do not check the TFRecord length and data \
            checksums of the input while reading (a damaged length may then read garbage)")),
        mut_arg("on_corrupt", |arg| help(arg, "What to do with damaged input records: fail \
            their dataset, or skip them and count them (bad data checksums and Examples that \
            do not parse are skipped, reading resumes after a damaged length at the next record \
            whose checksums agree, a truncated tail ends the file)")),
        mut_arg("part_prefix", |arg| help(arg, "Prefix of the OneFlow part names written \
            (OFRecordReader's part_name_prefix)")),
        mut_arg("parts", |arg| help(arg, "Write N OneFlow parts of balanced record counts \
            per dataset (records are counted first)")),
        mut_arg("records_per_part", |arg| help(arg, "At most N records per OneFlow part; \
            alone, cut each dataset every N records, across input files")),
        mut_arg("max_part_bytes", |arg| help(arg, "Start a new OneFlow part before one grows \
            past SIZE bytes (suffixes K, M, G: 256M)")),
    )]
    Tf2of(Tf2ofArgs),

    /// Convert OneFlow OFRecord datasets (directories of part-N files) into TFRecord files.
    ///
    /// Each dataset directory becomes the same relative directory under OUT holding
    /// DIRNAME-NNNNN-of-MMMMM.tfrecord files (.gz or .zz with --compression), one per part
    /// by default, or DIRNAME.tfrecord when there is one. A dataset that came from TFDS
    /// (its manifest says so, or a dataset_info.json is in or above its directory) goes
    /// back as TFDS lays it out: every split in one folder as
    /// NAME-SPLIT.tfrecord-NNNNN-of-NNNNN, with dataset_info.json (shard lengths of the new
    /// files) and features.json written last, for tfds.builder_from_directory. Mapping
    /// rules must match, as for tf2of.
    #[command(
        name = "of2tf",
        mut_arg("no_verify", |arg| help(arg, "OFRecord parts carry no checksums: there is \
            nothing to skip, and this changes nothing (accepted so that one set of flags \
            serves both directions). Every payload is still parsed")),
        mut_arg("on_corrupt", |arg| help(arg, "What to do with damaged OFRecord records: fail \
            their dataset, or skip them and count them (payloads that do not parse are \
            skipped; a bad length or a truncated tail ends the part)")),
        mut_arg("part_prefix", |arg| help(arg, "Prefix of the OneFlow part names read: only \
            PREFIX<number> files of a dataset directory are its parts")),
        mut_arg("parts", |arg| help(arg, "Write N TFRecord shards of balanced record counts \
            per dataset (records are counted first)")),
        mut_arg("records_per_part", |arg| help(arg, "At most N records per TFRecord shard; \
            alone, cut each dataset every N records, across parts")),
        mut_arg("max_part_bytes", |arg| help(arg, "Start a new TFRecord shard before one \
            grows past SIZE bytes (suffixes K, M, G: 256M)")),
    )]
    Of2tf(Of2tfArgs),

    /// Publish a conversion spread over many machines once all its workers are done.
    ///
    /// Checks that every part of the plan stored in OUT/.ofconvert/ has its receipt and is
    /// there with the size the receipt says (--verify also reads each part back and compares
    /// its CRC32C), writes each dataset's manifest as a single run does, then removes
    /// OUT/.ofconvert/. Parts not finished: exit 1, naming each part and its worker, and
    /// nothing is published. It converts nothing.
    Commit(CommitArgs),

    /// Print records in protobuf text format (as Python's text_format.MessageToString) or
    /// as JSON lines.
    Cat(CatArgs),

    /// Count the records of files (payloads are skipped, not read).
    Count(CountArgs),

    /// Check every checksum and parse every payload; report each problem with its offset.
    Verify(VerifyArgs),

    /// Show the features of records: names, kinds, value counts and presence.
    Schema(SchemaArgs),

    /// Write .idx files (OFFSET LENGTH per record) for DALI and the Python tfrecord package.
    Index(IndexArgs),

    /// Compare two datasets record by record: exit 0 when they hold the same records, 1
    /// naming the first difference, 2 when they cannot be compared.
    ///
    /// Each side is a TFRecord or OFRecord file or a tree of them, local or a URL. Trees are
    /// cut into datasets as tf2of cuts them, which pair up by name (a dataset and its
    /// conversion have the same). An Example and an OFRecord are equal when they carry the
    /// same features with the same values, as the default mapping relates them: OneFlow's
    /// int32 equals the int64 of the same number, a double the float it holds exactly.
    /// Given the mapping rules a conversion of A into B was given (--preset, --rename,
    /// --cast, --offset, ...), A's records are mapped by them first, as the converter did.
    Diff(DiffArgs),

    /// Print a shell completion script for bash, zsh, fish or powershell.
    ///
    /// For bash: `ofconvert completions bash > ~/.local/share/bash-completion/completions/ofconvert`.
    Completions(CompletionsArgs),

    /// Print a manual page (roff): the program's, or a command's; or write them all.
    ///
    /// `ofconvert man > ofconvert.1 && man ./ofconvert.1`; `ofconvert man tf2of` prints
    /// ofconvert-tf2of(1); `ofconvert man --dir DIR` writes every page into DIR.
    Man(ManArgs),
}

impl Command {
    /// The threads, quietness and network settings this command was given (defaults for
    /// what it does not take).
    pub fn shared(&self) -> (Threads, Verbosity, Network) {
        let none = (Threads::default(), Verbosity::default(), Network::default());
        match self {
            Command::Tf2of(Tf2ofArgs { common, .. }) | Command::Of2tf(Of2tfArgs { common, .. }) => {
                (common.threads, common.verbosity, common.network)
            }
            Command::Commit(args) => (none.0, args.verbosity, args.network),
            Command::Cat(args) => (none.0, args.verbosity, args.network),
            Command::Count(args) => (args.threads, args.verbosity, args.network),
            Command::Verify(args) => (args.threads, args.verbosity, args.network),
            Command::Schema(args) => (args.threads, args.verbosity, args.network),
            Command::Index(args) => (args.threads, args.verbosity, args.network),
            Command::Diff(args) => (args.threads, args.verbosity, args.network),
            Command::Completions(_) | Command::Man(_) => none,
        }
    }
}

/// The names of choice `T`, for clap to check and to list in help and completion: each value
/// under its first name, its other names (TensorFlow's `""` for no compression) taken as
/// aliases; parsed by the engine's configuration, as the Python package parses them.
pub(crate) fn choices<T: Choice + PartialEq + Send + Sync>() -> impl TypedValueParser<Value = T> {
    let mut listed: Vec<(PossibleValue, T)> = Vec::new();
    for &(name, value) in T::CHOICES {
        match listed.iter_mut().find(|(_, known)| *known == value) {
            Some((possible, _)) => *possible = possible.clone().alias(name),
            None => listed.push((PossibleValue::new(name), value)),
        }
    }
    PossibleValuesParser::new(listed.into_iter().map(|(possible, _)| possible)).map(|name| {
        choice::<T>(FrontEnd::CommandLine, &name).expect("every listed name is a choice")
    })
}

/// Gives a flag shared by both directions the help text of one of them.
pub(crate) fn help(arg: clap::Arg, text: &'static str) -> clap::Arg {
    arg.help(text).long_help(text)
}
