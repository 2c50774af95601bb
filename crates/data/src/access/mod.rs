//! Random access to records, for readers that want record `i` of a dataset without reading
//! the records before it: each file's index of record offsets ([`index`]: the `index`
//! command's `.idx` files where they are, else built in one streaming pass and kept beside
//! the data or in a cache directory; an ArrayRecord file's footer), a decompressed copy of a
//! compressed TFRecord (which has no random access) kept in that cache ([`cache`]), bytes of
//! objects in a store kept there within a limit ([`spans`]: what an index pass streamed, the
//! spans a reader fetched) and handed out mapped or fetched ([`held`]), a lock per entry of
//! that cache shared by the processes of a machine ([`locks`]), and a record's framing
//! checked in the bytes read at its offset, or its ArrayRecord chunk checked and decoded
//! ([`framed`]).
//!
//! Uses the engine's record reader (the streaming pass), names and errors, and the storage
//! crate (ranged reads, local or in a store); not `stream`.

pub(crate) mod cache;
pub(crate) mod framed;
pub(crate) mod held;
pub(crate) mod index;
pub(crate) mod locks;
pub(crate) mod record_index;
pub(crate) mod salvaged;
pub(crate) mod spans;
pub(crate) mod stated;
