//! Random access by record number: the postscript in the file's last block points at the
//! footer, whose entries give each chunk's offset and record count. Only the footer is read
//! when the file is opened; then one chunk per record asked for, the last one kept.

use std::io;
use std::ops::Range;

use crate::chunk::{check_chunk_data, decode_chunk};
use crate::error::{Error, ErrorKind};
use crate::footer::check_footer_records;
use crate::footer::{ChunkEntry, FooterMetadata, Postscript, MAGIC};
use crate::layout::{
    add_with_overhead, check_block_header, remaining_in_block, ChunkHeader, ChunkType,
    BLOCK_HEADER_SIZE, BLOCK_SIZE, CHUNK_HEADER_SIZE,
};
use crate::read_at::{lent, ReadAt};
use crate::records::Records as ChunkRecords;

/// Reads the physical range `start..end` and appends the chunk bytes in it to `out`, checking
/// and dropping the block headers.
fn read_logical_range<S: ReadAt + ?Sized>(
    src: &S,
    start: u64,
    end: u64,
    index: u64,
    physical: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut bytes = src
        .bytes_at(start, end, physical)
        .map_err(|e| Error::new(ErrorKind::Io(e), start, index))?;
    let mut pos = start;
    while !bytes.is_empty() {
        if pos.is_multiple_of(BLOCK_SIZE) {
            let Some(block_header) = bytes.first_chunk::<{ BLOCK_HEADER_SIZE as usize }>() else {
                return Err(Error::invalid_chunk(
                    "a chunk ends inside a block header",
                    pos,
                    index,
                ));
            };
            if let Err((expected, actual)) = check_block_header(block_header) {
                return Err(Error::new(
                    ErrorKind::BlockHeaderHashMismatch { expected, actual },
                    pos,
                    index,
                ));
            }
            bytes = &bytes[BLOCK_HEADER_SIZE as usize..];
            pos += BLOCK_HEADER_SIZE;
        }
        let take = bytes.len().min(remaining_in_block(pos) as usize);
        out.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        pos += take as u64;
    }
    Ok(())
}

/// What reading a chunk reads into: its bytes as the file holds them (block headers and
/// all), when they must be copied, and the chunk's data.
#[derive(Default)]
struct Buffers {
    physical: Vec<u8>,
    data: Vec<u8>,
}

/// Reads the chunk at `begin` of a source `len` bytes long into `buffers.data`, its hashes
/// checked (its data's only with `check_data`).
fn read_chunk_at<S: ReadAt + ?Sized>(
    src: &S,
    len: u64,
    begin: u64,
    index: u64,
    buffers: &mut Buffers,
    check_data: bool,
) -> Result<ChunkHeader, Error> {
    let Buffers { physical, data } = buffers;
    let truncated = |expected_end| {
        Error::new(
            ErrorKind::Truncated {
                expected_end,
                file_len: len,
            },
            begin,
            index,
        )
    };
    // A chunk never begins inside a block header nor right after one: an offset from a
    // damaged or hostile footer that does would frame the bytes after it wrongly.
    if (1..=BLOCK_HEADER_SIZE).contains(&(begin % BLOCK_SIZE)) {
        return Err(Error::invalid_footer(
            format!("a chunk offset {begin} lies in a block header"),
            begin,
            index,
        ));
    }
    let header_end = add_with_overhead(begin, CHUNK_HEADER_SIZE as u64);
    if header_end > len {
        return Err(truncated(header_end));
    }
    data.clear();
    read_logical_range(src, begin, header_end, index, physical, data)?;
    let header_bytes: [u8; CHUNK_HEADER_SIZE] = data.as_slice().try_into().map_err(|_| {
        Error::invalid_chunk(
            "a chunk header split wrongly by block headers",
            begin,
            index,
        )
    })?;
    let header = ChunkHeader::parse(&header_bytes).map_err(|mismatch| {
        Error::new(
            ErrorKind::ChunkHeaderHashMismatch {
                expected: mismatch.expected,
                actual: mismatch.actual,
            },
            begin,
            index,
        )
    })?;
    let data_end = add_with_overhead(
        begin,
        (CHUNK_HEADER_SIZE as u64).saturating_add(header.data_size),
    );
    if data_end > len {
        return Err(truncated(data_end));
    }
    data.clear();
    read_logical_range(src, header_end, data_end, index, physical, data)?;
    if check_data {
        check_chunk_data(&header, data, begin, index)?;
    }
    Ok(header)
}

