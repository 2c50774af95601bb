//! Lossless mapping between TensorFlow's `tf.train.Example` and OneFlow's `OFRecord`.
//!
//! Two paths give the same results:
//!
//! * the **wire path**, [`Transcoder`], turns serialized bytes into serialized bytes in one
//!   pass without building a message tree. It validates as it goes and, for the default
//!   mapping, copies each feature's bytes and rewrites one tag, so
//!   `tf → of → tf` gives back the very bytes TensorFlow wrote;
//! * the **typed path** works on the prost messages in [`proto`], with builders ([`tf`],
//!   [`of`]), accessors ([`ExampleExt`], [`OfRecordExt`]) and encoders that always write a map
//!   entry's key and value (TensorFlow rejects entries without them; prost leaves them out).
//!
//! The default mapping is lossless both ways: bytes, float and int64 stay as they are; OneFlow's
//! int32 widens to int64; its double narrows to float only where every value fits exactly (else
//! an error, unless [`MappingSpec::lossy`] rounds it; a finite double beyond float's range is an
//! error either way). A [`MappingSpec`] renames, casts, offsets, keeps or drops features,
//! flattens `SequenceExample`s and wraps non-Example records.
//!
//! ```
//! use ofconvert_bridge::{tf, encode_example, decode_ofrecord, MappingSpec, NumericType,
//!                        OfRecordExt, Transcoder};
//!
//! // An Example as TensorFlow's inception scripts write it.
//! let example = tf::example([
//!     ("image/encoded", tf::bytes_feature([b"\xff\xd8 jpeg bytes".to_vec()])),
//!     ("image/class/label", tf::int64_feature([7])),
//! ]);
//! let mut serialized = Vec::new();
//! encode_example(&example, &mut serialized);
//!
//! // Lossless by default, and back again to the same bytes.
//! let mut transcoder = Transcoder::new(MappingSpec::new())?;
//! let (mut ofrecord, mut back) = (Vec::new(), Vec::new());
//! transcoder.tf_to_of(&serialized, &mut ofrecord)?;
//! transcoder.of_to_tf(&ofrecord, &mut back)?;
//! assert_eq!(back, serialized);
//!
//! // OneFlow's ImageNet conventions: `encoded`, 0-based int32 `class/label`.
//! let mut imagenet = Transcoder::new(MappingSpec::imagenet())?;
//! imagenet.tf_to_of(&serialized, &mut ofrecord)?;
//! let record = decode_ofrecord(&ofrecord)?;
//! assert_eq!(record.int32_values("class/label"), Some(&[6][..]));
//! assert!(record.bytes_values("encoded").is_some());
//!
//! // Casts are range-checked.
//! let spec = MappingSpec::new().cast("image/class/label", NumericType::Int32).offset("image/class/label", i64::from(i32::MAX));
//! assert!(Transcoder::new(spec)?.tf_to_of(&serialized, &mut ofrecord).is_err());
//! # Ok::<(), ofconvert_bridge::Error>(())
//! ```
#![deny(missing_docs)]

mod error;
mod fast;
mod lists;
mod message;
mod numeric;
mod spec;
pub mod text;
mod transcode;
mod typed;
mod visit;
mod wire;

/// The prost messages generated from the vendored `proto/` files (by prost-build, kept in
/// `src/proto/`; `proto/codegen/` checks them and writes them anew when asked).
pub mod proto {
    /// `tensorflow.Example`, `tensorflow.SequenceExample` and their parts.
    #[allow(missing_docs)]
    pub mod tensorflow {
        include!("proto/tensorflow.rs");
    }
    /// `oneflow.OFRecord` and its parts.
    #[allow(missing_docs)]
    pub mod oneflow {
        include!("proto/oneflow.rs");
    }
}

pub use error::{Error, ErrorKind};
pub use fast::WrittenFeature;
pub use lists::{visit_lists, ValueList};
pub use spec::{MappingSpec, NumericType, SequencePolicy};
pub use transcode::Transcoder;
pub use typed::{
    decode_example, decode_ofrecord, decode_sequence_example, encode_example, encode_ofrecord,
    encode_sequence_example, example_to_ofrecord, of, ofrecord_to_example,
    sequence_example_to_ofrecord, tf, ExampleExt, OfRecordExt,
};
pub use visit::{classify_tf_record, visit_example, visit_ofrecord, RecordChecker, TfRecordType};

/// The kinds of value list a feature can hold; TensorFlow has bytes, float and int64,
/// OneFlow adds double and int32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FeatureKind {
    /// `bytes_list`.
    Bytes,
    /// `float_list`.
    Float,
    /// `double_list` (OneFlow only).
    Double,
    /// `int32_list` (OneFlow only).
    Int32,
    /// `int64_list`.
    Int64,
}

impl FeatureKind {
    /// The protobuf field name of the list: `bytes_list`, `float_list`, ...
    pub fn list_name(self) -> &'static str {
        match self {
            FeatureKind::Bytes => "bytes_list",
            FeatureKind::Float => "float_list",
            FeatureKind::Double => "double_list",
            FeatureKind::Int32 => "int32_list",
            FeatureKind::Int64 => "int64_list",
        }
    }
}

/// The README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
