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
//!
//! The same look, at fewer records (the first record of each file), gives the keys every
//! batch of a dataset holds ([`feature_keys`]), kept in the cache so that it is made once.

use std::collections::BTreeSet;
use std::path::Path;

use ofconvert_engine::{
    no_such_feature, record_feature_names, Checksums, Error, ErrorKind, RecordAt, RULE_SAMPLE,
};
use ofconvert_storage::object::is_url;

use crate::access::cache::{cache_dir, cache_name, write_whole};
use crate::access::framed::payload;
use crate::access::locks::EntryLock;
use crate::access::spans::Object;
use crate::stream::fetch::{Files, Scratch};

/// Bytes of the dataset's first records looked at, at most (its first record at least).
const FIRST_BYTES: u64 = 4 << 20;

/// Bytes of the dataset's first records [`feature_keys`] looks at, at most (its first record
/// at least): the first record of every file is the rest of its look. Its first record
/// alone: the look is a record a file, a small request each, which every process of a job
/// that opens the dataset cold makes.
const KEY_BYTES: u64 = 0;

/// The records [`check_features`] looks at (see the module's documentation), in order, and
/// how many of them are the dataset's first: up to `first_bytes` of those.
fn sample(files: &Files, first_bytes: u64) -> (Vec<u64>, u64) {
    let mut indices = Vec::new();
    let mut bytes = 0;
    let first = RULE_SAMPLE.min(files.len());
    while (indices.len() as u64) < first && (indices.is_empty() || bytes < first_bytes) {
        let at = indices.len() as u64;
        let (file, record) = files.locate(at);
        if record > 0 && files.files[file].index.get().is_none() {
            // A file whose count was stated, its index not made: its first record alone,
            // so that a process reads whole only the files its lanes read.
            break;
        }
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
    let (indices, first) = sample(files, FIRST_BYTES);
    // Files whose index is not made (counts stated) have their first records read alone.
    let names = match files.files.iter().all(|file| file.index.get().is_some()) {
        true => names_of(files, &indices, checksums),
        false => names_alone(files, &indices, checksums),
    };
    let Some(names) = names.filter(|names| !names.is_empty()) else {
        return Ok(());
    };
    let Some(missing) = wanted.iter().find(|name| !names.contains(*name)) else {
        return Ok(());
    };
    let read = looked_at(files, &indices, first);
    Err(Error::new(ErrorKind::Usage(format!(
        "features={wanted:?}: {}",
        no_such_feature(missing, &read, &names)
    ))))
}

/// The feature names of the records at `indices`; `None` when one of them cannot be read
/// or parsed.
fn names_of(files: &Files, indices: &[u64], checksums: Checksums) -> Option<BTreeSet<String>> {
    let mut scratch = Scratch::default();
    files.fetch(indices, &mut scratch).ok()?;
    names_fetched(files, &scratch, checksums)
}

/// The feature names of the records a fetch read into `scratch`.
fn names_fetched(
    files: &Files,
    scratch: &Scratch,
    checksums: Checksums,
) -> Option<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    let mut all_parsed = true;
    let walked = files.each::<Error>(scratch, checksums, |file, _, payload| {
        all_parsed &= record_feature_names(payload, file.format, &mut names);
        Ok(())
    });
    (walked.is_ok() && all_parsed).then_some(names)
}

