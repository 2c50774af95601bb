use super::*;

/// Takes at most `limit` bytes a call, and notes the size of every call.
struct Trickle {
    written: Vec<u8>,
    limit: usize,
    calls: Vec<usize>,
}

impl Trickle {
    fn new(limit: usize) -> Self {
        Trickle {
            written: Vec::new(),
            limit,
            calls: Vec::new(),
        }
    }
}

impl Write for Trickle {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(self.limit);
        self.calls.push(n);
        self.written.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

const CAPACITY: usize = 1024;

/// Records of every size around the buffer's: empty, small, one short of it, exactly it,
/// one past it, several times it.
fn records() -> Vec<Vec<u8>> {
    [
        0,
        10,
        CAPACITY - 1,
        CAPACITY,
        CAPACITY + 1,
        3 * CAPACITY + 17,
        5,
        2 * CAPACITY,
    ]
    .into_iter()
    .map(pattern)
    .collect()
}

fn write_all_records(out: &mut RecordBuffer<Trickle>) -> Vec<u8> {
    let mut expected = Vec::new();
    for (round, data) in records().iter().enumerate() {
        let header = [round as u8; 12];
        let footer = [!(round as u8); 4];
        out.write_parts(&[&header, data, &footer]).unwrap();
        [&header[..], data, &footer]
            .iter()
            .for_each(|part| expected.extend_from_slice(part));
    }
    expected
}

#[test]
fn every_write_but_the_last_is_a_whole_buffer_at_an_aligned_offset() {
    let mut out = RecordBuffer::with_capacity(CAPACITY, Trickle::new(usize::MAX));
    let expected = write_all_records(&mut out);
    let trickle = out.into_inner().unwrap_or_else(|_| panic!("flush failed"));
    assert_eq!(trickle.written, expected);
    let (last, whole) = trickle.calls.split_last().unwrap();
    assert!(*last > 0 && *last < CAPACITY, "{:?}", trickle.calls);
    // Each earlier write is a whole number of buffers, so every one starts aligned; a
    // slice that spans several buffers went through in one write.
    assert!(
        whole.iter().all(|&n| n > 0 && n % CAPACITY == 0),
        "{:?}",
        trickle.calls
    );
    assert!(whole.iter().any(|&n| n > CAPACITY), "{:?}", trickle.calls);
}

#[test]
fn records_appended_in_place_come_out_in_order_in_whole_buffers() {
    let mut out = RecordBuffer::with_capacity(CAPACITY, Trickle::new(usize::MAX));
    let mut expected = Vec::new();
    for (round, data) in records().iter().enumerate() {
        if round % 2 == 0 {
            out.write_parts(&[&[round as u8; 3], data]).unwrap();
        } else {
            out.pending().extend_from_slice(&[round as u8; 3]);
            out.pending().extend_from_slice(data);
            if round % 3 != 0 {
                out.settle().unwrap();
            }
        }
        expected.extend_from_slice(&[round as u8; 3]);
        expected.extend_from_slice(data);
        assert!(out
            .get_ref()
            .unwrap()
            .calls
            .iter()
            .all(|&n| n % CAPACITY == 0));
    }
    let trickle = out.into_inner().unwrap_or_else(|_| panic!("flush failed"));
    assert_eq!(trickle.written, expected);
}

#[test]
fn records_come_out_in_order_whatever_the_writer_takes() {
    let mut out = RecordBuffer::with_capacity(CAPACITY, Trickle::new(300));
    let expected = write_all_records(&mut out);
    let trickle = out.into_inner().unwrap_or_else(|_| panic!("flush failed"));
    assert_eq!(trickle.written, expected);
}

#[test]
fn a_writer_that_takes_nothing_is_an_error() {
    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Ok(0)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut out = RecordBuffer::with_capacity(CAPACITY, Full);
    let large = pattern(2 * CAPACITY);
    let err = out.write_parts(&[&large]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WriteZero);
}

#[test]
fn on_a_thread_records_come_out_in_order_in_whole_aligned_buffers() {
    for limit in [usize::MAX, 300] {
        let mut out =
            RecordBuffer::with_capacity(CAPACITY, Trickle::new(limit)).writing_on_thread();
        assert!(out.get_ref().is_none());
        let mut expected = Vec::new();
        for (round, data) in records().iter().enumerate() {
            if round % 2 == 0 {
                out.write_parts(&[&[round as u8; 12], data, &[!(round as u8); 4]])
                    .unwrap();
                expected.extend_from_slice(&[round as u8; 12]);
                expected.extend_from_slice(data);
                expected.extend_from_slice(&[!(round as u8); 4]);
            } else {
                out.pending().extend_from_slice(data);
                out.settle().unwrap();
                expected.extend_from_slice(data);
            }
        }
        let trickle = out.into_inner().unwrap();
        assert_eq!(trickle.written, expected);
        if limit == usize::MAX {
            let (last, whole) = trickle.calls.split_last().unwrap();
            assert!(*last > 0 && *last < CAPACITY, "{:?}", trickle.calls);
            assert!(
                whole.iter().all(|&n| n % CAPACITY == 0),
                "{:?}",
                trickle.calls
            );
        }
    }
}

#[test]
fn on_a_thread_a_flush_writes_everything_so_far() {
    let mut out =
        RecordBuffer::with_capacity(CAPACITY, Trickle::new(usize::MAX)).writing_on_thread();
    out.write_parts(&[b"first"]).unwrap();
    out.flush().unwrap();
    out.write_parts(&[&pattern(3 * CAPACITY)]).unwrap();
    out.flush().unwrap();
    let trickle = out.into_inner().unwrap();
    assert_eq!(
        trickle.written,
        [b"first".to_vec(), pattern(3 * CAPACITY)].concat()
    );
}

#[test]
fn on_a_thread_a_failed_write_is_reported_by_a_later_call() {
    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut out = RecordBuffer::with_capacity(CAPACITY, Full).writing_on_thread();
    // The first buffers go over before the thread has failed; the failure comes out of a
    // later call, at the latest the last one.
    let mut failure = None;
    for _ in 0..10 {
        if let Err(err) = out.write_parts(&[&pattern(2 * CAPACITY)]) {
            failure = Some(err);
            break;
        }
    }
    let err = match failure {
        Some(err) => err,
        None => out.into_inner().map(|_| ()).unwrap_err(),
    };
    assert_eq!(err.to_string(), "disk full");
}
