//! I/O errors and short reads of the underlying reader or writer: each reported with its position and source, and the reader or writer fused after it.

use super::*;

/// Yields its bytes, then fails with `ConnectionReset` on every call.
struct FailingReader {
    data: io::Cursor<Vec<u8>>,
}

impl Read for FailingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.data.read(buf)? {
            0 => Err(io::Error::new(io::ErrorKind::ConnectionReset, "link down")),
            n => Ok(n),
        }
    }
}

#[test]
fn io_errors_carry_position_and_source_and_fuse_the_reader() {
    // The failure hits in the middle of the second payload.
    let mut data = stream(&[b"abc"]);
    data.extend_from_slice(&frame(10, b"01234"));
    let mut reader = Reader::new(FailingReader {
        data: io::Cursor::new(data),
    });
    let mut buf = Vec::new();
    assert!(reader.read_record(&mut buf).unwrap());
    let err = read_err(&mut reader);
    match err.kind() {
        ErrorKind::Io(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset),
        other => panic!("{other:?}"),
    }
    assert_eq!((err.offset(), err.index()), (11, 1));
    assert_eq!(err.to_string(), "I/O error at offset 11 (record #1)");
    let source = err.source().expect("an I/O error has a source");
    assert_eq!(source.to_string(), "link down");

    assert!(!reader.read_record(&mut buf).unwrap());
    assert!(!reader.recover());

    match err.into_kind() {
        ErrorKind::Io(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset),
        other => panic!("{other:?}"),
    }
}

#[test]
fn io_error_while_skipping_is_reported() {
    let mut data = stream(&[b"abc"]);
    data.extend_from_slice(&frame(10, b"01"));
    let mut reader = Reader::new(FailingReader {
        data: io::Cursor::new(data),
    });
    assert_eq!(reader.skip_record().unwrap(), Some(3));
    let err = skip_err(&mut reader);
    assert!(matches!(err.kind(), ErrorKind::Io(_)), "{err:?}");
    assert_eq!((err.offset(), err.index()), (11, 1));
}

/// Hands out one byte per call and interrupts every other call, the worst a `Read` may do.
struct Trickle {
    data: io::Cursor<Vec<u8>>,
    interrupt: bool,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.interrupt = !self.interrupt;
        if self.interrupt {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let one = buf.len().min(1);
        self.data.read(&mut buf[..one])
    }
}

#[test]
fn short_and_interrupted_reads_are_retried() {
    let payloads: [&[u8]; 3] = [b"split header", b"x", b"and payload"];
    let bytes = stream(&payloads);
    let trickle = || Trickle {
        data: io::Cursor::new(bytes.clone()),
        interrupt: false,
    };

    let read: Vec<_> = Reader::new(trickle())
        .records()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(read, payloads.map(<[u8]>::to_vec));

    let mut reader = Reader::new(trickle());
    let mut lengths = Vec::new();
    while let Some(length) = reader.skip_record().unwrap() {
        lengths.push(length);
    }
    assert_eq!(lengths, [12, 1, 11]);
}

/// Accepts `budget` bytes, then fails every write.
#[derive(Debug)]
struct FailingWriter {
    written: Vec<u8>,
    budget: usize,
}

impl Write for FailingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.budget == 0 {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "disk full"));
        }
        let n = buf.len().min(self.budget);
        self.written.extend_from_slice(&buf[..n]);
        self.budget -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn write_errors_carry_position_and_fuse_the_writer() {
    let mut writer = Writer::new(FailingWriter {
        written: Vec::new(),
        budget: 100,
    });
    writer.write_record(b"small").unwrap();
    // Larger than the internal buffer, so it goes to the inner writer at once and fails.
    let big = vec![1u8; 1 << 20];
    let err = writer.write_record(&big).unwrap_err();
    match err.kind() {
        ErrorKind::Io(e) => assert_eq!(e.kind(), io::ErrorKind::BrokenPipe),
        other => panic!("{other:?}"),
    }
    assert_eq!((err.offset(), err.index()), (13, 1));
    assert_eq!(err.source().unwrap().to_string(), "disk full");
    assert_eq!(writer.records_written(), 1);
    assert_eq!(writer.bytes_written(), 13);
    assert_eq!(writer.get_ref().unwrap().written.len(), 100);

    let again = writer.write_record(b"later").unwrap_err();
    assert!(matches!(again.kind(), ErrorKind::Io(e) if e.kind() == io::ErrorKind::BrokenPipe));
    assert_eq!((again.offset(), again.index()), (13, 1));
    let at_finish = writer.finish().unwrap_err();
    assert_eq!((at_finish.offset(), at_finish.index()), (13, 1));
}

#[test]
fn flush_error_at_finish_is_reported() {
    let mut writer = Writer::new(FailingWriter {
        written: Vec::new(),
        budget: 4,
    });
    writer.write_record(b"buffered").unwrap();
    writer.write_record(b"too").unwrap();
    let err = writer.finish().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io(_)), "{err:?}");
    assert_eq!((err.offset(), err.index()), (27, 2));
}
