//! The conversion engine of `ofconvert`: finds TFRecord files and OneFlow datasets in a
//! tree, groups them into datasets, cuts them into parts, converts the records in parallel
//! and writes every file so that it is either complete or absent.
//!
//! It knows nothing of command lines or terminals: a caller builds [`Options`], gets a
//! [`Plan`] from [`plan`], runs it with [`convert`] and receives progress [`Event`]s through
//! a callback. [`convert_shard`] runs one worker's share of a conversion spread over many
//! machines and [`commit()`] publishes it once all are done. The inspection functions
//! ([`count_file`], [`verify_file`], [`write_index`], [`SchemaBuilder`], [`diff()`]) serve
//! the `count`, `verify`, `index`, `schema` and `diff` subcommands.
//!
//! # Layers
//!
//! Each folder is a layer; a layer names only the layers below it (`module_cycles.py` checks
//! that in CI), and each folder's `mod.rs` says what it owns.
//!
//! ```text
//! config/, reports         the callers' words: options, rules, hints, a run;
//!                          what the inspections found, as the front ends show it (top)
//! inspect/                 count, verify, index, schema, diff of existing files
//! sharded/                 stored plan, one worker's share, receipts, commit
//! running/                 workers, work items, run loop, publishing, summary, TFDS metadata
//! planning/                walk, group into datasets, TFDS origin, rule checks
//! manifest, published      what a published dataset says of itself; what the
//!                          manifests of a directory say its files are
//! tfds/                    TFDS folders: origin, dataset_info.json, class names
//! records/                 format sniffing, record reader, part and shard writers, copies,
//!                          whole files' CRC-32C
//! options, recode          what the caller asked for; images re-encoded on the way
//! error                    errors with the file, offset and record they concern
//! feature_names            a record's feature names; the closest to one none of them is
//! naming/                  names ofconvert writes and recognises (no I/O)
//! schema/, images/, scan,  leaves: feature statistics, image headers, wire walks,
//! progress, front_end      progress events; whose words messages use        (bottom)
//! ```
//!
//! Below them all, in a crate of its own (`ofconvert-storage`, here as [`storage`]): the
//! `Storage` trait over the local disk and the object stores, transfers, the output's lock
//! and who holds it. It is the engine's only way to files and the workspace's only network
//! code, and it names nothing of the engine. Above the engine, also a crate of its own
//! (`ofconvert-data`): records read for training, by index and as streams, which the
//! command line does not compile.
//!
//! The data's way: `planning` lists the input through `storage` and groups what `records`
//! recognises into a [`Plan`]; `running` hands each work item to a worker, which reads its
//! records through `records`, converts them with the bridge's `Transcoder` (and `recode`
//! for images), writes temporary parts through `records` into `storage`, and publishes a
//! dataset, the files that came with it and its `manifest` once every part is whole;
//! `sharded` splits the same plan among machines and `commit` publishes what they wrote.
//!
//! # Example
//!
//! Convert a TFRecord tree, check what was written, and do the same as two workers and a
//! commit:
//!
//! ```
//! use ofconvert_engine::{
//!     commit, convert, convert_shard, count_file, plan, verify_file, Checksums, CommitOptions,
//!     Direction, ExistingOutput, Format, Options, Shard,
//! };
//! use ofconvert_tfrecord::Writer;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let input = tempfile::tempdir()?;
//! let output = tempfile::tempdir()?;
//! // A TFRecord file holding three serialized Examples.
//! let mut writer = Writer::new(std::fs::File::create(input.path().join("train.tfrecord"))?);
//! for label in [7, 8, 9] {
//!     let example = ofconvert_bridge::tf::example([("label", ofconvert_bridge::tf::int64_feature([label]))]);
//!     let mut payload = Vec::new();
//!     ofconvert_bridge::encode_example(&example, &mut payload);
//!     writer.write_record(&payload)?;
//! }
//! writer.finish()?;
//!
//! // One machine: plan, convert.
//! let options = Options::new(Direction::TfToOf);
//! let whole = plan(input.path(), &output.path().join("of"), &options)?;
//! let summary = convert(whole, &options, &|_event| {})?;
//! assert_eq!((summary.failed, summary.records), (0, 3));
//! assert!(output.path().join("of/ofconvert-manifest.json").is_file());
//!
//! // Inspect what was written.
//! let part = output.path().join("of/part-00000");
//! assert_eq!(count_file(&part, Format::Of, Checksums::Verify)?.records, 3);
//! assert!(verify_file(&part, Format::Of).problems.is_empty());
//!
//! // Two workers, each planning the same run and converting its share, then a commit.
//! let sharded = output.path().join("sharded");
//! let mut options = options;
//! options.existing = ExistingOutput::Shared;
//! for index in 0..2 {
//!     let share = plan(input.path(), &sharded, &options)?;
//!     convert_shard(share, &options, Shard { index, count: 2 }, &|_event| {})?;
//! }
//! let verified = CommitOptions {
//!     verify_checksums: true,
//!     ..CommitOptions::default()
//! };
//! let committed = commit(&sharded, &verified)?;
//! assert_eq!((committed.failed, committed.records), (0, 3));
//! assert_eq!(
//!     std::fs::read(sharded.join("part-00000"))?,
//!     std::fs::read(&part)?,
//! );
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod config;
mod error;
mod feature_names;
mod front_end;
mod images;
mod inspect;
mod manifest;
mod naming;
mod options;
mod planning;
mod progress;
mod published;
mod recode;
mod records;
pub mod reports;
mod running;
mod scan;
mod schema;
mod sharded;
mod tfds;

