//! Damaged files: every flipped byte that a hash guards, and every cut, is an error that names
//! its kind and offset, never a wrong record or a clean end.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fs;
use std::path::PathBuf;

use ofconvert_arrayrecord::{Error, ErrorKind, IndexedReader, Reader, Writer};

mod crafted;
use crafted::{file_of_chunks, transposed};

/// The system allocator, noting the largest allocation each thread asks for: what a reader
/// builds, whatever the tests beside it do.
struct NotingLargest;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|largest| largest.set(largest.get().max(size)));
}

// SAFETY: every call is handed on to the system allocator as it came.
unsafe impl GlobalAlloc for NotingLargest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: NotingLargest = NotingLargest;

fn golden(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/arrayrecord")
        .join(format!("{name}.array_record"));
    fs::read(path).unwrap()
}

/// Reads in order: the records read before the first error, and that error (`None` at a
/// clean end).
fn stream(bytes: &[u8]) -> (Vec<Vec<u8>>, Option<Error>) {
    let mut reader = Reader::new(bytes);
    let mut records = Vec::new();
    let mut record = Vec::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => records.push(record.clone()),
            Ok(false) => return (records, None),
            Err(err) => {
                // Fused: a clean end from then on.
                assert!(!reader.read_record(&mut record).unwrap());
                return (records, Some(err));
            }
        }
    }
}

fn flipped(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut damaged = bytes.to_vec();
    damaged[at] ^= 0x20;
    damaged
}

// group7_uncompressed: the signature, chunks of records from offset 64, the footer, padding
// to 65536, the postscript there, padding to the end.
const FIRST_CHUNK: usize = 64;

#[test]
fn a_flipped_data_byte_names_the_chunk() {
    let bytes = golden("group7_uncompressed");
    let (records, err) = stream(&flipped(&bytes, FIRST_CHUNK + 40 + 3));
    assert!(records.is_empty());
    let err = err.unwrap();
    assert!(
        matches!(err.kind(), ErrorKind::ChunkDataHashMismatch { .. }),
        "{err}"
    );
    assert_eq!((err.offset(), err.index()), (FIRST_CHUNK as u64, 0));
    assert!(
        err.to_string()
            .starts_with("corrupted chunk data (hash mismatch"),
        "{err}"
    );

    // By number, the damaged chunk fails and the others still read.
    let damaged = flipped(&bytes, FIRST_CHUNK + 40 + 3);
    let mut reader = IndexedReader::open(damaged.as_slice()).unwrap();
    let err = reader.get(3).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::ChunkDataHashMismatch { .. }
    ));
    assert_eq!(err.offset(), FIRST_CHUNK as u64);
    assert!(reader.get(7).is_ok());
}

#[test]
fn a_flipped_header_byte_names_the_chunk() {
    let bytes = golden("group7_uncompressed");
    let (_, err) = stream(&flipped(&bytes, FIRST_CHUNK + 9));
    let err = err.unwrap();
    assert!(
        matches!(err.kind(), ErrorKind::ChunkHeaderHashMismatch { .. }),
        "{err}"
    );
    assert_eq!(err.offset(), FIRST_CHUNK as u64);
}

#[test]
fn a_flipped_block_header_byte_names_the_block() {
    let bytes = golden("group7_uncompressed");
    let (records, err) = stream(&flipped(&bytes, 65536 + 12));
    let err = err.unwrap();
    assert!(
        matches!(err.kind(), ErrorKind::BlockHeaderHashMismatch { .. }),
        "{err}"
    );
    assert_eq!(err.offset(), 65536);
    // The postscript's block. The reader holds the last two chunks of records back until it
    // knows which are the footer and the postscript; when the postscript is damaged, the
    // footer is told by what it says of the chunks before it, and the last chunk of records
    // (one record) is still read.
    assert_eq!(records.len(), 50);
    let err = IndexedReader::open(flipped(&bytes, 65536 + 12))
        .err()
        .unwrap();
    assert!(matches!(
        err.kind(),
        ErrorKind::BlockHeaderHashMismatch { .. }
    ));
}

#[test]
fn a_file_that_is_not_riegeli_says_so() {
    for bytes in [
        b"".to_vec(),
        b"not an array record".to_vec(),
        flipped(&golden("default"), 30),
    ] {
        let (_, err) = stream(&bytes);
        let err = err.unwrap();
        assert!(matches!(err.kind(), ErrorKind::NotRiegeli), "{err}");
        assert!(matches!(
            IndexedReader::open(bytes.as_slice()).err().unwrap().kind(),
            ErrorKind::NotRiegeli
        ));
    }
}

#[test]
fn every_guarded_byte_flipped_is_an_error() {
    // Every byte of the signature, the chunks and the footer (up to the padding after it),
    // and of the postscript's block header and chunk.
    let bytes = golden("group7_uncompressed");
    let footer_end = 2000;
    let guarded = (0..footer_end).chain(65536..65536 + 24 + 40 + 44);
    for at in guarded {
        let (_, err) = stream(&flipped(&bytes, at));
        assert!(err.is_some(), "a flip at {at} read as a sound file");
    }
}

