//! ArrayRecord's footer, the protobuf messages of its `layout.proto` encoded and decoded by
//! hand (three small messages of integers do not need a protobuf library): the postscript
//! that points at the footer chunk, the footer's metadata, and one entry per chunk of records.

use crate::codec::{put_varint, take_varint};
use crate::error::Error;
use crate::records::Records as ChunkRecords;

/// `echo 'ArrayRecord' | md5sum`, first 16 hex digits: the postscript's magic number.
pub const MAGIC: u64 = 0x7193_0e70_4fda_e05e;
/// The ArrayRecord layout version this crate reads and writes.
pub const VERSION: u64 = 1;
/// How many copies of the postscript its chunk holds.
pub const POSTSCRIPT_COPIES: usize = 3;

/// `RiegeliPostscript`: where the footer chunk begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Postscript {
    /// The footer chunk's physical offset.
    pub footer_offset: u64,
    /// [`MAGIC`] in a sound file.
    pub magic: u64,
}

/// `RiegeliFooterMetadata.array_record_metadata`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FooterMetadata {
    /// The layout version, 1.
    pub version: u64,
    /// How many chunks of records the file holds (one footer entry each).
    pub num_chunks: u64,
    /// How many records the file holds.
    pub num_records: u64,
    /// The writer's options string, as `array_record` records it.
    pub writer_options: String,
}

/// `ArrayRecordFooter`: one chunk of records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkEntry {
    /// The chunk's physical offset.
    pub chunk_offset: u64,
    /// The size of its records once decoded.
    pub decoded_data_size: u64,
    /// How many records it holds.
    pub num_records: u64,
}

/// A protobuf field's value, as far as these messages need.
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// Calls `each` with every field of a message; `Err` if the message does not parse.
fn fields<'a>(
    mut message: &'a [u8],
    mut each: impl FnMut(u64, Value<'a>),
) -> Result<(), &'static str> {
    while !message.is_empty() {
        let key = take_varint(&mut message).ok_or("a field key is not a varint")?;
        let value = match key & 7 {
            0 => Value::Varint(take_varint(&mut message).ok_or("a varint field is cut short")?),
            1 | 5 => {
                let width = if key & 7 == 1 { 8 } else { 4 };
                let (_, rest) = message
                    .split_at_checked(width)
                    .ok_or("a fixed-width field is cut short")?;
                message = rest;
                continue;
            }
            2 => {
                let len = take_varint(&mut message).ok_or("a length is not a varint")?;
                if len > message.len() as u64 {
                    return Err("a length-delimited field runs past its message");
                }
                let (bytes, rest) = message.split_at(len as usize);
                message = rest;
                Value::Bytes(bytes)
            }
            _ => return Err("a field has an unknown wire type"),
        };
        each(key >> 3, value);
    }
    Ok(())
}

fn put_varint_field(out: &mut Vec<u8>, field: u64, value: u64) {
    put_varint(out, field << 3);
    put_varint(out, value);
}

fn put_bytes_field(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    put_varint(out, (field << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

impl Postscript {
    /// Parses a serialized `RiegeliPostscript`.
    pub fn decode(message: &[u8]) -> Result<Postscript, &'static str> {
        let mut postscript = Postscript {
            footer_offset: 0,
            magic: 0,
        };
        fields(message, |field, value| match (field, value) {
            (1, Value::Varint(v)) => postscript.footer_offset = v,
            (2, Value::Varint(v)) => postscript.magic = v,
            _ => {}
        })?;
        Ok(postscript)
    }

    /// Serializes it.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint_field(&mut out, 1, self.footer_offset);
        put_varint_field(&mut out, 2, self.magic);
        out
    }
}

impl FooterMetadata {
    /// Parses a serialized `RiegeliFooterMetadata`; `Err` also when it holds no
    /// `array_record_metadata`.
    pub fn decode(message: &[u8]) -> Result<FooterMetadata, &'static str> {
        let mut inner = None;
        fields(message, |field, value| {
            if let (1, Value::Bytes(bytes)) = (field, value) {
                inner = Some(bytes);
            }
        })?;
        let inner = inner.ok_or("the footer metadata holds no array_record_metadata")?;
        let mut metadata = FooterMetadata::default();
        let mut options_bytes: &[u8] = &[];
        fields(inner, |field, value| match (field, value) {
            (1, Value::Varint(v)) => metadata.version = v,
            (2, Value::Varint(v)) => metadata.num_chunks = v,
            (3, Value::Varint(v)) => metadata.num_records = v,
            (4, Value::Bytes(bytes)) => options_bytes = bytes,
            _ => {}
        })?;
        metadata.writer_options = String::from_utf8_lossy(options_bytes).into_owned();
        Ok(metadata)
    }

    /// Serializes it.
    pub fn encode(&self) -> Vec<u8> {
        let mut inner = Vec::new();
        put_varint_field(&mut inner, 1, self.version);
        put_varint_field(&mut inner, 2, self.num_chunks);
        put_varint_field(&mut inner, 3, self.num_records);
        put_bytes_field(&mut inner, 4, self.writer_options.as_bytes());
        let mut out = Vec::new();
        put_bytes_field(&mut out, 1, &inner);
        out
    }
}

