//! The streaming reader: every record in file order, every hash checked, the footer checked
//! against what was read. It reads through any `io::Read`, with no seeking: the footer and
//! postscript are the last two chunks of records, so it holds two chunks back until it sees
//! which chunks are last, and after an error gives out the records of those before it.

use std::collections::VecDeque;
use std::io::{self, BufReader, Read};

use ofconvert_frame::Position;

use crate::chunk::{check_chunk_data, decode_chunk};
use crate::error::{Error, ErrorKind};
use crate::footer::{check_footer_records, FooterMetadata, Postscript, MAGIC, POSTSCRIPT_COPIES};
use crate::layout::{
    check_block_header, chunk_end, remaining_in_block, ChunkHeader, ChunkType, BLOCK_HEADER_SIZE,
    BLOCK_SIZE, CHUNK_HEADER_SIZE,
};
use crate::records::Records as ChunkRecords;

/// How much a chunk's data buffer grows at a time: a length from the file is never trusted
/// for more than that until the bytes are there.
const READ_STEP: u64 = 1 << 16;

/// A chunk of records read whole, its hashes checked, not yet decoded.
struct RawChunk {
    begin: u64,
    header: ChunkHeader,
    data: Vec<u8>,
    first_index: u64,
}

/// Reads ArrayRecord records in order from any [`Read`].
///
/// Each chunk's header and data hashes are checked, and every block header's; at the end the
/// footer must describe the chunks and records read (their counts) and the postscript must
/// point at the footer. After an error the reader is fused: it reports a clean end.
pub struct Reader<R> {
    src: BufReader<R>,
    pos: u64,
    index: u64,
    arrived_records: u64,
    data_chunks: u64,
    pending: VecDeque<RawChunk>,
    spare: Vec<Vec<u8>>,
    current: ChunkRecords,
    next_in_current: usize,
    current_begin: u64,
    metadata: Option<FooterMetadata>,
    stopped: bool,
    /// An error met while chunks before it were still held back: returned once they are.
    deferred: Option<Error>,
    /// Where the error that stopped the reader is.
    failed_at: Option<u64>,
}

impl<R: Read> Reader<R> {
    /// A reader over `src`, which must begin with the file's first byte.
    pub fn new(src: R) -> Reader<R> {
        Reader {
            src: BufReader::with_capacity(READ_STEP as usize, src),
            pos: 0,
            index: 0,
            arrived_records: 0,
            data_chunks: 0,
            pending: VecDeque::new(),
            spare: Vec::new(),
            current: ChunkRecords::default(),
            next_in_current: 0,
            current_begin: 0,
            metadata: None,
            stopped: false,
            deferred: None,
            failed_at: None,
        }
    }

    /// Sets the most record bytes a chunk may decode to (1 GiB by default,
    /// [`DEFAULT_MAX_DECODED_CHUNK`](crate::DEFAULT_MAX_DECODED_CHUNK)), and a sixteenth of
    /// it as many records: a larger chunk is [`ErrorKind::ChunkTooLarge`]. Decoding a chunk
    /// holds at most twice the limit, whatever the file holds.
    pub fn with_max_decoded_chunk(mut self, bytes: u64) -> Reader<R> {
        self.current.limit = bytes;
        self
    }

    /// Reads the next record into `buf` (replacing what it held). `Ok(false)` at the end of the
    /// records, once the footer has been checked, and after any error.
    pub fn read_record(&mut self, buf: &mut Vec<u8>) -> Result<bool, Error> {
        loop {
            if self.next_in_current < self.current.len() {
                buf.clear();
                buf.extend_from_slice(self.current.get(self.next_in_current));
                self.next_in_current += 1;
                self.index += 1;
                return Ok(true);
            }
            if self.stopped {
                return Ok(false);
            }
            match self.next_data_chunk() {
                Ok(true) => {}
                Ok(false) => {
                    self.stopped = true;
                    return Ok(false);
                }
                Err(err) => {
                    self.stopped = true;
                    self.failed_at = Some(err.offset());
                    return Err(err);
                }
            }
        }
    }

    /// An iterator over the records, which ends after the first error.
    pub fn records(self) -> Records<R> {
        Records {
            reader: self,
            failed: false,
        }
    }

    /// Where the reader stands: the offset of the chunk holding the next record (or of the
    /// file's end, once there; after an error, the offset the error names, where the damage
    /// is) and how many records it has returned.
    pub fn position(&self) -> Position {
        Position {
            offset: if self.next_in_current < self.current.len() {
                self.current_begin
            } else if let Some(failed_at) = self.failed_at {
                failed_at
            } else {
                self.pending.front().map_or(self.pos, |chunk| chunk.begin)
            },
            index: self.index,
        }
    }