/// Reads the chunk at `begin` of a source `len` bytes long, which the footer says holds
/// `records`, and decodes it into `out`: its hashes checked (its data's only with
/// `check_data`), its record count held to the footer's.
fn load_chunk<S: ReadAt + ?Sized>(
    src: &S,
    len: u64,
    begin: u64,
    records: &Range<u64>,
    (buffers, check_data): (&mut Buffers, bool),
    out: &mut ChunkRecords,
) -> Result<(), Error> {
    let first = records.start;
    let header = read_chunk_at(src, len, begin, first, buffers, check_data)?;
    let listed = records.end - records.start;
    if header.num_records != listed {
        return Err(Error::invalid_footer(
            format!(
                "the footer gives the chunk {listed} records, its header {}",
                header.num_records
            ),
            begin,
            first,
        ));
    }
    // Decoding gives as many records as the header says, or fails.
    decode_chunk(begin, first, &header, &buffers.data, out)
}

/// Bytes read elsewhere, from offset `base` of a file on: what [`ChunkDecoder`] reads a
/// chunk out of.
struct Shifted<'b> {
    bytes: &'b [u8],
    base: u64,
}

impl ReadAt for Shifted<'_> {
    fn size(&self) -> io::Result<u64> {
        Ok(self.base + self.bytes.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset.saturating_add(buf.len() as u64);
        buf.copy_from_slice(lent(self.bytes, self.base, offset, end)?);
        Ok(())
    }

    fn bytes_at<'a>(&'a self, start: u64, end: u64, _: &'a mut Vec<u8>) -> io::Result<&'a [u8]> {
        lent(self.bytes, self.base, start, end)
    }
}

/// Decodes chunks of records out of bytes read by other means than a [`ReadAt`] (ranged
/// reads of many chunks at once, a mapped file): what [`IndexedReader`] does with each chunk
/// it reads, for a reader that fetches the chunks [`IndexedReader::chunk`] places itself.
pub struct ChunkDecoder {
    records: ChunkRecords,
    buffers: Buffers,
    check_data: bool,
}

impl Default for ChunkDecoder {
    fn default() -> ChunkDecoder {
        ChunkDecoder {
            records: ChunkRecords::default(),
            buffers: Buffers::default(),
            check_data: true,
        }
    }
}

impl ChunkDecoder {
    /// Whether [`decode`](ChunkDecoder::decode) checks each chunk's data against its hash (by
    /// default it does). Without, it still checks the chunk's header and the block headers,
    /// which frame the data, and the records decode within the same limits: damage to the
    /// data may then give wrong records, as a TFRecord read without its data checksums does.
    pub fn check_data_hashes(&mut self, check: bool) {
        self.check_data = check;
    }

    /// Sets the most record bytes a chunk may decode to, as
    /// [`IndexedReader::set_max_decoded_chunk`] does.
    pub fn set_max_decoded_chunk(&mut self, bytes: u64) {
        self.records.limit = bytes;
    }

    /// Decodes the chunk whose bytes `bytes` hold from their start, at offset `begin` of its
    /// file (block headers included, as the file has them; bytes after the chunk are not
    /// looked at), which the footer says holds the records `records`: every hash checked
    /// (but see [`check_data_hashes`](ChunkDecoder::check_data_hashes)), the record count
    /// held to the footer's. Errors name the file's offsets.
    pub fn decode(&mut self, bytes: &[u8], begin: u64, records: Range<u64>) -> Result<(), Error> {
        let src = Shifted { bytes, base: begin };
        let len = src.size().unwrap_or(begin);
        let buffers = (&mut self.buffers, self.check_data);
        let decoded = load_chunk(&src, len, begin, &records, buffers, &mut self.records);
        if decoded.is_err() {
            self.records.ends.clear();
        }
        decoded
    }

    /// How many records the chunk decoded last holds (none after an error).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its record `i` (`0..len()`, counted from the chunk's first). Panics past the last.
    pub fn record(&self, i: usize) -> &[u8] {
        self.records.get(i)
    }
}