impl ChunkEntry {
    /// Parses a serialized `ArrayRecordFooter`.
    pub fn decode(message: &[u8]) -> Result<ChunkEntry, &'static str> {
        let mut entry = ChunkEntry::default();
        fields(message, |field, value| match (field, value) {
            (1, Value::Varint(v)) => entry.chunk_offset = v,
            (2, Value::Varint(v)) => entry.decoded_data_size = v,
            (3, Value::Varint(v)) => entry.num_records = v,
            _ => {}
        })?;
        Ok(entry)
    }

    /// Serializes it into `out` (cleared first).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        put_varint_field(out, 1, self.chunk_offset);
        put_varint_field(out, 2, self.decoded_data_size);
        put_varint_field(out, 3, self.num_records);
    }
}

/// Checks a decoded footer chunk: its first record is the metadata, the others one entry per
/// chunk whose counts add up to the metadata's. `each` sees every entry with the index of its
/// first record.
pub(crate) fn check_footer_records(
    records: &ChunkRecords,
    begin: u64,
    index: u64,
    mut each: impl FnMut(ChunkEntry, u64) -> Result<(), Error>,
) -> Result<FooterMetadata, Error> {
    if records.len() == 0 {
        return Err(Error::invalid_footer(
            "the footer chunk is empty",
            begin,
            index,
        ));
    }
    let metadata = FooterMetadata::decode(records.get(0))
        .map_err(|reason| Error::invalid_footer(reason, begin, index))?;
    if metadata.num_chunks != records.len() as u64 - 1 {
        return Err(Error::invalid_footer(
            format!(
                "the metadata counts {} chunks, the footer lists {}",
                metadata.num_chunks,
                records.len() - 1
            ),
            begin,
            index,
        ));
    }
    let mut total = 0u64;
    for i in 1..records.len() {
        let entry = ChunkEntry::decode(records.get(i))
            .map_err(|reason| Error::invalid_footer(reason, begin, index))?;
        each(entry, total)?;
        total = total.checked_add(entry.num_records).ok_or_else(|| {
            Error::invalid_footer("the chunks' record counts overflow", begin, index)
        })?;
    }
    if total != metadata.num_records {
        return Err(Error::invalid_footer(
            format!(
                "the chunks hold {total} records, the metadata says {}",
                metadata.num_records
            ),
            begin,
            index,
        ));
    }
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_postscript_reads_as_array_record_writes_it() {
        // From a file `array_record` 0.8.6 wrote: the footer at 11602.
        let bytes = [
            0x08, 0xd2, 0x5a, 0x10, 0xde, 0xc0, 0xeb, 0xfe, 0x84, 0xce, 0xc3, 0xc9, 0x71,
        ];
        let postscript = Postscript::decode(&bytes).unwrap();
        assert_eq!(postscript.footer_offset, 11602);
        assert_eq!(postscript.magic, MAGIC);
        assert_eq!(postscript.encode(), bytes);
    }

    #[test]
    fn metadata_round_trips() {
        let metadata = FooterMetadata {
            version: 1,
            num_chunks: 4,
            num_records: 100,
            writer_options: "group_size:1".into(),
        };
        assert_eq!(
            FooterMetadata::decode(&metadata.encode()).unwrap(),
            metadata
        );
    }
}
