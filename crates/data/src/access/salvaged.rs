//! Indexes for readers that step over damage ([`IndexOptions::salvage`], Python's
//! `on_corrupt="skip"`): made in one pass that reads every record, checks it and steps over
//! damage as `tf2of --on-corrupt skip` does ([`RecordReader::read_skipping`]), so that the
//! index holds the sound records alone and says what was stepped over. Such an index is
//! kept in the cache under a name of its own, with its counts after its records: a reader
//! that does not skip never takes it for a file's whole index, and one that does never
//! takes an index that did not check every record (the `index` command's, which steps over
//! data) for one that did.
//!
//! A record whose length alone was damaged, which `read` and `tf2of` bring back through its
//! data checksum, is left out here and counted as damaged: random access reads a record by
//! its framing, and its framing is what is damaged. (A compressed file's copy in the cache is
//! framed anew: there such a record is kept, and counted as recovered.)
//!
//! [`IndexOptions::salvage`]: crate::access::index::IndexOptions::salvage

use std::ops::Range;

use ofconvert_engine::{Checksums, Error, RecordReader, SkippedRecords};

use crate::access::record_index::RecordIndex;

/// What the name of a salvaged index in the cache ends with: of a pass that checked the
/// records' checksums, or of one that did not.
pub(crate) fn suffix(checksums: Checksums) -> &'static str {
    match checksums {
        Checksums::Verify => ".salvaged.idx",
        Checksums::Ignore => ".salvaged-unchecked.idx",
    }
}

/// Indexes the sound records `reader` reads from where it is to the end, stepping over
/// damage, and counts what it stepped over.
pub(crate) fn build(mut reader: RecordReader<'_>) -> Result<(RecordIndex, SkippedRecords), Error> {
    let mut skipped = SkippedRecords::default();
    let mut ranges: Vec<Range<u64>> = Vec::new();
    let mut buf = Vec::new();
    loop {
        let recovered = skipped.recovered;
        let Some(at) = reader.read_skipping(&mut buf, &mut skipped)? else {
            break;
        };
        if skipped.recovered > recovered {
            // Its framing is damaged: left out, as the module's documentation says.
            skipped.recovered -= 1;
            skipped.corrupt += 1;
            continue;
        }
        ranges.push(at.offset..reader.position().offset);
    }
    Ok((RecordIndex::with_gaps(&ranges), skipped))
}

/// A salvaged index in its text: its records in the `index` command's format, then a line
/// `#skipped CORRUPT RECOVERED SIZE` (the file's size) and a `#detail` line for each detail kept.
pub(crate) fn to_text(index: &RecordIndex, skipped: &SkippedRecords, size: u64) -> Vec<u8> {
    let mut text = index.to_text();
    text.extend_from_slice(
        format!(
            "#skipped {} {} {size}\n",
            skipped.corrupt, skipped.recovered
        )
        .as_bytes(),
    );
    for detail in &skipped.details {
        text.extend_from_slice(format!("#detail {}\n", detail.replace('\n', " ")).as_bytes());
    }
    text
}

/// Reads what [`to_text`] wrote for a file of `size` bytes; `None` unless it is whole and of
/// a file of that size.
pub(crate) fn parse(text: &[u8], size: u64) -> Option<(RecordIndex, SkippedRecords)> {
    let text = std::str::from_utf8(text).ok()?;
    let at = text.find("#skipped ")?;
    let (records, counts) = text.split_at(at);
    let mut lines = counts.lines();
    let mut words = lines.next()?.strip_prefix("#skipped ")?.split(' ');
    let corrupt: u64 = words.next()?.parse().ok()?;
    let recovered: u64 = words.next()?.parse().ok()?;
    let of_size: u64 = words.next()?.parse().ok()?;
    if of_size != size || words.next().is_some() {
        return None;
    }
    let details = lines
        .map(|line| line.strip_prefix("#detail ").map(str::to_owned))
        .collect::<Option<Vec<String>>>()?;
    let index = RecordIndex::parse_with_gaps(records.as_bytes(), size)?;
    let skipped = SkippedRecords {
        corrupt,
        recovered,
        details,
        ..SkippedRecords::default()
    };
    Some((index, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_salvaged_index_reads_back_only_for_its_files_size() {
        let index = RecordIndex::with_gaps(&[0..16, 30..40]);
        let skipped = SkippedRecords {
            corrupt: 1,
            recovered: 2,
            details: vec!["a.tfrecord: offset 16 (record #1): truncated".to_owned()],
            ..SkippedRecords::default()
        };
        let text = to_text(&index, &skipped, 48);
        assert_eq!(parse(&text, 48), Some((index.clone(), skipped)));
        assert_eq!(parse(&text, 47), None);
        // Not a whole file's index, for a reader that does not skip.
        assert_eq!(RecordIndex::parse(&text, 48), None);
        // An index without its counts is not a salvaged one.
        assert_eq!(parse(&index.to_text(), 48), None);
    }
}
