//! The engine's error type: what went wrong, in which file, and where in it.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use ofconvert_tfrecord::Position as RecordAt;

use crate::front_end::FrontEnd;
use crate::holder::{Liveness, LockHolder};

/// An error while planning, converting or inspecting, with the file and the place in it
/// when they are known.
///
/// `Display` reads `path: offset N (record #I): what`, leaving out the parts that are not
/// known. The cause of an I/O error is available through
/// [`source`](std::error::Error::source), so a cause-chain printer shows it once.
#[derive(Debug)]
pub struct Error {
    // Boxed: results stay one pointer wide on the per-record paths that almost never fail.
    inner: Box<Inner>,
}

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    path: Option<PathBuf>,
    offset: Option<u64>,
    record: Option<u64>,
    /// What reading did past the error, when it went on.
    note: Option<String>,
}

/// What went wrong.
#[non_exhaustive]
#[derive(Debug)]
pub enum ErrorKind {
    /// Reading, writing, creating, renaming or listing a file failed.
    Io(io::Error),
    /// TFRecord framing: a checksum mismatch or a truncated record.
    TfRecord(ofconvert_tfrecord::ErrorKind),
    /// OFRecord framing: a truncated, zero-length or negative-length record.
    OfRecord(ofconvert_ofrecord::ErrorKind),
    /// ArrayRecord (Riegeli) framing: a hash mismatch, a chunk that does not decode, a footer
    /// that does not describe the file.
    ArrayRecord(ofconvert_arrayrecord::ErrorKind),
    /// A Parquet file of records: a damaged footer or page, a null record, or a table of
    /// columns rather than TFDS's one column of serialized records.
    Parquet(ofconvert_parquet::ErrorKind),
    /// A payload that does not parse, or a mapping that cannot be applied to it.
    Mapping(ofconvert_bridge::Error),
    /// The mapping asked for contradicts itself.
    InvalidMapping(ofconvert_bridge::Error),
    /// The input path does not exist or cannot be read.
    InputMissing,
    /// The output directory already holds files, and neither overwriting nor resuming was
    /// asked for.
    OutputNotEmpty {
        /// Some of the names found, hidden ones included, in name order.
        found: Vec<String>,
        /// How many more there are.
        more: usize,
        /// Whose words name the options that would go on.
        front_end: FrontEnd,
    },
    /// Another run is converting into the same output directory, or a killed one left its
    /// lock there (a lock object in a store outlives its process).
    OutputLocked {
        /// The lock and what it says of its holder.
        holder: Box<LockHolder>,
        /// Whether the holder still runs, as this machine can tell.
        liveness: Liveness,
        /// Whether breaking the lock was asked for (and refused: the holder runs).
        breaking: bool,
        /// Whose words name the option that breaks it.
        front_end: FrontEnd,
    },
    /// The output directory is inside the input tree, or the input inside the output: the
    /// run would read its own output or write over its input.
    Overlap {
        /// The other directory.
        other: PathBuf,
    },
    /// The output path exists and is not a directory.
    OutputNotDirectory,
    /// A OneFlow dataset whose part numbers do not run from 0 without a gap; OneFlow would
    /// abort on the missing part.
    PartGap {
        /// The first missing part number.
        missing: u64,
        /// How many parts were found.
        found: usize,
    },
    /// Two part files of a OneFlow dataset carry the same number (`part-1` and `part-01`).
    DuplicatePart {
        /// The number they share.
        number: u64,
    },
    /// Two datasets of the input would be written to the same output directory.
    OutputClash {
        /// The other dataset's input directory.
        other: PathBuf,
    },
    /// Two datasets going back to the folder they shared bring different files of one name
    /// (copies of one file that no longer agree).
    SideFileClash {
        /// The file's name.
        name: String,
        /// The other dataset's input directory.
        other: PathBuf,
    },
    /// An index was asked for a compressed file, whose offsets no index reader can use.
    Compressed,
    /// An index was asked for an ArrayRecord or Parquet file, whose footer already indexes its
    /// records.
    IndexedByFooter,
    /// The file is neither a TFRecord (nor ArrayRecord) nor an OFRecord file.
    UnknownFormat,
    /// A file read as `format` (TFRecord, OFRecord) has no record framed anywhere in it:
    /// damaged from its first byte to its last, or no such file at all.
    NoRecordFramed {
        /// The format it was read as.
        format: &'static str,
    },
    /// A part of a published dataset is not as its manifest lists it: missing, not listed,
    /// or holding other records, bytes or a CRC-32C other than the manifest's.
    NotAsListed {
        /// What differs, naming the manifest.
        what: String,
    },
    /// A worker of a sharded run was started with other flags, or another worker count,
    /// than the run's stored plan.
    ShardFlags {
        /// What differs, both ways.
        differs: String,
    },
    /// The input a sharded run's stored plan was made from changed under it.
    InputChanged {
        /// The first difference found.
        what: String,
    },
    /// `commit` found no sharded run in the output.
    NotSharded {
        /// Whose words say how to start one.
        front_end: FrontEnd,
    },
    /// A call that makes no sense: options that exclude each other, a value out of range.
    Usage(String),
    /// A directory given to an inspection holds no record file.
    NoRecordFiles {
        /// The directory.
        dir: PathBuf,
        /// Whether a conversion into it left its temporary files there: stopped or killed
        /// before it published anything.
        unfinished: bool,
    },
    /// A file named for a TFRecord index is an OFRecord file.
    NotTfRecord,
    /// A directory given to `index` holds OneFlow parts and no TFRecord file.
    OnlyOfRecords {
        /// The directory.
        dir: PathBuf,
    },
    /// `commit` found parts not finished by their workers.
    PartsMissing {
        /// One line per missing part: its dataset, its number and its worker.
        missing: Vec<String>,
    },
    /// A part does not match its receipt: changed or removed after its worker finished it.
    ReceiptMismatch {
        /// What differs.
        what: String,
    },
    /// A worker of a sharded run is still running.
    WorkerRunning {
        /// Its number.
        worker: usize,
    },
    /// A tree given to `diff` holds record files of both formats.
    MixedFormats {
        /// A TFRecord file in it.
        tf: PathBuf,
        /// A OneFlow part in it.
        of: PathBuf,
    },
    /// An image `--images` asked to re-encode or decode could not be.
    Image {
        /// The feature holding it.
        feature: String,
        /// What went wrong.
        reason: String,
    },
}

