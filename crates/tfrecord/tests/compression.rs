//! GZIP and ZLIB streams: sniffing, round trips, concatenated members, streams cut short or
//! followed by junk, and offsets that count decompressed bytes.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::rc::Rc;

use flate2::read::{GzDecoder, ZlibDecoder};
use ofconvert_tfrecord::{Compression, Error, ErrorKind, Position, Reader, ReaderOptions, Writer};

const ALL: [Compression; 3] = [Compression::None, Compression::Gzip, Compression::Zlib];

fn write_all(records: &[Vec<u8>], compression: Compression) -> Vec<u8> {
    let mut writer = Writer::with_compression(Vec::new(), compression);
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap()
}

fn sample_records() -> Vec<Vec<u8>> {
    vec![
        b"first".to_vec(),
        Vec::new(),
        (0..200_000u32).map(|i| (i % 251) as u8).collect(),
        b"last".to_vec(),
    ]
}

fn options(compression: Compression) -> ReaderOptions {
    ReaderOptions {
        compression,
        ..ReaderOptions::default()
    }
}

fn read_all(reader: &mut Reader<impl Read>) -> Result<Vec<Vec<u8>>, Error> {
    let mut records = Vec::new();
    let mut buf = Vec::new();
    while reader.read_record(&mut buf)? {
        records.push(buf.clone());
    }
    Ok(records)
}

fn decompress(compressed: &[u8], compression: Compression) -> Vec<u8> {
    let mut plain = Vec::new();
    match compression {
        Compression::None => plain.extend_from_slice(compressed),
        Compression::Gzip => {
            GzDecoder::new(compressed).read_to_end(&mut plain).unwrap();
        }
        Compression::Zlib => {
            ZlibDecoder::new(compressed)
                .read_to_end(&mut plain)
                .unwrap();
        }
    }
    plain
}

#[test]
fn file_suffixes() {
    assert_eq!(Compression::None.file_suffix(), "");
    assert_eq!(Compression::Gzip.file_suffix(), ".gz");
    assert_eq!(Compression::Zlib.file_suffix(), ".zz");
    assert_eq!(Compression::default(), Compression::None);
}

#[test]
fn names_are_tensorflows_and_parse_back_in_any_case() {
    for (compression, tf_name, name) in [
        (Compression::None, "", "none"),
        (Compression::Gzip, "GZIP", "gzip"),
        (Compression::Zlib, "ZLIB", "zlib"),
    ] {
        assert_eq!(compression.tf_name(), tf_name);
        assert_eq!(compression.name(), name);
        assert_eq!(compression.to_string(), name);
        for spelling in [tf_name, name, &name.to_uppercase(), &tf_name.to_lowercase()] {
            assert_eq!(
                spelling.parse::<Compression>(),
                Ok(compression),
                "{spelling:?}"
            );
        }
    }
    let err = "deflate".parse::<Compression>().unwrap_err();
    assert!(err.to_string().contains("\"deflate\""), "{err}");
    assert!("gz".parse::<Compression>().is_err());
}

#[test]
fn sniff_recognises_what_the_writer_produces() {
    for compression in ALL {
        let stream = write_all(&sample_records(), compression);
        assert_eq!(Compression::sniff(&stream[..12]), compression);
        assert_eq!(Compression::sniff(&stream), compression);
    }
}

