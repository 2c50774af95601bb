//! Record files: telling a file's format from its first bytes ([`detect`]), reading its
//! records with every checksum checked and damage reported or skipped ([`reader`], in the
//! words of [`damage`]; an
//! ArrayRecord file by its footer too, [`array`]), and
//! writing parts and shards under temporary names in aligned buffers ([`output`]), on a
//! thread of their own when records are large and a core is idle, copying whole files
//! beside them ([`copy`]), putting a dataset's files in place of another's all at once or
//! not at all ([`swap`]); the CRC-32C of a whole file as it is written or read ([`summed`]).
//!
//! Uses `naming`, `error`, `storage`, `options` and `progress`; never the planning or the
//! run above it.

pub(crate) mod array;
pub(crate) mod copy;
mod damage;
pub(crate) mod detect;
pub(crate) mod output;
mod reader;
mod skipped;
pub(crate) mod summed;
pub(crate) mod swap;

pub(crate) use damage::{is_damage, resumed};
pub use reader::*;
pub use skipped::SkippedRecords;

/// From this size on, records are large: the framing readers read them past their buffers,
/// and writing them is as much of the work as reading and checking them, so that a part of
/// such records is written on a thread of its own when a core is idle.
pub(crate) const LARGE_RECORD: u64 = 16 * 1024;

/// Whether the current pool of workers leaves a core idle, for a part's writes to be done
/// on.
pub(crate) fn spare_core() -> bool {
    std::thread::available_parallelism()
        .is_ok_and(|cores| rayon::current_num_threads() < cores.get())
}
