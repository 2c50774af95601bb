//! A dataset's fingerprint: what a resumed stream checks that it reads the dataset the
//! state was saved from.

use crate::access::index::IndexedFile;

/// A hash of each file's name (its last component: a copy of the dataset elsewhere, on a
/// disk or in a bucket, is the same dataset), record count and byte length, in order: stable
/// across processes and versions (FNV-1a), so that a state saved on one machine is checked
/// on another; a file added, removed, renamed, reordered or rewritten to another length
/// changes it.
pub fn fingerprint(files: &[IndexedFile]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &byte in bytes.iter().chain(&[0]) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for file in files {
        let name = file.path.file_name().unwrap_or(file.path.as_os_str());
        eat(name.to_string_lossy().as_bytes());
        eat(&file.index.len().to_le_bytes());
        eat(&file.index.span(0..file.index.len()).end.to_le_bytes());
    }
    hash
}
