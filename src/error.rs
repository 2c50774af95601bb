use std::fmt;

use crate::{FeatureKind, NumericType};

/// A mapping or parsing error, naming the record and the feature where known.
///
/// The bridge works on one serialized message at a time and does not know the record's index
/// in its file; callers attach it with [`Error::at_record`].
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    kind: ErrorKind,
    feature: Option<String>,
    record: Option<u64>,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes are not valid protobuf of the expected shape.
    Malformed {
        /// What was wrong.
        reason: &'static str,
        /// Byte offset within the serialized message.
        offset: usize,
    },
    /// A `Feature` carries a field that is not one of the known list kinds.
    UnknownFeatureKind {
        /// The field number found.
        field: u32,
    },
    /// A `Feature` sets more than one list kind.
    AmbiguousFeature,
    /// The record has no features; as an OFRecord it would serialize to zero bytes, which
    /// OneFlow's reader aborts on.
    EmptyRecord,
    /// A `tf.train.SequenceExample` met while the mapping spec refuses them.
    SequenceExample,
    /// The record is neither an `Example` nor a `SequenceExample` (for instance a serialized
    /// tensor).
    NotAnExample,
    /// A double that `float` cannot hold exactly, converting without `lossy`.
    InexactDouble {
        /// The value.
        value: f64,
    },
    /// A finite double beyond the range of `float`: narrowing would make it an infinity,
    /// which is not rounding, so `lossy` does not allow it either.
    FloatOverflow {
        /// The value.
        value: f64,
    },
    /// A value that does not fit the requested type after a cast or offset.
    OutOfRange {
        /// The value, as text.
        value: String,
        /// The type it had to fit.
        to: NumericType,
    },
    /// A cast that makes no sense, such as bytes to int32.
    InvalidCast {
        /// The feature's kind.
        from: FeatureKind,
        /// The requested type.
        to: NumericType,
    },
    /// An integer offset asked for a feature that does not hold integers.
    InvalidOffset {
        /// The feature's kind.
        kind: FeatureKind,
    },
    /// A feature list of a SequenceExample mixes kinds between steps.
    MixedSequenceKinds,
    /// Two features would end up with the same name.
    NameClash {
        /// The name.
        name: String,
    },
    /// The mapping spec contradicts itself.
    InvalidSpec(String),
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Error {
            kind,
            feature: None,
            record: None,
        }
    }

    pub(crate) fn malformed(reason: &'static str, offset: usize) -> Self {
        Error::new(ErrorKind::Malformed { reason, offset })
    }

    /// Names the feature the error is about (kept if already set).
    pub(crate) fn in_feature(mut self, name: &[u8]) -> Self {
        if self.feature.is_none() {
            self.feature = Some(String::from_utf8_lossy(name).into_owned());
        }
        self
    }

    /// Attaches the index of the record within its file.
    pub fn at_record(mut self, index: u64) -> Self {
        self.record = Some(index);
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The feature concerned, when the error is about one.
    pub fn feature(&self) -> Option<&str> {
        self.feature.as_deref()
    }

    /// The record's index, when the caller attached it.
    pub fn record(&self) -> Option<u64> {
        self.record
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(record) = self.record {
            write!(f, "record #{record}: ")?;
        }
        if let Some(feature) = &self.feature {
            write!(f, "feature {feature:?}: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Malformed { reason, offset } => {
                write!(f, "malformed protobuf at byte {offset} of the record: {reason}")
            }
            ErrorKind::UnknownFeatureKind { field } => {
                write!(f, "unknown Feature kind (field {field})")
            }
            ErrorKind::AmbiguousFeature => write!(f, "Feature sets more than one list kind"),
            ErrorKind::EmptyRecord => write!(
                f,
                "record has no features (a zero-length OFRecord, which OneFlow cannot read)"
            ),
            ErrorKind::SequenceExample => write!(
                f,
                "record is a tf.train.SequenceExample (flatten it to convert it)"
            ),
            ErrorKind::NotAnExample => write!(f, "record is not a tf.train.Example"),
            ErrorKind::InexactDouble { value } => write!(
                f,
                "double {value:?} is not exactly representable as float (allow lossy narrowing to round it)"
            ),
            ErrorKind::FloatOverflow { value } => write!(
                f,
                "double {value:?} is beyond the range of float (narrowing would make it an \
                 infinity, which no rounding allows)"
            ),
            ErrorKind::OutOfRange { value, to } => {
                write!(f, "value {value} does not fit {}", to.name())
            }
            ErrorKind::InvalidCast { from, to } => {
                write!(f, "cannot cast a {} to {}", from.list_name(), to.name())
            }
            ErrorKind::InvalidOffset { kind } => {
                write!(f, "an integer offset cannot apply to a {}", kind.list_name())
            }
            ErrorKind::MixedSequenceKinds => {
                write!(f, "feature list mixes kinds between steps")
            }
            ErrorKind::NameClash { name } => {
                write!(f, "two features would both be named {name:?}")
            }
            ErrorKind::InvalidSpec(why) => write!(f, "invalid mapping: {why}"),
        }
    }
}

impl std::error::Error for Error {}
