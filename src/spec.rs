use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use crate::{Error, ErrorKind};

/// A numeric type a feature can be cast to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NumericType {
    /// 32-bit signed integer (OneFlow `int32_list`).
    Int32,
    /// 64-bit signed integer (`int64_list`).
    Int64,
    /// 32-bit float (`float_list`).
    Float,
    /// 64-bit float (OneFlow `double_list`).
    Double,
}

impl NumericType {
    /// The lowercase name used on the command line (`int32`, ...).
    pub fn name(self) -> &'static str {
        match self {
            NumericType::Int32 => "int32",
            NumericType::Int64 => "int64",
            NumericType::Float => "float",
            NumericType::Double => "double",
        }
    }
}

impl fmt::Display for NumericType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NumericType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "int32" => Ok(NumericType::Int32),
            "int64" => Ok(NumericType::Int64),
            "float" | "float32" => Ok(NumericType::Float),
            "double" | "float64" => Ok(NumericType::Double),
            other => Err(format!(
                "unknown numeric type {other:?} (expected int32, int64, float or double)"
            )),
        }
    }
}

/// Whether a conversion may round floats or must keep every value exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rounding {
    /// A value that changes is an error.
    Refuse,
    /// Float conversions round to nearest ([`MappingSpec::lossy`](MappingSpec::lossy)).
    Allow,
}

impl Rounding {
    pub(crate) fn from_lossy(lossy: bool) -> Rounding {
        if lossy {
            Rounding::Allow
        } else {
            Rounding::Refuse
        }
    }
}

/// What to do with a `tf.train.SequenceExample`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SequencePolicy {
    /// Fail the record with [`ErrorKind::SequenceExample`].
    #[default]
    Refuse,
    /// Context features as they are; each feature list `NAME` becomes one feature `NAME`
    /// holding the concatenated values of its steps plus `NAME/lengths` (int64, the number of
    /// values in each step).
    Flatten,
}

/// How features change on their way between formats.
///
/// Every rule names a feature by its name in the *input* record. Per feature, rules apply in
/// this order: keep/drop, offset, cast, the direction's default mapping (OFRecord→Example
/// widens int32 to int64 and narrows double to float), rename.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MappingSpec {
    pub(crate) rules: Vec<(String, Rule)>,
    pub(crate) keep: Option<Vec<String>>,
    pub(crate) sequence: SequencePolicy,
    pub(crate) raw_feature: Option<String>,
    pub(crate) lossy: bool,
}

/// The rules for one input feature.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Rule {
    pub(crate) rename: Option<String>,
    pub(crate) cast: Option<NumericType>,
    pub(crate) offset: Option<i64>,
    pub(crate) drop: bool,
}

impl MappingSpec {
    /// The identity mapping: everything kept as it is.
    pub fn new() -> Self {
        Self::default()
    }

    fn rule(&mut self, name: String) -> &mut Rule {
        let index = match self.rules.iter().position(|(n, _)| *n == name) {
            Some(index) => index,
            None => {
                self.rules.push((name, Rule::default()));
                self.rules.len() - 1
            }
        };
        &mut self.rules[index].1
    }

    /// Writes feature `from` under the name `to`.
    pub fn rename(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.rule(from.into()).rename = Some(to.into());
        self
    }

    /// Converts a numeric feature to `to`; a value that does not fit exactly is an error
    /// ([`ErrorKind::OutOfRange`]), unless `lossy` allows float rounding.
    pub fn cast(mut self, name: impl Into<String>, to: NumericType) -> Self {
        self.rule(name.into()).cast = Some(to);
        self
    }

    /// Adds `delta` to every value of an integer feature (for instance -1 to make 1-based
    /// labels 0-based), checking for overflow.
    pub fn offset(mut self, name: impl Into<String>, delta: i64) -> Self {
        self.rule(name.into()).offset = Some(delta);
        self
    }

    /// Keeps only the named features (and drops the rest). May be given several times.
    pub fn keep<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.keep
            .get_or_insert_with(Vec::new)
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Leaves the named feature out.
    pub fn drop_feature(mut self, name: impl Into<String>) -> Self {
        self.rule(name.into()).drop = true;
        self
    }

    /// Sets what happens to `SequenceExample` records.
    pub fn sequence(mut self, policy: SequencePolicy) -> Self {
        self.sequence = policy;
        self
    }

    /// Wraps a record that is not an `Example` whole, as the single value of a bytes feature
    /// with this name, instead of failing it.
    pub fn raw_feature(mut self, name: impl Into<String>) -> Self {
        self.raw_feature = Some(name.into());
        self
    }

    /// Allows inexact float conversions (double→float rounds to nearest, and so does an
    /// integer cast to a float type). A finite double beyond float's range is still an error
    /// ([`ErrorKind::FloatOverflow`]): it would become an infinity, which is not rounding.
    /// [`Transcoder::rounded`](crate::Transcoder::rounded) counts the values rounded.
    pub fn lossy(mut self, lossy: bool) -> Self {
        self.lossy = lossy;
        self
    }

