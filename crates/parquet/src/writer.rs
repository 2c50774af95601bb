//! Writing a Parquet file of records in TFDS's layout.

use std::io::Write;
use std::sync::Arc;

use parquet::basic::{Compression, Repetition, Type as PhysicalType};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use crate::error::{Error, ErrorKind};
use crate::RECORDS_COLUMN;

/// Writes records as the rows of one binary column `data`, as TFDS does, in row groups of a
/// stated number of records, Snappy-compressed (pyarrow's default).
pub struct Writer<W: Write + Send> {
    file: SerializedFileWriter<W>,
    rows_per_group: usize,
    pending: Vec<ByteArray>,
    written: u64,
}

impl<W: Write + Send> Writer<W> {
    /// A writer into `out` of row groups of `rows_per_group` records (the last one fewer).
    ///
    /// # Errors
    ///
    /// When the file's opening magic cannot be written.
    pub fn new(out: W, rows_per_group: usize) -> Result<Writer<W>, Error> {
        let column = Type::primitive_type_builder(RECORDS_COLUMN, PhysicalType::BYTE_ARRAY)
            .with_repetition(Repetition::OPTIONAL)
            .build()
            .expect("a binary column");
        let schema = Type::group_type_builder("schema")
            .with_fields(vec![Arc::new(column)])
            .build()
            .expect("a schema of one column");
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_dictionary_enabled(false)
            .set_created_by(format!("ofconvert {}", env!("CARGO_PKG_VERSION")))
            .build();
        let file = SerializedFileWriter::new(out, Arc::new(schema), Arc::new(properties))
            .map_err(|err| written(err, 0))?;
        Ok(Writer {
            file,
            rows_per_group: rows_per_group.max(1),
            pending: Vec::new(),
            written: 0,
        })
    }

    /// Adds a record; a row group is written once it holds its number of records.
    ///
    /// # Errors
    ///
    /// When writing fails.
    pub fn write_record(&mut self, record: &[u8]) -> Result<(), Error> {
        self.pending.push(ByteArray::from(record.to_vec()));
        if self.pending.len() == self.rows_per_group {
            self.flush_group()?;
        }
        Ok(())
    }

    /// Records written so far, those of a row group not yet written among them.
    pub fn records(&self) -> u64 {
        self.written + self.pending.len() as u64
    }

    fn flush_group(&mut self) -> Result<(), Error> {
        let records = std::mem::take(&mut self.pending);
        let at = self.written;
        let mut group = self.file.next_row_group().map_err(|err| written(err, at))?;
        let mut column = group
            .next_column()
            .map_err(|err| written(err, at))?
            .expect("the column of records");
        let ColumnWriter::ByteArrayColumnWriter(values) = column.untyped() else {
            unreachable!("the column of records holds byte arrays");
        };
        let levels = vec![1; records.len()];
        values
            .write_batch(&records, Some(&levels), None)
            .map_err(|err| written(err, at))?;
        column.close().map_err(|err| written(err, at))?;
        group.close().map_err(|err| written(err, at))?;
        self.written += records.len() as u64;
        Ok(())
    }

    /// Writes the last row group and the footer; returns the output.
    ///
    /// # Errors
    ///
    /// When writing fails.
    pub fn finish(mut self) -> Result<W, Error> {
        if !self.pending.is_empty() {
            self.flush_group()?;
        }
        let at = self.written;
        self.file.into_inner().map_err(|err| written(err, at))
    }
}

/// A `parquet` crate's error while writing record `index`.
fn written(err: ParquetError, index: u64) -> Error {
    let kind = match err {
        ParquetError::External(err) => match err.downcast::<std::io::Error>() {
            Ok(err) => ErrorKind::Io(*err),
            Err(err) => ErrorKind::Io(std::io::Error::other(err)),
        },
        other => ErrorKind::Io(std::io::Error::other(other.to_string())),
    };
    Error::new(kind, 0, index)
}
