//! What a running conversion tells its caller.

use serde::Serialize;

/// The callback a conversion reports to. It is called from worker threads: a terminal
/// front end should forward events to the one thread that draws.
pub type ProgressFn<'a> = &'a (dyn Fn(Event) + Sync);

/// Something that happened during a conversion.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The conversion starts.
    Started {
        /// Datasets to convert (not counting those kept from an earlier run or failed
        /// while planning, nor the folders of files without records).
        datasets: usize,
        /// Their input files.
        files: usize,
        /// The size of those files.
        bytes: u64,
    },
    /// More input was read: increments, not totals.
    Progress {
        /// Bytes read from input files (compressed bytes for compressed files).
        bytes: u64,
        /// Records converted.
        records: u64,
    },
    /// A dataset is done.
    DatasetDone {
        /// Its name (the output directory relative to the output root).
        name: String,
        /// How it ended.
        status: DatasetStatus,
        /// Records written.
        records: u64,
        /// Parts written.
        parts: usize,
        /// Why it failed.
        error: Option<String>,
        /// Whether it holds no records, only the files of a folder outside every dataset's.
        files_only: bool,
    },
}

/// How a dataset ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetStatus {
    /// Converted by this run.
    Converted,
    /// Complete from an earlier run, left as it was (`--resume`).
    Kept,
    /// Not converted; nothing of it is left in the output.
    Failed,
    /// The run was stopped ([`Interrupt`](crate::Interrupt)) before the dataset was done;
    /// nothing of it was published, and a resumed run converts it.
    Interrupted,
}
