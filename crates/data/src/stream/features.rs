//! Which features a dataset's records have, as far as a few of them say: what a list of
//! features to decode is checked against when a dataset is opened, so that a misspelt name
//! is refused with the closest one, as the command line refuses a rule's, rather than read
//! as a feature that every record lacks.
//!
//! The records looked at are the dataset's first ones (up to the command line's
//! [`RULE_SAMPLE`], and no more than [`FIRST_BYTES`] of them) and the first record of every
//! file: a feature that only the files of a later part of the dataset have (a dataset put
//! together from sources of two schemas) is found, at the cost of one small read a file (in
//! a store, a request each, side by side). A feature that only records past those have is
//! not seen: reading every record to know would cost an epoch.

use std::collections::BTreeSet;

use ofconvert_engine::{
    no_such_feature, record_feature_names, Checksums, Error, ErrorKind, RULE_SAMPLE,
};

use crate::stream::fetch::{Files, Scratch};

/// Bytes of the dataset's first records looked at, at most (its first record at least).
const FIRST_BYTES: u64 = 4 << 20;

/// The records [`check_features`] looks at (see the module's documentation), in order, and
/// how many of them are the dataset's first.
fn sample(files: &Files) -> (Vec<u64>, u64) {
    let mut indices = Vec::new();
    let mut bytes = 0;
    let first = RULE_SAMPLE.min(files.len());
    while (indices.len() as u64) < first && (indices.is_empty() || bytes < FIRST_BYTES) {
        let at = indices.len() as u64;
        let (file, record) = files.locate(at);
        let range = files.files[file].index.range(record);
        bytes += range.end - range.start;
        indices.push(at);
    }
    let first = indices.len() as u64;
    for (file, indexed) in files.files.iter().enumerate() {
        let start = files.first_record(file);
        if start >= first && !indexed.index.is_empty() {
            indices.push(start);
        }
    }
    (indices, first)
}

/// What the records looked at were, as a message says it: `its first 1000 records and the
/// first record of each of its 4 files`.
fn looked_at(files: &Files, indices: &[u64], first: u64) -> String {
    let with_records = files
        .files
        .iter()
        .filter(|file| !file.index.is_empty())
        .count();
    match (indices.len() as u64 == files.len(), first) {
        (true, 1) => "its one record".to_owned(),
        (true, _) => format!("its {} records", files.len()),
        (false, 1) if with_records > 1 => {
            format!("the first record of each of its {with_records} files")
        }
        (false, _) if with_records > 1 => format!(
            "its first {first} records and the first record of each of its {with_records} files"
        ),
        (false, _) => format!("its first {first} records"),
    }
}

/// Refuses a name of `wanted` (features to decode) that none of the records looked at has
/// (see the module's documentation): reading it would give nothing of any record, which is
/// almost always a typo.
///
/// # Errors
///
/// A usage error that names the first such name, the features the records looked at have
/// and the closest of them. Nothing is refused when the records looked at could not all be
/// read or parsed, or have no feature at all: there is nothing to judge by, and reading
/// them says what is wrong.
pub fn check_features(files: &Files, wanted: &[String], checksums: Checksums) -> Result<(), Error> {
    if wanted.is_empty() || files.is_empty() {
        return Ok(());
    }
    let (indices, first) = sample(files);
    let mut scratch = Scratch::default();
    if files.fetch(&indices, &mut scratch).is_err() {
        return Ok(());
    }
    let mut names = BTreeSet::new();
    let mut all_parsed = true;
    let walked = files.each::<Error>(&scratch, checksums, |file, _, payload| {
        all_parsed &= record_feature_names(payload, file.format, &mut names);
        Ok(())
    });
    if walked.is_err() || !all_parsed || names.is_empty() {
        return Ok(());
    }
    let Some(missing) = wanted.iter().find(|name| !names.contains(*name)) else {
        return Ok(());
    };
    let read = looked_at(files, &indices, first);
    Err(Error::new(ErrorKind::Usage(format!(
        "features={wanted:?}: {}",
        no_such_feature(missing, &read, &names)
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::index::{open_indexed, IndexOptions};
    use ofconvert_engine::Format;
    use std::path::Path;

    /// An `Example` with an int64 feature of each name of `names`.
    fn example(names: &[&str]) -> Vec<u8> {
        let example = ofconvert_bridge::tf::example(
            names
                .iter()
                .map(|name| (*name, ofconvert_bridge::tf::int64_feature([1]))),
        );
        let mut payload = Vec::new();
        ofconvert_bridge::encode_example(&example, &mut payload);
        payload
    }

    /// A dataset of one TFRecord file for each of `files` (the records' payloads).
    fn dataset(dir: &Path, files: &[Vec<Vec<u8>>]) -> Files {
        let options = IndexOptions {
            cache_dir: Some(dir.join("cache")),
            ..IndexOptions::default()
        };
        let opened = files.iter().enumerate().map(|(number, records)| {
            let path = dir.join(format!("part-{number}.tfrecord"));
            let mut writer = ofconvert_tfrecord::Writer::new(std::fs::File::create(&path).unwrap());
            for record in records {
                writer.write_record(record).unwrap();
            }
            writer.finish().unwrap();
            open_indexed(&path, Format::Tf, &options).unwrap()
        });
        Files::new(opened.collect())
    }

    fn wanted(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn a_name_no_record_looked_at_has_is_refused_with_the_closest() {
        let dir = tempfile::tempdir().unwrap();
        let files = dataset(dir.path(), &[vec![example(&["id", "label"]); 3]]);
        assert!(check_features(&files, &wanted(&["label", "id"]), Checksums::Verify).is_ok());
        let err = check_features(&files, &wanted(&["id", "labl"]), Checksums::Verify).unwrap_err();
        assert!(err.is_usage());
        assert_eq!(
            err.to_string(),
            "features=[\"id\", \"labl\"]: no feature \"labl\" in its 3 records; the dataset has: \
             id, label; did you mean \"label\"?"
        );
    }

    #[test]
    fn a_feature_of_a_later_file_s_records_is_found_in_their_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = vec![example(&["id"]); RULE_SAMPLE as usize + 5];
        let later = vec![example(&["id", "weight"]); 3];
        let files = dataset(dir.path(), &[first, Vec::new(), later]);
        assert!(check_features(&files, &wanted(&["weight"]), Checksums::Verify).is_ok());
        let err = check_features(&files, &wanted(&["wieght"]), Checksums::Verify).unwrap_err();
        assert!(
            err.to_string().contains(
                "in its first 1000 records and the first record of each of its 2 files; the \
                 dataset has: id, weight; did you mean \"weight\"?"
            ),
            "{err}"
        );
    }

    #[test]
    fn nothing_is_refused_without_records_to_judge_by() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dataset(dir.path(), &[Vec::new()]);
        assert!(check_features(&empty, &wanted(&["x"]), Checksums::Verify).is_ok());
        let dir = tempfile::tempdir().unwrap();
        let unparsed = dataset(dir.path(), &[vec![b"\xff\xff".to_vec()]]);
        assert!(check_features(&unparsed, &wanted(&["x"]), Checksums::Verify).is_ok());
    }
}
