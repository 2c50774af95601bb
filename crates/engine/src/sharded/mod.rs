//! One conversion spread over many machines: the plan stored once for every worker
//! ([`stored`]), one worker's share of it ([`shard`]) with its receipt ([`receipt`]), and the
//! commit that checks every receipt and publishes the whole ([`commit`]).
//!
//! The top of the conversion layers: uses `running`, `planning` and everything below them;
//! nothing below names it.

pub(crate) mod commit;
pub(crate) mod receipt;
pub(crate) mod shard;
pub(crate) mod stored;
