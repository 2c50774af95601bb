//! The arguments of the inspecting commands (`cat`, `count`, `verify`, `schema`, `index`,
//! `diff`) and of `man` and `completions`.

use std::path::PathBuf;

use clap::Args;
use ofconvert_engine::config::Preset;
use ofconvert_engine::Format;

use super::convert::MappingArgs;
use super::{choices, Network, Threads, Verbosity};

/// The heading of `diff`'s mapping flags in its help.
const MAPPING_OF_A: &str = "Mapping of A (the rules the conversion of A into B was given)";

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

    /// Print at most N records of each file; a record that cannot be shown counts, its
    /// error printed in its place.
    #[arg(short = 'n', long = "count", value_name = "N")]
    pub count: Option<u64>,

    /// Print each record's bytes as they are, not parsed: for files whose records are not
    /// Examples or OFRecords. In hex (the default) or base64; with --json, one object a
    /// record ({"record", "offset", "bytes", and "hex" or "base64"}).
    #[arg(
        long,
        value_name = "ENCODING",
        num_args = 0..=1,
        default_missing_value = "hex",
        require_equals = true,
        value_parser = ["hex", "base64"],
        conflicts_with = "message"
    )]
    pub raw: Option<String>,

    /// Skip the first N records of each file.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip: u64,

    /// Each file holds one bare serialized message (what SerializeToString() writes), no
    /// framing.
    #[arg(long)]
    pub message: bool,

    // -q: records only, no `==> FILE <==` line before each file's; -v: that line even for
    // one file (cat.rs).
    #[command(flatten)]
    pub verbosity: Verbosity,

    #[command(flatten)]
    pub network: Network,
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

    #[command(flatten)]
    pub threads: Threads,

    #[command(flatten)]
    pub verbosity: Verbosity,

    #[command(flatten)]
    pub network: Network,
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

    #[command(flatten)]
    pub threads: Threads,

    #[command(flatten)]
    pub verbosity: Verbosity,

    #[command(flatten)]
    pub network: Network,
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
    #[arg(long, value_name = "N", value_parser = super::at_least_one)]
    pub sample: Option<u64>,

    #[command(flatten)]
    pub threads: Threads,

    #[command(flatten)]
    pub verbosity: Verbosity,

    #[command(flatten)]
    pub network: Network,
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

    /// Read the files as this format instead of telling it from their content (an
    /// OFRecord file has no index to write).
    #[arg(long, value_name = "FORMAT", ignore_case = true, value_parser = choices::<Format>())]
    pub format: Option<Format>,

    /// Print what was written as JSON: each file, its index and its records.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub threads: Threads,

    #[command(flatten)]
    pub verbosity: Verbosity,

    #[command(flatten)]
    pub network: Network,
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

    #[command(flatten)]
    pub threads: Threads,

    #[command(flatten)]
    pub verbosity: Verbosity,

    #[command(flatten)]
    pub network: Network,

    /// Map A's records with a preset first, as tf2of --preset maps them (imagenet: the
    /// inception script's keys and 1-based labels to OneFlow-Benchmark's).
    #[arg(long, value_name = "NAME", ignore_case = true, value_parser = choices::<Preset>(),
          help_heading = MAPPING_OF_A)]
    pub preset: Option<Preset>,

    #[command(flatten, next_help_heading = MAPPING_OF_A)]
    pub mapping: MappingArgs,

    /// Round A's doubles (and integers cast to a float type) to the nearest float, as
    /// of2tf --lossy does.
    #[arg(long, help_heading = MAPPING_OF_A)]
    pub lossy: bool,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (tf2of, of2tf, ...); the program's page without it.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,

    /// Write every page (ofconvert.1, ofconvert-tf2of.1, ...) into this directory instead.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
