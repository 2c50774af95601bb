//! The arguments of the conversions (`tf2of`, `of2tf`) and of `commit`.

use std::path::PathBuf;

use clap::Args;
use ofconvert_bridge::SequencePolicy;
use ofconvert_engine::config::{parse_size, Cast, Images, Offset, Preset, Rename};
use ofconvert_engine::layout::{DEFAULT_PART_DIGITS, DEFAULT_PART_PREFIX};
use ofconvert_engine::{OnCorrupt, OnEmpty, TfFile};
use ofconvert_tfrecord::Compression;

use super::{choices, Network, Threads, Verbosity};

/// What both conversions share, but their inputs and output.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Say what the run would do (the datasets, where each goes, the parts it would make and,
    /// where parts follow record counts, the records) and write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Replace the datasets this run writes (their old parts and manifests are removed);
    /// other files in OUT stay.
    #[arg(long, conflicts_with = "resume")]
    pub overwrite: bool,

    /// Finish an interrupted run: keep the datasets whose manifest and parts are complete,
    /// redo the others.
    #[arg(long)]
    pub resume: bool,

    /// Remove the lock on OUT of a run that no longer runs (a lock object a killed run left
    /// in a bucket) and go on; a run still running on this machine is still waited for.
    #[arg(long)]
    pub break_lock: bool,

    /// What to do with damaged records: fail their dataset, or skip them (bad data
    /// checksums and unparsable payloads are skipped, reading resumes after a damaged length
    /// at the next good record, a truncated tail ends the file) and count them.
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
    #[arg(long, value_name = "N", value_parser = super::at_least_one)]
    pub parts: Option<u64>,

    /// At most N records per part; alone, cut each dataset every N records, across input
    /// files.
    #[arg(long, value_name = "N", value_parser = super::at_least_one)]
    pub records_per_part: Option<u64>,

    /// Start a new part before one grows past SIZE bytes (suffixes K, M, G: 256M).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_part_bytes: Option<u64>,

    /// Parts only: leave out the files that come with the records (every other file of a
    /// dataset's folder: TFDS metadata and class names, READMEs, licences...; and the files
    /// outside every dataset's folder), which are otherwise copied beside the parts (those
    /// outside, to the same place) and written back by of2tf.
    #[arg(long)]
    pub no_side_files: bool,

    /// Be worker K of N (counted from 0) of one conversion spread over many machines: every
    /// worker plans alike, the first stores the plan in OUT/.ofconvert/, each converts its
    /// share of the parts; `ofconvert commit OUT` publishes once all are done. Rerunning a
    /// worker skips the parts it finished. Not with --max-part-bytes, --overwrite, --resume
    /// or --break-lock.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<ofconvert_engine::Shard>,

    #[command(flatten)]
    pub mapping: MappingArgs,

    #[command(flatten)]
    pub threads: Threads,

    #[command(flatten)]
    pub verbosity: Verbosity,

    #[command(flatten)]
    pub network: Network,
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

    /// --rename where a dataset has the feature; one without it is not failed (trees whose
    /// datasets differ). The same for --cast-if-present, --offset-if-present,
    /// --keep-if-present and --drop-if-present.
    #[arg(long, value_name = "OLD=NEW")]
    pub rename_if_present: Vec<Rename>,

    /// --cast where a dataset has the feature.
    #[arg(long, value_name = "NAME=TYPE")]
    pub cast_if_present: Vec<Cast>,

    /// --offset where a dataset has the feature.
    #[arg(long, value_name = "NAME=DELTA", allow_hyphen_values = true)]
    pub offset_if_present: Vec<Offset>,

    /// --keep where a dataset has the feature.
    #[arg(long, value_name = "NAME")]
    pub keep_if_present: Vec<String>,

    /// --drop where a dataset has the feature.
    #[arg(long, value_name = "NAME")]
    pub drop_if_present: Vec<String>,
}

#[derive(Debug, Args)]
pub struct Tf2ofArgs {
    /// The input: a directory tree or a record file, or several (a shell glob): record
    /// files named one by one are taken as their directory would be, keeping only them;
    /// each directory named goes to OUT/NAME, NAME being its own.
    #[arg(value_name = "IN", required = true, num_args = 1..)]
    pub inputs: Vec<PathBuf>,

    /// The output directory; it must be empty or missing unless --overwrite or --resume.
    #[arg(value_name = "OUT")]
    pub output: PathBuf,

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
    /// The input: a OneFlow dataset directory (part-N files), or a tree of them.
    #[arg(value_name = "IN")]
    pub input: PathBuf,

    /// The output directory; it must be empty or missing unless --overwrite or --resume.
    #[arg(value_name = "OUT")]
    pub output: PathBuf,

    #[command(flatten)]
    pub common: ConvertArgs,

    /// Compress every TFRecord file so, as TensorFlow does (read them with
    /// compression_type); none writes them plain. Without it each dataset goes back as its
    /// manifest records its inputs: each file as it was when given back under its name,
    /// else as most of them were, plain for a dataset without one. TensorFlow's own
    /// spellings are taken too: GZIP, ZLIB and "" (none), in any case.
    #[arg(long, value_name = "KIND", ignore_case = true,
          value_parser = choices::<Compression>())]
    pub compression: Option<Compression>,

    /// Write ArrayRecord files instead (TFDS's file_format='array_record', which Grain and
    /// array_record's readers open): NAME.array_record, NAME-NNNNN-of-MMMMM.array_record, or
    /// TFDS's NAME-SPLIT.array_record-NNNNN-of-MMMMM beside a dataset_info.json saying so; a
    /// record a chunk, zstd, as array_record writes them.
    #[arg(long, default_value = "tfrecord", value_name = "FILES",
          value_parser = choices::<TfFile>())]
    pub to: TfFile,

    /// With --to array_record: how records are grouped into chunks and compressed, in
    /// array_record's own words: group_size:N, then zstd[:LEVEL] (the default, zstd:3),
    /// brotli[:LEVEL], snappy or uncompressed, separated by commas. Larger groups compress
    /// better and write faster; reading a record at random then decodes its whole chunk.
    #[arg(long, value_name = "OPTIONS")]
    pub array_record_options: Option<String>,

    /// Round doubles (and integers cast to a float type) to the nearest float, counting the
    /// values changed in the summary and manifest; without it, a double that float cannot
    /// hold exactly fails its dataset. A finite double beyond float's range fails either way.
    #[arg(long)]
    pub lossy: bool,
}

#[derive(Debug, Args)]
pub struct CommitArgs {
    /// The output the workers wrote into (a directory or a URL).
    #[arg(value_name = "OUT")]
    pub output: PathBuf,

    /// Also read every part back and compare its CRC32C with its receipt's.
    #[arg(long)]
    pub verify: bool,

    /// Remove the lock on OUT of a commit that no longer runs (a lock object a killed one
    /// left in a bucket) and go on; one still running on this machine is still waited for.
    #[arg(long)]
    pub break_lock: bool,

    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub verbosity: Verbosity,

    #[command(flatten)]
    pub network: Network,
}
