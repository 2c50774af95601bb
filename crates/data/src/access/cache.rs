//! The cache directory: indexes that cannot be kept beside their data (a bucket, a
//! read-only place) and decompressed copies of compressed TFRecords, each named after what
//! it was made from as it was then (path, size, version), so that a changed file is never
//! read through what was made of its former content.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use ofconvert_engine::layout;

/// The variable that names the cache directory.
pub const CACHE_DIR_VARIABLE: &str = "OFCONVERT_CACHE_DIR";

/// Where derived files go: `given`, else `$OFCONVERT_CACHE_DIR`, else `ofconvert` in
/// `$XDG_CACHE_HOME` or `~/.cache`, else in the system's temporary directory.
pub fn cache_dir(given: Option<&Path>) -> PathBuf {
    if let Some(dir) = given {
        return dir.to_path_buf();
    }
    let from = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(dir) = from(CACHE_DIR_VARIABLE) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = from("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("ofconvert");
    }
    match from("HOME") {
        Some(home) => PathBuf::from(home).join(".cache").join("ofconvert"),
        None => std::env::temp_dir().join("ofconvert-cache"),
    }
}

/// Bytes of a file's own name a name in the cache keeps at most: with the hash before it,
/// a range and a suffix after it, and a temporary name's marks around it, a name stays well
/// within the 255 bytes a file system allows (an object's key may be 1,024).
const OWN_NAME_BYTES: usize = 100;

/// The name in the cache of what is made from `source` (a canonical path or a URL) of
/// `size` bytes at `version`: a hash of the three, then the file's own name (its first
/// [`OWN_NAME_BYTES`] at most: the hash, of the whole source, tells names cut alike apart)
/// and `suffix`.
pub(crate) fn cache_name(source: &str, size: u64, version: Option<&str>, suffix: &str) -> String {
    // FNV-1a: stable across processes and versions, which a name kept on disk needs.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let size = size.to_string();
    for part in [source, &size, version.unwrap_or("")] {
        for &byte in part.as_bytes().iter().chain(&[0]) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let name = source.rsplit('/').next().unwrap_or(source);
    let mut cut = name.len().min(OWN_NAME_BYTES);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{hash:016x}-{}{suffix}", &name[..cut])
}

/// Writes `bytes` to the local `path` whole or not at all (a hidden temporary file renamed
/// into place), creating its directory.
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (dir, name) = split(path)?;
    fs::create_dir_all(dir)?;
    let temp = dir.join(layout::staged_name(name));
    let written = fs::File::create(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    match written.and_then(|()| fs::rename(&temp, path)) {
        Ok(()) => Ok(()),
        Err(err) => {
            let _ = fs::remove_file(&temp);
            Err(err)
        }
    }
}

/// A hidden temporary file beside `path`, to be renamed to it once whole.
pub(crate) fn temporary_beside(path: &Path) -> io::Result<PathBuf> {
    let (dir, name) = split(path)?;
    fs::create_dir_all(dir)?;
    Ok(dir.join(layout::staged_name(name)))
}

fn split(path: &Path) -> io::Result<(&Path, &str)> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| io::Error::other(format!("{}: not a file name", path.display())))?;
    Ok((dir, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_name_changes_with_the_source_its_size_and_its_version() {
        let name = cache_name("s3://b/train.tfrecord", 10, Some("etag:1"), ".idx");
        assert!(name.ends_with("-train.tfrecord.idx"), "{name}");
        assert_eq!(
            name,
            cache_name("s3://b/train.tfrecord", 10, Some("etag:1"), ".idx")
        );
        for other in [
            cache_name("s3://c/train.tfrecord", 10, Some("etag:1"), ".idx"),
            cache_name("s3://b/train.tfrecord", 11, Some("etag:1"), ".idx"),
            cache_name("s3://b/train.tfrecord", 10, Some("etag:2"), ".idx"),
        ] {
            assert_ne!(name, other);
        }
    }

    #[test]
    fn a_long_name_is_cut_and_the_hash_keeps_names_apart() {
        let long = format!("s3://b/{}é.tfrecord", "k".repeat(OWN_NAME_BYTES - 1));
        let name = cache_name(&long, 10, None, ".0-10.span");
        assert!(name.len() <= 16 + 1 + OWN_NAME_BYTES + 10, "{}", name.len());
        assert!(name.ends_with("kk.0-10.span"), "{name}");
        let other = cache_name(&long.replace(".tfrecord", ".other"), 10, None, ".0-10.span");
        assert_ne!(name, other);
        // What the cache makes of it can be written.
        let dir = tempfile::tempdir().unwrap();
        write_whole(&dir.path().join(&name), b"kept").unwrap();
        let longest = format!("s3://b/{}", "k".repeat(1024));
        let name = cache_name(
            &longest,
            10,
            None,
            ".18446744073709551615-18446744073709551615.span",
        );
        write_whole(&dir.path().join(format!(".tmp-{name}")), b"kept").unwrap();
    }

    #[test]
    fn a_whole_write_leaves_the_file_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/er/x.idx");
        write_whole(&path, b"0 16\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"0 16\n");
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }
}