#[test]
fn every_record_before_the_damage_is_read() {
    // The reader holds chunks back to tell the footer and the postscript; damage after them
    // must not lose them: what comes before the error is every record before its index.
    for name in ["group7_uncompressed", "default"] {
        let bytes = golden(name);
        let (all, err) = stream(&bytes);
        assert!(err.is_none());
        let flips = (0..2000).chain(65536..65536 + 24 + 40 + 44);
        let cuts = (64..bytes.len()).step_by(331);
        let damaged = flips
            .map(|at| (format!("flip at {at}"), flipped(&bytes, at)))
            .chain(cuts.map(|len| (format!("cut at {len}"), bytes[..len].to_vec())));
        for (what, damaged) in damaged {
            let (records, err) = stream(&damaged);
            let err = err.unwrap_or_else(|| panic!("{name}, {what}: read as sound"));
            let before = (err.index() as usize).min(all.len());
            assert!(
                records == all[..before],
                "{name}, {what}: {} records read before {err}",
                records.len()
            );
        }
    }
}

#[test]
fn every_cut_is_an_error() {
    for name in ["group7_uncompressed", "large_zstd"] {
        let bytes = golden(name);
        let (all, _) = stream(&bytes);
        for len in (0..bytes.len())
            .step_by(997)
            .chain([64, 65536, bytes.len() - 1])
        {
            let (records, err) = stream(&bytes[..len]);
            let err = err.unwrap_or_else(|| panic!("{name} cut at {len} read as sound"));
            assert!(all.starts_with(&records), "{name} cut at {len}");
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::Truncated { .. }
                        | ErrorKind::InvalidFooter { .. }
                        | ErrorKind::NotRiegeli
                ),
                "{name} cut at {len}: {err}"
            );
            assert!(
                IndexedReader::open(&bytes[..len]).is_err(),
                "{name} cut at {len}"
            );
        }
    }
}

#[test]
fn a_cut_inside_a_chunk_says_where_it_should_end() {
    let bytes = golden("large_zstd");
    let (_, err) = stream(&bytes[..1000]);
    let err = err.unwrap();
    match err.kind() {
        ErrorKind::Truncated {
            expected_end,
            file_len,
        } => {
            assert_eq!(*file_len, 1000);
            assert!(*expected_end > 70_000);
        }
        other => panic!("{other}"),
    }
    assert_eq!(err.offset(), FIRST_CHUNK as u64);
}

// padded: written with `pad_to_block_boundary:true`, every chunk of records followed by a
// padding chunk, whose data is hashed as any chunk's, up to the next block.
const PADDED_CHUNKS: [(u64, std::ops::Range<u64>); 2] = [(64, 0..8), (65536, 8..12)];
const PADDING_AFTER_FIRST: u64 = 693;

/// After an error, the streaming reader stands where the damage is: the offset the error
/// names, from which a reader by the footer goes on at the first chunk listed past it. Damage
/// in padding is not in the chunk of records after it, which it used to stand at (the record
/// it would have read next), so that going on from that record skipped a sound chunk.
#[test]
fn after_damage_the_reader_stands_where_the_damage_is() {
    let bytes = golden("padded");
    let all = stream(&bytes).0;
    let chunk_data =
        |begin: u64| begin as usize + 24 * usize::from(begin.is_multiple_of(65536)) + 45;
    for (at, begin, read) in [
        (5733, PADDING_AFTER_FIRST, 8),
        (chunk_data(PADDED_CHUNKS[0].0), PADDED_CHUNKS[0].0, 0),
        (chunk_data(PADDED_CHUNKS[1].0), PADDED_CHUNKS[1].0, 8),
    ] {
        let damaged = flipped(&bytes, at);
        let mut reader = Reader::new(damaged.as_slice());
        let mut records = Vec::new();
        let mut record = Vec::new();
        let err = loop {
            match reader.read_record(&mut record) {
                Ok(true) => records.push(record.clone()),
                Ok(false) => panic!("a flip at {at} read as sound"),
                Err(err) => break err,
            }
        };
        assert!(
            matches!(err.kind(), ErrorKind::ChunkDataHashMismatch { .. }),
            "{err}"
        );
        assert_eq!((err.offset(), err.index()), (begin, read), "flip at {at}");
        assert_eq!(records, all[..read as usize], "flip at {at}");
        let position = reader.position();
        assert_eq!(
            (position.offset, position.index),
            (begin, read),
            "flip at {at}"
        );
    }
}

/// The chunks the footer lists, found by offset.
#[test]
fn the_first_chunk_from_an_offset_is_the_first_listed_at_or_after_it() {
    let reader = IndexedReader::open(golden("padded")).unwrap();
    assert_eq!(reader.num_chunks(), 2);
    for (chunk, (offset, records)) in PADDED_CHUNKS.iter().enumerate() {
        assert_eq!(reader.chunk(chunk), (records.clone(), *offset));
    }
    for (offset, chunk) in [
        (0, 0),
        (64, 0),
        (65, 1),
        (PADDING_AFTER_FIRST, 1),
        (65536, 1),
        (65537, 2),
        (u64::MAX, 2),
    ] {
        assert_eq!(reader.first_chunk_from(offset), chunk, "from {offset}");
    }
}