/// The storage layer, a crate of its own (`ofconvert-storage`): the local disk and the
/// object stores behind [`storage::Storage`], and the output's lock and its holder.
pub use ofconvert_storage as storage;
use ofconvert_storage::holder;

pub use error::{error_chain, Error, ErrorKind};
pub use feature_names::{no_such_feature, record_feature_names};
pub use front_end::{FrontEnd, OptionValue};
pub use holder::{Liveness, LockHolder};
pub use images::{ImageFacts, ImageFormat, ImageHeader, JpegColor, Range};
pub use inspect::{
    collect_schema, count_file, count_files, diff, expand_paths, oneflow_reader_for, verify_file,
    verify_files, write_index, DiffOptions, DiffReport, Difference, Expanded, FileCount, Place,
    Unpublished, Verification,
};
pub use manifest::{
    Manifest, ManifestInput, ManifestPart, OneflowReader, SideFile, TensorflowReader, MANIFEST_NAME,
};
pub use naming::layout;
pub use naming::layout::CONTROL_DIR;
pub use naming::names::{
    has_record_name, is_known_metadata, part_number, shard_name, Format, ShardName,
};
pub use options::{
    Checksums, Direction, ExistingOutput, Interrupt, OnCorrupt, OnEmpty, Options, Settings, Sizing,
    TfFile, AS_RECORDED,
};
pub use planning::plan::{plan, DatasetPlan, InputFile, Plan, SkippedFile};
pub use planning::rules::{check_rules, NamedRule, Needs, RULE_SAMPLE};
pub use progress::{DatasetStatus, Event, ProgressFn};
pub use published::Published;
pub use recode::{ImageConversion, ImagePolicy};
pub use records::array::StoredFile;
pub use records::detect::detect_format;
pub use records::{RecordAt, RecordReader, SkippedRecords};
pub use running::convert::convert;
pub use running::preview::{preview, DatasetPreview, Preview};
pub use running::summary::{DatasetSummary, ErrorPlace, FailureKind, Finished, Resumed, Summary};
pub use schema::{FeatureSchema, IntegerRange, Schema, SchemaBuilder, IMAGE_ADVICE};
pub use sharded::commit::{commit, CommitOptions};
pub use sharded::shard::{convert_shard, Shard, ShardSummary};
pub use storage::object::{is_url, storage_for};
pub use storage::retry::{set_network_bounds, NetworkBounds};
pub use storage::stores::set_anonymous;
pub use storage::transfer::{set_transfers_in_flight, DEFAULT_TRANSFERS};
pub use storage::{each_at_once, REQUESTS_AT_ONCE};
pub use tfds::{TfdsOrigin, DATASET_INFO, FEATURES};
