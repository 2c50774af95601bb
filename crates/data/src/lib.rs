//! Records read for training, from the files `ofconvert` writes and reads (TFRecord,
//! OFRecord, ArrayRecord), on a local disk or in an object store: record `i` of a dataset
//! without reading the records before it, and an epoch's records as a stream, in order or
//! shuffled, shared among ranks and loader workers, fetched ahead in large spans and kept in
//! a bounded local cache. The Python package's `ofconvert.data` is built on it.
//!
//! # Layers
//!
//! ```text
//! stream/   an epoch's order, ranks' and workers' shares, spans fetched ahead
//! access/   random access: each file's record index, decompressed copies, the cache of
//!           spans and its locks, framing checked
//! ```
//!
//! `stream` uses `access`; both use the engine (`ofconvert-engine`: its record reader, errors,
//! names and options) and the storage (`ofconvert-storage`), neither of which names this
//! crate: the command line does not compile it.
//!
//! # Example
//!
//! A file's index, then record 1's payload read where the index says it is:
//!
//! ```
//! use ofconvert_data::{open_indexed, record_payload, IndexOptions};
//! use ofconvert_engine::{Checksums, Format, RecordAt};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("train.tfrecord");
//! let mut writer = ofconvert_tfrecord::Writer::new(std::fs::File::create(&path)?);
//! for payload in [&b"zero"[..], b"one", b"two"] {
//!     writer.write_record(payload)?;
//! }
//! writer.finish()?;
//!
//! let options = IndexOptions {
//!     cache_dir: Some(dir.path().join("cache")),
//!     ..IndexOptions::default()
//! };
//! let file = open_indexed(&path, Format::Tf, &options)?;
//! assert_eq!(file.index.len(), 3);
//! let range = file.index.range(1);
//! let bytes = std::fs::read(&file.data)?;
//! let framed = &bytes[range.start as usize..range.end as usize];
//! let at = RecordAt {
//!     offset: range.start,
//!     index: 1,
//! };
//! let payload = record_payload(framed, Format::Tf, Checksums::Verify, &path, at)?;
//! assert_eq!(payload, b"one");
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod access;
mod memory;
mod stream;

pub use access::cache::{cache_dir, CACHE_DIR_VARIABLE};
pub use access::framed::payload as record_payload;
pub use access::index::{open_indexed, open_listed, IndexOptions, IndexedFile};
pub use access::record_index::RecordIndex;
pub use access::spans::{parse_limit, SpanCache};
pub use access::stated::{open_stated, FileIndex};
pub use stream::ahead::SPANS_IN_FLIGHT;
pub use stream::features::{check_features, feature_keys};
pub use stream::fetch::{Files, Scratch, Span};
pub use stream::fingerprint::fingerprint;
pub use stream::mixture::{readings, shares, Mixture, Reading, Schedule, Sources, Turns, REPEATS};
pub use stream::order::{Order, Permutation, Shuffle};
pub use stream::prefetch::{cache_needed, Prefetch};
pub use stream::share::{taken_in_turn, Layout, Pass, Share};
