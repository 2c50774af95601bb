//! Configuration: what a caller asks for in its own words (sizes such as `256M`, rename,
//! cast and offset rules, a preset, policy names, compression names, a worker's share),
//! turned into [`Options`](crate::Options), the rules checked against the data, and the run
//! itself, once for every front end. The command line and the Python package only parse
//! their own syntax into a [`ConvertConfig`]; the checks, the defaults and the messages
//! (in each front end's words, [`FrontEnd`](crate::FrontEnd)) are made here.
//!
//! The top layer: it may use every other.

mod convert;
mod hints;
mod inputs;
mod mapping;
mod values;

pub use convert::{ConvertConfig, Ran};
pub use hints::{failure_hint, nothing_found};
pub use mapping::{MappingRules, IMAGENET_KEYS};
pub use values::{choice, parse_size, Cast, Choice, Images, Offset, Preset, Rename};
