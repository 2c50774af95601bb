//! The writer: records grouped into simple chunks, then the footer index and the postscript,
//! laid out as `array_record`'s own writer lays them out.

use std::io::{self, Write};
use std::num::NonZeroU32;

use ofconvert_frame::Position;

use crate::codec::{put_varint, Compression, Encoder};
use crate::error::{Error, ErrorKind};
use crate::footer::{ChunkEntry, FooterMetadata, Postscript, MAGIC, POSTSCRIPT_COPIES, VERSION};
use crate::layout::{
    block_header, chunk_end, remaining_in_block, ChunkHeader, ChunkType, BLOCK_SIZE,
    CHUNK_HEADER_SIZE, USABLE_BLOCK_SIZE,
};

/// How a [`Writer`] groups and compresses records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriterOptions {
    /// How records are compressed; `zstd:3` by default, as `array_record` writes.
    pub compression: Compression,
    /// How many records a chunk holds. 1 by default, as `array_record`'s Python writer and
    /// TFDS write: reading one record at random then decodes one record. Larger groups
    /// compress better and cost less space per record.
    pub group_size: NonZeroU32,
}

impl Default for WriterOptions {
    fn default() -> WriterOptions {
        WriterOptions {
            compression: Compression::default(),
            group_size: NonZeroU32::MIN,
        }
    }
}

impl std::fmt::Display for WriterOptions {
    /// The options as `array_record` spells them in the footer's metadata, which parse back
    /// to them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "group_size:{},transpose:false,pad_to_block_boundary:false,{},max_parallelism:1",
            self.group_size, self.compression
        )
    }
}

/// Why an options string does not parse: [`WriterOptions`]'s `FromStr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidOptions(String);

impl std::fmt::Display for InvalidOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidOptions {}

impl std::str::FromStr for WriterOptions {
    type Err = InvalidOptions;

    /// Options in `array_record`'s own words, as its `ArrayRecordWriter` takes them:
    /// `group_size:N`, then one of `zstd[:LEVEL]` (-131072 to 22; 3 if not given),
    /// `brotli[:LEVEL]` (0 to 11; 6), `snappy` or `uncompressed`, separated by commas; what is
    /// not given is the default (`group_size:1,zstd:3`). `window_log:20`, `transpose:false`,
    /// `pad_to_block_boundary:false` and `max_parallelism:N` are taken too, since they describe
    /// what this writer writes anyway (the footer's own string says them all); other values of
    /// them, and other options, are refused with the reason.
    fn from_str(text: &str) -> Result<WriterOptions, InvalidOptions> {
        let mut options = WriterOptions::default();
        let invalid = |reason: String| Err(InvalidOptions(reason));
        for item in text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            let (key, value) = match item.split_once(':') {
                Some((key, value)) => (key.trim(), Some(value.trim())),
                None => (item, None),
            };
            let number = |range: std::ops::RangeInclusive<i64>| -> Result<i64, InvalidOptions> {
                match value.map(str::parse::<i64>) {
                    Some(Ok(n)) if range.contains(&n) => Ok(n),
                    _ => Err(InvalidOptions(format!(
                        "{item}: {key} takes a number from {} to {}",
                        range.start(),
                        range.end()
                    ))),
                }
            };
            match (key, value) {
                ("group_size", _) => {
                    let size = number(1..=i64::from(u32::MAX))?;
                    options.group_size = NonZeroU32::new(size as u32).unwrap_or(NonZeroU32::MIN);
                }
                ("zstd", None) => options.compression = Compression::Zstd(3),
                ("zstd", Some(_)) => {
                    options.compression = Compression::Zstd(number(-131072..=22)? as i32)
                }
                ("brotli", None) => options.compression = Compression::Brotli(6),
                ("brotli", Some(_)) => {
                    options.compression = Compression::Brotli(number(0..=11)? as u32)
                }
                ("snappy", None) => options.compression = Compression::Snappy,
                ("uncompressed", None) => options.compression = Compression::None,
                ("window_log", Some("20"))
                | ("transpose", Some("false"))
                | ("pad_to_block_boundary", Some("false")) => {}
                ("max_parallelism", _) => {
                    number(1..=i64::from(u32::MAX))?;
                }
                ("window_log", _) => {
                    return invalid(format!("{item}: zstd is written with window_log:20"))
                }
                ("transpose", _) => {
                    return invalid(format!(
                        "{item}: transposed chunks are read, not written (transpose:false)"
                    ))
                }
                ("pad_to_block_boundary", _) => {
                    return invalid(format!("{item}: chunks are not padded to block boundaries"))
                }
                ("snappy" | "uncompressed", Some(_)) => {
                    return invalid(format!("{item}: {key} takes no value"))
                }
                _ => {
                    return invalid(format!(
                        "{item}: unknown option (group_size:N, zstd[:LEVEL], brotli[:LEVEL], \
                         snappy or uncompressed)"
                    ))
                }
            }
        }
        Ok(options)
    }
}

