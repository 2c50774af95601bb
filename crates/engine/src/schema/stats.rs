//! What a schema keeps of one feature while records are added: kinds, value counts,
//! presence, and facts about the values (images in bytes, integer ranges, repeated values).

use ofconvert_bridge::FeatureKind;
use serde::{Deserialize, Serialize};

use super::IntegerRange;
use crate::images::ImageTally;
use crate::scan::{for_each_bytes, for_each_integer};

/// Bit of the kind-less `Feature` in [`Stats::kinds`], after the five list kinds.
const KINDLESS: u8 = 1 << 5;

pub(super) const KIND_BITS: [(u8, Option<FeatureKind>); 6] = [
    (1, Some(FeatureKind::Bytes)),
    (1 << 1, Some(FeatureKind::Float)),
    (1 << 2, Some(FeatureKind::Double)),
    (1 << 3, Some(FeatureKind::Int32)),
    (1 << 4, Some(FeatureKind::Int64)),
    (KINDLESS, None),
];

fn kind_bit(kind: Option<FeatureKind>) -> u8 {
    match kind {
        Some(FeatureKind::Bytes) => KIND_BITS[0].0,
        Some(FeatureKind::Float) => KIND_BITS[1].0,
        Some(FeatureKind::Double) => KIND_BITS[2].0,
        Some(FeatureKind::Int32) => KIND_BITS[3].0,
        Some(FeatureKind::Int64) => KIND_BITS[4].0,
        None => KINDLESS,
    }
}

/// One feature's statistics.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Stats {
    pub(super) name: Vec<u8>,
    pub(super) kinds: u8,
    pub(super) min_values: u64,
    pub(super) max_values: u64,
    pub(super) present: u64,
    /// The number of the last record (counted from 1) that had the feature, so that a key
    /// repeated within one record counts once.
    pub(super) last_seen: u64,
    /// Made at the first bytes value; kept in the schema only if some value is an image.
    pub(super) images: Option<Box<ImageTally>>,
    pub(super) integers: Option<IntegerRange>,
    pub(super) same: Same,
}

/// Whether an integer feature holds the same few values in every record.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) enum Same {
    /// No values seen yet.
    #[default]
    Unseen,
    /// The values of every record so far, and the first record that held them.
    Values(Vec<i64>, u64),
    /// Values differ, first in this record; or a record held too many to keep.
    Differ(Option<u64>),
}