impl Error {
    /// An error with no file or position attached yet.
    pub fn new(kind: ErrorKind) -> Error {
        Error {
            inner: Box::new(Inner {
                kind,
                path: None,
                offset: None,
                record: None,
                note: None,
            }),
        }
    }

    /// [`ErrorKind::OutputLocked`] about the output `dir`, whose lock `holder` holds:
    /// whether the holder still runs is judged now.
    pub(crate) fn locked(
        dir: &Path,
        holder: Box<LockHolder>,
        breaking: bool,
        front_end: FrontEnd,
    ) -> Error {
        let liveness = holder.liveness();
        Error::new(ErrorKind::OutputLocked {
            holder,
            liveness,
            breaking,
            front_end,
        })
        .in_file(dir)
    }

    /// An I/O error about `path`.
    pub fn io(path: &Path, err: io::Error) -> Error {
        Error::new(ErrorKind::Io(err)).in_file(path)
    }

    /// A TFRecord framing error about `path`, whose reading began at `base`: the error's own
    /// offset and record number count from there.
    pub fn tfrecord(path: &Path, base: RecordAt, err: ofconvert_tfrecord::Error) -> Error {
        let (offset, record) = (base.offset + err.offset(), base.index + err.index());
        Error::new(ErrorKind::TfRecord(err.into_kind()))
            .in_file(path)
            .at(offset, record)
    }

    /// An OFRecord framing error about `path`, whose reading began at `base`.
    pub fn ofrecord(path: &Path, base: RecordAt, err: ofconvert_ofrecord::Error) -> Error {
        let (offset, record) = (base.offset + err.offset(), base.index + err.index());
        Error::new(ErrorKind::OfRecord(err.into_kind()))
            .in_file(path)
            .at(offset, record)
    }

    /// A Parquet file's error in the file `path`, at its offset and record.
    pub fn parquet(path: &Path, err: ofconvert_parquet::Error) -> Error {
        let (offset, record) = (err.offset(), err.index());
        Error::new(ErrorKind::Parquet(err.into_kind()))
            .in_file(path)
            .at(offset, record)
    }

    /// An ArrayRecord file's error in the file `path`, at its offset and record.
    pub fn arrayrecord(path: &Path, err: ofconvert_arrayrecord::Error) -> Error {
        let (offset, record) = (err.offset(), err.index());
        Error::new(ErrorKind::ArrayRecord(err.into_kind()))
            .in_file(path)
            .at(offset, record)
    }

    pub(crate) fn mapping(path: &Path, at: RecordAt, err: ofconvert_bridge::Error) -> Error {
        Error::new(ErrorKind::Mapping(err))
            .in_file(path)
            .at(at.offset, at.index)
    }

    /// Attaches the file the error is about (kept if one is already attached).
    pub fn in_file(mut self, path: &Path) -> Error {
        if self.inner.path.is_none() {
            self.inner.path = Some(path.to_path_buf());
        }
        self
    }