/// Writes ArrayRecord files that `array_record`'s readers read.
///
/// Records are written in chunks of [`WriterOptions::group_size`]; [`finish`](Writer::finish)
/// writes the last chunk, the footer index and the postscript. A file that was not finished
/// has no footer and does not read as ArrayRecord. After an error the writer refuses every
/// later call with a copy of it.
pub struct Writer<W: Write> {
    dest: W,
    options: WriterOptions,
    pos: u64,
    num_records: u64,
    sizes: Vec<u8>,
    values: Vec<u8>,
    in_group: u32,
    chunks: Vec<ChunkEntry>,
    data: Vec<u8>,
    encoder: Encoder,
    failed: Option<Error>,
}

impl<W: Write> Writer<W> {
    /// A writer with the default options (`zstd:3`, a record a chunk).
    pub fn new(dest: W) -> Writer<W> {
        Writer::with_options(dest, WriterOptions::default())
    }

    /// A writer with the given options.
    pub fn with_options(dest: W, options: WriterOptions) -> Writer<W> {
        Writer {
            dest,
            options,
            pos: 0,
            num_records: 0,
            sizes: Vec::new(),
            values: Vec::new(),
            in_group: 0,
            chunks: Vec::new(),
            data: Vec::new(),
            encoder: Encoder::default(),
            failed: None,
        }
    }

    /// Adds a record; a chunk is written each time a group is full.
    pub fn write_record(&mut self, record: &[u8]) -> Result<(), Error> {
        if let Some(err) = &self.failed {
            return Err(err.replay());
        }
        put_varint(&mut self.sizes, record.len() as u64);
        self.values.extend_from_slice(record);
        self.in_group += 1;
        self.num_records += 1;
        if self.in_group >= self.options.group_size.get() {
            let result = self.write_group();
            self.fuse(result)?;
        }
        Ok(())
    }

    /// Where the writer stands: the bytes written so far and the records added.
    pub fn position(&self) -> Position {
        Position {
            offset: self.pos,
            index: self.num_records,
        }
    }

    /// Writes what is left, the footer and the postscript, flushes, and returns the
    /// destination.
    pub fn finish(mut self) -> Result<W, Error> {
        if let Some(err) = &self.failed {
            return Err(err.replay());
        }
        let result = self.write_tail();
        self.fuse(result)?;
        Ok(self.dest)
    }

    fn fuse(&mut self, result: io::Result<()>) -> Result<(), Error> {
        result.map_err(|e| {
            let err = Error::new(ErrorKind::Io(e), self.pos, self.num_records);
            self.failed = Some(err.replay());
            err
        })
    }

    fn write_group(&mut self) -> io::Result<()> {
        if self.pos == 0 {
            self.write_chunk(ChunkType::Signature, 0, 0, false)?;
        }
        let values = self.encode_group(self.options.compression)?;
        let entry = ChunkEntry {
            chunk_offset: self.pos,
            decoded_data_size: self.values.len() as u64,
            num_records: u64::from(self.in_group),
        };
        self.write_chunk(
            ChunkType::Simple,
            entry.num_records,
            entry.decoded_data_size,
            values,
        )?;
        self.chunks.push(entry);
        self.sizes.clear();
        self.values.clear();
        self.in_group = 0;
        Ok(())
    }

    fn write_tail(&mut self) -> io::Result<()> {
        if self.in_group > 0 || self.pos == 0 {
            if self.in_group > 0 {
                self.write_group()?;
            } else {
                self.write_chunk(ChunkType::Signature, 0, 0, false)?;
            }
        }
        let footer_offset = self.pos;
        let metadata = FooterMetadata {
            version: VERSION,
            num_chunks: self.chunks.len() as u64,
            num_records: self.num_records,
            writer_options: self.options.to_string(),
        };
        let chunks = std::mem::take(&mut self.chunks);
        let mut record = Vec::new();
        self.add_to_group(&metadata.encode());
        for entry in &chunks {
            entry.encode(&mut record);
            self.add_to_group(&record);
        }
        self.write_records_chunk(self.options.compression)?;
        self.pad_to_block_boundary()?;
        let postscript = Postscript {
            footer_offset,
            magic: MAGIC,
        }
        .encode();
        for _ in 0..POSTSCRIPT_COPIES {
            self.add_to_group(&postscript);
        }
        self.write_records_chunk(Compression::None)?;
        self.pad_to_block_boundary()?;
        self.dest.flush()
    }

    fn add_to_group(&mut self, record: &[u8]) {
        put_varint(&mut self.sizes, record.len() as u64);
        self.values.extend_from_slice(record);
        self.in_group += 1;
    }

    /// Encodes the grouped records as a simple chunk's data in `self.data`. Uncompressed,
    /// the values are not copied there: `self.data` holds what comes before them, and the
    /// answer is true (a group of large records would otherwise pass through memory once
    /// more, and a chunk of megabytes does not stay in the processor's caches).
    fn encode_group(&mut self, compression: Compression) -> io::Result<bool> {
        let mut data = std::mem::take(&mut self.data);
        let values: &[u8] = if compression == Compression::None {
            &[]
        } else {
            &self.values
        };
        let result = self
            .encoder
            .encode_simple(compression, &self.sizes, values, &mut data);
        self.data = data;
        result.map(|()| compression == Compression::None)
    }

