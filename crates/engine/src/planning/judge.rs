//! What a file of a folder of TFRecord files is to tf2of when its name does not say: a
//! TFRecord file, damaged or not, an input; OneFlow's records, neither an input nor a file
//! that comes with the records; or a file without records, which comes with them.

use std::io;

use crate::naming::names::Format;
use crate::published::ListedAs;
use crate::records::detect;
use crate::storage::{Listed, Storage};

/// What a file of a folder of TFRecord files, not named as one, is to tf2of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Judged {
    /// A TFRecord (or ArrayRecord) file, however damaged: an input.
    Record,
    /// OneFlow's records: no input of tf2of, and no file that comes with the records.
    OfRecords,
    /// No record anywhere in it: a file that comes with the records.
    Other,
}

/// What `found` is, as its folder's manifests list it (`listed`) or else as its content
/// shows: a TFRecord file by its first record, OneFlow's records by theirs, and a TFRecord
/// file damaged at its start by a sound record further in (which reads the whole of a file
/// that holds none, and so comes last).
pub(crate) fn judge_tf(
    storage: &dyn Storage,
    found: &Listed,
    listed: Option<ListedAs>,
) -> io::Result<Judged> {
    match listed {
        Some(ListedAs::Part(Format::Tf)) => return Ok(Judged::Record),
        Some(ListedAs::Part(Format::Of)) => return Ok(Judged::OfRecords),
        Some(ListedAs::Side) => return Ok(Judged::Other),
        None => {}
    }
    Ok(if detect::looks_like_tfrecord_in(storage, &found.path)? {
        Judged::Record
    } else if detect::looks_like_ofrecord_in(storage, &found.path)? {
        Judged::OfRecords
    } else if detect::holds_tfrecord_in(storage, &found.path)? {
        Judged::Record
    } else {
        Judged::Other
    })
}
