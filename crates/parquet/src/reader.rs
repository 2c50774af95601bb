//! Reading a Parquet file of records by its footer, a row group at a time.

use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::column::reader::ColumnReader;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::error::{Error, ErrorKind};
use crate::{MAGIC, RECORDS_COLUMN};

/// Records decoded from a column at a time at most.
const READ_BATCH: usize = 4096;

/// Whether `head`, a file's first bytes, opens a Parquet file.
pub fn is_parquet(head: &[u8]) -> bool {
    head.starts_with(&MAGIC)
}

/// Where a record is: the byte offset of its row group's column chunk, and its 0-based index
/// in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// The offset of the column chunk of the row group that holds the record.
    pub offset: u64,
    /// The record's index in the file.
    pub index: u64,
}

/// The records of a Parquet file of TFDS's layout, held in memory, read in order
/// ([`read_record`](Reader::read_record)) or by row group ([`row_group`](Reader::row_group)).
///
/// After an error the reader reports a clean end, unless it is told to go on at the next row
/// group ([`skip_damaged_group`](Reader::skip_damaged_group)).
pub struct Reader {
    file: SerializedFileReader<Bytes>,
    column: usize,
    /// The row group whose records are held, and the next one to decode.
    held: Vec<ByteArray>,
    next_in_held: usize,
    next_group: usize,
    /// Where the held row group's column chunk starts, and its first record's index.
    group_at: Position,
    index: u64,
    failed: bool,
    /// Where the footer starts: the position of the end.
    footer_at: u64,
}

impl Reader {
    /// Opens the Parquet file `bytes`: its magic at both ends, its footer, and its column of
    /// records.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotParquet`] without the magic at its start, [`ErrorKind::Truncated`]
    /// without it at its end, [`ErrorKind::Footer`] when the footer does not decode, and
    /// [`ErrorKind::NotRecords`] when the file is not of TFDS's layout.
    pub fn new(bytes: Bytes) -> Result<Reader, Error> {
        let len = bytes.len() as u64;
        if !is_parquet(&bytes) {
            return Err(Error::new(ErrorKind::NotParquet, 0, 0));
        }
        if len < 12 || !bytes.ends_with(&MAGIC) {
            return Err(Error::new(ErrorKind::Truncated { file_len: len }, len, 0));
        }
        let footer_len = u32::from_le_bytes(bytes[bytes.len() - 8..][..4].try_into().unwrap());
        let footer_at = (len - 8).saturating_sub(u64::from(footer_len));
        let file = unpanicked(|| SerializedFileReader::new(bytes), ParquetError::General)
            .map_err(|err| Error::new(ErrorKind::Footer(message(err)), footer_at, 0))?;
        let schema = file.metadata().file_metadata().schema_descr();
        let columns = schema.columns();
        let column = columns
            .iter()
            .position(|column| {
                column.path().parts() == [RECORDS_COLUMN]
                    && column.physical_type() == PhysicalType::BYTE_ARRAY
                    && column.max_rep_level() == 0
            })
            .filter(|_| columns.len() == 1)
            .ok_or_else(|| {
                let columns = columns
                    .iter()
                    .map(|column| column.path().string())
                    .collect();
                Error::new(ErrorKind::NotRecords { columns }, footer_at, 0)
            })?;
        // Every index is a sum of the row groups' counts: they must add up to the file's.
        let metadata = file.metadata();
        let summed = (0..metadata.num_row_groups()).try_fold(0u64, |sum, group| {
            let rows = u64::try_from(metadata.row_group(group).num_rows()).ok()?;
            sum.checked_add(rows)
        });
        let rows = metadata.file_metadata().num_rows();
        if summed.is_none() || summed != u64::try_from(rows).ok() {
            let what = format!(
                "its row groups' record counts do not add up to its own, {rows}: {summed:?}"
            );
            return Err(Error::new(ErrorKind::Footer(what), footer_at, 0));
        }
        Ok(Reader {
            file,
            column,
            held: Vec::new(),
            next_in_held: 0,
            next_group: 0,
            group_at: Position::default(),
            index: 0,
            failed: false,
            footer_at,
        })
    }

