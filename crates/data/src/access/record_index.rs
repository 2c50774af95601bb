//! Where a file's records are: each one's bytes, or, for an ArrayRecord file, each chunk's
//! and the records it holds; read from and written in the `index` command's format.

use std::io::Write;
use std::ops::Range;

/// Where each record of one file starts, and where the last ends; or, for a file whose records
/// come in chunks (ArrayRecord), where each chunk starts and which records it holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordIndex {
    /// The start of each entry (a record, or a chunk of them), then the end of the last: one
    /// more than there are entries.
    bounds: Vec<u64>,
    /// The first record of each entry, then the number of records: empty when each entry is
    /// one record.
    firsts: Vec<u64>,
    /// Where each record ends, for an index of records with damage between them
    /// ([`with_gaps`](RecordIndex::with_gaps)): empty when each ends where the next starts.
    ends: Vec<u64>,
}

impl RecordIndex {
    /// An index of records that start at `starts` and end where the next one starts, the
    /// last at `end`.
    pub fn new(mut starts: Vec<u64>, end: u64) -> RecordIndex {
        starts.push(end);
        RecordIndex {
            bounds: starts,
            firsts: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// An index of records that take the bytes `ranges`, in order and apart, with what lies
    /// between them (damage stepped over) in no record.
    pub fn with_gaps(ranges: &[Range<u64>]) -> RecordIndex {
        let mut bounds: Vec<u64> = ranges.iter().map(|range| range.start).collect();
        bounds.push(ranges.last().map_or(0, |range| range.end));
        let apart = ranges.windows(2).any(|pair| pair[0].end != pair[1].start);
        RecordIndex {
            bounds,
            firsts: Vec::new(),
            ends: match apart {
                true => ranges.iter().map(|range| range.end).collect(),
                false => Vec::new(),
            },
        }
    }

    /// An index of chunks of records (an ArrayRecord file's): chunk `c` starts at `starts[c]`
    /// and holds the records from `firsts[c]` to the next chunk's first (to `records`, for
    /// the last), and ends where the next one starts, the last at `end`. A record's
    /// [`range`](RecordIndex::range) is then its chunk's.
    pub fn of_chunks(starts: Vec<u64>, mut firsts: Vec<u64>, records: u64, end: u64) -> Self {
        debug_assert_eq!(starts.len(), firsts.len());
        firsts.push(records);
        let single = firsts
            .iter()
            .enumerate()
            .all(|(at, &first)| first == at as u64);
        let mut index = RecordIndex::new(starts, end);
        if !single {
            index.firsts = firsts;
        }
        index
    }

    /// The entry that holds record `index`.
    fn entry(&self, index: u64) -> usize {
        match self.firsts.split_last() {
            None => index as usize,
            Some((_, firsts)) => firsts.partition_point(|&first| first <= index).max(1) - 1,
        }
    }

    /// The entries before the one that holds record `end` (all of them for the last record's
    /// end): where a range of records ending at `end` ends.
    fn entries_before(&self, end: u64) -> usize {
        match self.firsts.split_last() {
            None => end as usize,
            Some((_, firsts)) => firsts.partition_point(|&first| first < end),
        }
    }

    /// How many records.
    pub fn len(&self) -> u64 {
        match self.firsts.last() {
            Some(&records) => records,
            None => self.bounds.len().saturating_sub(1) as u64,
        }
    }

    /// Whether there is no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes record `index` takes, framing included: its chunk's, for records in
    /// chunks. Panics past the last record.
    pub fn range(&self, index: u64) -> Range<u64> {
        let entry = self.entry(index);
        self.bounds[entry]..self.end_of(entry)
    }

    /// Where entry `entry` ends.
    fn end_of(&self, entry: usize) -> u64 {
        match self.ends.get(entry) {
            Some(&end) => end,
            None => self.bounds[entry + 1],
        }
    }

    /// The records that share record `index`'s [`range`](RecordIndex::range): itself alone,
    /// unless the records come in chunks.
    pub fn records_with(&self, index: u64) -> Range<u64> {
        match self.firsts.is_empty() {
            true => index..index + 1,
            false => {
                let entry = self.entry(index);
                self.firsts[entry]..self.firsts[entry + 1]
            }
        }
    }

    /// Asks the processor for record `index`'s entry ahead of [`range`](RecordIndex::range):
    /// a reader of records far apart asks for all of theirs first, then reads them.
    pub fn prefetch(&self, index: u64) {
        if self.firsts.is_empty() {
            crate::memory::prefetch(self.bounds.get(index as usize));
        }
    }

    /// The bytes the records `records` take, from the first's start to the last's end
    /// (their chunks', for records in chunks).
    pub fn span(&self, records: Range<u64>) -> Range<u64> {
        let before = self.entries_before(records.end);
        let end = match before {
            0 => self.bounds[0],
            _ => self.end_of(before - 1),
        };
        if records.is_empty() {
            let start = self.bounds[before];
            return start..start;
        }
        self.bounds[self.entry(records.start)]..end
    }

    /// Reads an index in the `index` command's format; `None` unless it covers a file of
    /// `size` bytes record after record from its start (an index of another file, or of
    /// this one before it changed).
    pub fn parse(text: &[u8], size: u64) -> Option<RecordIndex> {
        let mut bounds = vec![0];
        for entry in entries(text) {
            let (offset, length) = entry?;
            if bounds.last() != Some(&offset) {
                return None;
            }
            bounds.push(offset.checked_add(length)?);
        }
        (bounds.last() == Some(&size)).then_some(RecordIndex {
            bounds,
            firsts: Vec::new(),
            ends: Vec::new(),
        })
    }

    /// Reads an index that [`with_gaps`](RecordIndex::with_gaps) made, in the `index`
    /// command's format: records in order and apart, ending at or before `size`; `None`
    /// otherwise.
    pub fn parse_with_gaps(text: &[u8], size: u64) -> Option<RecordIndex> {
        let mut ranges: Vec<Range<u64>> = Vec::new();
        for entry in entries(text) {
            let (offset, length) = entry?;
            if ranges.last().map_or(0, |last| last.end) > offset {
                return None;
            }
            ranges.push(offset..offset.checked_add(length)?);
        }
        (ranges.last().map_or(0, |last| last.end) <= size).then(|| RecordIndex::with_gaps(&ranges))
    }

    /// The index in the `index` command's format (of records one by one: an index of chunks
    /// is not kept, the file's footer is).
    pub fn to_text(&self) -> Vec<u8> {
        let mut text = Vec::with_capacity(self.bounds.len() * 16);
        for entry in 0..self.bounds.len().saturating_sub(1) {
            let start = self.bounds[entry];
            // Writing into a Vec cannot fail.
            let _ = writeln!(text, "{} {}", start, self.end_of(entry) - start);
        }
        text
    }
}

/// Each line of an index in the `index` command's format, as its record's offset and
/// length; `None` for a line that is not one, or of a length of 0.
fn entries(text: &[u8]) -> impl Iterator<Item = Option<(u64, u64)>> + '_ {
    let entry = |line: &[u8]| {
        let line = std::str::from_utf8(line).ok()?;
        let (offset, length) = line.trim().split_once(' ')?;
        let (offset, length): (u64, u64) = (offset.parse().ok()?, length.trim().parse().ok()?);
        (length > 0).then_some((offset, length))
    };
    text.split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_reads_back_and_refuses_another_files() {
        let index = RecordIndex::new(vec![0, 16, 40], 57);
        assert_eq!(index.to_text(), b"0 16\n16 24\n40 17\n");
        assert_eq!(
            RecordIndex::parse(&index.to_text(), 57),
            Some(index.clone())
        );
        assert_eq!(index.range(1), 16..40);
        assert_eq!(index.span(1..3), 16..57);
        for (text, size) in [
            (&b"0 16\n16 24\n40 17\n"[..], 58),
            (b"0 16\n17 23\n40 17\n", 57),
            (b"0 16\nsixteen 24\n", 40),
            (b"4 16\n", 20),
        ] {
            assert_eq!(RecordIndex::parse(text, size), None, "{text:?}");
        }
        assert_eq!(
            RecordIndex::parse(b"", 0),
            Some(RecordIndex::new(vec![], 0))
        );
    }

    #[test]
    fn an_index_with_gaps_leaves_the_damage_between_its_records_out() {
        let index = RecordIndex::with_gaps(&[0..16, 30..40, 40..57, 70..80]);
        assert_eq!(index.len(), 4);
        let ranges: Vec<_> = (0..4).map(|record| index.range(record)).collect();
        assert_eq!(ranges, [0..16, 30..40, 40..57, 70..80]);
        assert_eq!(index.span(0..4), 0..80);
        assert_eq!(index.span(1..3), 30..57);
        assert_eq!(index.span(0..1), 0..16);
        assert_eq!(index.span(2..2), 40..40);
        assert_eq!(index.span(4..4), 80..80);
        let text = index.to_text();
        assert_eq!(text, b"0 16\n30 10\n40 17\n70 10\n");
        // Not an index of the whole file: the strict reading refuses it.
        assert_eq!(RecordIndex::parse(&text, 80), None);
        assert_eq!(RecordIndex::parse_with_gaps(&text, 90), Some(index));
        for (text, size) in [
            (&b"0 16\n10 10\n"[..], 40),
            (b"0 16\n20 10\n", 29),
            (b"0 0\n", 10),
        ] {
            assert_eq!(RecordIndex::parse_with_gaps(text, size), None, "{text:?}");
        }
        // Records one after another: the same index as a whole file's.
        let whole = RecordIndex::with_gaps(&[0..16, 16..40, 40..57]);
        assert_eq!(whole, RecordIndex::new(vec![0, 16, 40], 57));
        assert_eq!(RecordIndex::with_gaps(&[]), RecordIndex::new(vec![], 0));
    }

    #[test]
    fn an_index_of_chunks_gives_each_record_its_chunks_bytes() {
        // Chunks of 3, 1 and 2 records.
        let index = RecordIndex::of_chunks(vec![64, 200, 300], vec![0, 3, 4], 6, 450);
        assert_eq!(index.len(), 6);
        let ranges: Vec<_> = (0..6).map(|record| index.range(record)).collect();
        assert_eq!(
            ranges,
            [64..200, 64..200, 64..200, 200..300, 300..450, 300..450]
        );
        let sharing: Vec<_> = (0..6).map(|record| index.records_with(record)).collect();
        assert_eq!(sharing, [0..3, 0..3, 0..3, 3..4, 4..6, 4..6]);
        assert_eq!(index.span(0..6), 64..450);
        assert_eq!(index.span(1..2), 64..200);
        assert_eq!(index.span(2..5), 64..450);
        assert_eq!(index.span(3..4), 200..300);
        assert_eq!(index.span(4..4), 300..300);
        assert_eq!(index.span(6..6), 450..450);

        // A record a chunk is an index of records.
        let single = RecordIndex::of_chunks(vec![64, 100], vec![0, 1], 2, 150);
        assert_eq!(single, RecordIndex::new(vec![64, 100], 150));
        assert_eq!(single.records_with(1), 1..2);
    }
}
