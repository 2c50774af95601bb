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

mod chunk;
mod commit;
mod convert;
mod detect;
mod error;
mod images;
mod inspect;
pub mod layout;
mod manifest;
mod object;
mod options;
mod output;
mod plan;
mod progress;
mod publish;
mod receipt;
mod recode;
mod records;
mod retry;
mod rules;
mod scan;
mod schema;
mod shard;
pub mod storage;
mod stored;
mod summary;
mod tfds;
mod transfer;
mod workers;

pub use commit::commit;
pub use convert::convert;
pub use detect::{
    detect_format, has_record_name, is_known_metadata, part_number, shard_name, Format, ShardName,
};
pub use error::{error_chain, Error, ErrorKind};
pub use images::{ImageFacts, ImageFormat, ImageHeader, JpegColor, Range};
pub use inspect::{
    collect_schema, count_file, count_files, expand_paths, oneflow_reader_for, verify_file,
    verify_files, write_index, Expanded, FileCount, Unpublished, Verification,
};
pub use manifest::{
    Manifest, ManifestInput, ManifestPart, OneflowReader, SkippedRecords, TensorflowReader,
    MANIFEST_NAME,
};
pub use object::{is_url, storage_for};
pub use options::{
    Checksums, Direction, ExistingOutput, Interrupt, OnCorrupt, OnEmpty, Options, Settings, Sizing,
};
pub use plan::{plan, DatasetPlan, InputFile, Plan, SkippedFile};
pub use progress::{DatasetStatus, Event, ProgressFn};
pub use recode::{ImageConversion, ImagePolicy};
pub use records::{RecordAt, RecordReader};
pub use retry::{set_network_bounds, NetworkBounds};
pub use rules::{check_rules, NamedRule, Needs, RULE_SAMPLE};
pub use schema::{FeatureSchema, IntegerRange, Schema, SchemaBuilder};
pub use shard::{convert_shard, Shard, ShardSummary, CONTROL_DIR};
pub use summary::{DatasetSummary, ErrorPlace, Summary};
pub use tfds::{TfdsOrigin, DATASET_INFO, FEATURES};
