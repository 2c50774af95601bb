//! Record files: telling a file's format from its first bytes ([`detect`]), reading its
//! records with every checksum checked and damage reported or skipped ([`reader`]), and
//! writing parts and shards under temporary names in aligned buffers ([`output`]), and
//! copying whole files beside them ([`copy`]).
//!
//! Uses `naming`, `error`, `storage`, `options` and `progress`; never the planning or the
//! run above it.

pub(crate) mod copy;
pub(crate) mod detect;
pub(crate) mod output;
mod reader;
mod skipped;

pub use reader::*;
pub use skipped::SkippedRecords;
