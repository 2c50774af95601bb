//! Ranged reads asked for a version of an object (a dataset's reads, of the version it
//! opened): the bytes are of that version, or, once the object is replaced, the read fails
//! as [`Replaced`](crate::transfer::Replaced) and gives no byte of the new one. Over the
//! `object_store` crate's own store in memory, which answers `If-Match` as S3 does.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutPayload};

use super::ObjectStorage;
use crate::kind::{StoreInfo, StoreKind};
use crate::stores::StoreSettings;
use crate::transfer::is_replaced;
use crate::{RangeRead, Storage};

/// `s3://bucket`, served from memory.
fn in_memory() -> ObjectStorage {
    let store = Arc::new(InMemory::new());
    ObjectStorage {
        store: store.clone(),
        create_store: store,
        settings: StoreSettings::current(),
        root: "s3://bucket".to_owned(),
        info: Arc::new(StoreInfo {
            kind: StoreKind::S3,
            bucket: "bucket".to_owned(),
            endpoint: None,
            metadata: Vec::new(),
            unsigned: false,
        }),
        runtime: Arc::new(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        ),
        ranges: Arc::new(AtomicBool::new(true)),
    }
}

fn put(storage: &ObjectStorage, key: &str, bytes: &'static [u8]) {
    let key = ObjectPath::parse(key).unwrap();
    storage
        .block_on(storage.store.put(&key, PutPayload::from_static(bytes)))
        .unwrap();
}

#[test]
fn ranges_asked_for_a_version_are_of_it_or_fail_once_the_object_is_replaced() {
    let storage = in_memory();
    let path = Path::new("s3://bucket/data/one");
    put(&storage, "data/one", b"0123456789");
    let (size, version) = storage.stat(path).unwrap().unwrap();
    assert_eq!(size, 10);
    let version = version.as_deref();
    assert!(version.is_some_and(|v| v.starts_with("etag:")));

    let mut out = Vec::new();
    storage
        .read_ranges(path, version, &[2..4, 7..9], &mut out)
        .unwrap();
    assert_eq!(out, b"2378");
    let requests = [
        RangeRead {
            path,
            version,
            range: 8..10,
        },
        RangeRead {
            path,
            version,
            range: 0..3,
        },
    ];
    let mut buffers = vec![Vec::new(), Vec::new()];
    let read = storage.read_each(&requests, 4, &mut buffers);
    assert!(read.iter().all(Result::is_ok));
    assert_eq!(buffers, [b"89".to_vec(), b"012".to_vec()]);

    // Replaced by an object of the same size: every read of the former version fails,
    // naming the object, and none gives the new bytes.
    put(&storage, "data/one", b"abcdefghij");
    let mut out = Vec::new();
    let err = storage
        .read_ranges(path, version, &[2..4, 7..9], &mut out)
        .unwrap_err();
    assert!(is_replaced(&err), "{err}");
    assert!(
        err.to_string().starts_with("s3://bucket/data/one: "),
        "{err}"
    );
    assert!(out.is_empty());
    let read = storage.read_each(&requests, 4, &mut buffers);
    for result in read {
        let err = result.unwrap_err();
        assert!(is_replaced(&err), "{err}");
    }

    // Asked for no version, a read gives what is there.
    storage
        .read_ranges(path, None, &[2..4, 7..9], &mut out)
        .unwrap();
    assert_eq!(out, b"cdhi");
    let err = std::io::Error::other("another failure");
    assert!(!is_replaced(&err));
}
