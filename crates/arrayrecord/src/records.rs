//! A chunk's records, decoded: a simple chunk's two buffers of sizes and values, or a
//! transposed chunk's fields put back together (`transpose/`), into one buffer of values
//! and the end of each record.

use crate::codec::{decompress, take_varint, ZstdContexts};
use crate::error::ErrorKind;
use crate::transpose;

/// How large a chunk the readers decode by default: 1 GiB of record bytes (and a sixteenth
/// as many records). A chunk's header says how large it decodes to and its hash does not stop a
/// hostile file, so a claim past the limit is refused before anything is decompressed: a
/// zstd or brotli block of a few kilobytes can expand to terabytes. What decoding holds
/// besides the records' bytes is held to the limit as well: where each record ends, a simple
/// chunk's record sizes, a transposed chunk's header, buckets and transitions decompressed and
/// the tables built from them, each block refused by the size it announces before it is
/// decompressed. So decoding a chunk holds at most twice the limit, hostile file or not, besides
/// the bytes of the chunks read as the file has them (the streaming reader holds up to three),
/// the decompressors' windows (zstd's at most 128 MiB, brotli's 16 MiB) and about 20 MiB of
/// buffers kept from chunk to chunk.
/// `array_record` writes chunks of a few megabytes.
pub const DEFAULT_MAX_DECODED_CHUNK: u64 = 1 << 30;

/// How many record ends a decoder keeps room for from chunk to chunk: room for more, left by a
/// larger chunk, is freed rather than held beside the next chunk's share of the limit.
const KEEP_ENDS: usize = 1 << 16;
/// How many bytes of records a decoder keeps room for after a chunk fails, and of record sizes
/// after any chunk: a hostile chunk's room is not held beside the next chunk's share of the
/// limit.
const KEEP: usize = 1 << 22;

/// A chunk's records, decoded: their concatenated values and where each ends.
pub struct Records {
    /// The most record bytes a chunk may decode to ([`DEFAULT_MAX_DECODED_CHUNK`]); it may
    /// hold a sixteenth as many records, and decoding it holds at most as much again.
    pub limit: u64,
    /// The records' bytes back to back.
    pub values: Vec<u8>,
    /// The end of each record in `values`.
    pub ends: Vec<usize>,
    scratch: Vec<u8>,
    zstd: ZstdContexts,
    /// Boxed: a reader of simple chunks carries one pointer for it.
    transposed: Box<transpose::Scratch>,
}

impl Default for Records {
    fn default() -> Records {
        Records {
            limit: DEFAULT_MAX_DECODED_CHUNK,
            values: Vec::new(),
            ends: Vec::new(),
            scratch: Vec::new(),
            zstd: ZstdContexts::default(),
            transposed: Box::default(),
        }
    }
}

impl Records {
    /// How many records there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Record `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.values[start..self.ends[i]]
    }

    /// Decodes a chunk's data, simple or `transposed`, which its header says holds
    /// `num_records` records of `decoded_data_size` bytes in all. On failure no records are
    /// left.
    pub fn decode(
        &mut self,
        transposed: bool,
        data: &[u8],
        num_records: u64,
        decoded_data_size: u64,
    ) -> Result<(), ErrorKind> {
        if self.ends.capacity() > usize::try_from(num_records).map_or(0, |n| n.max(KEEP_ENDS)) {
            self.ends = Vec::new();
        }
        let result = if transposed {
            let bounds = transpose::Bounds {
                num_records,
                decoded_data_size,
                limit: self.limit,
            };
            transpose::decode(
                data,
                &bounds,
                &mut self.transposed,
                &mut self.zstd,
                &mut self.values,
                &mut self.ends,
            )
        } else {
            self.decode_simple(data, num_records, decoded_data_size)
                .map_err(|reason| ErrorKind::InvalidChunk { reason })
        };
        if result.is_err() {
            self.ends.clear();
            self.values.clear();
            // A reader may go on to other chunks, or another reader may take over from it.
            if self.values.capacity() > KEEP {
                self.values = Vec::new();
            }
        }
        if self.scratch.capacity() > KEEP {
            self.scratch = Vec::new();
        }
        result
    }

    fn decode_simple(
        &mut self,
        mut data: &[u8],
        num_records: u64,
        decoded_data_size: u64,
    ) -> Result<(), String> {
        self.ends.clear();
        self.values.clear();
        let (&compression_type, rest) = data.split_first().ok_or("empty simple chunk")?;
        data = rest;
        let sizes_size = take_varint(&mut data).ok_or("the sizes' length is not a varint")?;
        if sizes_size > data.len() as u64 {
            return Err(format!(
                "the sizes take {sizes_size} bytes, only {} remain",
                data.len()
            ));
        }
        let (sizes_block, values_block) = data.split_at(sizes_size as usize);
        // A record's size takes a byte as a varint, and a byte more for every 128 bytes of the
        // record at most.
        let sizes_limit = num_records.saturating_add(decoded_data_size / 128);
        decompress(
            compression_type,
            sizes_block,
            sizes_limit,
            &mut self.zstd,
            &mut self.scratch,
        )?;
        if num_records > self.scratch.len() as u64 {
            return Err(format!(
                "{num_records} records, but only {} bytes of sizes",
                self.scratch.len()
            ));
        }
        self.ends.reserve(num_records as usize);
        let mut sizes = self.scratch.as_slice();
        let mut end = 0u64;
        for _ in 0..num_records {
            let size = take_varint(&mut sizes).ok_or("a record size is not a varint")?;
            end = end.saturating_add(size);
            if end > decoded_data_size {
                return Err(format!(
                    "the record sizes add up to more than the {decoded_data_size} bytes the header says"
                ));
            }
            self.ends.push(end as usize);
        }
        if !sizes.is_empty() {
            return Err(format!("{} bytes after the last record size", sizes.len()));
        }
        if end != decoded_data_size {
            return Err(format!(
                "the record sizes add up to {end} bytes, the header says {decoded_data_size}"
            ));
        }
        decompress(
            compression_type,
            values_block,
            decoded_data_size,
            &mut self.zstd,
            &mut self.values,
        )?;
        if self.values.len() as u64 != decoded_data_size {
            return Err(format!(
                "the values take {} bytes, the header says {decoded_data_size}",
                self.values.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{encode_simple, put_varint, Compression};

    #[test]
    fn simple_chunks_round_trip_under_every_compression() {
        let records: Vec<Vec<u8>> = vec![b"".to_vec(), b"abc".repeat(100), vec![7; 300]];
        for compression in [
            Compression::None,
            Compression::Brotli(6),
            Compression::Zstd(3),
            Compression::Snappy,
        ] {
            let mut sizes = Vec::new();
            for record in &records {
                put_varint(&mut sizes, record.len() as u64);
            }
            let values = records.concat();
            let mut data = Vec::new();
            encode_simple(compression, &sizes, &values, &mut data).unwrap();
            let mut decoded = Records::default();
            decoded
                .decode(false, &data, 3, values.len() as u64)
                .unwrap();
            let got: Vec<&[u8]> = (0..decoded.len()).map(|i| decoded.get(i)).collect();
            assert_eq!(got, records.iter().map(Vec::as_slice).collect::<Vec<_>>());
        }
    }
}
