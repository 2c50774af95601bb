//! Records left out while reading a dataset (`--empty skip`, `--on-corrupt skip`): counted
//! exactly, with the first details kept for the manifest and the summary.

use serde::{Deserialize, Serialize};

/// Records left out of a dataset, with what was wrong with each.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedRecords {
    /// Records without features, left out by `--empty skip`.
    pub empty: u64,
    /// Damaged records left out by `--on-corrupt skip` (a truncated or unframeable tail
    /// counts as one; an ArrayRecord chunk, as the records its footer lists).
    pub corrupt: u64,
    /// Records whose length was damaged and which came back whole, their data checksum
    /// vouching for the one length that reaches the next record (`--on-corrupt skip`): kept,
    /// not skipped, and counted here so that the damage is not silent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub recovered: u64,
    /// `path: offset N (record #I): what`, one per damaged or recovered record (the first
    /// 1000 of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

/// Enough detail to find the damage; the counts stay exact beyond it.
const MAX_DETAILS: usize = 1000;

impl SkippedRecords {
    pub(crate) fn add(&mut self, other: SkippedRecords) {
        self.empty += other.empty;
        self.corrupt += other.corrupt;
        self.recovered += other.recovered;
        let room = MAX_DETAILS.saturating_sub(self.details.len());
        self.details.extend(other.details.into_iter().take(room));
    }

    pub(crate) fn note_corrupt(&mut self, detail: String) {
        self.corrupt += 1;
        self.note(detail);
    }

    /// Damage that cost `lost` records, known exactly (an ArrayRecord's chunk, whose
    /// records the footer counts): none when it was in padding, noted all the same.
    pub(crate) fn note_lost(&mut self, detail: String, lost: u64) {
        self.corrupt += lost;
        self.note(detail);
    }

    pub(crate) fn note_recovered(&mut self, detail: String) {
        self.recovered += 1;
        self.note(detail);
    }

    fn note(&mut self, detail: String) {
        if self.details.len() < MAX_DETAILS {
            self.details.push(detail);
        }
    }
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}
