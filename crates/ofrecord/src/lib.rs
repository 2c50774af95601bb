//! OneFlow OFRecord framing: records back to back, each an 8-byte little-endian length followed
//! by that many payload bytes. There is no magic number, no checksum and no index; an empty
//! stream holds zero records.
//!
//! This crate only frames bytes. The payloads are serialized `oneflow.OFRecord` messages, but
//! nothing here knows about protobuf.
//!
//! ```
//! use ofconvert_ofrecord::{ErrorKind, Reader, Writer};
//!
//! # fn main() -> Result<(), ofconvert_ofrecord::Error> {
//! let mut writer = Writer::new(Vec::new());
//! writer.write_record(b"first")?;
//! writer.write_record(b"second")?;
//! // OneFlow aborts on a zero-length record, so the writer refuses one.
//! assert!(matches!(
//!     writer.write_record(b"").unwrap_err().kind(),
//!     ErrorKind::ZeroLength
//! ));
//! let bytes = writer.finish()?;
//! assert_eq!(&bytes[..8], &5i64.to_le_bytes());
//!
//! // The fast tier fills one reusable buffer.
//! let mut reader = Reader::new(bytes.as_slice());
//! let mut buf = Vec::new();
//! while reader.read_record(&mut buf)? {
//!     println!("{} bytes", buf.len());
//! }
//! assert_eq!(reader.position().index, 2);
//!
//! // The iterator is the convenient tier.
//! let records = Reader::new(bytes.as_slice()).records().collect::<Result<Vec<_>, _>>()?;
//! assert_eq!(records, [b"first".to_vec(), b"second".to_vec()]);
//!
//! // Errors say where: here the stream ends inside the second record's payload.
//! let err = Reader::new(&bytes[..bytes.len() - 1]).records().last().unwrap().unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "truncated record (length 6, only 5 payload bytes follow) at offset 13 (record #1)"
//! );
//! # Ok(())
//! # }
//! ```
//!
//! # What OneFlow does, and what this crate does instead
//!
//! OneFlow reads the length as a signed 64-bit integer and aborts the whole process on a zero
//! length. Here a negative length is [`ErrorKind::NegativeLength`], a zero length is
//! [`ErrorKind::ZeroLength`] (which the reader can [`recover`](Reader::recover) from), and a stream that ends early is
//! [`ErrorKind::TruncatedLength`] or [`ErrorKind::Truncated`]. No length is trusted for an
//! allocation: buffers grow only as bytes arrive, so a length of 2^60 in a small file is a cheap
//! `Truncated` error.

#![deny(missing_docs)]

pub mod frame;

mod error;
mod reader;
mod writer;

pub use error::{Error, ErrorKind};
pub use frame::HEADER_LEN;
pub use ofconvert_frame::{Position, Resync};
pub use reader::{Reader, Records};
pub use writer::Writer;