#[test]
fn sniff_reads_zlib_and_gzip_headers() {
    for flg in [0x01, 0x5e, 0x9c, 0xda] {
        assert_eq!(Compression::sniff(&[0x78, flg]), Compression::Zlib);
        assert_eq!(
            Compression::sniff(&[0x78, flg, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Compression::Zlib
        );
    }
    assert_eq!(Compression::sniff(&[0x1f, 0x8b]), Compression::Gzip);
    // A 0x78 byte whose check bits do not work out is no zlib header.
    assert_eq!(Compression::sniff(&[0x78, 0x9d]), Compression::None);
    assert_eq!(Compression::sniff(&[0x1f]), Compression::None);
    assert_eq!(
        Compression::sniff(b"plain text, no magic"),
        Compression::None
    );
    assert_eq!(Compression::sniff(&[]), Compression::None);
}

#[test]
fn a_plain_record_whose_length_looks_like_a_zlib_header_is_plain() {
    // 0x9c78 little-endian starts with 78 9c, the most common zlib header.
    let records = vec![vec![0xab; 0x9c78], b"after".to_vec()];
    let stream = write_all(&records, Compression::None);
    assert_eq!(&stream[..2], &[0x78, 0x9c]);
    assert_eq!(Compression::sniff(&stream), Compression::None);
    // Without the CRC the same two bytes do read as zlib.
    assert_eq!(Compression::sniff(&stream[..11]), Compression::Zlib);

    let (mut reader, compression) =
        Reader::sniffed(stream.as_slice(), ReaderOptions::default()).unwrap();
    assert_eq!(compression, Compression::None);
    assert_eq!(read_all(&mut reader).unwrap(), records);
}

#[test]
fn every_compression_round_trips_and_interoperates_with_flate2() {
    let records = sample_records();
    let plain = write_all(&records, Compression::None);
    for compression in ALL {
        let stream = write_all(&records, compression);
        assert_eq!(decompress(&stream, compression), plain, "{compression:?}");

        let mut reader = Reader::with_options(stream.as_slice(), options(compression));
        assert_eq!(reader.compression(), compression);
        assert_eq!(read_all(&mut reader).unwrap(), records);
        assert_eq!(
            reader.position(),
            Position {
                offset: plain.len() as u64,
                index: 4
            }
        );

        let mut reader = Reader::with_options(stream.as_slice(), options(compression));
        let lengths: Vec<u64> = std::iter::from_fn(|| reader.skip_record().unwrap()).collect();
        assert_eq!(lengths, [5, 0, 200_000, 4]);
    }
}

#[test]
fn compression_actually_compresses() {
    let records = vec![vec![b'a'; 100_000]];
    let plain = write_all(&records, Compression::None);
    for compression in [Compression::Gzip, Compression::Zlib] {
        let stream = write_all(&records, compression);
        assert!(
            stream.len() * 50 < plain.len(),
            "{compression:?}: {} bytes",
            stream.len()
        );
    }
}

#[test]
fn sniffed_reader_picks_the_compression_and_loses_nothing() {
    let records = sample_records();
    for compression in ALL {
        let stream = write_all(&records, compression);
        let ignored = options(Compression::Gzip);
        let (mut reader, sniffed) = Reader::sniffed(stream.as_slice(), ignored).unwrap();
        assert_eq!(sniffed, compression);
        assert_eq!(reader.compression(), compression);
        assert_eq!(read_all(&mut reader).unwrap(), records);
    }
}

/// Hands out one byte per call, like a slow pipe.
struct OneByte<'a>(&'a [u8]);

impl Read for OneByte<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.0.len().min(out.len()).min(1);
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn sniffing_sees_twelve_bytes_even_through_one_byte_reads() {
    let records = vec![vec![0xab; 0x9c78]];
    let stream = write_all(&records, Compression::None);
    let (mut reader, compression) =
        Reader::sniffed(OneByte(&stream), ReaderOptions::default()).unwrap();
    assert_eq!(compression, Compression::None);
    assert_eq!(read_all(&mut reader).unwrap(), records);

    let stream = write_all(&records, Compression::Gzip);
    let (mut reader, compression) =
        Reader::sniffed(OneByte(&stream), ReaderOptions::default()).unwrap();
    assert_eq!(compression, Compression::Gzip);
    assert_eq!(read_all(&mut reader).unwrap(), records);
}

#[test]
fn empty_and_tiny_inputs_are_sniffed_as_plain() {
    let (mut reader, compression) = Reader::sniffed(io::empty(), ReaderOptions::default()).unwrap();
    assert_eq!(compression, Compression::None);
    assert!(!reader.read_record(&mut Vec::new()).unwrap());

    let (mut reader, compression) =
        Reader::sniffed(&[1u8, 2, 3][..], ReaderOptions::default()).unwrap();
    assert_eq!(compression, Compression::None);
    let err = reader.read_record(&mut Vec::new()).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::TruncatedHeader { available: 3 }
    ));
}

#[test]
fn concatenated_gzip_members_read_as_one_stream() {
    let first = vec![b"one".to_vec(), b"two".to_vec()];
    let second = vec![b"three".to_vec()];
    let mut stream = write_all(&first, Compression::Gzip);
    stream.extend_from_slice(&write_all(&second, Compression::Gzip));

    let (mut reader, compression) =
        Reader::sniffed(stream.as_slice(), ReaderOptions::default()).unwrap();
    assert_eq!(compression, Compression::Gzip);
    assert_eq!(read_all(&mut reader).unwrap(), [first, second].concat());
    assert_eq!(
        reader.position(),
        Position {
            offset: 19 * 2 + 21,
            index: 3
        }
    );
}

#[test]
fn a_gzip_stream_cut_anywhere_is_an_error_not_a_silent_end() {
    let records = sample_records();
    let stream = write_all(&records, Compression::Gzip);
    for cut in (1..stream.len())
        .step_by(97)
        .chain(stream.len() - 8..stream.len())
    {
        let mut reader = Reader::with_options(&stream[..cut], options(Compression::Gzip));
        let err = read_all(&mut reader).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Io(_)),
            "cut at {cut}: {err:?}"
        );
    }
    // Only the 8-byte trailer is missing: every record arrives, then the end is an error.
    let mut reader = Reader::with_options(&stream[..stream.len() - 1], options(Compression::Gzip));
    let mut buf = Vec::new();
    for record in &records {
        assert!(reader.read_record(&mut buf).unwrap());
        assert_eq!(&buf, record);
    }
    let err = reader.read_record(&mut buf).unwrap_err();
    match err.kind() {
        ErrorKind::Io(inner) => assert_eq!(inner.kind(), io::ErrorKind::UnexpectedEof),
        other => panic!("unexpected {other:?}"),
    }
    let end = write_all(&records, Compression::None).len() as u64;
    assert_eq!((err.offset(), err.index()), (end, 4));
}

