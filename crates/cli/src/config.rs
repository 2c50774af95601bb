//! From parsed arguments to the engine's options, with the checks that need more than one
//! argument.

use ofconvert_bridge::{MappingSpec, SequencePolicy};
use ofconvert_engine::{
    Direction, ExistingOutput, ImagePolicy, NamedRule, Needs, OnCorrupt, OnEmpty, Options, Sizing,
};

use crate::cli::{
    ConvertArgs, CorruptPolicy, EmptyPolicy, ImagesArg, MappingArgs, Of2tfArgs, Preset,
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

/// The input keys of the inception scripts' ImageNet records that `--preset imagenet`
/// renames: a dataset with none of them is not what the preset is for.
const IMAGENET_KEYS: [&str; 15] = [
    "image/encoded",
    "image/format",
    "image/filename",
    "image/colorspace",
    "image/class/synset",
    "image/class/text",
    "image/object/bbox/xmin",
    "image/object/bbox/xmax",
    "image/object/bbox/ymin",
    "image/object/bbox/ymax",
    "image/height",
    "image/width",
    "image/channels",
    "image/class/label",
    "image/object/bbox/label",
];

/// The mapping rules as they were written on the command line, each with the input
/// features it names, for the engine to check against the data before converting.
pub fn named_rules(args: &MappingArgs, preset: Option<Preset>) -> Vec<NamedRule> {
    let mut rules = Vec::new();
    if let Some(Preset::Imagenet) = preset {
        rules.push(NamedRule {
            rule: "--preset imagenet".to_owned(),
            features: IMAGENET_KEYS.iter().map(|key| key.to_string()).collect(),
            needs: Needs::Any,
        });
    }
    for rename in &args.rename {
        rules.push(NamedRule::one(
            format!("--rename {rename}"),
            &rename.old,
            Needs::Each,
        ));
    }
    for cast in &args.cast {
        rules.push(NamedRule::one(
            format!("--cast {cast}"),
            &cast.name,
            Needs::Each,
        ));
    }
    for offset in &args.offset {
        rules.push(NamedRule::one(
            format!("--offset {offset}"),
            &offset.name,
            Needs::Each,
        ));
    }
    for name in &args.keep {
        rules.push(NamedRule::one(format!("--keep {name}"), name, Needs::Keep));
    }
    for name in &args.drop {
        rules.push(NamedRule::one(format!("--drop {name}"), name, Needs::Each));
    }
    rules
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
    options.side_files = !args.no_side_files;
    options.on_corrupt = match args.on_corrupt {
        CorruptPolicy::Fail => OnCorrupt::Fail,
        CorruptPolicy::Skip => OnCorrupt::Skip,
    };
    options.existing = if args.shard.is_some() {
        ExistingOutput::Shared
    } else if args.resume {
        ExistingOutput::Resume
    } else if args.overwrite {
        ExistingOutput::Overwrite
    } else {
        ExistingOutput::Refuse
    };
    options.jobs = jobs.map_or(0, |jobs| jobs as usize);
    options
}

/// Flags a worker of a sharded run cannot take: parts cut by size end where a run's
/// previous part ended, which another worker wrote; and workers share OUT, so none may
/// clear it.
fn check_shard(args: &ConvertArgs) -> Result<(), String> {
    let Some(shard) = args.shard else {
        return Ok(());
    };
    let refused = if args.max_part_bytes.is_some() {
        Some(
            "--max-part-bytes: its part boundaries depend on the parts before, which \
              other workers write; use --parts N or --records-per-part N",
        )
    } else if args.overwrite {
        Some(
            "--overwrite: a worker cannot clear what the other workers write; remove OUT \
              before starting them",
        )
    } else if args.resume {
        Some(
            "--resume: a rerun worker always keeps the parts it finished; run it again \
              without --resume",
        )
    } else {
        None
    };
    match refused {
        Some(why) => Err(format!("--shard {shard} does not go with {why}")),
        None => Ok(()),
    }
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
    check_shard(&args.common)?;
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
    options.images = match args.images {
        ImagesArg::Keep => ImagePolicy::Keep,
        ImagesArg::Jpeg => ImagePolicy::Jpeg {
            quality: args.jpeg_quality,
        },
        ImagesArg::Raw => ImagePolicy::Raw,
    };
    Ok(options)
}

/// The engine options for `of2tf`.
pub fn of2tf_options(args: &Of2tfArgs, jobs: Option<u64>) -> Result<Options, String> {
    check_prefix(&args.common.part_prefix)?;
    check_shard(&args.common)?;
    let mut options = common(&args.common, Direction::OfToTf, jobs);
    let mut description = Vec::new();
    let mut spec = mapping(&args.common.mapping, MappingSpec::new(), &mut description);
    if args.lossy {
        spec = spec.lossy(true);
        description.push("--lossy".to_owned());
    }
    options.mapping = spec;
    options.mapping_description = description;
    options.compression = args.compression;
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
