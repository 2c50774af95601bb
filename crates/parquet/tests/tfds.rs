//! Parquet files TensorFlow Datasets wrote (testdata/tfds/, by generator/tfds_formats.py),
//! read against the TFRecord shards TFDS wrote of the same builder; and every byte of one
//! damaged in turn.

use std::path::{Path, PathBuf};

use ofconvert_parquet::{ErrorKind, Reader, Writer};

fn testdata(rest: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/tfds")
        .join(rest)
}

fn shards(folder: &str, pattern: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(testdata(folder))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .contains(pattern)
        })
        .collect();
    found.sort();
    found
}

/// The records `reader` reads from where it is to the end.
fn read_all(reader: &mut Reader) -> Result<Vec<Vec<u8>>, ofconvert_parquet::Error> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    while reader.read_record(&mut record)? {
        records.push(record.clone());
    }
    Ok(records)
}

/// The records `reader` reads before its first error, and the error.
fn read_to_error(reader: &mut Reader) -> (Vec<Vec<u8>>, ofconvert_parquet::Error) {
    let mut records = Vec::new();
    let mut record = Vec::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => records.push(record.clone()),
            Ok(false) => panic!("no error met"),
            Err(err) => return (records, err),
        }
    }
}

/// `records` written as a Parquet file in row groups of `group`.
fn written(records: &[Vec<u8>], group: usize) -> Vec<u8> {
    let mut writer = Writer::new(Vec::new(), group).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap()
}

/// `bytes` with the first byte of row group `group` flipped whose damage decoding that row
/// group finds (the other row groups' bytes are untouched).
fn damaged_in(bytes: &[u8], group: usize) -> Vec<u8> {
    let (start, end) = Reader::new(bytes.to_vec().into())
        .unwrap()
        .row_group_range(group);
    (start..end)
        .map(|at| {
            let mut damaged = bytes.to_vec();
            damaged[at as usize] ^= 0xff;
            damaged
        })
        .find(|damaged| {
            let reader = Reader::new(damaged.clone().into()).unwrap();
            reader.row_group(group).is_err()
        })
        .expect("a byte whose damage is found")
}

fn parquet_records(path: &Path) -> Vec<Vec<u8>> {
    let mut reader = Reader::new(std::fs::read(path).unwrap().into()).unwrap();
    let records = read_all(&mut reader).unwrap();
    assert_eq!(records.len() as u64, reader.num_records());
    assert_eq!(reader.position().index, reader.num_records());
    records
}

fn tfrecord_records(path: &Path) -> Vec<Vec<u8>> {
    let file = std::fs::File::open(path).unwrap();
    let mut reader = ofconvert_tfrecord::Reader::new(file);
    let mut records = Vec::new();
    let mut record = Vec::new();
    while reader.read_record(&mut record).unwrap() {
        records.push(record.clone());
    }
    records
}

#[test]
fn tfds_parquet_shards_hold_the_tfrecord_shards_records_in_their_order() {
    for split in ["train", "test"] {
        let parquet = shards("parquet/pets/1.0.0", &format!("pets-{split}.parquet-"));
        let tfrecord = shards("tfrecord/pets/1.0.0", &format!("pets-{split}.tfrecord-"));
        assert_eq!(parquet.len(), 2);
        for (parquet, tfrecord) in parquet.iter().zip(&tfrecord) {
            let (ours, theirs) = (parquet_records(parquet), tfrecord_records(tfrecord));
            assert!(!ours.is_empty());
            assert_eq!(ours, theirs, "{}", parquet.display());
        }
    }
}

#[test]
fn a_short_tfds_shard_holds_what_its_footer_says() {
    let (shard,) = (shards("parquet-short/long/1.0.0", "long-train.parquet-")[0].clone(),);
    assert_eq!(parquet_records(&shard).len(), 200);
}

#[test]
fn records_written_come_back_in_order_and_by_row_group() {
    let records: Vec<Vec<u8>> = (0..23u32).map(|n| vec![n as u8; n as usize * 37]).collect();
    let mut writer = Writer::new(Vec::new(), 5).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    assert_eq!(writer.records(), 23);
    let bytes = writer.finish().unwrap();
    let mut reader = Reader::new(bytes.into()).unwrap();
    assert_eq!((reader.num_records(), reader.row_groups()), (23, 5));
    let groups: Vec<u64> = (0..5)
        .map(|group| reader.row_group_records(group))
        .collect();
    assert_eq!(groups, [5, 5, 5, 5, 3]);
    for group in (0..5).rev() {
        assert_eq!(
            reader.row_group(group).unwrap(),
            records[group * 5..(group * 5 + 5).min(23)]
        );
    }
    let mut record = Vec::new();
    for (index, expected) in records.iter().enumerate() {
        // The next record's place: its row group's column, decoded yet or not.
        let group = index / 5;
        assert_eq!(
            reader.position(),
            ofconvert_parquet::Position {
                offset: reader.row_group_range(group).0,
                index: index as u64
            }
        );
        assert!(reader.read_record(&mut record).unwrap());
        assert_eq!(&record, expected);
    }
    assert!(!reader.read_record(&mut record).unwrap());
    // At the end, the footer's offset: past every row group.
    assert!(reader.position().offset >= reader.row_group_range(4).1);
    // No records: a footer and no row group.
    let empty = Writer::new(Vec::new(), 5).unwrap().finish().unwrap();
    let mut reader = Reader::new(empty.into()).unwrap();
    assert_eq!((reader.num_records(), reader.row_groups()), (0, 0));
    assert!(!reader.read_record(&mut record).unwrap());
}

