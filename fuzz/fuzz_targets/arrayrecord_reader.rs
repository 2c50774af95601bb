//! The ArrayRecord readers on hostile files.
//!
//! Input: `[mode][rest...]`.
//! - `mode` bit 0 clear: `rest` is the file as it is.
//! - bit 0 set: `rest` is a list of chunks, each `[type][records: u32][decoded size: u32]
//!   [length: u32][data]` (little-endian; the length clipped to what remains; type bit 7 stores
//!   a wrong data hash, the other bits pick `s m p r t` or any other byte), framed with
//!   correct hashes and block headers after a file signature (unless bit 1 is set). Bit 2
//!   appends a footer that lists the simple and transposed chunks and a postscript. Bits 3-5
//!   pick the group size the records read are written back with.
//!
//! Neither reader may panic, and the memory limits catch an allocation sized from a length
//! in the file. The readers take chunks of up to [`MAX_DECODED`]: decoding one may hold twice
//! that, which the limits leave room for (at the default 1 GiB, a few KiB of zstd could rightly
//! take 2 GiB). Errors display. When the streaming reader reads the whole file and the
//! indexed reader opens it, both give the same records; each chunk the footer lists, decoded
//! out of its bytes (`ChunkDecoder`), gives the indexed reader's records; and what the
//! streaming reader read (sound file or not) is written back and reads back the same.

#![no_main]

use std::num::NonZeroU32;

use libfuzzer_sys::fuzz_target;
use ofconvert_arrayrecord::{
    ChunkDecoder, Compression, IndexedReader, Reader, Writer, WriterOptions,
};
use ofconvert_fuzz::riegeli::{Builder, Chunk, MAX_FILE};

/// At most this many records are read by number: enough to reach every chunk of a small file.
const MAX_INDEXED: u64 = 4096;
/// The most record bytes the readers decode a chunk to.
const MAX_DECODED: u64 = 64 << 20;

fn build(mode: u8, mut rest: &[u8]) -> Vec<u8> {
    let mut builder = Builder::default();
    if mode & 2 == 0 {
        builder.chunk(&Chunk {
            chunk_type: b's',
            num_records: 0,
            decoded_data_size: 0,
            data: Vec::new(),
            bad_hash: false,
        });
    }
    let mut listed = Vec::new();
    while let [kind, tail @ ..] = rest {
        let word = |bytes: &[u8], at: usize| {
            bytes
                .get(at..at + 4)
                .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap()))
        };
        let num_records = u64::from(word(tail, 0));
        let decoded_data_size = u64::from(word(tail, 4));
        let length = word(tail, 8) as usize;
        let tail = tail.get(12..).unwrap_or_default();
        let (data, after) = tail.split_at(length.min(tail.len()));
        rest = after;
        let chunk_type = match kind & 0x7f {
            0 => b's',
            1 => b'm',
            2 => b'p',
            3..=40 => b'r',
            41..=44 => b't',
            other => other,
        };
        let chunk = Chunk {
            chunk_type,
            num_records,
            decoded_data_size,
            data: data.to_vec(),
            bad_hash: kind & 0x80 != 0,
        };
        let offset = builder.chunk(&chunk);
        if matches!(chunk_type, b'r' | b't') {
            listed.push((offset, num_records, decoded_data_size));
        }
        if builder.bytes.len() as u64 >= MAX_FILE {
            break;
        }
    }
    if mode & 4 != 0 {
        builder.footer(&listed);
    }
    builder.bytes
}

fuzz_target!(|data: &[u8]| {
    let [mode, rest @ ..] = data else {
        return;
    };
    let file = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        build(*mode, rest)
    };

    let mut reader = Reader::new(file.as_slice()).with_max_decoded_chunk(MAX_DECODED);
    let mut streamed = Vec::new();
    let mut record = Vec::new();
    let sound = loop {
        match reader.read_record(&mut record) {
            Ok(true) => streamed.push(record.clone()),
            Ok(false) => break true,
            Err(err) => {
                let _ = err.to_string();
                assert!(!reader.read_record(&mut record).unwrap(), "not fused");
                break false;
            }
        }
    };

    match IndexedReader::open(file.as_slice()) {
        Ok(mut indexed) => {
            indexed.set_max_decoded_chunk(MAX_DECODED);
            let count = indexed.num_records();
            let mut by_number = Vec::new();
            for index in 0..count.min(MAX_INDEXED) {
                match indexed.get(index) {
                    Ok(record) => by_number.push(record),
                    Err(err) => {
                        let _ = err.to_string();
                        break;
                    }
                }
            }
            if sound && count <= MAX_INDEXED && by_number.len() as u64 == count {
                assert_eq!(by_number, streamed, "the readers disagree");
            }
            // Each chunk decoded out of its bytes, as a reader of batches does.
            let mut decoder = ChunkDecoder::default();
            decoder.set_max_decoded_chunk(MAX_DECODED);
            let mut from_chunks = Vec::new();
            for chunk in 0..indexed.num_chunks() {
                let (records, held) = (indexed.chunk(chunk).0, indexed.chunk_bytes(chunk));
                let bytes = file
                    .get(held.start as usize..held.end as usize)
                    .unwrap_or_default();
                if let Err(err) = decoder.decode(bytes, held.start, records) {
                    let _ = err.to_string();
                    break;
                }
                from_chunks.extend((0..decoder.len()).map(|i| decoder.record(i).to_vec()));
                if from_chunks.len() as u64 >= MAX_INDEXED {
                    break;
                }
            }
            if count <= MAX_INDEXED && by_number.len() as u64 == count {
                assert_eq!(from_chunks, by_number, "chunks decoded apart disagree");
            }
            assert!(indexed.get(count).is_err());
        }
        Err(err) => {
            let _ = err.to_string();
        }
    }

    let group_size = NonZeroU32::new(u32::from(mode >> 3 & 7) + 1).unwrap();
    let mut writer = Writer::with_options(
        Vec::new(),
        WriterOptions {
            compression: Compression::None,
            group_size,
        },
    );
    for record in &streamed {
        writer.write_record(record).unwrap();
    }
    let written = writer.finish().unwrap();
    let read_back: Vec<Vec<u8>> = Reader::new(written.as_slice())
        .records()
        .collect::<Result<_, _>>()
        .expect("our own file reads back");
    assert_eq!(read_back, streamed);
});
