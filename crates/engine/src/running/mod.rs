//! Running a plan on one machine: the worker pool ([`workers`]), converting a work item's
//! records into temporary parts ([`chunk`]), objects in a store opened ahead of the workers
//! ([`prefetch`]) and parts bound for one uploaded while the next are written
//! ([`uploads`]), the run loop ([`convert`]), what a dataset's directory holds from before
//! and how a dataset there is replaced ([`existing`]), publishing a finished dataset with its
//! manifest ([`publish`]), what an unfinished run leaves for `--resume` ([`resume`]) and the
//! run's [`summary`]; what a run would do, for `--dry-run` ([`preview`]).
//!
//! Uses every layer below (`planning`, `manifest`, `tfds`, `records`, `storage`, `options`,
//! `naming`, `schema`, `images`, `progress`); the many-machines layer (`sharded`) builds on it.

pub(crate) mod chunk;
pub(crate) mod convert;
pub(crate) mod existing;
pub(crate) mod folders;
pub(crate) mod item;
pub(crate) mod job;
pub(crate) mod placing;
pub(crate) mod prefetch;
pub(crate) mod preview;
pub(crate) mod publish;
pub(crate) mod resume;
pub(crate) mod summary;
pub(crate) mod tfds_info;
pub(crate) mod uploads;
pub(crate) mod workers;