#[test]
fn a_table_of_columns_is_refused_by_name() {
    // A Parquet file is not TFDS's unless its one column is a binary `data`: the footer of
    // this one is edited to call its column `text`.
    let mut writer = Writer::new(Vec::new(), 5).unwrap();
    writer.write_record(b"x").unwrap();
    let mut bytes = writer.finish().unwrap();
    while let Some(at) = bytes.windows(4).position(|w| w == b"data") {
        bytes[at..at + 4].copy_from_slice(b"text");
    }
    let err = Reader::new(bytes.into()).err().expect("refused");
    assert!(matches!(err.kind(), ErrorKind::NotRecords { columns } if columns == &["text"]));
    assert!(
        err.to_string()
            .contains("columns text, not of serialized records"),
        "{err}"
    );
}

#[test]
fn every_cut_and_every_flipped_byte_of_a_tfds_shard_fails_or_reads_as_many_records() {
    let path = &shards("parquet/pets/1.0.0", "pets-test.parquet-")[0];
    let bytes = std::fs::read(path).unwrap();
    let whole = parquet_records(path);
    let len = bytes.len() as u64;
    for cut in 0..bytes.len() {
        let err = Reader::new(bytes[..cut].to_vec().into())
            .err()
            .expect("a cut file fails");
        match err.kind() {
            ErrorKind::NotParquet => assert!(cut < 4, "cut at {cut}: {err}"),
            ErrorKind::Truncated { .. } | ErrorKind::Footer(_) => {}
            other => panic!("cut at {cut}: {other}"),
        }
    }
    let (mut failed, mut changed) = (0, 0);
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0xff;
        let read = Reader::new(damaged.into()).and_then(|mut reader| read_all(&mut reader));
        match read {
            Err(err) => {
                assert!(err.offset() <= len, "byte {at}: {err}");
                failed += 1;
            }
            // Parquet's pages carry no checksum unless their writer adds one (pyarrow does
            // not by default): a flipped value byte may read as another record.
            Ok(records) => {
                assert_eq!(records.len(), whole.len(), "byte {at}");
                changed += u64::from(records != whole);
            }
        }
    }
    eprintln!(
        "{} bytes flipped: {failed} failed, {changed} read as other records",
        bytes.len()
    );
    assert!(failed > 0);
}

#[test]
fn reading_goes_on_at_the_row_group_after_a_damaged_one() {
    let records: Vec<Vec<u8>> = (0..15u8).map(|n| vec![n; 50]).collect();
    let bytes = written(&records, 5);
    let (start, end) = Reader::new(bytes.clone().into())
        .unwrap()
        .row_group_range(1);
    let mut reader = Reader::new(damaged_in(&bytes, 1).into()).unwrap();
    assert!(reader.row_group(0).is_ok() && reader.row_group(2).is_ok());
    let mut record = Vec::new();
    let (mut read, err) = read_to_error(&mut reader);
    assert_eq!((err.offset(), err.index()), (start, 5), "{err}");
    assert_eq!(read, records[..5]);
    assert!(
        !reader.read_record(&mut record).unwrap(),
        "stopped until told to go on"
    );
    assert_eq!(reader.skip_damaged_group(), Some((10, start..end)));
    read.extend(read_all(&mut reader).unwrap());
    assert_eq!(read[5..], records[10..]);
    assert_eq!(reader.skip_damaged_group(), None);
}

#[test]
fn a_damaged_last_row_group_is_stepped_over_to_the_end() {
    let records: Vec<Vec<u8>> = (0..12u8).map(|n| vec![n; 50]).collect();
    let bytes = written(&records, 5);
    let (start, end) = Reader::new(bytes.clone().into())
        .unwrap()
        .row_group_range(2);
    let mut reader = Reader::new(damaged_in(&bytes, 2).into()).unwrap();
    let (read, err) = read_to_error(&mut reader);
    let mut record = Vec::new();
    assert_eq!((read.len(), err.index()), (10, 10));
    // Its two records lost, to the end; asked again, nothing to skip.
    assert_eq!(reader.skip_damaged_group(), Some((12, start..end)));
    assert!(!reader.read_record(&mut record).unwrap());
    assert_eq!(reader.skip_damaged_group(), None);
}

#[test]
fn a_null_record_fails_its_row_group_from_its_first_record() {
    use parquet::column::writer::ColumnWriter;
    use parquet::data_type::ByteArray;
    use parquet::file::writer::SerializedFileWriter;
    use std::sync::Arc;
    let schema =
        parquet::schema::parser::parse_message_type("message schema { optional binary data; }")
            .unwrap();
    let mut file =
        SerializedFileWriter::new(Vec::new(), Arc::new(schema), Default::default()).unwrap();
    // Row groups of 5 and 5; the second's third row is null.
    for levels in [[1i16; 5], [1, 1, 0, 1, 1]] {
        let mut group = file.next_row_group().unwrap();
        let mut column = group.next_column().unwrap().unwrap();
        let ColumnWriter::ByteArrayColumnWriter(values) = column.untyped() else {
            unreachable!()
        };
        let cells: Vec<ByteArray> = levels
            .iter()
            .filter(|&&l| l == 1)
            .map(|_| ByteArray::from(vec![7u8]))
            .collect();
        values.write_batch(&cells, Some(&levels), None).unwrap();
        column.close().unwrap();
        group.close().unwrap();
    }
    let bytes = file.into_inner().unwrap();
    let (read, err) = read_to_error(&mut Reader::new(bytes.into()).unwrap());
    assert_eq!((read.len(), err.index()), (5, 5));
    assert!(
        matches!(err.kind(), ErrorKind::NullRecord { record: 7 }),
        "{err}"
    );
    assert!(err.to_string().contains("a null record (#7)"), "{err}");
}
