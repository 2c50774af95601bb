//! Counting, verifying and indexing record files.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ofconvert_bridge::RecordChecker;
use ofconvert_tfrecord::Compression;
use serde::Serialize;

use super::{map_files, open_reporting};
use crate::error::{Error, ErrorKind};
use crate::naming::names::Format;
use crate::options::Checksums;
use crate::progress::ProgressFn;
use crate::records::output;
use crate::records::summed::{Sum, SummedReader};
use crate::records::{is_damage, resumed, RecordAt, RecordReader};
use crate::storage::object;
use crate::storage::Durability;

/// The record count of one file.
#[derive(Clone, Debug, Serialize)]
pub struct FileCount {
    /// The file.
    pub path: String,
    /// Its format.
    pub format: Format,
    /// `none`, `gzip` or `zlib`; `array_record` for an ArrayRecord file (its chunks are
    /// compressed each on its own).
    pub compression: &'static str,
    /// Its records.
    pub records: u64,
    /// Its size.
    pub bytes: u64,
}

/// Counts the records of a file without reading their data. With `verify`, TFRecord
/// length checksums are checked (data checksums need `verify_file`).
///
/// # Errors
///
/// When the file cannot be read or its framing is damaged.
pub fn count_file(path: &Path, format: Format, checksums: Checksums) -> Result<FileCount, Error> {
    count_file_reporting(path, format, checksums, &|_| {})
}

fn count_file_reporting(
    path: &Path,
    format: Format,
    checksums: Checksums,
    progress: ProgressFn<'_>,
) -> Result<FileCount, Error> {
    let mut reader = open_reporting(path, format, checksums, progress)?;
    while reader.skip()?.is_some() {}
    let (storage, at) = object::storage_for(path).map_err(|err| Error::io(path, err))?;
    let bytes = storage
        .size(&at)
        .map_err(|err| Error::io(path, err))?
        .unwrap_or_default();
    Ok(FileCount {
        path: path.display().to_string(),
        format,
        compression: reader.stored_as(),
        records: reader.position().index,
        bytes,
    })
}

/// [`count_file`] over many files in parallel, reporting the bytes read to `progress`.
pub fn count_files(
    files: &[(PathBuf, Format)],
    checksums: Checksums,
    jobs: usize,
    progress: ProgressFn<'_>,
) -> Vec<Result<FileCount, Error>> {
    map_files(files, jobs, |path, format| {
        count_file_reporting(path, format, checksums, progress)
    })
}

/// What verifying one file found.
#[derive(Debug)]
pub struct Verification {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// Records whose framing and payload are sound.
    pub good_records: u64,
    /// Every problem, with offset and record.
    pub problems: Vec<Error>,
    /// The CRC-32C of the file's bytes, when it was asked for and the whole file could be
    /// read.
    pub crc32c: Option<u32>,
}

/// Reads every record of a file, checking every checksum and parsing every payload
/// (Example or SequenceExample for TFRecord, OFRecord for OFRecord; records laid out as
/// the writers lay them out are walked once, as the converter walks them, and any other
/// is judged by the full walk). Goes on past damage that leaves the framing intact, so
/// that every such problem is reported.
pub fn verify_file(path: &Path, format: Format) -> Verification {
    verify_file_reporting(path, format, &|_| {}, None)
}

/// [`verify_file`], the CRC-32C of the file's bytes summed into `sum` as they are read
/// when one is given (and the rest of them read after damage that ends the reading).
fn verify_file_reporting(
    path: &Path,
    format: Format,
    progress: ProgressFn<'_>,
    sum: Option<&Sum>,
) -> Verification {
    let mut verification = Verification {
        path: path.to_path_buf(),
        format,
        good_records: 0,
        problems: Vec::new(),
        crc32c: None,
    };
    let opened = match sum {
        Some(sum) => open_summed(path, format, progress, sum),
        None => open_reporting(path, format, Checksums::Verify, progress).map(|r| (r, None)),
    };
    let (mut reader, size) = match opened {
        Ok(opened) => opened,
        Err(err) => {
            verification.problems.push(err);
            return verification;
        }
    };
    read_records(&mut reader, &mut verification);
    drop(reader);
    if let Some(sum) = sum {
        verification.crc32c = sum_the_rest(path, sum, size).ok();
    }
    verification
}

