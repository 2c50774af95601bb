//! Planning: walking the inputs, grouping record files into datasets (TFRecord shard
//! families, OneFlow part folders, TFDS splits; what a file not named as a record file is,
//! [`judge`]; the files outside every dataset's folder, [`loose`]; what of2tf gives back as
//! tf2of found it, `restore`), cutting them into work
//! items and parts, and checking that the mapping's rules match what the datasets hold
//! ([`rules`]).
//!
//! Uses `naming`, `error`, `storage`, `options`, `records`, `manifest`, `published` and
//! `tfds`; nothing here runs a conversion.

pub(crate) mod clash;
pub(crate) mod dataset;
pub(crate) mod group;
pub(crate) mod judge;
pub(crate) mod loose;
mod noting;
pub(crate) mod plan;
mod restore;
pub(crate) mod rules;
pub(crate) mod tfds_origin;