/// A reader's limit on what a chunk decodes to holds for both readers: a record of 2 MiB of
/// zeros, a few hundred bytes compressed, is refused by a reader that takes 1 MiB.
#[test]
fn a_chunk_past_the_readers_limit_is_refused_by_name() {
    let mut writer = Writer::new(Vec::new());
    writer.write_record(&vec![0; 2 << 20]).unwrap();
    let file = writer.finish().unwrap();
    assert!(file.len() < 1 << 18, "{} bytes", file.len());
    let too_large = |err: &Error| {
        matches!(
            err.kind(),
            ErrorKind::ChunkTooLarge { decoded_data_size, num_records: 1, limit: 1048576 }
                if *decoded_data_size == 2 << 20
        )
    };
    let mut record = Vec::new();
    let err = Reader::new(file.as_slice())
        .with_max_decoded_chunk(1 << 20)
        .read_record(&mut record)
        .unwrap_err();
    assert!(too_large(&err), "{err}");
    assert!(
        err.to_string().starts_with("chunk too large to decode"),
        "{err}"
    );

    let mut indexed = IndexedReader::open(file.as_slice()).unwrap();
    indexed.set_max_decoded_chunk(1 << 20);
    let err = indexed.read_record(0, &mut record).unwrap_err();
    assert!(too_large(&err), "{err}");
    // The default limit reads it.
    let mut indexed = IndexedReader::open(file.as_slice()).unwrap();
    indexed.read_record(0, &mut record).unwrap();
    assert_eq!(record.len(), 2 << 20);
}

/// A source that fails after its first `good` reads, as a store does when the network goes.
struct Failing {
    bytes: Vec<u8>,
    reads_left: std::cell::Cell<u32>,
}

impl ofconvert_arrayrecord::ReadAt for Failing {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        if self.reads_left.get() == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "gone",
            ));
        }
        self.reads_left.set(self.reads_left.get() - 1);
        ofconvert_arrayrecord::ReadAt::read_exact_at(&self.bytes, buf, offset)
    }
}

/// Before, a read that failed while opening the file's first chunk said the file was not
/// ArrayRecord.
#[test]
fn a_source_that_fails_to_read_is_an_io_error_not_a_wrong_format() {
    let bytes = golden("default");
    for good in 0..3 {
        let source = Failing {
            bytes: bytes.clone(),
            reads_left: std::cell::Cell::new(good),
        };
        let err = IndexedReader::open(&source).err().unwrap();
        assert!(
            matches!(err.kind(), ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset),
            "after {good} reads: {err}"
        );
    }
}

/// A transposed chunk's data, zstd-compressed: a header of one node that does nothing, and
/// transitions that announce `transitions` bytes and hold that many zeros.
fn transposed_of_zeros(transitions: u64) -> Vec<u8> {
    transposed(&[0, 0, 1, 0, 0, 0], transitions)
}

/// A transposed chunk's header and transitions may decompress to 64 bytes for every record
/// byte it declares: the transitions of a chunk declaring 1 GiB, 145 KB of zstd, took a reader
/// to 4 GiB before it found them wrong. Every block is now held to the chunk's declared sizes
/// and, with everything else decoding holds, to the reader's limit: refused by the size it
/// announces before anything is decompressed, no buffer of that size ever built.
#[test]
fn a_transposed_chunk_whose_blocks_expand_past_what_it_may_hold_is_refused_unbuilt() {
    let simple = vec![0, 1, 3, b'a', b'b', b'c'];
    for (limit, declared, announced, says) in [
        // Past what is left of the reader's limit (where the record ends, the header and the
        // state machine taken).
        (
            1 << 20,
            1 << 20,
            8 << 20,
            "left of the reader's limit of 1048576",
        ),
        (
            1 << 30,
            1 << 30,
            3 << 29,
            "left of the reader's limit of 1073741824",
        ),
        // Past what a chunk of 4 bytes in a record may soundly hold.
        (
            1 << 20,
            4,
            8 << 20,
            "more than the 4416 the chunk's declared sizes allow",
        ),
    ] {
        let file = file_of_chunks(&[
            (b't', 1, declared, transposed_of_zeros(announced)),
            (b'r', 1, 3, simple.clone()),
            (b'r', 1, 3, simple.clone()),
        ]);
        let mut reader = Reader::new(file.as_slice()).with_max_decoded_chunk(limit);
        let mut record = Vec::new();
        LARGEST.with(|largest| largest.set(0));
        let err = reader.read_record(&mut record).unwrap_err();
        let largest = LARGEST.with(Cell::get);
        assert!(
            largest < 1 << 20,
            "a buffer of {largest} bytes was built: {err}"
        );
        let ErrorKind::InvalidChunk { reason } = err.kind() else {
            panic!("{err}");
        };
        let announced = format!("the transitions: {announced} bytes announced, ");
        assert!(reason.starts_with(&announced), "{err}");
        assert!(reason.contains(says), "{err}");
        assert_eq!((err.offset(), err.index()), (64, 0));
    }
}