/// Opens `path` in `format` to verify it, its bytes summed into `sum` as they are read;
/// and its size, when known.
fn open_summed<'a>(
    path: &Path,
    format: Format,
    progress: ProgressFn<'a>,
    sum: &Sum,
) -> Result<(RecordReader<'a>, Option<u64>), Error> {
    let (storage, at) = object::storage_for(path).map_err(|err| Error::io(path, err))?;
    let mut opened = storage.open(&at, 0).map_err(|err| Error::io(path, err))?;
    let size = opened.size;
    opened.reader = Box::new(SummedReader::new(opened.reader, sum.clone()));
    let reader = RecordReader::from_opened(
        opened,
        path,
        format,
        Checksums::Verify,
        None,
        Some(progress),
    )?;
    Ok((reader, size))
}

/// Sums what is left of `path` (of `size` bytes, when known) past the bytes `sum` holds,
/// which damage that ended the reading left unread, and gives the CRC-32C of the whole
/// file.
fn sum_the_rest(path: &Path, sum: &Sum, size: Option<u64>) -> io::Result<u32> {
    if size.is_none_or(|size| sum.bytes() < size) {
        let (storage, at) = object::storage_for(path)?;
        let opened = storage.open(&at, sum.bytes())?;
        io::copy(
            &mut SummedReader::new(opened.reader, sum.clone()),
            &mut io::sink(),
        )?;
    }
    Ok(sum.crc32c())
}

/// Reads every record of `reader` into `verification`, going on past damage.
fn read_records(reader: &mut RecordReader<'_>, verification: &mut Verification) {
    let (path, format) = (verification.path.clone(), verification.format);
    let mut buf = Vec::new();
    let mut checker = RecordChecker::new();
    loop {
        let err = match reader.read_in_place(&mut buf) {
            Ok(Some(at)) => {
                let parsed = match format {
                    Format::Tf => checker.check_example(reader.record(&buf)).map(|_| ()),
                    Format::Of => checker.check_ofrecord(reader.record(&buf)),
                };
                match parsed {
                    Ok(()) => verification.good_records += 1,
                    // An OFRecord that does not parse is reported as itself and reading goes
                    // on after its length, so that each bad record of a run of them is named
                    // (the converter's salvage resyncs there instead, which would name a run
                    // of bad records as one stretch of skipped bytes).
                    Err(err) => verification.problems.push(Error::mapping(&path, at, err)),
                }
                continue;
            }
            Ok(None) => break,
            Err(err) => err,
        };
        if reader.recover(&err) {
            verification.problems.push(err);
        } else if !is_damage(&err) || runs_past_the_end(&err) {
            verification.problems.push(err);
            break;
        } else if !resume(reader, &mut buf, &mut checker, verification, err) {
            break;
        }
    }
}

/// Whether `err` is a record longer than the rest of the file: nothing follows it to
/// resume at, and looking would scan all that rest (a hostile length over a huge tail)
/// for nothing.
fn runs_past_the_end(err: &Error) -> bool {
    matches!(
        err.kind(),
        ErrorKind::TfRecord(ofconvert_tfrecord::ErrorKind::Truncated { .. })
            | ErrorKind::OfRecord(ofconvert_ofrecord::ErrorKind::Truncated { .. })
    )
}

/// Goes on after `damage` to the framing, noted among `verification`'s problems, as the
/// converter's `--on-corrupt skip` does: at the next record whose checksums agree, the
/// damaged record itself coming back when its data checksum vouches for it. The problem
/// says which; the recovered record is checked but not counted good, its header being
/// damaged. `false` when nothing good follows.
fn resume(
    reader: &mut RecordReader<'_>,
    buf: &mut Vec<u8>,
    checker: &mut RecordChecker,
    verification: &mut Verification,
    damage: Error,
) -> bool {
    let resync = reader.resync(buf);
    // Nothing good after it: the problem says all there is. An ArrayRecord file's chunks
    // after the damaged one are found through its footer, which says why when it cannot.
    verification.problems.push(match &resync {
        Ok(Some(resync)) => damage.noting(resumed(Some(resync))),
        Ok(None) if reader.is_array_record() => damage.noting(
            "the rest of the file is not read: its footer, which says where the chunks after \
             a damaged one are, cannot be read or lists none"
                .to_owned(),
        ),
        _ => damage,
    });
    match resync {
        Ok(Some(resync)) => {
            if resync.recovered {
                let parsed = match verification.format {
                    Format::Tf => checker.check_example(reader.record(buf)).map(|_| ()),
                    Format::Of => checker.check_ofrecord(reader.record(buf)),
                };
                if let Err(err) = parsed {
                    let at = RecordAt {
                        offset: resync.damaged.start,
                        index: resync.index,
                    };
                    let path = verification.path.clone();
                    verification.problems.push(Error::mapping(&path, at, err));
                }
            }
            true
        }
        Ok(None) => false,
        Err(err) => {
            verification.problems.push(err);
            false
        }
    }
}

