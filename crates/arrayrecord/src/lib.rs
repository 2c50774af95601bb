//! ArrayRecord: the record format TensorFlow Datasets, Grain and JAX pipelines read at random.
//!
//! An ArrayRecord file is a Riegeli records file: 64 KiB blocks, each opening with a 24-byte
//! block header, and chunks of records running across them, every header and every chunk's
//! data guarded by a HighwayHash-64. After the chunks of records come a footer chunk that
//! lists every chunk's offset and record count, and a postscript in the file's last block that
//! points at the footer. This crate reads such files in order ([`Reader`], from any
//! `io::Read`), by record number ([`IndexedReader`], reading the footer then one chunk a
//! record), and writes them ([`Writer`]). It knows nothing of what the records hold.
//!
//! ```
//! use ofconvert_arrayrecord::{IndexedReader, Reader, Writer};
//!
//! # fn main() -> Result<(), ofconvert_arrayrecord::Error> {
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
//!
//! let mut indexed = IndexedReader::open(bytes.as_slice())?;
//! assert_eq!(indexed.num_records(), 2);
//! assert_eq!(indexed.get(1)?, b"second");
//! # Ok(())
//! # }
//! ```
//!
//! Simple and transposed chunks (`array_record`'s `transpose:true` option, which takes records
//! that are protocol buffers apart field by field) are read under every compression Riegeli
//! defines (none, brotli, zstd, snappy); the writer writes simple chunks. Errors carry the physical byte offset of the chunk or
//! block header that failed and the index of the record; see [`Error`]. After an error a
//! reader is fused (it reports a clean end) and a writer refuses every later record with a
//! copy of its error.

#![deny(missing_docs)]

mod chunk;
mod codec;
mod error;
mod footer;
mod index;
mod layout;
mod read_at;
mod reader;
mod records;
mod transpose;
mod writer;

pub use codec::Compression;
pub use error::{Error, ErrorKind};
pub use footer::FooterMetadata;
pub use index::{ChunkDecoder, IndexedReader};
pub use layout::BLOCK_SIZE;
pub use ofconvert_frame::Position;
pub use read_at::ReadAt;
pub use reader::{Reader, Records};
pub use records::DEFAULT_MAX_DECODED_CHUNK;
pub use writer::{InvalidOptions, Writer, WriterOptions};

/// The first 64 bytes of every Riegeli file, ArrayRecord included: a block header and the
/// file signature chunk. What a file's type is sniffed by.
pub const SIGNATURE: [u8; 64] = [
    0x83, 0xaf, 0x70, 0xd1, 0x0d, 0x88, 0x4a, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0, //
    0x40, 0, 0, 0, 0, 0, 0, 0, 0x91, 0xba, 0xc2, 0x3c, 0x92, 0x87, 0xe1, 0xa9, //
    0, 0, 0, 0, 0, 0, 0, 0, 0xe1, 0x9f, 0x13, 0xc0, 0xe9, 0xb1, 0xc3, 0x72, //
    0x73, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];
