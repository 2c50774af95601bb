//! One conversion spread over many machines: the plan stored once for every worker
//! ([`stored`], which names a late worker's flags that differ from it in its own words:
//! [`flags`]), one worker's share of it ([`shard`], the share itself named in [`share`])
//! with its receipt ([`receipt`]), and the commit that checks every receipt and publishes
//! the whole ([`commit`]).
//!
//! The top of the conversion layers: uses `running`, `planning` and everything below them;
//! nothing below names it.

pub(crate) mod commit;
mod flags;
pub(crate) mod receipt;
pub(crate) mod shard;
mod share;
pub(crate) mod stored;