/// Equality of a few integers, without a call to `memcmp`.
fn same_values(a: &[i64], b: &[i64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Equality of two feature names, most of them short, without a call to `memcmp`.
#[inline]
pub(super) fn same_name(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    let word = |bytes: &[u8], at: usize| {
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
    };
    match n {
        0..8 => a.iter().zip(b).all(|(x, y)| x == y),
        // Two words that overlap when the name is shorter than 16 bytes.
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

/// The most values per record [`Same`] keeps.
const SAME_MAX: usize = 4;

impl Same {
    pub(super) fn observe(&mut self, values: &[i64], record: u64) {
        match self {
            Same::Unseen if values.len() <= SAME_MAX => {
                *self = Same::Values(values.to_vec(), record)
            }
            Same::Unseen => *self = Same::Differ(None),
            Same::Values(first, _) if !same_values(first, values) => {
                *self = Same::Differ(Some(record))
            }
            _ => {}
        }
    }

    /// Adds what a later builder saw, `offset` records on.
    pub(super) fn merge(&mut self, other: &Same, offset: u64) {
        match (&*self, other) {
            (_, Same::Unseen) | (Same::Differ(_), _) => {}
            (Same::Unseen, Same::Values(values, record)) => {
                *self = Same::Values(values.clone(), record + offset)
            }
            (Same::Unseen, Same::Differ(record)) => {
                *self = Same::Differ(record.map(|r| r + offset))
            }
            (Same::Values(mine, _), Same::Values(theirs, record)) if mine != theirs => {
                *self = Same::Differ(Some(record + offset))
            }
            (Same::Values(..), Same::Values(..)) => {}
            (Same::Values(..), Same::Differ(record)) => {
                *self = Same::Differ(record.map(|r| r + offset))
            }
        }
    }
}

impl Stats {
    pub(super) fn new(name: &[u8]) -> Stats {
        Stats {
            name: name.to_vec(),
            kinds: 0,
            min_values: u64::MAX,
            max_values: 0,
            present: 0,
            last_seen: 0,
            images: None,
            integers: None,
            same: Same::Unseen,
        }
    }

    /// Takes in one record's feature: its kind and how many values it holds. `record` is
    /// the record's number, counted from 1.
    #[inline(always)]
    pub(super) fn observe_at(&mut self, record: u64, kind: Option<FeatureKind>, values: usize) {
        let values = values as u64;
        self.kinds |= kind_bit(kind);
        self.min_values = self.min_values.min(values);
        self.max_values = self.max_values.max(values);
        if self.last_seen != record {
            self.last_seen = record;
            self.present += 1;
        }
    }

    /// Takes in the values of one record's serialized value `list` of `kind`: the image
    /// header of each bytes value, the range of the integers. `record` is the record's index.
    #[inline(always)]
    pub(super) fn observe_list(&mut self, kind: FeatureKind, list: &[u8], record: u64) {
        match kind {
            FeatureKind::Bytes => self.observe_bytes(list, record),
            FeatureKind::Int64 | FeatureKind::Int32 => self.observe_integers(list, record),
            _ => {}
        }
    }

    /// [`observe_list`](Stats::observe_list) for a `BytesList`.
    #[inline(always)]
    pub(super) fn observe_bytes(&mut self, list: &[u8], record: u64) {
        let tally = self.images.get_or_insert_with(Default::default);
        for_each_bytes(list, |value| tally.add(value, record));
    }

    /// [`observe_list`](Stats::observe_list) for an `Int64List` or `Int32List`.
    #[inline(always)]
    pub(super) fn observe_integers(&mut self, list: &[u8], record: u64) {
        // The form TensorFlow writes small non-negative numbers in: one packed field of
        // one-byte varints; one of them, as a label is, most often.
        if let [0x0a, len @ 1..=0x7f, ref packed @ ..] = *list {
            if usize::from(len) == packed.len() && packed.iter().all(|&b| b < 0x80) {
                self.observe_small_integers(packed, record);
                return;
            }
        }
        let (mut min, mut max) = (i64::MAX, i64::MIN);
        // Once values differ, which they soon do for most features, there is nothing more
        // to compare.
        let compare = !matches!(self.same, Same::Differ(_));
        let (mut few, mut count) = ([0i64; SAME_MAX + 1], 0);
        for_each_integer(list, |value| {
            if compare && count <= SAME_MAX {
                few[count] = value;
            }
            count += 1;
            min = min.min(value);
            max = max.max(value);
        });
        if count > 0 {
            IntegerRange::widen(&mut self.integers, Some(IntegerRange { min, max }));
        }
        if compare {
            self.same.observe(&few[..count.min(SAME_MAX + 1)], record);
        }
    }

    /// [`observe_list`](Stats::observe_list) for integers of one byte each, 0 to 127.
    #[inline]
    pub(super) fn observe_small_integers(&mut self, packed: &[u8], record: u64) {
        if let [value] = *packed {
            let value = i64::from(value);
            self.integers = Some(match self.integers {
                Some(range) => IntegerRange {
                    min: range.min.min(value),
                    max: range.max.max(value),
                },
                None => IntegerRange {
                    min: value,
                    max: value,
                },
            });
            if !matches!(self.same, Same::Differ(_)) {
                self.same.observe(&[value], record);
            }
            return;
        }
        let (min, max) = packed.iter().fold((u8::MAX, u8::MIN), |(min, max), &b| {
            (min.min(b), max.max(b))
        });
        let range = IntegerRange {
            min: i64::from(min),
            max: i64::from(max),
        };
        IntegerRange::widen(&mut self.integers, Some(range));
        if !matches!(self.same, Same::Differ(_)) {
            let mut few = [0i64; SAME_MAX + 1];
            for (slot, &b) in few.iter_mut().zip(packed) {
                *slot = i64::from(b);
            }
            self.same
                .observe(&few[..packed.len().min(SAME_MAX + 1)], record);
        }
    }
}
