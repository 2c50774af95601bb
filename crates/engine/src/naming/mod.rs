//! Naming: what `ofconvert` calls the files it writes (parts, manifests, temporary names,
//! the lock, the control folder of a sharded run) and how the names of record files are
//! recognised (TFRecord shard families, OneFlow parts).
//!
//! The lowest layer of the engine: pure functions over names, no I/O. It uses nothing else
//! of the engine.

pub mod layout;
pub(crate) mod names;
