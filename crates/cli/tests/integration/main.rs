//! The `ofconvert` binary driven from outside, in temporary directories: one test binary,
//! with the shared helpers in `util`.

mod util;

mod arrayrecord;
mod cat_raw;
mod chaos;
mod chaos_proxy;
mod convert;
mod damaged;
mod diff;
#[cfg(unix)]
mod faults;
mod http;
mod images;
mod inspect;
mod lossless;
mod lossy;
mod objects;
mod parquet;
mod record_files;
#[cfg(unix)]
mod replace;
mod resume;
mod retry_after;
mod salvage;
mod scripted;
mod shard;
mod shard_race;
mod tfds;
mod tls;
mod usage;
