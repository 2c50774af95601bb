//! The command line, as clap parses it. The values it takes are parsed by the engine's
//! configuration (`ofconvert_engine::config`), which the Python package shares; so are the
//! checks that need more than one argument (`config.rs` hands them over).

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use ofconvert_bridge::SequencePolicy;
use ofconvert_engine::config::{choice, parse_size, Cast, Choice, Images, Offset, Preset, Rename};
use ofconvert_engine::layout::{DEFAULT_PART_DIGITS, DEFAULT_PART_PREFIX};
use ofconvert_engine::{Format, FrontEnd, OnCorrupt, OnEmpty};
use ofconvert_tfrecord::Compression;

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

    /// Worker threads (default: one per core).
    #[arg(long, short = 'j', global = true, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..4096))]
    pub jobs: Option<u64>,

    /// Print no progress and no report, only errors (and --json output).
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,

    /// Times a failed request to an object store or HTTP server is tried again (5xx,
    /// 429/SlowDown, resets, timeouts, bodies cut short) before the run fails.
    #[arg(long, global = true, value_name = "N", default_value_t = 10)]
    pub retries: usize,

    /// Seconds after a request's first try past which it is not tried again.
    #[arg(long, global = true, value_name = "SECS", default_value_t = 180.0,
          value_parser = seconds)]
    pub retry_timeout: f64,

    /// Seconds one try of a request may take, its body included.
    #[arg(long, global = true, value_name = "SECS", default_value_t = 60.0,
          value_parser = seconds)]
    pub request_timeout: f64,

    /// Send requests to S3, GCS and Azure unsigned, as to a public bucket, whatever
    /// credentials the environment holds.
    #[arg(long, global = true)]
    pub anonymous: bool,

    /// Transfers each job keeps going at once with an object store: ranges read ahead and
    /// parts uploading while the next are written (each range up to 8 MiB, each part's
    /// upload up to 32 MiB in memory).
    #[arg(long, global = true, value_name = "N",
          default_value_t = ofconvert_engine::DEFAULT_TRANSFERS,
          value_parser = clap::value_parser!(u64).range(1..=256).map(|n| n as usize))]
    pub in_flight: usize,
}

/// A positive number of seconds.
fn seconds(text: &str) -> Result<f64, String> {
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
            do not parse are skipped; a damaged length or a truncated tail ends the file)")),
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
    Diff(DiffArgs),

    /// Print a shell completion script for bash, zsh, fish or powershell.
    ///
    /// For bash: `ofconvert completions bash > ~/.local/share/bash-completion/completions/ofconvert`.
    Completions(CompletionsArgs),

    /// Print the manual page (roff).
    ///
    /// `ofconvert man > ofconvert.1 && man ./ofconvert.1`.
    Man,
}

#[derive(Debug, Args)]
pub struct CommitArgs {
    /// The output the workers wrote into (a directory or a URL).
    #[arg(value_name = "OUT")]
    pub output: PathBuf,

    /// Also read every part back and compare its CRC32C with its receipt's.
    #[arg(long)]
    pub verify: bool,

    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// What both conversions share.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The input: a directory tree or a record file. tf2of takes several (a shell glob):
    /// record files named one by one are taken as their directory would be, keeping only
    /// them; each directory named goes to OUT/NAME, NAME being its own.
    #[arg(value_name = "IN", required = true, num_args = 1..)]
    pub inputs: Vec<PathBuf>,

    /// The output directory; it must be empty or missing unless --overwrite or --resume.
    #[arg(value_name = "OUT")]
    pub output: PathBuf,

    /// Replace the datasets this run writes (their old parts and manifests are removed);
    /// other files in OUT stay.
    #[arg(long, conflicts_with = "resume")]
    pub overwrite: bool,

    /// Finish an interrupted run: keep the datasets whose manifest and parts are complete,
    /// redo the others.
    #[arg(long)]
    pub resume: bool,

    /// What to do with damaged records: fail their dataset, or skip them (bad data
    /// checksums and unparsable payloads are skipped, a truncated tail ends the file) and
    /// count them.
    #[arg(long, default_value = "fail", value_name = "POLICY", ignore_case = true,
          value_parser = choices::<OnCorrupt>())]
    pub on_corrupt: OnCorrupt,

    /// Do not check TFRecord checksums while reading.
    #[arg(long)]
    pub no_verify: bool,

    /// Do not flush parts to the disk before they take their final names: faster, and a
    /// killed run still leaves nothing half-written, but a power failure may lose parts.
    #[arg(long)]
    pub no_sync: bool,

    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    /// Prefix of OneFlow part names.
    #[arg(long, default_value = DEFAULT_PART_PREFIX, value_name = "PREFIX")]
    pub part_prefix: String,

    /// Make N parts of balanced record counts per dataset (records are counted first).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub parts: Option<u64>,

    /// At most N records per part; alone, cut each dataset every N records, across input
    /// files.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub records_per_part: Option<u64>,

    /// Start a new part before one grows past SIZE bytes (suffixes K, M, G: 256M).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_part_bytes: Option<u64>,

    /// Parts only: leave out the files that come with the records (every other file of a
    /// dataset's folder: TFDS metadata and class names, READMEs, licences...), which are
    /// otherwise copied beside the parts and written back by of2tf.
    #[arg(long)]
    pub no_side_files: bool,

    /// Be worker K of N (counted from 0) of one conversion spread over many machines: every
    /// worker plans alike, the first stores the plan in OUT/.ofconvert/, each converts its
    /// share of the parts; `ofconvert commit OUT` publishes once all are done. Rerunning a
    /// worker skips the parts it finished. Not with --max-part-bytes, --overwrite or
    /// --resume.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<ofconvert_engine::Shard>,

    #[command(flatten)]
    pub mapping: MappingArgs,
}