    /// Whether inexact float conversions are allowed ([`lossy`](MappingSpec::lossy)).
    pub fn is_lossy(&self) -> bool {
        self.lossy
    }

    /// From the keys of TensorFlow's inception `build_imagenet_data.py` to those of
    /// OneFlow-Benchmark's `imagenet_ofrecord.py`: `image/encoded` → `encoded`,
    /// `image/class/label` (1-based int64) → `class/label` (0-based int32), the other
    /// `image/...` keys without their prefix, integer sizes as int32. Other features pass
    /// through unchanged.
    pub fn imagenet() -> Self {
        let mut spec = MappingSpec::new();
        for key in [
            "encoded",
            "format",
            "filename",
            "colorspace",
            "class/synset",
            "class/text",
            "object/bbox/xmin",
            "object/bbox/xmax",
            "object/bbox/ymin",
            "object/bbox/ymax",
        ] {
            spec = spec.rename(format!("image/{key}"), key);
        }
        for key in ["height", "width", "channels"] {
            spec = spec
                .rename(format!("image/{key}"), key)
                .cast(format!("image/{key}"), NumericType::Int32);
        }
        for key in ["class/label", "object/bbox/label"] {
            spec = spec
                .rename(format!("image/{key}"), key)
                .cast(format!("image/{key}"), NumericType::Int32)
                .offset(format!("image/{key}"), -1);
        }
        spec
    }

    /// The name input feature `name` is written under (its rename, or its own name), or
    /// `None` when the spec leaves it out: for what is said of features beside the records
    /// (TFDS's class names, say) to follow them.
    ///
    /// ```
    /// use ofconvert_bridge::MappingSpec;
    /// let spec = MappingSpec::new().rename("label", "class").drop_feature("id");
    /// assert_eq!(spec.output_name("label"), Some("class"));
    /// assert_eq!(spec.output_name("image"), Some("image"));
    /// assert_eq!(spec.output_name("id"), None);
    /// assert_eq!(MappingSpec::new().keep(["image"]).output_name("label"), None);
    /// ```
    pub fn output_name<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        if self
            .keep
            .as_ref()
            .is_some_and(|keep| !keep.iter().any(|kept| kept == name))
        {
            return None;
        }
        match self.rules.iter().find(|(input, _)| input == name) {
            Some((_, rule)) if rule.drop => None,
            Some((_, rule)) => Some(rule.rename.as_deref().unwrap_or(name)),
            None => Some(name),
        }
    }

    /// Whether the spec adds an offset to the values of input feature `name`.
    pub fn offsets(&self, name: &str) -> bool {
        self.rules
            .iter()
            .any(|(input, rule)| input == name && rule.offset.is_some_and(|delta| delta != 0))
    }

    /// True when the spec changes nothing beyond each direction's default mapping.
    pub fn is_identity(&self) -> bool {
        self.rules.is_empty()
            && self.keep.is_none()
            && self.sequence == SequencePolicy::Refuse
            && self.raw_feature.is_none()
    }

    /// Checks the spec for contradictions and indexes it for lookups by name.
    pub(crate) fn compile(&self) -> Result<CompiledSpec, Error> {
        let invalid = |why: String| Error::new(ErrorKind::InvalidSpec(why));
        let mut targets: HashMap<&str, &str> = HashMap::new();
        for (name, rule) in &self.rules {
            if name.is_empty() {
                return Err(invalid("a rule names an empty feature".into()));
            }
            if rule.drop && (rule.rename.is_some() || rule.cast.is_some() || rule.offset.is_some())
            {
                return Err(invalid(format!(
                    "feature {name:?} is dropped and also renamed, cast or offset"
                )));
            }
            if let Some(keep) = &self.keep {
                if rule.drop && keep.contains(name) {
                    return Err(invalid(format!(
                        "feature {name:?} is both kept and dropped"
                    )));
                }
            }
            if let Some(to) = &rule.rename {
                if to.is_empty() {
                    return Err(invalid(format!("feature {name:?} is renamed to \"\"")));
                }
                if let Some(other) = targets.insert(to, name) {
                    return Err(invalid(format!(
                        "features {other:?} and {name:?} are both renamed to {to:?}"
                    )));
                }
            }
        }
        if self.raw_feature.as_deref() == Some("") {
            return Err(invalid("the raw feature name is empty".into()));
        }
        Ok(CompiledSpec {
            rules: self
                .rules
                .iter()
                .map(|(name, rule)| (name.clone().into_bytes().into_boxed_slice(), rule.clone()))
                .collect(),
            keep: self.keep.as_ref().map(|names| {
                names
                    .iter()
                    .map(|n| n.clone().into_bytes().into_boxed_slice())
                    .collect()
            }),
            has_renames: self.rules.iter().any(|(_, r)| r.rename.is_some()),
            sequence: self.sequence,
            raw_feature: self.raw_feature.clone(),
            rounding: Rounding::from_lossy(self.lossy),
        })
    }
}