    /// Attaches where in the file the error is: the byte offset and the record's number.
    pub fn at(mut self, offset: u64, record: u64) -> Error {
        self.inner.offset = Some(offset);
        self.inner.record = Some(record);
        self
    }

    /// Adds what reading did past the error (it resumed at some offset, or recovered the
    /// record), shown in parentheses after the message.
    pub(crate) fn noting(mut self, note: String) -> Error {
        self.inner.note = Some(note);
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.kind
    }

    /// The file concerned.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// The byte offset in the file (in the decompressed stream for a compressed TFRecord):
    /// the start of the record, or for a TFRecord data-checksum mismatch, its data.
    pub fn offset(&self) -> Option<u64> {
        self.inner.offset
    }

    /// The 0-based index of the record concerned in its file.
    pub fn record(&self) -> Option<u64> {
        self.inner.record
    }

    /// Whether the error is about how the tool was invoked rather than about the data:
    /// a missing input, an output that is not empty, directories that overlap.
    pub fn is_usage(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::InputMissing
                | ErrorKind::OutputNotEmpty { .. }
                | ErrorKind::OutputLocked { .. }
                | ErrorKind::Overlap { .. }
                | ErrorKind::OutputNotDirectory
                | ErrorKind::InvalidMapping(_)
                | ErrorKind::ShardFlags { .. }
                | ErrorKind::NotSharded { .. }
                | ErrorKind::Usage(_)
                | ErrorKind::WorkerRunning { .. }
                | ErrorKind::MixedFormats { .. }
        )
    }
}

