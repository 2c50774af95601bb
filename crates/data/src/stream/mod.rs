//! Training streams: the order an epoch reads a dataset's records in and who reads which.
//! [`order`] owns an epoch's order (the records' own, a global permutation, or a block
//! shuffle of chunks of neighbouring records spread over windows), computed position by
//! position from the seed, the epoch and the dataset alone, its windows counted from the
//! start of each process's lane; [`share`] deals the positions a pass reads into one lane of
//! neighbouring positions for each rank and loader worker, so that processes need different
//! bytes, and stops a pass as a few integers that resume it on any number of either;
//! [`fingerprint`] names a dataset's files as a resumed state must find them; [`features`]
//! checks the names of features to decode against those of a few records; [`fetch`] reads the records of a
//! batch (local files mapped, ranges of a store merged and fetched side by side) and whole
//! spans of neighbouring records; [`prefetch`] reads a worker's units ahead, by records or
//! by spans, which [`ahead`] fetches before they are cut from; [`pieces`] reads the pieces of
//! chunks through the cache of spans (`access::spans`, on local disk within a limit, for the
//! next epoch and the other workers of the machine), whole for a span, in part for a batch's
//! records.
//!
//! Uses `access` (record indexes, framing, the cache of spans), the storage crate (the
//! stores) and the engine's record reader, options and names.

pub(crate) mod ahead;
#[cfg(test)]
mod exhaustive;
pub(crate) mod features;
pub(crate) mod fetch;
pub(crate) mod fingerprint;
pub(crate) mod mixture;
pub(crate) mod order;
pub(crate) mod pieces;
pub(crate) mod prefetch;
pub(crate) mod share;

/// What the stream's tests share.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;
    use std::sync::Arc;

    use crate::access::index::{open_indexed, IndexOptions};
    use crate::stream::fetch::Files;
    use crate::stream::share::Layout;
    use ofconvert_engine::Format;
    use ofconvert_tfrecord::{Compression, Writer};

    /// Every small layout the exhaustive tests try: 1–3 ranks, 1–3 workers, units of 1–3,
    /// each with and without `drop_last`.
    pub(crate) fn small_layouts() -> impl Iterator<Item = Layout> {
        (1..=3).flat_map(|world| {
            (1..=3).flat_map(move |workers| {
                (1..=3).flat_map(move |unit| {
                    [false, true].map(|drop_last| Layout {
                        world,
                        workers,
                        unit,
                        drop_last,
                    })
                })
            })
        })
    }

    /// A dataset of one TFRecord file in `dir` of `count` records `r00`, `r01`, ... (below
    /// 100 they are 3 bytes, 19 framed).
    pub(crate) fn numbered(dir: &Path, count: u64) -> Arc<Files> {
        let path = dir.join("a.tfrecord");
        let mut writer =
            Writer::with_compression(std::fs::File::create(&path).unwrap(), Compression::None);
        for record in 0..count {
            writer
                .write_record(format!("r{record:02}").as_bytes())
                .unwrap();
        }
        writer.finish().unwrap();
        let files = vec![open_indexed(&path, Format::Tf, &IndexOptions::default()).unwrap()];
        Arc::new(Files::new(files))
    }
}