    /// Writes the grouped records as one simple chunk that no footer entry lists.
    fn write_records_chunk(&mut self, compression: Compression) -> io::Result<()> {
        let values = self.encode_group(compression)?;
        let decoded_data_size = self.values.len() as u64;
        self.write_chunk(
            ChunkType::Simple,
            u64::from(self.in_group),
            decoded_data_size,
            values,
        )?;
        self.sizes.clear();
        self.values.clear();
        self.in_group = 0;
        Ok(())
    }

    /// A padding chunk up to the next block boundary, as Riegeli pads: when the block has no
    /// room for a chunk header, the padding runs to the end of the next block.
    fn pad_to_block_boundary(&mut self) -> io::Result<()> {
        let mut length = remaining_in_block(self.pos);
        if length == 0 {
            return Ok(());
        }
        if length < CHUNK_HEADER_SIZE as u64 {
            length += USABLE_BLOCK_SIZE;
        }
        self.data.clear();
        self.data
            .resize((length - CHUNK_HEADER_SIZE as u64) as usize, 0);
        self.write_chunk(ChunkType::Padding, 0, 0, false)
    }

    /// Writes `self.data` as a chunk (followed by the grouped values when `with_values`),
    /// with the block headers that fall inside it and the padding its record count asks for.
    fn write_chunk(
        &mut self,
        chunk_type: ChunkType,
        num_records: u64,
        decoded_data_size: u64,
        with_values: bool,
    ) -> io::Result<()> {
        let data = if chunk_type == ChunkType::Signature {
            &[][..]
        } else {
            &self.data[..]
        };
        let values = if with_values { &self.values[..] } else { &[] };
        let header =
            ChunkHeader::of_parts([data, values], chunk_type, num_records, decoded_data_size);
        let begin = self.pos;
        let end = chunk_end(begin, &header);
        let mut physical = Physical {
            dest: &mut self.dest,
            pos: &mut self.pos,
            begin,
            end,
        };
        physical.write(&header.encode())?;
        physical.write(data)?;
        physical.write(values)?;
        let zeros = [0; 4096];
        while *physical.pos < end {
            let step = (end - *physical.pos).min(zeros.len() as u64) as usize;
            let step = step.min(remaining_in_block(*physical.pos).max(1) as usize);
            physical.write(&zeros[..step])?;
        }
        Ok(())
    }
}

/// Writes one chunk's bytes, putting a block header at every block boundary it crosses.
struct Physical<'a, W> {
    dest: &'a mut W,
    pos: &'a mut u64,
    begin: u64,
    end: u64,
}

impl<W: Write> Physical<'_, W> {
    fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            if self.pos.is_multiple_of(BLOCK_SIZE) {
                self.dest
                    .write_all(&block_header(*self.pos, self.begin, self.end))?;
                *self.pos += 24;
            }
            let take = bytes.len().min(remaining_in_block(*self.pos) as usize);
            self.dest.write_all(&bytes[..take])?;
            *self.pos += take as u64;
            bytes = &bytes[take..];
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<WriterOptions, String> {
        text.parse::<WriterOptions>().map_err(|err| err.to_string())
    }

    #[test]
    fn options_read_as_array_record_spells_them() {
        let options = |group_size, compression| WriterOptions {
            compression,
            group_size: NonZeroU32::new(group_size).unwrap(),
        };
        assert_eq!(parsed(""), Ok(WriterOptions::default()));
        assert_eq!(
            parsed("group_size:64"),
            Ok(options(64, Compression::Zstd(3)))
        );
        assert_eq!(
            parsed(" group_size:8 , brotli "),
            Ok(options(8, Compression::Brotli(6)))
        );
        assert_eq!(
            parsed("brotli:9,group_size:2"),
            Ok(options(2, Compression::Brotli(9)))
        );
        assert_eq!(parsed("zstd:-5"), Ok(options(1, Compression::Zstd(-5))));
        assert_eq!(
            parsed("snappy,uncompressed"),
            Ok(options(1, Compression::None))
        );
        // What the footer says of every file this writer makes reads back as its options.
        for written in [
            options(1, Compression::Zstd(3)),
            options(300, Compression::Snappy),
            options(7, Compression::None),
            options(16, Compression::Brotli(11)),
        ] {
            assert_eq!(parsed(&written.to_string()), Ok(written));
        }
    }

    #[test]
    fn options_this_writer_cannot_honour_are_refused_with_why() {
        for (text, says) in [
            ("group_size:0", "group_size takes a number from 1"),
            ("group_size", "group_size takes a number"),
            ("zstd:23", "zstd takes a number from -131072 to 22"),
            ("brotli:x", "brotli takes a number from 0 to 11"),
            ("transpose:true", "transposed chunks are read, not written"),
            ("transpose", "transposed chunks are read, not written"),
            ("pad_to_block_boundary:true", "not padded"),
            ("window_log:24", "window_log:20"),
            ("snappy:2", "snappy takes no value"),
            ("lz4", "lz4: unknown option"),
        ] {
            let err = parsed(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