    /// The footer's metadata, once the reader has reached the end of the records.
    pub fn metadata(&self) -> Option<&FooterMetadata> {
        self.metadata.as_ref()
    }

    /// Decodes the next chunk of records into `current`: `Ok(false)` at a sound end.
    fn next_data_chunk(&mut self) -> Result<bool, Error> {
        loop {
            // After an error, the chunks held back before it are records (the footer, when the
            // damage was in the postscript, was dropped): they are given out first.
            let draining = self.deferred.is_some() && !self.pending.is_empty();
            if self.pending.len() > 2 || draining {
                let chunk = self.pending.pop_front().expect("a chunk pending");
                let result = decode_chunk(
                    chunk.begin,
                    chunk.first_index,
                    &chunk.header,
                    &chunk.data,
                    &mut self.current,
                );
                self.spare.push(chunk.data);
                result?;
                self.next_in_current = 0;
                self.current_begin = chunk.begin;
                self.data_chunks += 1;
                return Ok(true);
            }
            if let Some(err) = self.deferred.take() {
                return Err(err);
            }
            let chunk = match self.next_chunk() {
                Ok(Some(chunk)) => chunk,
                Ok(None) => {
                    self.check_footer()?;
                    return Ok(false);
                }
                Err(err) => {
                    self.defer(err);
                    continue;
                }
            };
            match chunk.header.chunk_type {
                ChunkType::Signature | ChunkType::Metadata | ChunkType::Padding => {
                    self.spare.push(chunk.data);
                }
                ChunkType::Simple | ChunkType::Transposed => {
                    self.arrived_records = self
                        .arrived_records
                        .saturating_add(chunk.header.num_records);
                    self.pending.push_back(chunk);
                }
                ChunkType::Other(chunk_type) => {
                    let err = Error::new(
                        ErrorKind::UnsupportedChunkType { chunk_type },
                        chunk.begin,
                        self.arrived_records,
                    );
                    self.defer(err);
                }
            }
        }
    }

    /// Keeps `err` to return once the chunks held back before it are read. The postscript and
    /// the footer are dropped from them: a chunk that decodes as a postscript pointing at the
    /// chunk before it, and one that decodes as a footer describing the chunks before it.
    fn defer(&mut self, err: Error) {
        // Decoded into the reader's own buffers, whose records have all been read, rather than
        // into more beside them.
        let mut records = std::mem::take(&mut self.current);
        if let [.., footer, last] = self.pending.make_contiguous() {
            let is_postscript = last.begin.is_multiple_of(BLOCK_SIZE)
                && decode_chunk(last.begin, 0, &last.header, &last.data, &mut records).is_ok()
                && records.len() == POSTSCRIPT_COPIES
                && Postscript::decode(records.get(0)).is_ok_and(|postscript| {
                    postscript.magic == MAGIC && postscript.footer_offset == footer.begin
                });
            if is_postscript {
                let postscript = self.pending.pop_back().expect("two chunks pending");
                self.arrived_records -= postscript.header.num_records;
                self.spare.push(postscript.data);
            }
        }
        if let Some(last) = self.pending.back() {
            let chunks_before = self.data_chunks + self.pending.len() as u64 - 1;
            let records_before = self.arrived_records - last.header.num_records;
            let is_footer = decode_chunk(
                last.begin,
                records_before,
                &last.header,
                &last.data,
                &mut records,
            )
            .and_then(|()| {
                check_footer_records(&records, last.begin, records_before, |_, _| Ok(()))
            })
            .is_ok_and(|metadata| {
                metadata.num_chunks == chunks_before && metadata.num_records == records_before
            });
            if is_footer {
                let footer = self.pending.pop_back().expect("a chunk pending");
                self.spare.push(footer.data);
            }
        }
        records.ends.clear();
        self.current = records;
        self.deferred = Some(err);
    }

    /// The last two chunks of records are the footer and the postscript: checks them, decoded
    /// into the reader's own buffers (whose records have all been read).
    fn check_footer(&mut self) -> Result<(), Error> {
        let mut records = std::mem::take(&mut self.current);
        let checked = self.check_footer_with(&mut records);
        records.ends.clear();
        self.current = records;
        checked
    }

