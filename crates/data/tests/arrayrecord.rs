//! ArrayRecord files read at random through their own footers: no copy, no index kept beside
//! them or in the cache; every record as the file holds it, in any order, under every group
//! size and compression; a damaged chunk named by its offset, the others still read.

use std::fs;
use std::num::NonZeroU32;
use std::path::Path;

use ofconvert_arrayrecord::{Compression, IndexedReader, Reader, Writer, WriterOptions};
use ofconvert_data::{open_indexed, Files, IndexOptions, Scratch};
use ofconvert_engine::{Checksums, Error, ErrorKind, Format};

/// Forty records, every seventh one larger than a block (its chunk runs across block
/// headers).
fn records() -> Vec<Vec<u8>> {
    (0..40u32)
        .map(|i| {
            let len = if i % 7 == 3 { 70_000 } else { 10 + i as usize };
            (0..len).map(|at| (at as u32 * 31 + i) as u8).collect()
        })
        .collect()
}

fn write(path: &Path, records: &[Vec<u8>], group_size: u32, compression: Compression) {
    let options = WriterOptions {
        compression,
        group_size: NonZeroU32::new(group_size).unwrap(),
    };
    let mut writer = Writer::with_options(Vec::new(), options);
    for record in records {
        writer.write_record(record).unwrap();
    }
    fs::write(path, writer.finish().unwrap()).unwrap();
}

fn open(path: &Path, cache: &Path) -> Files {
    let options = IndexOptions {
        cache_dir: Some(cache.to_path_buf()),
        // What refused an ArrayRecord file when it had to be copied to be read at random.
        decompress: false,
        ..IndexOptions::default()
    };
    Files::new(vec![open_indexed(path, Format::Tf, &options).unwrap()])
}

fn read(files: &Files, indices: &[u64]) -> Result<Vec<Vec<u8>>, Error> {
    read_checking(files, indices, Checksums::Verify)
}

fn read_checking(
    files: &Files,
    indices: &[u64],
    checksums: Checksums,
) -> Result<Vec<Vec<u8>>, Error> {
    let mut scratch = Scratch::default();
    files.fetch(indices, &mut scratch)?;
    let mut got = Vec::new();
    files.each::<Error>(&scratch, checksums, |_, at, payload| {
        assert!(indices.contains(&at.index));
        got.push(payload.to_vec());
        Ok(())
    })?;
    Ok(got)
}

#[test]
fn every_record_reads_at_random_through_the_footer_without_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let records = records();
    for (group_size, compression) in [
        (1, Compression::default()),
        (3, Compression::None),
        (5, Compression::Brotli(6)),
        (40, Compression::Snappy),
    ] {
        let path = dir.path().join(format!("g{group_size}.array_record"));
        write(&path, &records, group_size, compression);
        let cache = dir.path().join("cache");
        let files = open(&path, &cache);
        let file = &files.files[0];
        assert!(file.array_record);
        assert_eq!((file.index.len(), files.len()), (40, 40));
        assert_eq!((&file.data, &file.stored, file.made), (&path, &None, false));
        assert!(!cache.exists(), "nothing is copied nor kept");

        // A permutation, then neighbours in one chunk and across chunks, then repeats.
        let mut indices: Vec<u64> = (0..40).map(|i| (i * 17) % 40).collect();
        indices.extend([5, 6, 7, 8, 9, 39, 0, 0, 21, 20]);
        let expected: Vec<Vec<u8>> = indices
            .iter()
            .map(|&i| records[i as usize].clone())
            .collect();
        assert_eq!(
            read(&files, &indices).unwrap(),
            expected,
            "group {group_size}"
        );
    }
}

#[test]
fn a_damaged_chunk_is_named_by_its_offset_and_first_record_and_the_others_read() {
    let dir = tempfile::tempdir().unwrap();
    let records = records();
    let path = dir.path().join("g2.array_record");
    write(&path, &records, 2, Compression::None);
    let mut bytes = fs::read(&path).unwrap();
    let (held, begin) = IndexedReader::open(bytes.as_slice()).unwrap().chunk(4);
    assert_eq!(held, 8..10);
    // In the chunk's data, after its 40-byte header.
    bytes[begin as usize + 60] ^= 1;
    fs::write(&path, &bytes).unwrap();

    let files = open(&path, &dir.path().join("cache"));
    let err = read(&files, &[9]).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ArrayRecord(_)),
        "{err}: {:?}",
        err.kind()
    );
    assert_eq!(
        (err.offset(), err.record()),
        (Some(begin), Some(8)),
        "{err}"
    );
    assert!(err.to_string().contains("g2.array_record"), "{err}");
    assert_eq!(
        read(&files, &[7, 10, 0]).unwrap(),
        [records[7].clone(), records[10].clone(), records[0].clone()]
    );

    // Unchecked, as a TFRecord's data is without its checksums: the flipped bit is in record
    // 8 (after the compression byte, the sizes' length and the two sizes, 16 bytes into it).
    let mut flipped = records[8].clone();
    flipped[16] ^= 1;
    assert_eq!(
        read_checking(&files, &[8, 9], Checksums::Ignore).unwrap(),
        [flipped, records[9].clone()]
    );
}

#[test]
fn googles_transposed_chunks_read_at_random() {
    let dir = tempfile::tempdir().unwrap();
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/arrayrecord");
    for name in [
        "transposed_protos",
        "transposed_buckets",
        "transposed_examples",
    ] {
        let path = testdata.join(format!("{name}.array_record"));
        // In order, as the crate's golden test holds them to what Google's reader read.
        let records: Vec<Vec<u8>> = Reader::new(fs::File::open(&path).unwrap())
            .records()
            .collect::<Result<_, _>>()
            .unwrap();
        let files = open(&path, &dir.path().join("cache"));
        let count = records.len() as u64;
        assert_eq!(files.len() as u64, count, "{name}");
        // A permutation (coprime with every count), in batches of 64.
        let order: Vec<u64> = (0..count).map(|i| (i * 97 + 13) % count).collect();
        for batch in order.chunks(64) {
            let want: Vec<Vec<u8>> = batch.iter().map(|&i| records[i as usize].clone()).collect();
            assert_eq!(read(&files, batch).unwrap(), want, "{name}");
        }
    }
}
