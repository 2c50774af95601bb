//! The conversion engine of `ofconvert`: finds TFRecord files and OneFlow datasets in a
//! tree, groups them into datasets, cuts them into parts, converts the records in parallel
//! and writes every file so that it is either complete or absent.
//!
//! It knows nothing of command lines or terminals: a caller builds [`Options`], gets a
//! [`Plan`] from [`plan`], runs it with [`convert`] and receives progress [`Event`]s through
//! a callback. [`convert_shard`] runs one worker's share of a conversion spread over many
//! machines and [`commit()`] publishes it once all are done. The inspection functions ([`count_file`], [`verify_file`], [`write_index`],
//! [`SchemaBuilder`]) serve the `count`, `verify`, `index` and `schema` subcommands.
//!
//! ```
//! use ofconvert_engine::{convert, plan, Direction, Options};
//! use ofconvert_tfrecord::Writer;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let input = tempfile::tempdir()?;
//! let output = tempfile::tempdir()?;
//! // A TFRecord file holding one serialized Example.
//! let example = ofconvert_bridge::tf::example([("label", ofconvert_bridge::tf::int64_feature([7]))]);
//! let mut payload = Vec::new();
//! ofconvert_bridge::encode_example(&example, &mut payload);
//! let mut writer = Writer::new(std::fs::File::create(input.path().join("train.tfrecord"))?);
//! writer.write_record(&payload)?;
//! writer.finish()?;
//!
//! let options = Options::new(Direction::TfToOf);
//! let plan = plan(input.path(), &output.path().join("of"), &options)?;
//! let summary = convert(plan, &options, &|_event| {})?;
//! assert_eq!(summary.failed, 0);
//! assert_eq!(summary.records, 1);
//! assert!(output.path().join("of/part-00000").is_file());
//! assert!(output.path().join("of/ofconvert-manifest.json").is_file());
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod error;
mod images;
mod inspect;
mod manifest;
mod naming;
mod options;
mod planning;
mod progress;
mod recode;
mod records;
mod running;
mod scan;
mod schema;
mod sharded;
pub mod storage;
mod tfds;

pub use error::{error_chain, Error, ErrorKind};
pub use images::{ImageFacts, ImageFormat, ImageHeader, JpegColor, Range};
pub use inspect::{
    collect_schema, count_file, count_files, expand_paths, oneflow_reader_for, verify_file,
    verify_files, write_index, Expanded, FileCount, Unpublished, Verification,
};
pub use manifest::{
    Manifest, ManifestInput, ManifestPart, OneflowReader, TensorflowReader, MANIFEST_NAME,
};
pub use naming::layout;
pub use naming::layout::CONTROL_DIR;
pub use naming::names::{
    has_record_name, is_known_metadata, part_number, shard_name, Format, ShardName,
};
pub use options::{
    Checksums, Direction, ExistingOutput, Interrupt, OnCorrupt, OnEmpty, Options, Settings, Sizing,
};
pub use planning::plan::{plan, DatasetPlan, InputFile, Plan, SkippedFile};
pub use planning::rules::{check_rules, NamedRule, Needs, RULE_SAMPLE};
pub use progress::{DatasetStatus, Event, ProgressFn};
pub use recode::{ImageConversion, ImagePolicy};
pub use records::detect::detect_format;
pub use records::{RecordAt, RecordReader, SkippedRecords};
pub use running::convert::convert;
pub use running::summary::{DatasetSummary, ErrorPlace, Summary};
pub use schema::{FeatureSchema, IntegerRange, Schema, SchemaBuilder};
pub use sharded::commit::commit;
pub use sharded::shard::{convert_shard, Shard, ShardSummary};
pub use storage::object::{is_url, storage_for};
pub use tfds::{TfdsOrigin, DATASET_INFO, FEATURES};
