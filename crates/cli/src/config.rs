//! From parsed arguments to the engine's configuration, which checks them (the checks that
//! need more than one argument included) as it does for the Python package.

use std::path::{Path, PathBuf};

use ofconvert_engine::config::{ConvertConfig, MappingRules};
use ofconvert_engine::{Direction, FrontEnd};

use crate::cli::{ConvertArgs, DiffArgs, MappingArgs, Of2tfArgs, Tf2ofArgs};

/// The mapping rules both directions and `diff` take.
fn rules(args: &MappingArgs) -> MappingRules {
    MappingRules {
        rename: args.rename.clone(),
        cast: args.cast.clone(),
        offset: args.offset.clone(),
        keep: args.keep.clone(),
        drop: args.drop.clone(),
        rename_if_present: args.rename_if_present.clone(),
        cast_if_present: args.cast_if_present.clone(),
        offset_if_present: args.offset_if_present.clone(),
        keep_if_present: args.keep_if_present.clone(),
        drop_if_present: args.drop_if_present.clone(),
        ..MappingRules::default()
    }
}

/// The mapping `diff` applies to A's records: the rules its conversion was given.
pub fn diff_mapping(args: &DiffArgs) -> MappingRules {
    MappingRules {
        preset: args.preset,
        lossy: args.lossy,
        ..rules(&args.mapping)
    }
}

/// What both directions share.
fn common(
    args: &ConvertArgs,
    direction: Direction,
    inputs: Vec<PathBuf>,
    output: &Path,
    jobs: Option<u64>,
) -> ConvertConfig {
    let mut config = ConvertConfig::new(
        direction,
        FrontEnd::CommandLine,
        inputs,
        output.to_path_buf(),
    );
    config.parts = args.parts;
    config.records_per_part = args.records_per_part;
    config.max_part_bytes = args.max_part_bytes;
    config.part_prefix = args.part_prefix.clone();
    config.mapping = rules(&args.mapping);
    config.on_corrupt = args.on_corrupt;
    config.verify = !args.no_verify;
    config.sync = !args.no_sync;
    config.side_files = !args.no_side_files;
    config.overwrite = args.overwrite;
    config.resume = args.resume;
    config.break_lock = args.break_lock;
    config.shard = args.shard;
    config.dry_run = args.dry_run;
    config.jobs = jobs.map(|jobs| jobs as usize);
    config
}

/// The configuration of `tf2of`.
pub fn tf2of(args: &Tf2ofArgs, jobs: Option<u64>) -> ConvertConfig {
    let mut config = common(
        &args.common,
        Direction::TfToOf,
        args.inputs.clone(),
        &args.output,
        jobs,
    );
    config.part_digits = args.part_digits as usize;
    config.mapping.preset = args.preset;
    config.sequence = args.sequence;
    config.raw_feature = args.raw_feature.clone();
    config.empty = args.empty;
    config.images = args.images;
    config.jpeg_quality = args.jpeg_quality;
    config
}

/// The configuration of `of2tf`.
pub fn of2tf(args: &Of2tfArgs, jobs: Option<u64>) -> ConvertConfig {
    let mut config = common(
        &args.common,
        Direction::OfToTf,
        vec![args.input.clone()],
        &args.output,
        jobs,
    );
    config.compression = args.compression;
    config.to = args.to;
    config.array_record_options = args.array_record_options.clone();
    config.mapping.lossy = args.lossy;
    config
}
