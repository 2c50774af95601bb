//! TFRecord framing: the container format of TensorFlow's `TFRecordDataset` and of
//! TensorBoard event files.
//!
//! A TFRecord file is records back to back, each framed as an 8-byte little-endian length,
//! the masked CRC-32C of those 8 bytes, the data, and the masked CRC-32C of the data. The
//! whole stream may be wrapped in gzip or zlib. This crate reads and writes that framing and
//! knows nothing of what the records hold (usually serialized `tf.train.Example`s).
//!
//! ```
//! use ofconvert_tfrecord::{Reader, Writer};
//!
//! # fn main() -> Result<(), ofconvert_tfrecord::Error> {
//! let mut writer = Writer::new(Vec::new());
//! writer.write_record(b"first")?;
//! writer.write_record(b"second")?;
//! let bytes = writer.finish()?;
//!
//! let mut reader = Reader::new(bytes.as_slice());
//! let mut record = Vec::new();
//! assert!(reader.read_record(&mut record)?);
//! assert_eq!(record, b"first");
//! assert!(reader.read_record(&mut record)?);
//! assert_eq!(record, b"second");
//! assert!(!reader.read_record(&mut record)?);
//! assert_eq!(reader.position().index, 2);
//! # Ok(())
//! # }
//! ```
//!
//! Compressed files work the same way, with [`Writer::with_compression`] and either
//! [`ReaderOptions::compression`] or [`Reader::sniffed`], which guesses the compression from
//! the first bytes.
//!
//! Errors carry the byte offset (in the decompressed stream) and the index of the record that
//! failed; see [`Error`]. After an error a reader is fused (it reports a clean end) until
//! [`Reader::recover`] (after a data-CRC mismatch) or [`Reader::resync`] (after damage to the
//! framing) lets it go on; a writer refuses every later record with a copy of its error. The
//! OFRecord crate behaves the same way.

#![deny(missing_docs)]

pub mod crc;
pub mod frame;

mod compression;
mod deflate;
mod error;
mod reader;
mod resync;
mod writer;

pub use compression::{Compression, UnknownCompression};
pub use error::{Error, ErrorKind};
pub use frame::HEADER_LEN;
pub use ofconvert_frame::{Position, Resync};
pub use reader::{Reader, ReaderOptions, Records};
pub use writer::Writer;