/// Reads ArrayRecord records by number through the file's footer index.
///
/// Opening reads the postscript (in the file's last 64 KiB block) and the footer; each
/// [`read_record`](IndexedReader::read_record) then reads the chunk that holds the record,
/// unless it is the chunk the last call read. Hashes are checked on everything read.
pub struct IndexedReader<S> {
    src: S,
    len: u64,
    metadata: FooterMetadata,
    footer_begin: u64,
    chunks: Vec<ChunkEntry>,
    first_records: Vec<u64>,
    cached: Option<usize>,
    records: ChunkRecords,
    buffers: Buffers,
}

impl<S: ReadAt> IndexedReader<S> {
    /// Opens `src`: checks the file signature and reads the footer.
    pub fn open(src: S) -> Result<IndexedReader<S>, Error> {
        let len = src.size().map_err(|e| Error::new(ErrorKind::Io(e), 0, 0))?;
        let mut buffers = Buffers::default();
        // Damage in the first chunk means "not ArrayRecord", as the streaming reader says; a
        // source that fails to read says so.
        match read_chunk_at(&src, len, 0, 0, &mut buffers, true) {
            Ok(header) if header.chunk_type == ChunkType::Signature => {}
            Err(err) if matches!(err.kind(), ErrorKind::Io(_)) => return Err(err),
            _ => return Err(Error::new(ErrorKind::NotRiegeli, 0, 0)),
        }
        if len < 2 * BLOCK_SIZE || !len.is_multiple_of(BLOCK_SIZE) {
            return Err(Error::invalid_footer(
                format!(
                    "the file's {len} bytes are not whole 64 KiB blocks ending in a postscript"
                ),
                len,
                0,
            ));
        }
        let mut records = ChunkRecords::default();
        let postscript_begin = len - BLOCK_SIZE;
        let header = read_chunk_at(&src, len, postscript_begin, 0, &mut buffers, true)?;
        decode_chunk(postscript_begin, 0, &header, &buffers.data, &mut records)?;
        let postscript = (0..records.len())
            .filter_map(|i| Postscript::decode(records.get(i)).ok())
            .find(|postscript| postscript.magic == MAGIC)
            .ok_or_else(|| {
                Error::invalid_footer("no postscript in the last block", postscript_begin, 0)
            })?;
        let footer_begin = postscript.footer_offset;
        if footer_begin >= postscript_begin {
            return Err(Error::invalid_footer(
                format!("the postscript points at offset {footer_begin}, past the footer's place"),
                postscript_begin,
                0,
            ));
        }
        let header = read_chunk_at(&src, len, footer_begin, 0, &mut buffers, true)?;
        decode_chunk(footer_begin, 0, &header, &buffers.data, &mut records)?;
        let mut chunks = Vec::new();
        let mut first_records = Vec::new();
        let metadata = check_footer_records(&records, footer_begin, 0, |entry, first| {
            let after_last = chunks
                .last()
                .is_none_or(|last: &ChunkEntry| entry.chunk_offset > last.chunk_offset);
            if !after_last || entry.chunk_offset >= footer_begin {
                return Err(Error::invalid_footer(
                    format!(
                        "a chunk listed at offset {} is out of place",
                        entry.chunk_offset
                    ),
                    footer_begin,
                    first,
                ));
            }
            chunks.push(entry);
            first_records.push(first);
            Ok(())
        })?;
        Ok(IndexedReader {
            src,
            len,
            metadata,
            footer_begin,
            chunks,
            first_records,
            cached: None,
            records,
            buffers,
        })
    }

    /// Sets the most record bytes a chunk may decode to (1 GiB by default,
    /// [`DEFAULT_MAX_DECODED_CHUNK`](crate::DEFAULT_MAX_DECODED_CHUNK)), and a sixteenth of
    /// it as many records: a larger chunk is [`ErrorKind::ChunkTooLarge`]. Decoding a chunk
    /// holds at most twice the limit, whatever the file holds. The footer read by
    /// [`open`](IndexedReader::open) had the default limit.
    pub fn set_max_decoded_chunk(&mut self, bytes: u64) {
        self.records.limit = bytes;
    }

    /// How many records the file holds.
    pub fn num_records(&self) -> u64 {
        self.metadata.num_records
    }

    /// How many chunks of records the file holds.
    pub fn num_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Chunk `chunk` of records (`0..num_chunks()`, in file order): the numbers of the records
    /// it holds and the offset it begins at, as the footer lists them.
    pub fn chunk(&self, chunk: usize) -> (Range<u64>, u64) {
        let (entry, first) = (self.chunks[chunk], self.first_records[chunk]);
        (first..first + entry.num_records, entry.chunk_offset)
    }