/// Feature mapping rules; every rule names a feature by its input name.
#[derive(Debug, Args)]
pub struct MappingArgs {
    /// Rename a feature (repeatable).
    #[arg(long, value_name = "OLD=NEW")]
    pub rename: Vec<Rename>,

    /// Cast a numeric feature to int32, int64, float or double, range-checked (repeatable).
    #[arg(long, value_name = "NAME=TYPE")]
    pub cast: Vec<Cast>,

    /// Add an integer to every value of an integer feature, e.g. label=-1 for 0-based
    /// labels (repeatable).
    #[arg(long, value_name = "NAME=DELTA", allow_hyphen_values = true)]
    pub offset: Vec<Offset>,

    /// Keep only these features (repeatable).
    #[arg(long, value_name = "NAME")]
    pub keep: Vec<String>,

    /// Leave this feature out (repeatable).
    #[arg(long, value_name = "NAME")]
    pub drop: Vec<String>,
}

#[derive(Debug, Args)]
pub struct Tf2ofArgs {
    #[command(flatten)]
    pub common: ConvertArgs,

    /// Zero-padded width of part numbers (0: unpadded, part-0); OneFlow's
    /// part_name_suffix_length.
    #[arg(long, default_value_t = DEFAULT_PART_DIGITS as u64, value_name = "N",
          value_parser = clap::value_parser!(u64).range(0..=20))]
    pub part_digits: u64,

    /// A mapping preset: imagenet turns the inception script's keys and 1-based int64
    /// labels into OneFlow-Benchmark's encoded and 0-based int32 class/label; it also
    /// shifts image/object/bbox/label by -1 into an int32 object/bbox/label, and casts
    /// height, width and channels to int32.
    #[arg(long, value_name = "NAME", ignore_case = true, value_parser = choices::<Preset>())]
    pub preset: Option<Preset>,

    /// What to do with tf.train.SequenceExample records: refuse them, or flatten each
    /// feature list NAME into NAME (all values) and NAME/lengths.
    #[arg(long, default_value = "refuse", value_name = "POLICY", ignore_case = true,
          value_parser = choices::<SequencePolicy>())]
    pub sequence: SequencePolicy,

    /// Wrap records that are not Examples whole, as one bytes feature NAME.
    #[arg(long, value_name = "NAME")]
    pub raw_feature: Option<String>,

    /// What to do with Examples that have no features (OneFlow cannot read them).
    #[arg(long, default_value = "error", value_name = "POLICY", ignore_case = true,
          value_parser = choices::<OnEmpty>())]
    pub empty: OnEmpty,

    /// What to do with encoded images: keep their bytes; re-encode as RGB JPEG the ones
    /// OneFlow 0.9's OFRecordImageDecoder cannot decode (PNG, GIF, BMP, WebP, grayscale and
    /// CMYK JPEG; image/format, image/colorspace and image/channels, or format, colorspace
    /// and channels, then say JPEG, RGB and 3 where the record has them); or decode every
    /// image to its uint8 pixels (height x width x channels) with NAME/shape beside it.
    #[arg(long, default_value = "keep", value_name = "MODE", ignore_case = true,
          value_parser = choices::<Images>())]
    pub images: Images,

    /// JPEG quality for --images jpeg (100, as TensorFlow's inception
    /// build_imagenet_data.py re-encodes its PNG and CMYK images).
    #[arg(long, default_value_t = 100, value_name = "1..100",
          value_parser = clap::value_parser!(u8).range(1..=100))]
    pub jpeg_quality: u8,
}

#[derive(Debug, Args)]
pub struct Of2tfArgs {
    #[command(flatten)]
    pub common: ConvertArgs,

    /// Compress the TFRecord files as TensorFlow does (read them with compression_type).
    /// TensorFlow's own spellings are taken too: GZIP, ZLIB and "" (none), in any case.
    #[arg(long, default_value = "none", value_name = "KIND", ignore_case = true,
          value_parser = choices::<Compression>())]
    pub compression: Compression,

    /// Round doubles (and integers cast to a float type) to the nearest float, counting the
    /// values changed in the summary and manifest; without it, a double that float cannot
    /// hold exactly fails its dataset. A finite double beyond float's range fails either way.
    #[arg(long)]
    pub lossy: bool,
}

