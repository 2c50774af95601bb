//! Reads of every shape (short, interrupted, chunked around the direct-read size) and I/O errors of the underlying reader or writer, each with its position and source.

use super::*;

/// Record sizes around the reader's 256 KiB buffer, so records straddle its end, fill it
/// exactly, and bypass it.
fn awkward_sizes() -> Vec<Vec<u8>> {
    let sizes = [
        0,
        1,
        100_000,
        262_144 - 16,
        262_144 - 15,
        5,
        262_144,
        1_000_000,
        3,
        200_000,
        200_000,
    ];
    sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| (0..size).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect()
}

#[test]
fn records_of_awkward_sizes_round_trip() {
    let records = awkward_sizes();
    let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    let stream = write_all(&refs);

    assert_eq!(
        read_all(&mut Reader::new(stream.as_slice())).unwrap(),
        records
    );

    let mut reader = Reader::new(stream.as_slice());
    for record in &records {
        assert_eq!(reader.skip_record().unwrap(), Some(record.len() as u64));
    }
    assert_eq!(reader.skip_record().unwrap(), None);
    assert_eq!(reader.position().offset, stream.len() as u64);
}

/// Hands out at most one byte per call and is interrupted every other call, like a slow pipe.
struct Trickle<'a> {
    data: &'a [u8],
    interrupt: bool,
}

impl Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.interrupt = !self.interrupt;
        if self.interrupt {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let n = self.data.len().min(out.len()).min(1);
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn short_and_interrupted_reads_are_handled() {
    let records: Vec<Vec<u8>> = vec![
        b"alpha".to_vec(),
        Vec::new(),
        vec![9; 300_000],
        b"z".to_vec(),
    ];
    let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    let stream = write_all(&refs);
    let trickle = Trickle {
        data: &stream,
        interrupt: false,
    };
    assert_eq!(read_all(&mut Reader::new(trickle)).unwrap(), records);

    let trickle = Trickle {
        data: &stream,
        interrupt: false,
    };
    let mut reader = Reader::new(trickle);
    let lengths: Vec<Option<u64>> = (0..5).map(|_| reader.skip_record().unwrap()).collect();
    assert_eq!(lengths, [Some(5), Some(0), Some(300_000), Some(1), None]);
}

/// Serves `data` in reads of a fixed odd size, so records straddle every read.
struct Chunked<'a> {
    data: &'a [u8],
    size: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.data.len().min(out.len()).min(self.size);
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn records_around_the_direct_read_size_arrive_whole_and_checked() {
    // Small records are read through the buffer, larger ones partly straight into the
    // caller's vector: sizes on both sides of the switch, and a damaged large one.
    let sizes = [
        0, 1, 16_371, 16_372, 16_373, 16_384, 100_000, 262_144, 300_001, 5,
    ];
    let records: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| (0..n).map(|b| (b * 31 + i) as u8).collect())
        .collect();
    let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    let stream = write_all(&refs);
    for size in [1, 7_001, 65_537, usize::MAX] {
        let chunked = Chunked {
            data: &stream,
            size,
        };
        assert_eq!(
            read_all(&mut Reader::new(chunked)).unwrap(),
            records,
            "reads of {size}"
        );
    }

    let mut damaged = stream.clone();
    let sixth = write_all(&refs[..6]).len();
    damaged[sixth + 12 + 50_000] ^= 0x01;
    let mut reader = Reader::new(Chunked {
        data: &damaged,
        size: 4_099,
    });
    let mut buf = Vec::new();
    for record in &records[..6] {
        assert!(reader.read_record(&mut buf).unwrap());
        assert_eq!(&buf, record);
    }
    let err = reader.read_record(&mut buf).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::DataCrcMismatch { .. }));
    assert_eq!(err.offset(), sixth as u64 + 12);
    assert!(reader.recover());
    for record in &records[7..] {
        assert!(reader.read_record(&mut buf).unwrap());
        assert_eq!(&buf, record);
    }
}

/// Serves `data`, then fails.
struct FailAfter<'a> {
    data: &'a [u8],
}

impl Read for FailAfter<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.data.is_empty() {
            return Err(io::Error::other("disk on fire"));
        }
        let n = self.data.len().min(out.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn io_errors_point_at_the_record_and_keep_their_source() {
    let stream = three_records();
    let mut reader = Reader::new(FailAfter {
        data: &stream[..45],
    });
    let mut buf = Vec::new();
    assert!(reader.read_record(&mut buf).unwrap());
    assert!(reader.read_record(&mut buf).unwrap());
    let err = reader.read_record(&mut buf).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io(inner) if inner.to_string() == "disk on fire"));
    assert_eq!((err.offset(), err.index()), (37, 2));
    assert_eq!(err.to_string(), "I/O error at offset 37 (record #2)");
    let source = std::error::Error::source(&err).expect("an I/O error has a source");
    assert_eq!(source.to_string(), "disk on fire");
    assert!(!reader.recover());

    let as_io: io::Error = err.into();
    assert_eq!(as_io.kind(), io::ErrorKind::Other);
}

#[test]
fn framing_errors_convert_to_invalid_data() {
    let err = Reader::new(&b"garbage garbage"[..])
        .read_record(&mut Vec::new())
        .unwrap_err();
    assert!(std::error::Error::source(&err).is_none());
    let message = err.to_string();
    let as_io: io::Error = err.into();
    assert_eq!(as_io.kind(), io::ErrorKind::InvalidData);
    assert_eq!(as_io.to_string(), message);
}

#[test]
fn error_messages_name_what_and_where() {
    let full = three_records();
    let err = read_all(&mut Reader::new(&full[..57])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "truncated record (the header announces 6 data bytes and a 4-byte checksum, only 8 \
         bytes follow) at offset 37 (record #2)"
    );
    let err = read_all(&mut Reader::new(&full[..40])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "truncated record header (3 trailing bytes, a header needs 12) at offset 37 (record #2)"
    );
}

#[test]
fn into_inner_returns_the_reader_for_plain_streams() {
    let stream = three_records();
    let mut reader = Reader::new(io::Cursor::new(stream.clone()));
    read_all(&mut reader).unwrap();
    let cursor = reader.into_inner();
    assert_eq!(cursor.position(), stream.len() as u64);
    assert_eq!(cursor.into_inner(), stream);
}

/// Fails every write.
#[derive(Debug)]
struct Broken;

impl io::Write for Broken {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::other("no space left"))
    }

    fn flush(&mut self) -> io::Result<()> {
        Err(io::Error::other("no space left"))
    }
}

#[test]
fn writer_errors_say_how_far_it_got() {
    let mut writer = Writer::new(Broken);
    writer.write_record(b"buffered, so this succeeds").unwrap();
    let err = writer.flush().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io(_)));
    assert_eq!((err.offset(), err.index()), (42, 1));

    let mut writer = Writer::new(Broken);
    writer.write_record(b"abc").unwrap();
    let err = writer.finish().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io(_)));
    assert_eq!((err.offset(), err.index()), (19, 1));
}