    fn check_footer_with(&mut self, records: &mut ChunkRecords) -> Result<(), Error> {
        let index = self.index;
        if self.pending.len() < 2 {
            return Err(Error::invalid_footer(
                "the file ends without a footer and postscript",
                self.pos,
                index,
            ));
        }
        let postscript = self.pending.pop_back().expect("two chunks pending");
        let footer = self.pending.pop_back().expect("two chunks pending");

        let begin = postscript.begin;
        decode_chunk(begin, index, &postscript.header, &postscript.data, records)?;
        if !begin.is_multiple_of(BLOCK_SIZE) || records.len() != POSTSCRIPT_COPIES {
            return Err(Error::invalid_footer(
                "the last chunk is not a postscript",
                begin,
                index,
            ));
        }
        let parsed = Postscript::decode(records.get(0))
            .map_err(|reason| Error::invalid_footer(reason, begin, index))?;
        if parsed.magic != MAGIC || parsed.footer_offset != footer.begin {
            return Err(Error::invalid_footer(
                format!(
                    "the postscript (magic {:#x}) points at offset {}, the footer is at {}",
                    parsed.magic, parsed.footer_offset, footer.begin
                ),
                begin,
                index,
            ));
        }

        let begin = footer.begin;
        decode_chunk(begin, index, &footer.header, &footer.data, records)?;
        let metadata = check_footer_records(records, begin, index, |_, _| Ok(()))?;
        if metadata.num_chunks != self.data_chunks || metadata.num_records != self.index {
            return Err(Error::invalid_footer(
                format!(
                    "the footer lists {} chunks of {} records, the file holds {} of {}",
                    metadata.num_chunks, metadata.num_records, self.data_chunks, self.index
                ),
                begin,
                index,
            ));
        }
        self.metadata = Some(metadata);
        Ok(())
    }

    /// Reads the chunk at `pos`, its hashes checked and its padding skipped. `Ok(None)` at the
    /// end of the file, between chunks.
    fn next_chunk(&mut self) -> Result<Option<RawChunk>, Error> {
        let begin = self.pos;
        let index = self.arrived_records;
        let mut header_bytes = [0; CHUNK_HEADER_SIZE];
        let got = self.read_logical(&mut header_bytes, index)?;
        if got == 0 && begin > 0 {
            return Ok(None);
        }
        let not_riegeli = || Error::new(ErrorKind::NotRiegeli, 0, 0);
        if got < CHUNK_HEADER_SIZE {
            if begin == 0 {
                return Err(not_riegeli());
            }
            return Err(self.truncated(begin + CHUNK_HEADER_SIZE as u64, begin, index));
        }
        let header = match ChunkHeader::parse(&header_bytes) {
            Ok(header) => header,
            Err(_) if begin == 0 => return Err(not_riegeli()),
            Err(mismatch) => {
                return Err(Error::new(
                    ErrorKind::ChunkHeaderHashMismatch {
                        expected: mismatch.expected,
                        actual: mismatch.actual,
                    },
                    begin,
                    index,
                ))
            }
        };
        if begin == 0 && header.chunk_type != ChunkType::Signature {
            return Err(not_riegeli());
        }
        let end = chunk_end(begin, &header);
        let mut data = self.spare.pop().unwrap_or_default();
        data.clear();
        while (data.len() as u64) < header.data_size {
            let step = (header.data_size - data.len() as u64).min(READ_STEP) as usize;
            let start = data.len();
            data.resize(start + step, 0);
            let got = self.read_logical(&mut data[start..], index)?;
            if got < step {
                return Err(self.truncated(end, begin, index));
            }
        }
        check_chunk_data(&header, &data, begin, index)?;
        let padding = end.saturating_sub(self.pos);
        let skipped = io::copy(&mut (&mut self.src).take(padding), &mut io::sink())
            .map_err(|e| Error::new(ErrorKind::Io(e), begin, index))?;
        self.pos += skipped;
        if skipped < padding {
            return Err(self.truncated(end, begin, index));
        }
        Ok(Some(RawChunk {
            begin,
            header,
            data,
            first_index: index,
        }))
    }

    fn truncated(&self, expected_end: u64, begin: u64, index: u64) -> Error {
        Error::new(
            ErrorKind::Truncated {
                expected_end,
                file_len: self.pos,
            },
            begin,
            index,
        )
    }