/// [`names_of`] for a few records looked at alone: each read from the cache of spans where
/// it holds it (an index pass kept the dataset there), else on its own, never in the chunk
/// a read through the cache fetches (which a node whose ranks read other records would
/// fetch for nothing).
fn names_alone(files: &Files, indices: &[u64], checksums: Checksums) -> Option<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    let mut fetched = Vec::new();
    for &index in indices {
        let (file, record) = files.locate(index);
        let indexed = &files.files[file];
        // A file whose count was stated: its first record was read when it was opened.
        let head = indexed.index.head_bytes().filter(|_| record == 0);
        let kept = head.map(<[u8]>::to_vec).or_else(|| {
            files
                .cache()
                .filter(|_| files.remote[file] && !indexed.array_record)
                .and_then(|cache| {
                    let object = Object {
                        url: indexed.path.to_str()?,
                        size: indexed.size,
                        version: indexed.version.as_deref(),
                    };
                    cache.get(object, &indexed.index.range(record))
                })
        });
        match kept {
            Some(framed) => {
                let at = RecordAt {
                    offset: indexed.index.range(record).start,
                    index: record,
                };
                let payload =
                    payload(&framed, indexed.format, checksums, &indexed.path, at).ok()?;
                if !record_feature_names(payload, indexed.format, &mut names) {
                    return None;
                }
            }
            None => fetched.push(index),
        }
    }
    if !fetched.is_empty() {
        let mut scratch = Scratch::default();
        files.fetch_through(&fetched, &mut scratch, false).ok()?;
        names.extend(names_fetched(files, &scratch, checksums)?);
    }
    Some(names)
}

/// The features every batch of the dataset holds as keys (a record that lacks one gives
/// `None` there), in name order: those of the first record of each file. They are kept in
/// the cache under a name made of every file's path, size and version, so that the look is
/// made once, and every process of a job finds the same keys. Nothing (and nothing kept)
/// when the records cannot all be read or parsed: reading them says what is wrong.
pub fn feature_keys(files: &Files, checksums: Checksums, cache: Option<&Path>) -> Vec<String> {
    if files.is_empty() {
        return Vec::new();
    }
    let mut sources = String::new();
    for file in &files.files {
        let path = if is_url(&file.path) {
            file.path.clone()
        } else {
            std::fs::canonicalize(&file.path).unwrap_or_else(|_| file.path.clone())
        };
        sources.push_str(&format!(
            "{}\n{}\n{}\n",
            path.display(),
            file.size,
            file.version.as_deref().unwrap_or("")
        ));
    }
    let dir = cache_dir(cache);
    let name = cache_name(&sources, files.len(), None, ".keys");
    let kept = dir.join(&name);
    let read_kept = || {
        std::fs::read(&kept)
            .ok()
            .and_then(|text| serde_json::from_slice::<Vec<String>>(&text).ok())
    };
    if let Some(keys) = read_kept() {
        return keys;
    }
    // Looked for once between the processes of the machine: the others wait, then find them.
    let _looking = EntryLock::take(&dir, &name).ok();
    if let Some(keys) = read_kept() {
        return keys;
    }
    let (indices, _) = sample(files, KEY_BYTES);
    let Some(names) = names_alone(files, &indices, checksums) else {
        return Vec::new();
    };
    let keys: Vec<String> = names.into_iter().collect();
    if let Ok(text) = serde_json::to_vec(&keys) {
        // Not kept, the next dataset opened looks again.
        let _ = write_whole(&kept, &text);
    }
    keys
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

    #[test]
    fn the_keys_are_those_of_each_file_s_first_record_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = vec![example(&["caption", "id"])];
        // Past each file's first record: not looked at.
        first.extend(vec![example(&["id"]); 20]);
        first.push(example(&["late"]));
        let later = vec![example(&["weight", "id"]), example(&["later"])];
        let files = dataset(dir.path(), &[first, Vec::new(), later]);
        let cache = dir.path().join("keys");
        let keys = feature_keys(&files, Checksums::Verify, Some(&cache));
        assert_eq!(keys, ["caption", "id", "weight"]);
        // Kept, and found there: the files are not read again.
        for number in 0..3 {
            std::fs::write(dir.path().join(format!("part-{number}.tfrecord")), b"").unwrap();
        }
        assert_eq!(feature_keys(&files, Checksums::Verify, Some(&cache)), keys);
        // Records that cannot be read give no keys, and none are kept.
        let other = dir.path().join("other");
        assert!(feature_keys(&files, Checksums::Verify, Some(&other)).is_empty());
        let kept = |dir: &Path| {
            std::fs::read_dir(dir)
                .unwrap()
                .filter(|entry| {
                    entry
                        .as_ref()
                        .unwrap()
                        .path()
                        .to_string_lossy()
                        .ends_with(".keys")
                })
                .count()
        };
        assert_eq!((kept(&cache), kept(&other)), (1, 0));
    }
}