/// The canonical description of what the spec does, which
/// [`fingerprint`](MappingSpec::fingerprint) hashes: rules sorted by feature name, the keep
/// list sorted and without repeats, names quoted, parts separated by `; `, and `identity`
/// for a spec that changes nothing. Two specs that do the same thing read the same, however
/// they were built.
///
/// ```
/// use ofconvert_bridge::{MappingSpec, NumericType};
/// let spec = MappingSpec::new().cast("label", NumericType::Int32).rename("label", "class");
/// assert_eq!(spec.to_string(), r#"rename "label" to "class"; cast "label" to int32"#);
/// assert_eq!(MappingSpec::new().to_string(), "identity");
/// ```
impl fmt::Display for MappingSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut rules: Vec<&(String, Rule)> = self.rules.iter().collect();
        rules.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, rule) in rules {
            if let Some(to) = &rule.rename {
                parts.push(format!("rename {name:?} to {to:?}"));
            }
            if let Some(delta) = rule.offset {
                parts.push(format!("offset {name:?} by {delta}"));
            }
            if let Some(to) = rule.cast {
                parts.push(format!("cast {name:?} to {to}"));
            }
            if rule.drop {
                parts.push(format!("drop {name:?}"));
            }
        }
        if let Some(keep) = &self.keep {
            let mut keep: Vec<&String> = keep.iter().collect();
            keep.sort();
            keep.dedup();
            parts.push(format!("keep {keep:?}"));
        }
        if self.sequence == SequencePolicy::Flatten {
            parts.push("flatten sequences".to_owned());
        }
        if let Some(name) = &self.raw_feature {
            parts.push(format!("wrap non-Examples as {name:?}"));
        }
        if self.lossy {
            parts.push("lossy".to_owned());
        }
        if parts.is_empty() {
            return f.write_str("identity");
        }
        f.write_str(&parts.join("; "))
    }
}

impl MappingSpec {
    /// A fingerprint of what the spec does, to tell whether output written under one spec
    /// was written under another: the 64-bit FNV-1a hash of its canonical description (its
    /// [`Display`](fmt::Display)). It is the same in every run and on every platform, and
    /// two specs that differ in any rule differ in it (barring a 64-bit collision).
    ///
    /// ```
    /// use ofconvert_bridge::MappingSpec;
    /// let a = MappingSpec::new().keep(["image", "label"]);
    /// let b = MappingSpec::new().keep(["label"]).keep(["image"]);
    /// assert_eq!(a.fingerprint(), b.fingerprint());
    /// assert_ne!(a.fingerprint(), MappingSpec::new().fingerprint());
    /// ```
    pub fn fingerprint(&self) -> u64 {
        const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
        const PRIME: u64 = 0x0100_0000_01b3;
        self.to_string().bytes().fold(OFFSET_BASIS, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(PRIME)
        })
    }
}

/// A spec indexed by the input feature name's bytes.
#[derive(Clone, Debug)]
pub(crate) struct CompiledSpec {
    rules: HashMap<Box<[u8]>, Rule>,
    keep: Option<HashSet<Box<[u8]>>>,
    pub(crate) has_renames: bool,
    pub(crate) sequence: SequencePolicy,
    pub(crate) raw_feature: Option<String>,
    pub(crate) rounding: Rounding,
}

/// What the spec says about one feature.
pub(crate) enum Disposition<'a> {
    Drop,
    Keep(Option<&'a Rule>),
}

impl CompiledSpec {
    /// True when every feature keeps its name and the direction's default mapping.
    pub(crate) fn keeps_everything(&self) -> bool {
        self.keep.is_none() && self.rules.is_empty()
    }

    pub(crate) fn lookup(&self, name: &[u8]) -> Disposition<'_> {
        if let Some(keep) = &self.keep {
            if !keep.contains(name) {
                return Disposition::Drop;
            }
        }
        if self.rules.is_empty() {
            return Disposition::Keep(None);
        }
        match self.rules.get(name) {
            Some(rule) if rule.drop => Disposition::Drop,
            rule => Disposition::Keep(rule),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contradictory_specs_are_refused() {
        let both = MappingSpec::new().rename("a", "x").rename("b", "x");
        assert!(matches!(
            both.compile().unwrap_err().kind(),
            ErrorKind::InvalidSpec(_)
        ));
        let dropped_and_cast = MappingSpec::new()
            .drop_feature("a")
            .cast("a", NumericType::Int32);
        assert!(dropped_and_cast.compile().is_err());
        let kept_and_dropped = MappingSpec::new().keep(["a"]).drop_feature("a");
        assert!(kept_and_dropped.compile().is_err());
    }

    #[test]
    fn keep_list_drops_everything_else() {
        let spec = MappingSpec::new().keep(["a"]).compile().unwrap();
        assert!(matches!(spec.lookup(b"a"), Disposition::Keep(None)));
        assert!(matches!(spec.lookup(b"b"), Disposition::Drop));
    }

    #[test]
    fn numeric_type_parses_its_names() {
        assert_eq!("int32".parse::<NumericType>(), Ok(NumericType::Int32));
        assert_eq!("float64".parse::<NumericType>(), Ok(NumericType::Double));
        assert!("int8".parse::<NumericType>().is_err());
    }
}
