//! Damaged files: every flipped byte that a hash guards, and every cut, is an error that names
//! its kind and offset, never a wrong record or a clean end.

use std::fs;
use std::path::PathBuf;

use ofconvert_arrayrecord::{Error, ErrorKind, IndexedReader, Reader, Writer};

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
