//! From parsed arguments to the engine's configuration, which checks them (the checks that
//! need more than one argument included) as it does for the Python package.

use ofconvert_engine::config::ConvertConfig;
use ofconvert_engine::{Direction, FrontEnd};

use crate::cli::{ConvertArgs, Of2tfArgs, Tf2ofArgs};

/// What both directions share.
fn common(args: &ConvertArgs, direction: Direction, jobs: Option<u64>) -> ConvertConfig {
    let mut config = ConvertConfig::new(
        direction,
        FrontEnd::CommandLine,
        args.inputs.clone(),
        args.output.clone(),
    );
    config.parts = args.parts;
    config.records_per_part = args.records_per_part;
    config.max_part_bytes = args.max_part_bytes;
    config.part_prefix = args.part_prefix.clone();
    config.rename = args.mapping.rename.clone();
    config.cast = args.mapping.cast.clone();
    config.offset = args.mapping.offset.clone();
    config.keep = args.mapping.keep.clone();
    config.drop = args.mapping.drop.clone();
    config.on_corrupt = args.on_corrupt;
    config.verify = !args.no_verify;
    config.sync = !args.no_sync;
    config.side_files = !args.no_side_files;
    config.overwrite = args.overwrite;
    config.resume = args.resume;
    config.shard = args.shard;
    config.jobs = jobs.map(|jobs| jobs as usize);
    config
}

/// The configuration of `tf2of`.
pub fn tf2of(args: &Tf2ofArgs, jobs: Option<u64>) -> ConvertConfig {
    let mut config = common(&args.common, Direction::TfToOf, jobs);
    config.part_digits = args.part_digits as usize;
    config.preset = args.preset;
    config.sequence = args.sequence;
    config.raw_feature = args.raw_feature.clone();
    config.empty = args.empty;
    config.images = args.images;
    config.jpeg_quality = args.jpeg_quality;
    config
}

/// The configuration of `of2tf`.
pub fn of2tf(args: &Of2tfArgs, jobs: Option<u64>) -> ConvertConfig {
    let mut config = common(&args.common, Direction::OfToTf, jobs);
    config.compression = args.compression;
    config.lossy = args.lossy;
    config
}
