//! What of2tf gives back as tf2of found it, from the manifest tf2of wrote: the TFRecord
//! files under their names, each with the compression it had, and the compression a
//! dataset's files get otherwise.

use ofconvert_tfrecord::Compression;

use super::dataset::Restore;
use crate::manifest::Manifest;
use crate::options::{Direction, Options, TfFile};
use crate::storage::Listed;

/// The TFRecord files the OneFlow dataset in directory `dir_name` was converted from, when
/// of2tf can give them back as they were: its manifest is tf2of's, each of its parts is
/// there as listed and holds one whole input file, and this run neither reshards nor asks
/// for a compression other than those files had. `has_parent`: whether the directory has
/// one in the input, for a dataset tf2of gave a directory of its own to go back to.
pub(super) fn restore_of(
    manifest: &Manifest,
    parts: &[(u64, Listed)],
    options: &Options,
    dir_name: &str,
    has_parent: bool,
) -> Option<Restore> {
    let sizing = options.sizing;
    if manifest.settings.direction != Direction::TfToOf
        || sizing.reshards()
        || sizing.max_part_bytes.is_some()
        || manifest.parts.len() != parts.len()
    {
        return None;
    }
    let untouched = manifest
        .parts
        .iter()
        .zip(parts)
        .all(|(listed, (_, found))| listed.name == found.name && listed.bytes == found.size);
    let from: Vec<&str> = manifest
        .parts
        .iter()
        .map(|part| part.from.as_deref())
        .collect::<Option<_>>()?;
    let files: Vec<(String, bool)> = manifest
        .inputs
        .iter()
        .map(|input| {
            let name = input.path.rsplit('/').next().unwrap_or_default();
            (name.to_owned(), input.bytes == 0)
        })
        .collect();
    // Each file goes back compressed as it was; when the run asks for one compression
    // (ArrayRecord files have their own), only files that had it go back under their names.
    let compressions: Vec<Compression> = manifest
        .inputs
        .iter()
        .filter(|input| input.bytes > 0)
        .map(|input| input.compression.parse().ok())
        .collect::<Option<_>>()?;
    let asked = match options.to {
        TfFile::Tfrecord => options.compression,
        TfFile::ArrayRecord => Some(Compression::None),
    };
    let same_compression = asked.is_none_or(|asked| compressions.iter().all(|had| *had == asked));
    let restore = Restore {
        shared: manifest
            .subfolder
            .clone()
            .filter(|subfolder| subfolder == dir_name && has_parent),
        files,
        compressions,
    };
    let mut names: Vec<&str> = restore
        .files
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    names.sort_unstable();
    // Names written down with invalid UTF-8 replaced are not the names the files had; and
    // a name that says ArrayRecord (or not) must say what is written under it, as must one
    // that says Parquet (never written here).
    let array_record = options.to == TfFile::ArrayRecord;
    let exact = names.iter().all(|name| {
        !name.is_empty()
            && !name.contains(char::REPLACEMENT_CHARACTER)
            && name.contains(".array_record") == array_record
            && !name.contains(".parquet")
    });
    let distinct = names.windows(2).all(|pair| pair[0] != pair[1]) && exact;
    (untouched && same_compression && distinct && restore.part_names().eq(from)).then_some(restore)
}

/// The compression most of the inputs a tf2of manifest lists had (the first of those on a
/// tie; empty files, which are no stream, and ArrayRecord files left out), if any had one.
pub(super) fn recorded_compression(manifest: &Manifest) -> Option<Compression> {
    if manifest.settings.direction != Direction::TfToOf {
        return None;
    }
    let had: Vec<Compression> = manifest
        .inputs
        .iter()
        .filter(|input| input.bytes > 0)
        .filter_map(|input| input.compression.parse().ok())
        .collect();
    let count = |compression: &Compression| had.iter().filter(|c| *c == compression).count();
    // `max_by_key` keeps the last of equals: the first is wanted.
    had.iter()
        .rev()
        .max_by_key(|compression| count(compression))
        .copied()
}