#[test]
fn a_zlib_stream_cut_anywhere_is_an_error_not_a_silent_end() {
    let stream = write_all(&sample_records(), Compression::Zlib);
    for cut in (1..stream.len())
        .step_by(97)
        .chain(stream.len() - 4..stream.len())
    {
        let mut reader = Reader::with_options(&stream[..cut], options(Compression::Zlib));
        let err = read_all(&mut reader).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Io(_)),
            "cut at {cut}: {err:?}"
        );
    }
}

#[test]
fn junk_after_a_zlib_stream_is_an_error() {
    let records = sample_records();
    let mut stream = write_all(&records, Compression::Zlib);
    stream.extend_from_slice(b"junk");
    let mut reader = Reader::with_options(stream.as_slice(), options(Compression::Zlib));
    let mut buf = Vec::new();
    for _ in &records {
        assert!(reader.read_record(&mut buf).unwrap());
    }
    let err = reader.read_record(&mut buf).unwrap_err();
    match err.kind() {
        ErrorKind::Io(inner) => {
            assert_eq!(inner.kind(), io::ErrorKind::InvalidData);
            assert_eq!(
                inner.to_string(),
                "unexpected data after the end of the zlib stream"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(err.index(), 4);
}

#[test]
fn junk_after_a_gzip_stream_is_an_error() {
    let mut stream = write_all(&sample_records(), Compression::Gzip);
    stream.extend_from_slice(b"junk that is no gzip member");
    let mut reader = Reader::with_options(stream.as_slice(), options(Compression::Gzip));
    let err = read_all(&mut reader).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io(_)), "{err:?}");
    assert_eq!(err.index(), 4);
}

#[test]
fn garbage_declared_as_compressed_is_an_io_error_at_offset_zero() {
    for compression in [Compression::Gzip, Compression::Zlib] {
        let garbage = b"definitely not a compressed stream".to_vec();
        let mut reader = Reader::with_options(garbage.as_slice(), options(compression));
        let err = reader.read_record(&mut Vec::new()).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Io(_)),
            "{compression:?}: {err:?}"
        );
        assert_eq!((err.offset(), err.index()), (0, 0));
        assert!(!reader.recover());
    }
}

#[test]
fn offsets_in_compressed_streams_count_decompressed_bytes() {
    let records = sample_records();
    let mut plain = write_all(&records, Compression::None);
    // Damage the last record's data ("last" starts at 21 + 16 + 200_016 + 12).
    let data_offset = 21 + 16 + 200_016 + 12;
    plain[data_offset] ^= 0x01;
    for compression in [Compression::Gzip, Compression::Zlib] {
        // Compress the damaged bytes as they are: a Writer would compute a fresh CRC.
        let compressed = compress(&plain, compression);
        let mut reader = Reader::with_options(compressed.as_slice(), options(compression));
        let err = read_all(&mut reader).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::DataCrcMismatch { .. }),
            "{err:?}"
        );
        assert_eq!((err.offset(), err.index()), (data_offset as u64, 3));
    }
}

fn compress(plain: &[u8], compression: Compression) -> Vec<u8> {
    match compression {
        Compression::None => plain.to_vec(),
        Compression::Gzip => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(plain).unwrap();
            encoder.finish().unwrap()
        }
        Compression::Zlib => {
            let mut encoder =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(plain).unwrap();
            encoder.finish().unwrap()
        }
    }
}

/// A writer whose bytes stay visible to the test while the `Writer` holds it.
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn flush_makes_every_record_so_far_readable() {
    for compression in ALL {
        let shared = Shared::default();
        let mut writer = Writer::with_compression(shared.clone(), compression);
        writer.write_record(b"one").unwrap();
        writer.write_record(b"two").unwrap();
        writer.flush().unwrap();
        let so_far = shared.0.borrow().clone();
        // The stream is not finished yet, so read with a plain decoder and stop at its end.
        let plain = match compression {
            Compression::None => so_far,
            Compression::Gzip => read_prefix(flate2::read::DeflateDecoder::new(&so_far[10..])),
            Compression::Zlib => read_prefix(flate2::read::DeflateDecoder::new(&so_far[2..])),
        };
        let records = Reader::new(plain.as_slice())
            .records()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        assert_eq!(
            records,
            [b"one".to_vec(), b"two".to_vec()],
            "{compression:?}"
        );
        writer.write_record(b"three").unwrap();
        writer.finish().unwrap();
        let all = decompress(&shared.0.borrow(), compression);
        assert_eq!(Reader::new(all.as_slice()).records().count(), 3);
    }
}

/// Reads until the decoder has nothing more to give, ignoring the missing end of stream.
fn read_prefix(mut decoder: impl Read) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chunk = [0; 1024];
    while let Ok(n) = decoder.read(&mut chunk) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&chunk[..n]);
    }
    out
}