    /// Fills `buf` with chunk bytes, stepping over (and checking) block headers: how many
    /// bytes it got, fewer only at the end of the file.
    fn read_logical(&mut self, buf: &mut [u8], index: u64) -> Result<usize, Error> {
        let mut filled = 0;
        while filled < buf.len() {
            if self.pos.is_multiple_of(BLOCK_SIZE) {
                let block_begin = self.pos;
                let mut block_header = [0; BLOCK_HEADER_SIZE as usize];
                let got = self.read_physical(&mut block_header, index)?;
                if got == 0 {
                    return Ok(filled);
                }
                if got < block_header.len() {
                    if block_begin == 0 {
                        return Err(Error::new(ErrorKind::NotRiegeli, 0, 0));
                    }
                    return Err(self.truncated(
                        block_begin + BLOCK_HEADER_SIZE,
                        block_begin,
                        index,
                    ));
                }
                if let Err((expected, actual)) = check_block_header(&block_header) {
                    if block_begin == 0 {
                        return Err(Error::new(ErrorKind::NotRiegeli, 0, 0));
                    }
                    return Err(Error::new(
                        ErrorKind::BlockHeaderHashMismatch { expected, actual },
                        block_begin,
                        index,
                    ));
                }
            }
            let want = (buf.len() - filled).min(remaining_in_block(self.pos) as usize);
            let got = self.read_physical(&mut buf[filled..filled + want], index)?;
            filled += got;
            if got < want {
                break;
            }
        }
        Ok(filled)
    }

    /// Reads as much of `buf` as the file holds, advancing `pos`.
    fn read_physical(&mut self, buf: &mut [u8], index: u64) -> Result<usize, Error> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.src.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    self.pos += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::new(ErrorKind::Io(e), self.pos, index)),
            }
        }
        Ok(filled)
    }
}

/// The records of a [`Reader`], one `Result` each; ends after the first error.
pub struct Records<R> {
    reader: Reader<R>,
    failed: bool,
}

impl<R: Read> Iterator for Records<R> {
    type Item = Result<Vec<u8>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let mut record = Vec::new();
        match self.reader.read_record(&mut record) {
            Ok(true) => Some(Ok(record)),
            Ok(false) => None,
            Err(err) => {
                self.failed = true;
                Some(Err(err))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{encode_simple, Compression};
    use crate::layout::block_header;
    use crate::records::DEFAULT_MAX_DECODED_CHUNK;

    fn chunk(file: &mut Vec<u8>, data: &[u8], num_records: u64, decoded_data_size: u64) {
        let begin = file.len() as u64;
        let header = ChunkHeader::new(data, ChunkType::Simple, num_records, decoded_data_size);
        file.extend_from_slice(&header.encode());
        file.extend_from_slice(data);
        file.resize(chunk_end(begin, &header) as usize, 0);
    }

    /// Found by the fuzz target: the sizes of a chunk whose values then failed to decode were
    /// handed out as records after the error.
    #[test]
    fn a_chunk_that_fails_to_decode_yields_no_record() {
        let mut file = block_header(0, 0, 64).to_vec();
        file.extend_from_slice(&ChunkHeader::new(&[], ChunkType::Signature, 0, 0).encode());
        let mut data = Vec::new();
        encode_simple(Compression::None, &[3], b"abc", &mut data).unwrap();
        // The header says 4 bytes of records, the sizes say 3.
        chunk(&mut file, &data, 1, 4);
        chunk(&mut file, &data, 1, 3);
        chunk(&mut file, &data, 1, 3);
        let mut reader = Reader::new(file.as_slice());
        let mut record = Vec::new();
        let err = reader.read_record(&mut record).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidChunk { .. }),
            "{err}"
        );
        assert_eq!(err.offset(), 64);
        assert!(!reader.read_record(&mut record).unwrap());
    }

    /// A chunk header whose hashes hold can still claim any size: a claim past the limit is
    /// refused by name before the block is decompressed (it was handed to the decompressor,
    /// which a zstd block of a few kilobytes can make write terabytes).
    #[test]
    fn a_chunk_claiming_more_than_the_limit_is_refused_before_decoding() {
        let mut data = Vec::new();
        encode_simple(Compression::Zstd(3), &[3], b"abc", &mut data).unwrap();
        let claim = DEFAULT_MAX_DECODED_CHUNK + 1;
        let mut file = block_header(0, 0, 64).to_vec();
        file.extend_from_slice(&ChunkHeader::new(&[], ChunkType::Signature, 0, 0).encode());
        for _ in 0..3 {
            chunk(&mut file, &data, 1, claim);
        }
        let mut record = Vec::new();
        let err = Reader::new(file.as_slice())
            .read_record(&mut record)
            .unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::ChunkTooLarge { decoded_data_size, num_records: 1, limit }
                    if *decoded_data_size == claim && *limit == DEFAULT_MAX_DECODED_CHUNK
            ),
            "{err}"
        );
        assert_eq!(err.offset(), 64);
    }
}