/// The message of an error followed by those of its causes, `: `-separated.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(_) => f.write_str("I/O error"),
            ErrorKind::TfRecord(kind) => kind.fmt(f),
            ErrorKind::OfRecord(kind) => kind.fmt(f),
            ErrorKind::ArrayRecord(kind) => kind.fmt(f),
            ErrorKind::Parquet(kind) => kind.fmt(f),
            ErrorKind::Mapping(err) => err.fmt(f),
            // The bridge's own word for a spec that contradicts itself already says so.
            ErrorKind::InvalidMapping(err)
                if matches!(err.kind(), ofconvert_bridge::ErrorKind::InvalidSpec(_)) =>
            {
                err.fmt(f)
            }
            ErrorKind::InvalidMapping(err) => write!(f, "invalid mapping: {err}"),
            ErrorKind::InputMissing => f.write_str("no such file or directory"),
            ErrorKind::OutputNotEmpty {
                found,
                more,
                front_end,
            } => {
                f.write_str("the output directory is not empty: it holds ")?;
                for (index, name) in found.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(name)?;
                }
                if *more > 0 {
                    write!(f, " and {more} more")?;
                }
                if found
                    .iter()
                    .any(|name| name.starts_with(crate::naming::layout::TEMP_PREFIX))
                {
                    f.write_str(" (hidden temporary files of an interrupted run)")?;
                }
                write!(
                    f,
                    "; pass {} to finish an interrupted run, or {} to replace the datasets \
                     this run writes",
                    front_end.switch("resume"),
                    front_end.switch("overwrite")
                )
            }
            ErrorKind::OutputLocked {
                holder,
                liveness,
                breaking,
                front_end,
            } => {
                let break_lock = front_end.switch("break_lock");
                match liveness {
                    Liveness::Running => {
                        write!(
                            f,
                            "another ofconvert run ({holder}) is writing into this directory: \
                             wait for it to end"
                        )?;
                        if *breaking {
                            write!(f, "; {break_lock} breaks only a lock whose run has ended")?;
                        }
                        Ok(())
                    }
                    Liveness::Gone(why) => write!(
                        f,
                        "{} is left over from a run that has ended: it names {holder}, and \
                         {why}; pass {break_lock} to remove it",
                        holder.lock.display()
                    ),
                    Liveness::Unknown => write!(
                        f,
                        "another ofconvert run ({holder}) holds {}: wait for it to end; if it no \
                         longer runs (killed, or its machine gone), pass {break_lock} to remove \
                         the lock",
                        holder.lock.display()
                    ),
                }
            }
            ErrorKind::Overlap { other } => write!(
                f,
                "overlaps {}: the output must be neither inside the input nor contain it",
                other.display()
            ),
            ErrorKind::OutputNotDirectory => {
                f.write_str("the output exists and is not a directory")
            }
            ErrorKind::PartGap { missing, found } => write!(
                f,
                "part number {missing} is missing ({found} parts found): OneFlow aborts on a \
                 missing part"
            ),
            ErrorKind::DuplicatePart { number } => {
                write!(f, "two part files carry the number {number}")
            }
            ErrorKind::OutputClash { other } => write!(
                f,
                "would be written to the same output directory as {}",
                other.display()
            ),
            ErrorKind::MixedFormats { tf, of } => write!(
                f,
                "holds TFRecord files ({}) and OneFlow parts ({}): name a directory of one \
                 format, or pass --format",
                tf.display(),
                of.display()
            ),
            ErrorKind::SideFileClash { name, other } => write!(
                f,
                "its {name} and that of {}, which goes back to the same folder, differ: one \
                 would replace the other",
                other.display()
            ),
            ErrorKind::NotAsListed { what } => f.write_str(what),
            ErrorKind::ShardFlags { differs } => write!(
                f,
                "this worker does not belong to the sharded run stored here: {differs}; run \
                 every worker with the same flags, or convert into another output"
            ),
            ErrorKind::InputChanged { what } => write!(
                f,
                "the input changed since this sharded run was planned: {what}; the parts \
                 already written no longer match it, so convert into a new output"
            ),
            ErrorKind::NotSharded { front_end } => write!(
                f,
                "no sharded run to commit here: run the workers with {} first",
                front_end.shard("K", "N")
            ),
            ErrorKind::Usage(message) => f.write_str(message),
            ErrorKind::NoRecordFiles { dir, unfinished } => {
                write!(f, "no record files found under {}", dir.display())?;
                if *unfinished {
                    f.write_str(
                        ": a conversion into it was stopped before it published anything (its \
                         hidden temporary files are there); run it again with --resume to \
                         finish it",
                    )?;
                }
                Ok(())
            }
            ErrorKind::NotTfRecord => {
                f.write_str("an OFRecord file: index writes indexes of TFRecord files")
            }
            ErrorKind::OnlyOfRecords { dir } => write!(
                f,
                "no TFRecord files under {}: it holds OFRecord files (OneFlow parts), and index \
                 writes indexes of TFRecord files (of2tf converts the parts to TFRecord files)",
                dir.display()
            ),
            ErrorKind::PartsMissing { missing } => {
                write!(
                    f,
                    "{} part{} not finished, nothing published; rerun the worker{} named, then \
                     commit again:",
                    missing.len(),
                    if missing.len() == 1 { " is" } else { "s are" },
                    if missing.len() == 1 { "" } else { "s" },
                )?;
                for line in missing {
                    write!(f, "\n  {line}")?;
                }
                Ok(())
            }
            ErrorKind::ReceiptMismatch { what } => write!(
                f,
                "{what}, nothing published; rerun its worker, then commit again"
            ),
            ErrorKind::WorkerRunning { worker } => write!(
                f,
                "worker {worker} of the sharded run is still running: commit once every worker \
                 has ended"
            ),
            ErrorKind::Compressed => f.write_str(
                "compressed file: index offsets must be offsets in the file, decompress it first",
            ),
            ErrorKind::IndexedByFooter => f.write_str(
                "an ArrayRecord or Parquet file: its footer indexes its records, no index file \
                 is needed",
            ),
            ErrorKind::UnknownFormat => {
                f.write_str("neither a TFRecord, an ArrayRecord nor an OFRecord file")
            }
            ErrorKind::NoRecordFramed { format } => write!(
                f,
                "not a {format} file: no {format} record is framed anywhere in it, so \
                 there is nothing to convert or skip"
            ),
            ErrorKind::Image { feature, reason } => {
                write!(
                    f,
                    "feature \"{feature}\": cannot convert the image: {reason}"
                )
            }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.inner;
        if let Some(path) = &inner.path {
            write!(f, "{}: ", path.display())?;
        }
        match (inner.offset, inner.record) {
            (Some(offset), Some(record)) => write!(f, "offset {offset} (record #{record}): ")?,
            (Some(offset), None) => write!(f, "offset {offset}: ")?,
            (None, Some(record)) => write!(f, "record #{record}: ")?,
            (None, None) => {}
        }
        inner.kind.fmt(f)?;
        if inner.offset == Some(0)
            && matches!(
                inner.kind,
                ErrorKind::TfRecord(ofconvert_tfrecord::ErrorKind::LengthCrcMismatch { .. })
            )
        {
            // TensorFlow's own hint: the first checksum failing usually means another format.
            f.write_str(" (Is this even a TFRecord file?)")?;
        }
        if let Some(note) = &inner.note {
            write!(f, " ({note})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.inner.kind {
            ErrorKind::Io(err) => Some(err),
            ErrorKind::TfRecord(ofconvert_tfrecord::ErrorKind::Io(err)) => Some(err),
            ErrorKind::OfRecord(ofconvert_ofrecord::ErrorKind::Io(err)) => Some(err),
            ErrorKind::ArrayRecord(ofconvert_arrayrecord::ErrorKind::Io(err)) => Some(err),
            ErrorKind::Parquet(ofconvert_parquet::ErrorKind::Io(err)) => Some(err),
            _ => None,
        }
    }
}