    /// Records in the file, as its footer counts them.
    pub fn num_records(&self) -> u64 {
        self.file.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// Row groups in the file.
    pub fn row_groups(&self) -> usize {
        self.file.metadata().num_row_groups()
    }

    /// Records in row group `group`, as the footer counts them.
    pub fn row_group_records(&self, group: usize) -> u64 {
        self.file.metadata().row_group(group).num_rows().max(0) as u64
    }

    /// The byte range of row group `group`'s column of records in the file: what a reader
    /// at random fetches of it.
    pub fn row_group_range(&self, group: usize) -> (u64, u64) {
        let (start, len) = self
            .file
            .metadata()
            .row_group(group)
            .column(self.column)
            .byte_range();
        (start, start.saturating_add(len))
    }

    /// Where the next record is: in the row group held, else in the next one to decode (at
    /// the end, the footer's offset).
    pub fn position(&self) -> Position {
        let offset = if self.next_in_held < self.held.len() {
            self.group_at.offset
        } else if self.next_group < self.row_groups() {
            self.row_group_range(self.next_group).0
        } else {
            self.footer_at
        };
        Position {
            offset,
            index: self.index,
        }
    }

    /// Reads the next record into `buf` (cleared first). `Ok(false)` at the end.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Page`] when a row group's pages do not decode or hold other than the
    /// footer's count, [`ErrorKind::NullRecord`] for a null cell.
    pub fn read_record(&mut self, buf: &mut Vec<u8>) -> Result<bool, Error> {
        while self.next_in_held == self.held.len() {
            if self.failed || self.next_group == self.row_groups() {
                return Ok(false);
            }
            let group = self.next_group;
            let first = self.index;
            match self.decode(group, first) {
                Ok(values) => {
                    self.held = values;
                    self.next_in_held = 0;
                    self.next_group += 1;
                    self.group_at = Position {
                        offset: self.row_group_range(group).0,
                        index: first,
                    };
                }
                Err(err) => {
                    self.failed = true;
                    return Err(err);
                }
            }
        }
        buf.clear();
        buf.extend_from_slice(self.held[self.next_in_held].data());
        self.next_in_held += 1;
        self.index += 1;
        Ok(true)
    }

    /// Goes on after the damaged row group that the last error of
    /// [`read_record`](Reader::read_record) was in, at the next row group (or the end): the
    /// damaged one's records are lost. Returns the index of the next record, and the byte
    /// range of the damaged row group's column; `None` when no error stopped the reader.
    pub fn skip_damaged_group(&mut self) -> Option<(u64, std::ops::Range<u64>)> {
        if !self.failed || self.next_group >= self.row_groups() {
            return None;
        }
        let damaged = self.next_group;
        let (start, end) = self.row_group_range(damaged);
        self.next_group += 1;
        self.index = (0..self.next_group)
            .map(|group| self.row_group_records(group))
            .sum();
        self.held.clear();
        self.next_in_held = 0;
        // Past the last row group, the end: its records are lost all the same.
        self.failed = false;
        Some((self.index, start..end))
    }

    /// The records of row group `group`, decoded.
    ///
    /// # Errors
    ///
    /// As [`read_record`](Reader::read_record)'s.
    pub fn row_group(&self, group: usize) -> Result<Vec<Vec<u8>>, Error> {
        let first = (0..group).map(|at| self.row_group_records(at)).sum();
        let values = self.decode(group, first)?;
        Ok(values
            .into_iter()
            .map(|value| value.data().to_vec())
            .collect())
    }

    /// Decodes row group `group`, whose first record is record `first` of the file.
    fn decode(&self, group: usize, first: u64) -> Result<Vec<ByteArray>, Error> {
        let offset = self.row_group_range(group).0;
        let page = |err: ParquetError| Error::new(ErrorKind::Page(message(err)), offset, first);
        unpanicked(
            || self.decode_values(group, first),
            |what| page(ParquetError::General(what)),
        )
    }

    /// [`decode`](Reader::decode)'s work.
    fn decode_values(&self, group: usize, first: u64) -> Result<Vec<ByteArray>, Error> {
        let offset = self.row_group_range(group).0;
        let page = |err: ParquetError| Error::new(ErrorKind::Page(message(err)), offset, first);
        let expected = self.row_group_records(group) as usize;
        let reader = self.file.get_row_group(group).map_err(page)?;
        let ColumnReader::ByteArrayColumnReader(mut column) =
            reader.get_column_reader(self.column).map_err(page)?
        else {
            unreachable!("the column of records holds byte arrays");
        };
        let nullable = reader
            .metadata()
            .column(self.column)
            .column_descr()
            .max_def_level()
            > 0;
        // The footer's count is not trusted with an allocation: a damaged one may say anything.
        let mut values = Vec::with_capacity(expected.min(READ_BATCH));
        let mut levels = Vec::with_capacity(expected.min(READ_BATCH));
        let mut rows = 0;
        // In batches of at most READ_BATCH, each sized by what the footer still promises (one
        // past it, to find a group that holds more): a page may claim any count of values.
        while rows <= expected {
            let batch = (expected - rows).clamp(1, READ_BATCH);
            let (read, _, _) = column
                .read_records(batch, nullable.then_some(&mut levels), None, &mut values)
                .map_err(page)?;
            if read == 0 {
                break;
            }
            rows += read;
        }
        if let Some(row) = levels.iter().position(|&level| level == 0) {
            return Err(Error::new(
                ErrorKind::NullRecord {
                    record: first + row as u64,
                },
                offset,
                first,
            ));
        }
        if rows != expected || values.len() != expected {
            let what = format!(
                "the row group holds {} records, its footer says {expected}",
                rows.max(values.len())
            );
            return Err(Error::new(ErrorKind::Page(what), offset, first));
        }
        Ok(values)
    }
}

/// `work`, its panic an error (`panicked` of what it said): the `parquet` crate panics on
/// some damaged files, where a decoder it expects a page to have set up is missing.
fn unpanicked<T, E>(
    work: impl FnOnce() -> Result<T, E>,
    panicked: impl FnOnce(String) -> E,
) -> Result<T, E> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|what| what.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a decoder failed".into());
        Err(panicked(what))
    })
}

/// A `parquet` crate's error, in words.
fn message(err: ParquetError) -> String {
    match err {
        ParquetError::General(what) | ParquetError::EOF(what) => what,
        other => other.to_string(),
    }
}
