//! The values the command line takes, each a type that parses itself (`FromStr`), so that
//! clap checks them as it reads the arguments and the rest of the program gets them typed.

use std::fmt;
use std::str::FromStr;

use ofconvert_bridge::NumericType;

/// `NAME=VALUE`, split at the last `=` so that a name may hold one (values never do).
fn split_pair(text: &str) -> Result<(&str, &str), String> {
    match text.rsplit_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() => Ok((name, value)),
        _ => Err(format!("expected NAME=VALUE, got {text:?}")),
    }
}

/// `--rename OLD=NEW`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rename {
    pub old: String,
    pub new: String,
}

impl FromStr for Rename {
    type Err = String;

    /// Split at the first `=`, as feature names rarely hold one and a new name that did
    /// would be surprising.
    fn from_str(text: &str) -> Result<Rename, String> {
        match text.split_once('=') {
            Some((old, new)) if !old.is_empty() && !new.is_empty() => Ok(Rename {
                old: old.to_owned(),
                new: new.to_owned(),
            }),
            _ => Err(format!("expected OLD=NEW, got {text:?}")),
        }
    }
}

impl fmt::Display for Rename {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.old, self.new)
    }
}

/// `--cast NAME=TYPE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cast {
    pub name: String,
    pub to: NumericType,
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

/// `--offset NAME=DELTA`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offset {
    pub name: String,
    pub delta: i64,
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

/// A byte size: a number with an optional `K`, `M`, `G` or `T` suffix (powers of 1024, an
/// optional trailing `B` or `iB`), at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<ByteSize, String> {
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
        Ok(ByteSize(size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let size = |text: &str| text.parse::<ByteSize>().map(|size| size.0);
        assert_eq!(size("1048576"), Ok(1 << 20));
        assert_eq!(size("512K"), Ok(512 << 10));
        assert_eq!(size("256m"), Ok(256 << 20));
        assert_eq!(size("2GiB"), Ok(2 << 30));
        assert_eq!(size("3MB"), Ok(3 << 20));
        assert!(size("0").is_err());
        assert!(size("lots").is_err());
        assert!(size("99999999999T").is_err());
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
    }
}
