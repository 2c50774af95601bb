//! From parsed arguments to the engine's options: value parsers for clap, and the checks
//! that need more than one argument.

use ofconvert_bridge::{MappingSpec, NumericType, SequencePolicy};
use ofconvert_engine::{
    Direction, ExistingOutput, ImagePolicy, OnCorrupt, OnEmpty, Options, Sizing,
};
use ofconvert_tfrecord::Compression;

use crate::cli::{
    CompressionArg, ConvertArgs, CorruptPolicy, EmptyPolicy, ImagesArg, MappingArgs, Of2tfArgs,
    Preset, SequenceArg, Tf2ofArgs,
};

/// `NAME=VALUE`, split at the last `=` so that a name may hold one (values never do).
fn split_pair(text: &str) -> Result<(&str, &str), String> {
    match text.rsplit_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() => Ok((name, value)),
        _ => Err(format!("expected NAME=VALUE, got {text:?}")),
    }
}

/// `OLD=NEW` for `--rename`. Split at the first `=`, as feature names rarely hold one
/// and a new name that did would be surprising.
pub fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((old, new)) if !old.is_empty() && !new.is_empty() => {
            Ok((old.to_owned(), new.to_owned()))
        }
        _ => Err(format!("expected OLD=NEW, got {text:?}")),
    }
}

/// `NAME=TYPE` for `--cast`.
pub fn parse_cast(text: &str) -> Result<(String, NumericType), String> {
    let (name, kind) = split_pair(text)?;
    Ok((name.to_owned(), kind.parse()?))
}

/// `NAME=DELTA` for `--offset`.
pub fn parse_offset(text: &str) -> Result<(String, i64), String> {
    let (name, delta) = split_pair(text)?;
    let delta = delta
        .parse()
        .map_err(|err| format!("{delta:?} is not an integer: {err}"))?;
    Ok((name.to_owned(), delta))
}

/// A byte size: a number with an optional `K`, `M`, `G` or `T` suffix (powers of 1024,
/// an optional trailing `B` or `iB`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let upper = text.trim().to_ascii_uppercase();
    let upper = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (digits, shift) = match upper.as_bytes().last() {
        Some(b'K') => (&upper[..upper.len() - 1], 10),
        Some(b'M') => (&upper[..upper.len() - 1], 20),
        Some(b'G') => (&upper[..upper.len() - 1], 30),
        Some(b'T') => (&upper[..upper.len() - 1], 40),
        _ => (upper, 0),
    };
    let number: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size (like 1048576, 512K, 256M or 2G)"))?;
    let size = number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))?;
    if size == 0 {
        return Err("the size must be at least 1 byte".to_owned());
    }
    Ok(size)
}

fn mapping(
    args: &MappingArgs,
    mut spec: MappingSpec,
    description: &mut Vec<String>,
) -> MappingSpec {
    for (old, new) in &args.rename {
        spec = spec.rename(old, new);
        description.push(format!("--rename={old}={new}"));
    }
    for (name, kind) in &args.cast {
        spec = spec.cast(name, *kind);
        description.push(format!("--cast={name}={kind}"));
    }
    for (name, delta) in &args.offset {
        spec = spec.offset(name, *delta);
        description.push(format!("--offset={name}={delta}"));
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
        max_part_bytes: args.max_part_bytes,
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
    fn sizes() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("256m"), Ok(256 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("3MB"), Ok(3 << 20));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn pairs() {
        assert_eq!(
            parse_offset("image/class/label=-1"),
            Ok(("image/class/label".to_owned(), -1))
        );
        assert_eq!(
            parse_cast("a=b=int32"),
            Ok(("a=b".to_owned(), NumericType::Int32))
        );
        assert_eq!(
            parse_pair("old=new"),
            Ok(("old".to_owned(), "new".to_owned()))
        );
        assert!(parse_pair("=new").is_err());
        assert!(parse_offset("label=one").is_err());
        assert!(parse_cast("label=int8").is_err());
    }

    #[test]
    fn prefixes() {
        assert!(check_prefix("part-").is_ok());
        assert!(check_prefix("a/b").is_err());
        assert!(check_prefix(".hidden").is_err());
    }
}
