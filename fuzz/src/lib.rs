//! What the fuzz targets share: a reader that hands bytes out in small pieces, reference
//! parsers the framing readers are checked against, the mapping specs the transcoder targets
//! pick from, the check that the wire path and the typed path agree, a parser that reads the
//! text and JSON renderings back, and a Riegeli file builder for the ArrayRecord reader.
//!
//! Every check panics on a disagreement, which libFuzzer reports as a crash.

pub mod agree;
pub mod pieces;
pub mod reference;
pub mod render;
pub mod riegeli;
pub mod specs;
