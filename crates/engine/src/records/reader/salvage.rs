//! What a [`RecordReader`] does about damage: going on where the framing is intact, resyncing
//! at the next good record where it is not, and reading under a damage policy
//! ([`OnCorrupt`]) that steps over what it can, counting it.

use ofconvert_ofrecord::ErrorKind as OfErrorKind;
use ofconvert_tfrecord::{self as tfrecord, Compression, ErrorKind as TfErrorKind};

use crate::error::{Error, ErrorKind};
use crate::naming::names::Format;
use crate::options::OnCorrupt;
use crate::records::array::PastDamage;
use crate::records::damage::{is_damage, is_framing_damage, records, resumed};
use crate::records::SkippedRecords;

use super::{Framed, RecordAt, RecordReader};

impl RecordReader<'_> {
    /// Whether reading can go on after `err`, which this reader returned: after a data
    /// checksum mismatch (TFRecord) or a zero-length record (OFRecord) it can, the framing
    /// being intact; after any other error the reader is done.
    pub fn recover(&mut self, err: &Error) -> bool {
        self.recover_in_place(err)
    }

    /// Steps past the damage `err` reports when stepping over records: as
    /// [`recover`](RecordReader::recover), and after damage to the framing by resynchronising
    /// at the next good record (see [`read_salvaging`](RecordReader::read_salvaging)), a
    /// recovered record dropped. The damaged stretch counts as one record, as it does when
    /// converting, so that a pass that counts and one that converts agree on every index.
    /// `false` when the reader is done.
    pub(crate) fn step_past(&mut self, err: &Error) -> bool {
        if self.recover_in_place(err) {
            return true;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let resynced = matches!(self.resync(&mut scratch), Ok(Some(_)));
        self.scratch = scratch;
        resynced
    }

    /// Goes on after an error that leaves the framing intact.
    fn recover_in_place(&mut self, err: &Error) -> bool {
        match (&mut self.framed, err.kind()) {
            (Framed::Tf(reader), ErrorKind::TfRecord(TfErrorKind::DataCrcMismatch { .. })) => {
                reader.recover()
            }
            (Framed::Of(reader), ErrorKind::OfRecord(OfErrorKind::ZeroLength)) => reader.recover(),
            _ => false,
        }
    }

    /// Scans past damage to the framing for the next good record; with positions in the file.
    /// OFRecord payloads are told by whether they parse as an OFRecord: a heuristic, as
    /// OFRecord has no checksum.
    pub(crate) fn resync(&mut self, buf: &mut Vec<u8>) -> Result<Option<tfrecord::Resync>, Error> {
        let resync = match &mut self.framed {
            Framed::Tf(reader) => reader
                .resync(buf)
                .map_err(|err| Error::tfrecord(&self.path, self.base, err))?,
            Framed::Of(reader) => reader
                .resync(buf, is_ofrecord)
                .map_err(|err| Error::ofrecord(&self.path, self.base, err))?,
            // Its reader stops at the first damaged chunk: what follows is read through the
            // footer, from the first chunk after the damaged one.
            Framed::Array(reader) => match PastDamage::after(&self.path, reader.position()) {
                Some((past, resync)) => {
                    self.framed = Framed::PastDamage(Box::new(past));
                    Some(resync)
                }
                None => None,
            },
            Framed::PastDamage(past) => past.skip_chunk(),
            // What follows a damaged row group is found through the footer: the next one.
            Framed::Parquet(reader) => {
                reader
                    .skip_damaged_group()
                    .map(|(index, damaged)| tfrecord::Resync {
                        index,
                        damaged,
                        recovered: false,
                    })
            }
        };
        Ok(resync.map(|resync| tfrecord::Resync {
            index: self.base.index + resync.index,
            damaged: self.base.offset + resync.damaged.start..self.base.offset + resync.damaged.end,
            recovered: resync.recovered,
        }))
    }

    /// Reads the next sound record into `buf` (its data: [`record`](RecordReader::record)),
    /// stepping over damage as `tf2of --on-corrupt skip` does and counting it in `skipped`:
    /// a record whose data checksum fails is left out; past damage to the framing, reading
    /// resumes at the next good record, the bytes passed over counting as one record (a
    /// record whose length alone was damaged comes back, counted as recovered). `Ok(None)`
    /// at the end.
    ///
    /// # Errors
    ///
    /// What is not damage (a file that cannot be read), and a file in which no record is
    /// framed at all (not of the format it is read as).
    pub fn read_skipping(
        &mut self,
        buf: &mut Vec<u8>,
        skipped: &mut SkippedRecords,
    ) -> Result<Option<RecordAt>, Error> {
        self.read_salvaging(buf, OnCorrupt::Skip, skipped, None)
    }

    /// Reads the next record before index `end` (`None`: to the end of the file) under a
    /// damage policy: with [`OnCorrupt::Skip`], records that can be stepped over are (and
    /// counted in `skipped`). After damage to the framing, reading resumes at the next good
    /// record (TFRecord: where a length and its checksum agree, confirmed by the data
    /// checksum; OFRecord: a heuristic), the bytes passed over are reported by offset and
    /// count as one record, and the damaged record itself comes back when its data checksum
    /// vouches for it. The record is read in place: [`record`](RecordReader::record) gives
    /// its data.
    pub(crate) fn read_salvaging(
        &mut self,
        buf: &mut Vec<u8>,
        policy: OnCorrupt,
        skipped: &mut SkippedRecords,
        end: Option<u64>,
    ) -> Result<Option<RecordAt>, Error> {
        // Set when damage from the file's first byte was passed over: if no record follows,
        // the file holds none.
        let mut damaged_from_start = false;
        loop {
            // Stepping over damage must not run into the records from `end` on: another work
            // item reads (and counts) those.
            if end.is_some_and(|end| self.position().index >= end) {
                return Ok(None);
            }
            // What was wrong, and where: the damaged record's offset and index.
            let (detail, at) = match self.read_in_place(buf) {
                Ok(None) if damaged_from_start => return Err(self.no_record_in_it()),
                // Not within a bounded work item: the pass that cut the file into work items
                // stepped over records without parsing them, and its record boundaries must
                // stay those of the work items that read them.
                Ok(Some(at)) if policy == OnCorrupt::Skip && end.is_none() => {
                    match self.reject_misframed(buf) {
                        Some(err) => {
                            let detail =
                                crate::error::error_chain(&Error::mapping(&self.path, at, err));
                            (detail, at)
                        }
                        None => return Ok(Some(at)),
                    }
                }
                Ok(found) => return Ok(found),
                Err(err) if policy == OnCorrupt::Skip && is_damage(&err) => {
                    let detail = crate::error::error_chain(&err);
                    if self.recover_in_place(&err) {
                        skipped.note_corrupt(detail);
                        continue;
                    }
                    (detail, self.place_of(&err))
                }
                Err(err) if self.starts_file(self.place_of(&err)) && is_framing_damage(&err) => {
                    if self.resync(buf)?.is_some() && self.read_in_place(buf)?.is_none() {
                        return Err(self.no_record_in_it());
                    }
                    return Err(err);
                }
                Err(err) => return Err(err),
            };
            let resync = self.resync(buf)?;
            match &resync {
                Some(resync) if resync.recovered => {
                    skipped.note_recovered(format!("{detail} ({})", resumed(Some(resync))));
                    return Ok(Some(RecordAt {
                        offset: resync.damaged.start,
                        index: resync.index,
                    }));
                }
                // Past an ArrayRecord's or Parquet file's damage, the footer says how many
                // records the skipped chunk or row group held (none, when the damage was in
                // an ArrayRecord's padding).
                Some(past) if self.indexed_by_footer() => {
                    let lost = past.index.saturating_sub(at.index);
                    skipped.note_lost(
                        format!("{detail} ({}; {} lost)", resumed(Some(past)), records(lost)),
                        lost,
                    );
                }
                Some(_) => {
                    damaged_from_start = self.starts_file(at);
                    skipped.note_corrupt(format!("{detail} ({})", resumed(resync.as_ref())));
                }
                None => {
                    skipped.note_corrupt(format!("{detail} ({})", resumed(None)));
                    return Ok(None);
                }
            }
        }
    }

    /// Where `err` says the damage is: the record it names (the reader's position when it
    /// names none).
    fn place_of(&self, err: &Error) -> RecordAt {
        let here = self.position();
        RecordAt {
            offset: err.offset().unwrap_or(here.offset),
            index: err.record().unwrap_or(here.index),
        }
    }

    /// Whether damage `at` is at the first byte of an uncompressed TFRecord or OFRecord file,
    /// which may then be no such file at all (a text file named `.tfrecord`): nothing to skip,
    /// nothing to hint.
    fn starts_file(&self, at: RecordAt) -> bool {
        at.offset == 0 && self.compression == Compression::None && !self.indexed_by_footer()
    }

    /// That no record is framed anywhere in the file: it is not of the format it is read as.
    fn no_record_in_it(&self) -> Error {
        let format = match self.format() {
            Format::Tf => "TFRecord",
            Format::Of => "OFRecord",
        };
        Error::new(ErrorKind::NoRecordFramed { format })
            .in_file(&self.path)
            .at(self.base.offset, self.base.index)
    }

    /// When salvaging OFRecords, which have no checksum: whether the record just read in
    /// `buf` fails to parse, and so may carry a wrong length that runs into the records after
    /// it. The reader then steps back to its start, for a resync to find its true end (see
    /// [`ofrecord::Reader::reject`]). `None` for a TFRecord, whose checksums already vouch
    /// for its framing, for a record that parses, and for one too large to step back over
    /// (conversion then reports it as it does any record that does not parse).
    pub(crate) fn reject_misframed(&mut self, buf: &[u8]) -> Option<ofconvert_bridge::Error> {
        let Framed::Of(reader) = &mut self.framed else {
            return None;
        };
        let err = ofconvert_bridge::visit_ofrecord(reader.last_record(buf), |_, _, _| {}).err()?;
        reader.reject().then_some(err)
    }
}

/// Whether `payload` could be a record of an OFRecord file: it parses as an OFRecord, and is
/// not empty (OneFlow aborts on an empty one).
fn is_ofrecord(payload: &[u8]) -> bool {
    !payload.is_empty() && ofconvert_bridge::visit_ofrecord(payload, |_, _, _| {}).is_ok()
}
