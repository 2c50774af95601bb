//! Parquet files of serialized records: the layout TensorFlow Datasets writes with
//! `file_format='parquet'`, one binary column named `data` whose cells are serialized
//! `tf.train.Example`s, a row a record.
//!
//! A Parquet file opens and ends with the magic `PAR1`; its footer (a Thrift `FileMetaData`,
//! its length in the eight bytes before the closing magic) lists the row groups and, in
//! each, where every column's pages lie. This crate reads such a file by its footer, one row
//! group at a time ([`Reader`]), and writes one ([`Writer`]), through the `parquet` crate's
//! column readers and writers (no Arrow arrays). It knows nothing of what the records hold.
//!
//! ```
//! use ofconvert_parquet::{Reader, Writer};
//!
//! # fn main() -> Result<(), ofconvert_parquet::Error> {
//! let mut writer = Writer::new(Vec::new(), 2)?;
//! for record in [&b"first"[..], b"second", b"third"] {
//!     writer.write_record(record)?;
//! }
//! let bytes = writer.finish()?;
//!
//! let mut reader = Reader::new(bytes.into())?;
//! assert_eq!((reader.num_records(), reader.row_groups()), (3, 2));
//! let mut record = Vec::new();
//! assert!(reader.read_record(&mut record)?);
//! assert_eq!(record, b"first");
//! assert_eq!(reader.row_group(1)?, vec![b"third".to_vec()]);
//! # Ok(())
//! # }
//! ```
//!
//! Pages compressed with Snappy (pyarrow's default), zstd or gzip are read, and a page's
//! CRC-32 is checked where its writer stored one. A file that is not of this layout (a
//! column per feature, as Hugging Face and pandas write) is refused, naming its columns.
//! Errors carry the byte offset of what failed: the footer, or the column chunk of the row
//! group whose pages did not decode ([`Error`]).

#![deny(missing_docs)]

mod error;
mod reader;
mod writer;

pub use error::{Error, ErrorKind};
pub use reader::{is_parquet, Position, Reader};
pub use writer::Writer;

/// The four bytes a Parquet file opens and ends with.
pub const MAGIC: [u8; 4] = *b"PAR1";

/// The column TFDS keeps its serialized records in.
pub const RECORDS_COLUMN: &str = "data";