/// [`verify_file`] over many files in parallel, reporting the bytes read to `progress`.
pub fn verify_files(
    files: &[(PathBuf, Format)],
    jobs: usize,
    progress: ProgressFn<'_>,
) -> Vec<Verification> {
    verify_files_summing(files, &|_| false, jobs, progress)
}

/// [`verify_files`], the CRC-32C of each file for which `summed` holds taken as it is read
/// ([`Verification::crc32c`]).
pub(crate) fn verify_files_summing(
    files: &[(PathBuf, Format)],
    summed: &(dyn Fn(&Path) -> bool + Sync),
    jobs: usize,
    progress: ProgressFn<'_>,
) -> Vec<Verification> {
    map_files(files, jobs, |path, format| {
        let sum = summed(path).then(Sum::default);
        verify_file_reporting(path, format, progress, sum.as_ref())
    })
}

/// Writes the index of an uncompressed TFRecord file to `index`: one line per record,
/// `OFFSET LENGTH`, the record's start and its framed length (header, data and CRCs), as
/// DALI's `tfrecord2idx` and the Python `tfrecord` package write them. The index appears
/// whole or not at all. Returns the number of records.
///
/// # Errors
///
/// When the file is compressed ([`ErrorKind::Compressed`]), damaged, or cannot be read or
/// written.
pub fn write_index(path: &Path, index: &Path, progress: ProgressFn<'_>) -> Result<u64, Error> {
    let mut reader = open_reporting(path, Format::Tf, Checksums::Verify, progress)?;
    if reader.indexed_by_footer() {
        return Err(Error::new(ErrorKind::IndexedByFooter).in_file(path));
    }
    if reader.compression() != Compression::None {
        return Err(Error::new(ErrorKind::Compressed).in_file(path));
    }
    let mut text = Vec::new();
    while let Some(at) = reader.skip()? {
        let length = reader.position().offset - at.offset;
        // Writing into a Vec cannot fail.
        let _ = writeln!(text, "{} {length}", at.offset);
    }
    put_whole(index, &text).map_err(|err| Error::io(index, err))?;
    Ok(reader.position().index)
}

/// Writes `bytes` to `path` (a local path or a URL), creating the directories it needs,
/// whole or not at all, replacing what is there.
fn put_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (storage, path) = object::storage_for(path)?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    storage.create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .ok_or_else(|| io::Error::other("not a file name"))?;
    if storage.renames_cheaply() {
        return output::stage(&*storage, dir, &name, bytes)?.commit();
    }
    // An upload appears whole when it completes.
    let mut file = storage.create(&path, Durability::Synced)?;
    file.write_all(bytes)?;
    file.finish().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofconvert_tfrecord::frame;

    #[test]
    fn verify_resumes_after_a_damaged_length_and_finds_what_follows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.tfrecord");
        let (mut bytes, mut starts) = (Vec::new(), Vec::new());
        for label in 0..100 {
            starts.push(bytes.len());
            let example = ofconvert_bridge::tf::example([(
                "x",
                ofconvert_bridge::tf::int64_feature([label]),
            )]);
            let mut payload = Vec::new();
            ofconvert_bridge::encode_example(&example, &mut payload);
            frame::encode_record(&payload, &mut bytes);
        }
        // Record 2's length: it comes back; record 10's length and data: passed over;
        // record 49's data.
        bytes[starts[2]] ^= 0x01;
        bytes[starts[10] + 1] ^= 0x04;
        bytes[starts[10] + 14] ^= 0x04;
        bytes[starts[49] + 13] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let verified = verify_file(&path, Format::Tf);
        let places: Vec<_> = verified.problems.iter().map(|p| p.record()).collect();
        assert_eq!(
            places,
            [Some(2), Some(10), Some(49)],
            "{:?}",
            verified.problems
        );
        assert_eq!(verified.good_records, 97);
        assert!(verified.problems[0]
            .to_string()
            .contains("record recovered"));
        let shown = verified.problems[1].to_string();
        assert!(
            shown.contains(&format!("bytes {}..{} skipped", starts[10], starts[11])),
            "{shown}"
        );
    }
}
