//! A chunk of records read whole, before its records are given out: its data checked against
//! its hash, and its records decoded, the errors placed at the chunk's offset and first record.
//! What both readers do with each chunk they read.

use crate::error::{Error, ErrorKind};
use crate::layout::{hash, ChunkHeader, ChunkType};
use crate::records::Records as ChunkRecords;

/// Checks a chunk's data (the bytes after its header, block headers taken out) against the
/// hash its header gives; the error names the chunk's `begin` offset and first record `index`.
pub(crate) fn check_chunk_data(
    header: &ChunkHeader,
    data: &[u8],
    begin: u64,
    index: u64,
) -> Result<(), Error> {
    let actual = hash(data);
    if actual == header.data_hash {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::ChunkDataHashMismatch {
            expected: header.data_hash,
            actual,
        },
        begin,
        index,
    ))
}

/// Decodes the chunk of records at `begin`, whose first record is `first_index`, into
/// `records`, held to their limit: or names why it cannot be.
pub(crate) fn decode_chunk(
    begin: u64,
    first_index: u64,
    header: &ChunkHeader,
    data: &[u8],
    records: &mut ChunkRecords,
) -> Result<(), Error> {
    records.ends.clear();
    match header.chunk_type {
        ChunkType::Simple | ChunkType::Transposed => {}
        other => {
            return Err(Error::new(
                ErrorKind::UnsupportedChunkType {
                    chunk_type: other.byte(),
                },
                begin,
                first_index,
            ))
        }
    }
    if let Some(&compression_type) = data.first() {
        if !crate::codec::known_compression(compression_type) {
            return Err(Error::new(
                ErrorKind::UnknownCompression { compression_type },
                begin,
                first_index,
            ));
        }
    }
    let limit = records.limit;
    if header.decoded_data_size > limit || header.num_records > limit / 16 {
        return Err(Error::new(
            ErrorKind::ChunkTooLarge {
                decoded_data_size: header.decoded_data_size,
                num_records: header.num_records,
                limit,
            },
            begin,
            first_index,
        ));
    }
    let transposed = header.chunk_type == ChunkType::Transposed;
    records
        .decode(
            transposed,
            data,
            header.num_records,
            header.decoded_data_size,
        )
        .map_err(|kind| Error::new(kind, begin, first_index))
}
