//! The values the front ends take, each parsed here once: byte sizes, `OLD=NEW` and
//! `NAME=VALUE` rules, and the names of every choice (policies, presets, compressions,
//! formats), which the command line also lists for help and completion.

use std::fmt;
use std::str::FromStr;

use ofconvert_bridge::{NumericType, SequencePolicy};
use ofconvert_tfrecord::Compression;

use crate::front_end::{FrontEnd, OptionValue};
use crate::naming::names::Format;
use crate::options::{OnCorrupt, OnEmpty, TfFile};

/// A byte size: a number with an optional `K`, `M`, `G` or `T` suffix (powers of 1024, an
/// optional trailing `B` or `iB`), at least 1.
///
/// ```
/// assert_eq!(ofconvert_engine::config::parse_size("256M"), Ok(256 << 20));
/// ```
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

/// `NAME=VALUE`, split at the last `=` so that a name may hold one (values never do).
fn split_pair(text: &str) -> Result<(&str, &str), String> {
    match text.rsplit_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() => Ok((name, value)),
        _ => Err(format!("expected NAME=VALUE, got {text:?}")),
    }
}

/// A feature name a rule names: never empty.
fn feature(what: &str, name: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err(format!("{what}: a feature name cannot be empty"));
    }
    Ok(name.to_owned())
}

/// Renaming a feature: `--rename OLD=NEW`, `rename={"OLD": "NEW"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rename {
    /// The input name.
    pub old: String,
    /// The output name.
    pub new: String,
}

impl Rename {
    /// A rename of `old` to `new`, neither empty.
    pub fn new(old: &str, new: &str) -> Result<Rename, String> {
        Ok(Rename {
            old: feature("rename", old)?,
            new: feature("rename", new)?,
        })
    }

    /// The rule in `front_end`'s words.
    pub fn words(&self, front_end: FrontEnd) -> String {
        front_end.rule("rename", &self.old, OptionValue::Text(&self.new))
    }
}

impl FromStr for Rename {
    type Err = String;

    /// Split at the first `=`, as feature names rarely hold one and a new name that did
    /// would be surprising.
    fn from_str(text: &str) -> Result<Rename, String> {
        match text.split_once('=') {
            Some((old, new)) if !old.is_empty() && !new.is_empty() => Rename::new(old, new),
            _ => Err(format!("expected OLD=NEW, got {text:?}")),
        }
    }
}

impl fmt::Display for Rename {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.old, self.new)
    }
}

/// Casting a numeric feature: `--cast NAME=TYPE`, `cast={"NAME": "TYPE"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cast {
    /// The input name.
    pub name: String,
    /// The type its values become.
    pub to: NumericType,
}

impl Cast {
    /// A cast of `name` to the type named `to` (`int32`, `int64`, `float`, `double`).
    pub fn new(name: &str, to: &str) -> Result<Cast, String> {
        Ok(Cast {
            name: feature("cast", name)?,
            to: to.parse().map_err(|err| format!("cast {name:?}: {err}"))?,
        })
    }

    /// The rule in `front_end`'s words.
    pub fn words(&self, front_end: FrontEnd) -> String {
        front_end.rule("cast", &self.name, OptionValue::Text(&self.to.to_string()))
    }
}

impl FromStr for Cast {
    type Err = String;

    fn from_str(text: &str) -> Result<Cast, String> {
        let (name, kind) = split_pair(text)?;
        Ok(Cast {
            name: name.to_owned(),
            to: kind.parse()?,
        })
    }
}

impl fmt::Display for Cast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.name, self.to)
    }
}

/// Adding to every value of an integer feature: `--offset NAME=DELTA`,
/// `offset={"NAME": DELTA}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offset {
    /// The input name.
    pub name: String,
    /// What is added.
    pub delta: i64,
}

impl Offset {
    /// An offset of `name` by `delta`.
    pub fn new(name: &str, delta: i64) -> Result<Offset, String> {
        Ok(Offset {
            name: feature("offset", name)?,
            delta,
        })
    }

    /// The rule in `front_end`'s words.
    pub fn words(&self, front_end: FrontEnd) -> String {
        front_end.rule(
            "offset",
            &self.name,
            OptionValue::Number(&self.delta.to_string()),
        )
    }
}

impl FromStr for Offset {
    type Err = String;

    fn from_str(text: &str) -> Result<Offset, String> {
        let (name, delta) = split_pair(text)?;
        let delta = delta
            .parse()
            .map_err(|err| format!("{delta:?} is not an integer: {err}"))?;
        Ok(Offset {
            name: name.to_owned(),
            delta,
        })
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.name, self.delta)
    }
}

/// A mapping preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// The inception scripts' ImageNet keys and 1-based int64 labels to OneFlow-Benchmark's
    /// `encoded` and 0-based int32 `class/label`.
    Imagenet,
}

