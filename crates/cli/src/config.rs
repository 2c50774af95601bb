//! From parsed arguments to the engine's options, with the checks that need more than one
//! argument.

use ofconvert_bridge::{MappingSpec, SequencePolicy};
use ofconvert_engine::{Direction, ExistingOutput, OnCorrupt, OnEmpty, Options, Sizing};
use ofconvert_tfrecord::Compression;

use crate::cli::{
    CompressionArg, ConvertArgs, CorruptPolicy, EmptyPolicy, MappingArgs, Of2tfArgs, Preset,
    SequenceArg, Tf2ofArgs,
};

fn mapping(
    args: &MappingArgs,
    mut spec: MappingSpec,
    description: &mut Vec<String>,
) -> MappingSpec {
    for rename in &args.rename {
        spec = spec.rename(&rename.old, &rename.new);
        description.push(format!("--rename={rename}"));
    }
    for cast in &args.cast {
        spec = spec.cast(&cast.name, cast.to);
        description.push(format!("--cast={cast}"));
    }
    for offset in &args.offset {
        spec = spec.offset(&offset.name, offset.delta);
        description.push(format!("--offset={offset}"));
    }
    if !args.keep.is_empty() {
        spec = spec.keep(args.keep.iter().cloned());
        for name in &args.keep {
            description.push(format!("--keep={name}"));
        }
    }
    for name in &args.drop {
        spec = spec.drop_feature(name);
        description.push(format!("--drop={name}"));
    }
    spec
}

fn common(args: &ConvertArgs, direction: Direction, jobs: Option<u64>) -> Options {
    let mut options = Options::new(direction);
    options.part_prefix = args.part_prefix.clone();
    options.sizing = Sizing {
        parts: args.parts,
        records_per_part: args.records_per_part,
        max_part_bytes: args.max_part_bytes.map(|size| size.0),
    };
    options.verify_checksums = !args.no_verify;
    options.sync = !args.no_sync;
    options.on_corrupt = match args.on_corrupt {
        CorruptPolicy::Fail => OnCorrupt::Fail,
        CorruptPolicy::Skip => OnCorrupt::Skip,
    };
    options.existing = if args.resume {
        ExistingOutput::Resume
    } else if args.overwrite {
        ExistingOutput::Overwrite
    } else {
        ExistingOutput::Refuse
    };
    options.jobs = jobs.map_or(0, |jobs| jobs as usize);
    options
}

/// Checks what clap cannot: a part prefix must be a plain file name prefix.
fn check_prefix(prefix: &str) -> Result<(), String> {
    if prefix.contains(['/', '\\']) || prefix.starts_with('.') {
        return Err(format!(
            "--part-prefix {prefix:?}: a part name prefix cannot hold a path separator or \
             start with a dot"
        ));
    }
    Ok(())
}

/// The engine options for `tf2of`.
pub fn tf2of_options(args: &Tf2ofArgs, jobs: Option<u64>) -> Result<Options, String> {
    check_prefix(&args.common.part_prefix)?;
    let mut options = common(&args.common, Direction::TfToOf, jobs);
    options.part_digits = args.part_digits as usize;
    let mut description = Vec::new();
    let base = match args.preset {
        Some(Preset::Imagenet) => {
            description.push("--preset=imagenet".to_owned());
            MappingSpec::imagenet()
        }
        None => MappingSpec::new(),
    };
    let mut spec = mapping(&args.common.mapping, base, &mut description);
    if args.sequence == SequenceArg::Flatten {
        spec = spec.sequence(SequencePolicy::Flatten);
        description.push("--sequence=flatten".to_owned());
    }
    if let Some(name) = &args.raw_feature {
        spec = spec.raw_feature(name);
        description.push(format!("--raw-feature={name}"));
    }
    options.mapping = spec;
    options.mapping_description = description;
    options.on_empty = match args.empty {
        EmptyPolicy::Error => OnEmpty::Error,
        EmptyPolicy::Skip => OnEmpty::Skip,
    };
    Ok(options)
}

/// The engine options for `of2tf`.
pub fn of2tf_options(args: &Of2tfArgs, jobs: Option<u64>) -> Result<Options, String> {
    check_prefix(&args.common.part_prefix)?;
    let mut options = common(&args.common, Direction::OfToTf, jobs);
    let mut description = Vec::new();
    let mut spec = mapping(&args.common.mapping, MappingSpec::new(), &mut description);
    if args.lossy {
        spec = spec.lossy(true);
        description.push("--lossy".to_owned());
    }
    options.mapping = spec;
    options.mapping_description = description;
    options.compression = match args.compression {
        CompressionArg::None => Compression::None,
        CompressionArg::Gzip => Compression::Gzip,
        CompressionArg::Zlib => Compression::Zlib,
    };
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        assert!(check_prefix("part-").is_ok());
        assert!(check_prefix("a/b").is_err());
        assert!(check_prefix(".hidden").is_err());
    }
}
