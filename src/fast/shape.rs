//! The names of the last record the single pass took, to recognise the next record with
//! the same names in the same order.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Written;

/// The names of the features of the last record the pass took, in order.
#[derive(Clone, Debug, Default)]
pub(super) struct Shape {
    /// Unique in the process to this list of names (0 before the first record).
    pub(super) id: u64,
    /// Where each name lies in `names`: its start and length.
    keys: Vec<(usize, usize)>,
    /// The names, one after the other.
    names: Vec<u8>,
}

/// Ids of shapes, unique in the process: a shape cloned with its transcoder keeps its id, and
/// holds the same names.
static NEXT_SHAPE: AtomicU64 = AtomicU64::new(1);

impl Shape {
    /// How many names the shape holds.
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether `key` is the `index`th name of this shape.
    #[inline(always)]
    pub(super) fn matches(&self, index: usize, key: &[u8]) -> bool {
        match self.keys.get(index) {
            Some(&(start, len)) if len == key.len() => self
                .names
                .get(start..start + len)
                .is_some_and(|name| same_bytes(name, key)),
            _ => false,
        }
    }

    /// Becomes the shape of the features `written` in `buf`, under a new id.
    #[cold]
    pub(super) fn remember(&mut self, buf: &[u8], written: &[Written]) {
        self.keys.clear();
        self.names.clear();
        for feature in written {
            self.keys.push((self.names.len(), feature.name.len()));
            self.names.extend_from_slice(&buf[feature.name.clone()]);
        }
        self.id = NEXT_SHAPE.fetch_add(1, Ordering::Relaxed);
    }
}

/// Equality of two slices of the same length, most of them short names, a word or two at a
/// time and without a call to `memcmp`.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    fn word(bytes: &[u8]) -> u64 {
        bytes.first_chunk().map_or(0, |w| u64::from_le_bytes(*w))
    }
    fn last_word(bytes: &[u8]) -> u64 {
        bytes.last_chunk().map_or(0, |w| u64::from_le_bytes(*w))
    }
    fn half(bytes: &[u8]) -> u32 {
        bytes.first_chunk().map_or(0, |w| u32::from_le_bytes(*w))
    }
    fn last_half(bytes: &[u8]) -> u32 {
        bytes.last_chunk().map_or(0, |w| u32::from_le_bytes(*w))
    }
    match a.len() {
        // Two words, or two halves, that overlap when the length is not twice theirs.
        16.. => word(a) == word(b) && last_word(a) == last_word(b) && a[8..] == b[8..],
        8.. => word(a) == word(b) && last_word(a) == last_word(b),
        4.. => half(a) == half(b) && last_half(a) == last_half(b),
        _ => a.iter().zip(b).all(|(x, y)| x == y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_compare_equal_only_when_equal_at_every_length() {
        let a: Vec<u8> = (1..=40).collect();
        for len in 0..=40 {
            assert!(same_bytes(&a[..len], &a[..len]));
            for at in 0..len {
                let mut b = a[..len].to_vec();
                b[at] ^= 0x20;
                assert!(!same_bytes(&a[..len], &b), "{len} {at}");
            }
        }
    }
}