/// What `tf2of` does with encoded images (the JPEG quality is an option of its own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Images {
    /// Image bytes as they are.
    #[default]
    Keep,
    /// The images OneFlow cannot decode re-encoded as RGB JPEG.
    Jpeg,
    /// Every image decoded to its pixels.
    Raw,
}

/// A value taken by name from a fixed list: `--on-corrupt skip`, `on_corrupt="skip"`.
pub trait Choice: Copy + 'static {
    /// The option's name (its Python keyword).
    const OPTION: &'static str;
    /// Every name taken, with its value; the first names of each value are listed in help
    /// and completion, in this order.
    const CHOICES: &'static [(&'static str, Self)];
}

/// The value of choice `T` named `name` (in any case), or an error in `front_end`'s words
/// listing the names taken.
pub fn choice<T: Choice>(front_end: FrontEnd, name: &str) -> Result<T, String> {
    T::CHOICES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
        .map(|(_, value)| *value)
        .ok_or_else(|| {
            let known: Vec<String> = T::CHOICES
                .iter()
                .map(|(known, _)| match front_end {
                    FrontEnd::CommandLine => (*known).to_owned(),
                    FrontEnd::Python => format!("{known:?}"),
                })
                .collect();
            format!(
                "{}: expected one of {}",
                front_end.option(T::OPTION, OptionValue::Text(name)),
                known.join(", ")
            )
        })
}

impl Choice for OnCorrupt {
    const OPTION: &'static str = "on_corrupt";
    const CHOICES: &'static [(&'static str, Self)] =
        &[("fail", OnCorrupt::Fail), ("skip", OnCorrupt::Skip)];
}

impl Choice for OnEmpty {
    const OPTION: &'static str = "empty";
    const CHOICES: &'static [(&'static str, Self)] =
        &[("error", OnEmpty::Error), ("skip", OnEmpty::Skip)];
}

impl Choice for SequencePolicy {
    const OPTION: &'static str = "sequence";
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("refuse", SequencePolicy::Refuse),
        ("flatten", SequencePolicy::Flatten),
    ];
}

impl Choice for Preset {
    const OPTION: &'static str = "preset";
    const CHOICES: &'static [(&'static str, Self)] = &[("imagenet", Preset::Imagenet)];
}

impl Choice for Images {
    const OPTION: &'static str = "images";
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("keep", Images::Keep),
        ("jpeg", Images::Jpeg),
        ("raw", Images::Raw),
    ];
}

impl Choice for Format {
    const OPTION: &'static str = "format";
    const CHOICES: &'static [(&'static str, Self)] = &[("tf", Format::Tf), ("of", Format::Of)];
}

impl Choice for TfFile {
    const OPTION: &'static str = "to";
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("tfrecord", TfFile::Tfrecord),
        ("array_record", TfFile::ArrayRecord),
    ];
}

impl Choice for Compression {
    const OPTION: &'static str = "compression";
    /// The library's names and TensorFlow's (`GZIP`, `ZLIB`, `""`), which `tf.io` takes.
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("none", Compression::None),
        ("gzip", Compression::Gzip),
        ("zlib", Compression::Zlib),
        ("", Compression::None),
    ];
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
            "image/class/label=-1".parse(),
            Ok(Offset {
                name: "image/class/label".to_owned(),
                delta: -1
            })
        );
        assert_eq!(
            "a=b=int32".parse(),
            Ok(Cast {
                name: "a=b".to_owned(),
                to: NumericType::Int32
            })
        );
        assert_eq!(
            "old=new".parse(),
            Ok(Rename {
                old: "old".to_owned(),
                new: "new".to_owned()
            })
        );
        assert!("=new".parse::<Rename>().is_err());
        assert!("label=one".parse::<Offset>().is_err());
        assert!("label=int8".parse::<Cast>().is_err());
        assert!(Rename::new("", "x").is_err());
        assert!(Cast::new("x", "int8").is_err());
    }

    #[test]
    fn choices_are_named_in_each_front_ends_words() {
        assert_eq!(
            choice::<OnCorrupt>(FrontEnd::Python, "skip"),
            Ok(OnCorrupt::Skip)
        );
        assert_eq!(
            choice::<Compression>(FrontEnd::Python, "GZIP"),
            Ok(Compression::Gzip)
        );
        assert_eq!(
            choice::<Compression>(FrontEnd::Python, ""),
            Ok(Compression::None)
        );
        assert_eq!(
            choice::<Images>(FrontEnd::Python, "png").unwrap_err(),
            "images=\"png\": expected one of \"keep\", \"jpeg\", \"raw\""
        );
        assert_eq!(
            choice::<OnEmpty>(FrontEnd::CommandLine, "drop").unwrap_err(),
            "--empty drop: expected one of error, skip"
        );
    }
}
