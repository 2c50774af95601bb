//! A Riegeli file builder written from the format description, independent of the
//! `ofconvert-arrayrecord` crate: chunks framed with their HighwayHash-64 headers, block
//! headers at every 64 KiB boundary and the padding the format asks for, and an ArrayRecord
//! footer and postscript. The `arrayrecord_reader` target builds files from fuzz input with it,
//! so that the mutations reach past the hash checks.

use highway::{HighwayHash, HighwayHasher, Key};

const BLOCK: u64 = 1 << 16;
const BLOCK_HEADER: u64 = 24;
const USABLE: u64 = BLOCK - BLOCK_HEADER;
const CHUNK_HEADER: u64 = 40;
const KEY: [u64; 4] = [
    u64::from_le_bytes(*b"Riegeli/"),
    u64::from_le_bytes(*b"records\n"),
    u64::from_le_bytes(*b"Riegeli/"),
    u64::from_le_bytes(*b"records\n"),
];
const MAGIC: u64 = 0x7193_0e70_4fda_e05e;
/// The most a built file holds.
pub const MAX_FILE: u64 = 1 << 20;

fn hash(data: &[u8]) -> u64 {
    HighwayHasher::new(Key(KEY)).hash64(data)
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// One chunk to frame.
pub struct Chunk {
    /// The chunk type byte.
    pub chunk_type: u8,
    /// The record count its header claims.
    pub num_records: u64,
    /// The decoded size its header claims.
    pub decoded_data_size: u64,
    /// Its data.
    pub data: Vec<u8>,
    /// Store a wrong data hash.
    pub bad_hash: bool,
}

/// An uncompressed simple chunk holding `records`.
pub fn simple_chunk(records: &[Vec<u8>]) -> Chunk {
    let mut sizes = Vec::new();
    for record in records {
        varint(&mut sizes, record.len() as u64);
    }
    let mut data = vec![0];
    varint(&mut data, sizes.len() as u64);
    data.extend_from_slice(&sizes);
    let values = records.concat();
    data.extend_from_slice(&values);
    Chunk {
        chunk_type: b'r',
        num_records: records.len() as u64,
        decoded_data_size: values.len() as u64,
        data,
        bad_hash: false,
    }
}

/// A file being built: chunks appended at the end, each returning where it began.
#[derive(Default)]
pub struct Builder {
    /// The bytes so far.
    pub bytes: Vec<u8>,
}

impl Builder {
    fn pos(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Appends `chunk` and its padding; returns the offset it begins at.
    pub fn chunk(&mut self, chunk: &Chunk) -> u64 {
        let begin = self.pos();
        let mut header = [0u8; 40];
        header[8..16].copy_from_slice(&(chunk.data.len() as u64).to_le_bytes());
        let data_hash = hash(&chunk.data) ^ u64::from(chunk.bad_hash);
        header[16..24].copy_from_slice(&data_hash.to_le_bytes());
        let type_and_count = (chunk.num_records << 8) | u64::from(chunk.chunk_type);
        header[24..32].copy_from_slice(&type_and_count.to_le_bytes());
        header[32..40].copy_from_slice(&chunk.decoded_data_size.to_le_bytes());
        let header_hash = hash(&header[8..]);
        header[..8].copy_from_slice(&header_hash.to_le_bytes());

        let size = CHUNK_HEADER + chunk.data.len() as u64;
        let overhead = (size + (begin + USABLE - 1) % BLOCK) / USABLE;
        let framed_end = begin + size + overhead * BLOCK_HEADER;
        let with_records = begin + chunk.num_records;
        let remaining = with_records.wrapping_neg() % BLOCK;
        let end = framed_end.max(with_records + remaining.saturating_sub(USABLE - 1));

        // A hostile record count pads a chunk to gigabytes: the file is cut at `MAX_FILE`
        // instead, which the readers see as a file cut short.
        let stop = end.min(MAX_FILE.max(self.pos()));
        let mut logical = header.to_vec();
        logical.extend_from_slice(&chunk.data);
        let mut rest = logical.as_slice();
        while self.pos() < stop {
            if self.pos() % BLOCK == 0 {
                let mut block = [0u8; 24];
                block[8..16].copy_from_slice(&(self.pos() - begin).to_le_bytes());
                block[16..24].copy_from_slice(&(end - self.pos()).to_le_bytes());
                let block_hash = hash(&block[8..]);
                block[..8].copy_from_slice(&block_hash.to_le_bytes());
                self.bytes.extend_from_slice(&block);
                continue;
            }
            let room = (BLOCK - self.pos() % BLOCK).min(stop - self.pos()) as usize;
            let take = room.min(rest.len());
            self.bytes.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            // Past the header and data: zeros to the chunk's end.
            self.bytes.resize(self.bytes.len() + (room - take), 0);
        }
        begin
    }

    /// A padding chunk up to the next block boundary.
    pub fn pad(&mut self) {
        let mut length = self.pos().wrapping_neg() % BLOCK;
        if length == 0 {
            return;
        }
        if length < CHUNK_HEADER {
            length += USABLE;
        }
        self.chunk(&Chunk {
            chunk_type: b'p',
            num_records: 0,
            decoded_data_size: 0,
            data: vec![0; (length - CHUNK_HEADER) as usize],
            bad_hash: false,
        });
    }

    /// The ArrayRecord footer listing `chunks` (offset, records, decoded size), and the
    /// postscript in its own block.
    pub fn footer(&mut self, chunks: &[(u64, u64, u64)]) {
        let mut metadata = Vec::new();
        varint(&mut metadata, 1 << 3);
        varint(&mut metadata, 1);
        varint(&mut metadata, 2 << 3);
        varint(&mut metadata, chunks.len() as u64);
        varint(&mut metadata, 3 << 3);
        varint(&mut metadata, chunks.iter().map(|c| c.1).sum());
        let mut outer = vec![(1 << 3) | 2];
        varint(&mut outer, metadata.len() as u64);
        outer.extend_from_slice(&metadata);
        let mut records = vec![outer];
        for &(offset, num_records, decoded) in chunks {
            let mut entry = Vec::new();
            for (field, value) in [(1, offset), (2, decoded), (3, num_records)] {
                varint(&mut entry, field << 3);
                varint(&mut entry, value);
            }
            records.push(entry);
        }
        let footer_offset = self.chunk(&simple_chunk(&records));
        self.pad();
        let mut postscript = Vec::new();
        varint(&mut postscript, 1 << 3);
        varint(&mut postscript, footer_offset);
        varint(&mut postscript, 2 << 3);
        varint(&mut postscript, MAGIC);
        self.chunk(&simple_chunk(&[
            postscript.clone(),
            postscript.clone(),
            postscript,
        ]));
        self.pad();
    }
}