#[derive(Debug, Args)]
pub struct CatArgs {
    /// Record files, or directories to search for them (as count does). Each may be a
    /// URL: s3://bucket/prefix, gs://..., az://container/prefix, file:///path, https://... (one
    /// file).
    #[arg(required = true, value_name = "PATH")]
    pub files: Vec<PathBuf>,

    /// Read the files as this format instead of telling it from their content.
    #[arg(long, value_name = "FORMAT", ignore_case = true, value_parser = choices::<Format>())]
    pub format: Option<Format>,

    /// One JSON object per record instead of text format: protobuf's JSON mapping, except
    /// that bytes values that are UTF-8 text are shown as text (base64 for the others).
    #[arg(long)]
    pub json: bool,

    /// Cut bytes values longer than N bytes (a JPEG, say) to their first N, marked
    /// "... (123456 bytes)".
    #[arg(long, value_name = "N")]
    pub max_bytes: Option<usize>,

    /// Print at most N records of each file.
    #[arg(short = 'n', long = "count", value_name = "N")]
    pub count: Option<u64>,

    /// Skip the first N records of each file.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip: u64,

    /// Each file holds one bare serialized message (what SerializeToString() writes), no
    /// framing.
    #[arg(long)]
    pub message: bool,
}

#[derive(Debug, Args)]
pub struct CountArgs {
    /// Record files, or directories to search for them. Each may be a
    /// URL: s3://bucket/prefix, gs://..., az://container/prefix, file:///path, https://... (one
    /// file).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Read the files as this format instead of telling it from their content.
    #[arg(long, value_name = "FORMAT", ignore_case = true, value_parser = choices::<Format>())]
    pub format: Option<Format>,

    /// Do not check TFRecord length checksums.
    #[arg(long)]
    pub no_verify: bool,

    /// Print the counts as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Record files, or directories to search for them. Each may be a
    /// URL: s3://bucket/prefix, gs://..., az://container/prefix, file:///path, https://... (one
    /// file).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Read the files as this format instead of telling it from their content.
    #[arg(long, value_name = "FORMAT", ignore_case = true, value_parser = choices::<Format>())]
    pub format: Option<Format>,

    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Record files, or directories to search for them; their records are taken together.
    /// Each may be a URL: s3://bucket/prefix, gs://..., az://container/prefix, file:///path,
    /// https://... (one file).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Read the files as this format instead of telling it from their content.
    #[arg(long, value_name = "FORMAT", ignore_case = true, value_parser = choices::<Format>())]
    pub format: Option<Format>,

    /// Print the OneFlow reader and decoder lines that read these features.
    #[arg(long, conflicts_with_all = ["tf", "json"])]
    pub oneflow: bool,

    /// Print the feature_description dict for tf.io.parse_single_example.
    #[arg(long, conflicts_with = "json")]
    pub tf: bool,

    /// Print the schema as JSON.
    #[arg(long)]
    pub json: bool,

    /// Read only the first N records of each dataset (the record files of one directory),
    /// not every record.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub sample: Option<u64>,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Uncompressed TFRecord files, or directories to search for them. Each may be a
    /// URL: s3://bucket/prefix, gs://..., az://container/prefix, file:///path, https://... (one
    /// file).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Write the .idx files here instead of beside each input (a directory or a URL).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,

    /// Print what was written as JSON: each file, its index and its records.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first dataset: a TFRecord or OFRecord file, or a tree of them; a local path or
    /// a URL (s3://bucket/prefix, gs://..., az://container/prefix, file:///path,
    /// https://... for one file).
    #[arg(value_name = "A")]
    pub a: PathBuf,

    /// The second dataset, the same way.
    #[arg(value_name = "B")]
    pub b: PathBuf,

    /// Compare the records of each dataset as multisets (by a digest of each record),
    /// whatever their order.
    #[arg(long)]
    pub unordered: bool,

    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    /// Read A's files as this format instead of telling it from them.
    #[arg(long, value_name = "FORMAT", ignore_case = true, value_parser = choices::<Format>())]
    pub format_a: Option<Format>,

    /// Read B's files as this format instead of telling it from them.
    #[arg(long, value_name = "FORMAT", ignore_case = true, value_parser = choices::<Format>())]
    pub format_b: Option<Format>,
}

/// The names of choice `T`, for clap to check and to list in help and completion: each value
/// under its first name, its other names (TensorFlow's `""` for no compression) taken as
/// aliases; parsed by the engine's configuration, as the Python package parses them.
fn choices<T: Choice + PartialEq + Send + Sync>() -> impl TypedValueParser<Value = T> {
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
fn help(arg: clap::Arg, text: &'static str) -> clap::Arg {
    arg.help(text).long_help(text)
}