    /// The bytes chunk `chunk` spans in the file: from its offset to the next chunk's (to
    /// the footer's, for the last), block headers and padding included; what a reader that
    /// fetches it whole reads, for [`ChunkDecoder::decode`].
    pub fn chunk_bytes(&self, chunk: usize) -> Range<u64> {
        let end = match self.chunks.get(chunk + 1) {
            Some(next) => next.chunk_offset,
            None => self.footer_begin,
        };
        self.chunks[chunk].chunk_offset..end
    }

    /// The first chunk (`0..=num_chunks()`, in file order) that begins at or after byte
    /// `offset`: where reading on past damage at an offset resumes, whatever lies between.
    pub fn first_chunk_from(&self, offset: u64) -> usize {
        self.chunks
            .partition_point(|entry| entry.chunk_offset < offset)
    }

    /// Where the footer begins: the end of the last chunk of records (padding included).
    pub fn footer_offset(&self) -> u64 {
        self.footer_begin
    }

    /// The footer's metadata (counts and the writer's options string).
    pub fn metadata(&self) -> &FooterMetadata {
        &self.metadata
    }

    /// Reads record `index` into `buf` (replacing what it held).
    pub fn read_record(&mut self, index: u64, buf: &mut Vec<u8>) -> Result<(), Error> {
        if index >= self.metadata.num_records {
            return Err(Error::new(
                ErrorKind::RecordOutOfRange {
                    num_records: self.metadata.num_records,
                },
                self.len,
                index,
            ));
        }
        let chunk = self.first_records.partition_point(|&first| first <= index) - 1;
        let (records, begin) = self.chunk(chunk);
        if self.cached != Some(chunk) {
            self.cached = None;
            let buffers = (&mut self.buffers, true);
            load_chunk(
                &self.src,
                self.len,
                begin,
                &records,
                buffers,
                &mut self.records,
            )?;
            self.cached = Some(chunk);
        }
        buf.clear();
        buf.extend_from_slice(self.records.get((index - records.start) as usize));
        Ok(())
    }

    /// Record `index` in a new buffer.
    pub fn get(&mut self, index: u64) -> Result<Vec<u8>, Error> {
        let mut buf = Vec::new();
        self.read_record(index, &mut buf)?;
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{encode_simple, put_varint, Compression};
    use crate::footer::POSTSCRIPT_COPIES;
    use crate::Writer;

    /// A sound file whose postscript points at `footer_offset`.
    fn pointing_at(footer_offset: u64) -> Vec<u8> {
        let mut writer = Writer::new(Vec::new());
        writer.write_record(b"record").unwrap();
        let mut bytes = writer.finish().unwrap();
        let postscript = Postscript {
            footer_offset,
            magic: MAGIC,
        }
        .encode();
        let mut sizes = Vec::new();
        for _ in 0..POSTSCRIPT_COPIES {
            put_varint(&mut sizes, postscript.len() as u64);
        }
        let values = postscript.repeat(POSTSCRIPT_COPIES);
        let mut data = Vec::new();
        encode_simple(Compression::None, &sizes, &values, &mut data).unwrap();
        let header = ChunkHeader::new(&data, ChunkType::Simple, 3, values.len() as u64);
        let at = bytes.len() - BLOCK_SIZE as usize + BLOCK_HEADER_SIZE as usize;
        bytes[at..at + CHUNK_HEADER_SIZE].copy_from_slice(&header.encode());
        bytes[at + CHUNK_HEADER_SIZE..at + CHUNK_HEADER_SIZE + data.len()].copy_from_slice(&data);
        bytes
    }

    #[test]
    fn a_footer_offset_in_a_block_header_is_an_error() {
        for offset in [1, 10, 24] {
            let err = IndexedReader::open(pointing_at(offset)).err().unwrap();
            assert!(
                matches!(err.kind(), ErrorKind::InvalidFooter { .. }),
                "{err}"
            );
        }
        // Elsewhere, a wrong offset fails a hash.
        let err = IndexedReader::open(pointing_at(30)).err().unwrap();
        assert!(
            matches!(err.kind(), ErrorKind::ChunkHeaderHashMismatch { .. }),
            "{err}"
        );
    }
}
