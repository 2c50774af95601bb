//! Object stores as [`Storage`]: S3, GCS, Azure Blob Storage and plain HTTP through the
//! `object_store` crate. Paths stay URLs (`s3://bucket/prefix/part-00000`), so every
//! message names the object as the user wrote it.
//!
//! Reads stream in bounded ranges, a few in flight, all of the version of the object the
//! read started on. Writes are multipart uploads (one request for an object no bigger than
//! a part): an object appears only once complete, and an upload that does not complete is
//! aborted.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{
    coalesce_ranges, GetOptions, ObjectStore, ObjectStoreExt, PutPayload,
    OBJECT_STORE_COALESCE_DEFAULT,
};
use tokio::runtime::Runtime;

use crate::client::NO_WEBDAV;
use crate::holder::LockHolder;
use crate::kind::{StoreInfo, StoreKind};
use crate::store_error::store_error;
use crate::stores::{self, StoreSettings};
use crate::transfer::{fetch_range, RangeReader, Source, Upload};
use crate::webdav;
use crate::LOCK_NAME;
use crate::{
    Durability, Listed, Listing, LocalFs, LockError, Opened, OutputFile, OutputLock, RangeRead,
    Storage,
};

mod by_path;
mod create;
mod lock;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod version_tests;

pub use by_path::{read_each_anywhere, ByPath};
use create::Created;

/// Whether `path` names an object in a store (`s3://`, `gs://`, `az://`, `http(s)://`...)
/// rather than a local path. `file://` URLs are local.
pub fn is_url(path: &Path) -> bool {
    path.to_str()
        .and_then(|text| text.split_once("://"))
        .is_some_and(|(scheme, _)| {
            scheme != "file"
                && !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        })
}

/// A local path for a `file://` URL, the path itself otherwise.
pub fn local_path(path: &Path) -> PathBuf {
    match path.to_str().and_then(|text| text.strip_prefix("file://")) {
        Some(rest) => PathBuf::from(rest),
        None => path.to_path_buf(),
    }
}

/// The storage of `path`: an object store for a URL (`s3://...`), the local file system for
/// a plain path or a `file://` URL. Returns the path as that storage names it.
///
/// One store (a bucket, say) is built once per process for each set of network settings
/// (`--anonymous`, the timeouts and retries) and shared by the calls made with them:
/// inspecting a thousand objects of one bucket uses one client and one pool of connections,
/// and a call with other settings gets a store built with its own.
pub fn storage_for(path: &Path) -> io::Result<(Arc<dyn Storage>, PathBuf)> {
    if !is_url(path) {
        return Ok((crate::faults::wrap(Arc::new(LocalFs)), local_path(path)));
    }
    /// The stores built, and the process that built them.
    type Stores = (u32, BTreeMap<String, Arc<ObjectStorage>>);
    static STORES: OnceLock<Mutex<Stores>> = OnceLock::new();
    let url = path.to_str().unwrap_or_default();
    let settings = StoreSettings::current();
    let root = format!("{} {settings:?}", store_root(url)?);
    let mut guard = STORES
        .get_or_init(|| Mutex::new((std::process::id(), BTreeMap::new())))
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (built_by, stores) = &mut *guard;
    if *built_by != std::process::id() {
        // A forked child (a data loader's worker) inherits the stores but not the threads of
        // their runtimes, nor connections of its own: it builds its own. The inherited ones
        // are leaked, as dropping a runtime whose threads are gone could wait for them.
        std::mem::forget(std::mem::take(stores));
        *built_by = std::process::id();
    }
    let storage = match stores.get(&root) {
        Some(storage) => Arc::clone(storage),
        None => {
            let storage = Arc::new(ObjectStorage::for_url(url, settings)?);
            stores.insert(root, Arc::clone(&storage));
            storage
        }
    };
    Ok((crate::faults::wrap(storage), path.to_path_buf()))
}

/// The URL of the store that holds `url`, `s3://bucket` for `s3://bucket/a/b`.
fn store_root(url: &str) -> io::Result<String> {
    let parsed = url::Url::parse(url)
        .map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {err}")))?;
    let root = format!(
        "{}://{}",
        parsed.scheme(),
        parsed.host_str().unwrap_or_default()
    );
    Ok(match parsed.port() {
        Some(port) => format!("{root}:{port}"),
        None => root,
    })
}

/// One object store (a bucket, a container, an HTTP server), reached through URLs that
/// start with its root, `s3://bucket` say.
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    /// The same store without retries of its own, for create-if-absent writes, which are
    /// tried here (`create`).
    create_store: Arc<dyn ObjectStore>,
    settings: StoreSettings,
    /// The URL of the store's root, without a trailing `/`.
    root: String,
    /// What the store's messages may name.
    info: Arc<StoreInfo>,
    runtime: Arc<Runtime>,
    /// Whether the store answers ranged reads (a plain HTTP server may not).
    ranges: Arc<AtomicBool>,
}

impl fmt::Debug for ObjectStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectStorage")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl ObjectStorage {
    /// The store of `url`, configured from each cloud's standard environment variables
    /// (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, ...;
    /// `GOOGLE_APPLICATION_CREDENTIALS`, ...; `AZURE_STORAGE_ACCOUNT_NAME`, ...): `stores`.
    pub fn for_url(url: &str, settings: StoreSettings) -> io::Result<ObjectStorage> {
        let root = store_root(url)?;
        let parsed = url::Url::parse(url)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {err}")))?;
        let (store, info) = stores::build(url, parsed.scheme(), &root, settings, true)?;
        let (create_store, _) = stores::build(url, parsed.scheme(), &root, settings, false)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ofconvert-io")
            .enable_all()
            .build()?;
        Ok(ObjectStorage {
            store,
            create_store,
            settings,
            info: Arc::new(info),
            root,
            runtime: Arc::new(runtime),
            ranges: Arc::new(AtomicBool::new(true)),
        })
    }

    /// The key of `path` in the store.
    fn key(&self, path: &Path) -> io::Result<ObjectPath> {
        let text = path.to_str().unwrap_or_default();
        let rest = text.strip_prefix(&self.root).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{text} is not in {}", self.root),
            )
        })?;
        ObjectPath::parse(rest.trim_matches('/'))
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, err))
    }

    /// The URL of `key`.
    fn url_of(&self, key: &ObjectPath) -> PathBuf {
        PathBuf::from(format!("{}/{}", self.root, key))
    }

    /// What is directly in `dir`; `None` from an HTTP server that lists nothing (no
    /// WebDAV).
    fn level(&self, dir: &Path) -> io::Result<Option<object_store::ListResult>> {
        let key = self.key(dir)?;
        match self.block_on(self.store.list_with_delimiter(Some(&key))) {
            Ok(listed) => Ok(Some(listed)),
            Err(_) if self.info.kind == StoreKind::Http => Ok(None),
            Err(err) => Err(self.error(err)),
        }
    }

    /// The `io::Error` of a store error.
    fn error(&self, err: object_store::Error) -> io::Error {
        store_error(&self.info, err)
    }

    fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// `key` as ranged reads read it: every range asked for of the version whose ETag is
    /// `e_tag`, when there is one, as [`transfer`](crate::transfer) reads an object.
    fn source(&self, key: ObjectPath, e_tag: Option<String>) -> Source {
        Source {
            store: Arc::clone(&self.store),
            info: Arc::clone(&self.info),
            url: self.url_of(&key).display().to_string(),
            key,
            // A weak ETag never matches `If-Match`; answers are still checked against it.
            if_match: e_tag.clone().filter(|tag| !tag.starts_with("W/")),
            e_tag,
            ranges: Arc::clone(&self.ranges),
            retries: self.settings.bounds.retries,
        }
    }
}

fn is_hidden_key(relative: &str) -> bool {
    relative.split('/').any(|part| part.starts_with('.'))
}

/// An object's version as [`Storage::stat`] and [`Storage::version`] give it, from its ETag.
fn version_of(e_tag: Option<String>) -> Option<String> {
    e_tag.map(|tag| format!("etag:{tag}"))
}

/// The ETag of an object's version as [`version_of`] words it.
fn e_tag_of(version: Option<&str>) -> Option<String> {
    version
        .and_then(|version| version.strip_prefix("etag:"))
        .map(str::to_owned)
}

impl Storage for ObjectStorage {
    fn list(&self, root: &Path) -> io::Result<Listing> {
        let prefix = self.key(root)?;
        let mut not_listed = None;
        let objects: Vec<object_store::ObjectMeta> = if self.info.kind == StoreKind::Http {
            match self.block_on(webdav::walk(&*self.store, &prefix)) {
                Ok(objects) => objects,
                Err(err) => {
                    let err = self.error(err);
                    // Not a WebDAV server (a plain file server answers 405 or 501, some
                    // a page): maybe a single file.
                    let text = err.to_string();
                    if !(text.contains(NO_WEBDAV) || text.contains("PROPFIND response")) {
                        return Err(err);
                    }
                    not_listed = Some(err);
                    Vec::new()
                }
            }
        } else {
            self.block_on(self.store.list(Some(&prefix)).try_collect())
                .map_err(|err| self.error(err))?
        };
        let mut listing = Listing::default();
        if objects.is_empty() {
            // Not a prefix: a single object, or nothing at all.
            let head = GetOptions {
                head: true,
                ..GetOptions::default()
            };
            let meta = self
                .block_on(self.store.get_opts(&prefix, head))
                .map_err(|err| self.error(err))?;
            let directory = root.to_str().is_some_and(|url| url.ends_with('/'));
            if let Some(why) = not_listed.filter(|_| directory || webdav::is_page(&meta.attributes))
            {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "this server lists no directories ({why}): only single files can be \
                         read from it, each named by its URL"
                    ),
                ));
            }
            let name = prefix.filename().unwrap_or_default().to_owned();
            listing
                .directories
                .entry(PathBuf::new())
                .or_default()
                .push(Listed {
                    path: root.to_path_buf(),
                    name,
                    size: meta.meta.size,
                    changed: version_of(meta.meta.e_tag.clone()),
                    version: version_of(meta.meta.e_tag),
                });
            listing.single_file = true;
            return Ok(listing);
        }
        let base = prefix.as_ref().len();
        let mut directories: BTreeMap<PathBuf, Vec<Listed>> = BTreeMap::new();
        for object in objects {
            let key = object.location.as_ref();
            let relative = key[base..].trim_start_matches('/');
            if relative.is_empty() || is_hidden_key(relative) {
                continue;
            }
            let (dir, name) = match relative.rsplit_once('/') {
                Some((dir, name)) => (PathBuf::from(dir), name),
                None => (PathBuf::new(), relative),
            };
            let changed = match &object.e_tag {
                Some(tag) => format!("etag:{tag}"),
                None => format!("modified:{}", object.last_modified.to_rfc3339()),
            };
            directories.entry(dir).or_default().push(Listed {
                path: self.url_of(&object.location),
                name: name.to_owned(),
                size: object.size,
                version: None,
                changed: Some(changed),
            });
        }
        for files in directories.values_mut() {
            files.sort_by(|a, b| a.name.cmp(&b.name));
        }
        listing.directories = directories;
        Ok(listing)
    }

    fn open(&self, path: &Path, offset: u64) -> io::Result<Opened> {
        let key = self.key(path)?;
        let meta = self
            .block_on(self.store.head(&key))
            .map_err(|err| self.error(err))?;
        let size = meta.size;
        Ok(Opened {
            reader: Box::new(RangeReader::start(
                self.source(key, meta.e_tag),
                &self.runtime,
                offset,
                size,
            )),
            size: Some(size),
        })
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        let key = self.key(path)?;
        let fetched = self.block_on(async {
            let result = self.store.get(&key).await?;
            result.bytes().await
        });
        match fetched {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(self.error(err)),
        }
    }

    fn read_ranges(
        &self,
        path: &Path,
        version: Option<&str>,
        ranges: &[Range<u64>],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let source = self.source(self.key(path)?, e_tag_of(version));
        // Near ranges merged into one request, as the store's own `get_ranges` merges them.
        let fetched = self.block_on(coalesce_ranges(
            ranges,
            |range| fetch_range(&source, range),
            OBJECT_STORE_COALESCE_DEFAULT,
        ))?;
        for bytes in fetched {
            out.extend_from_slice(&bytes);
        }
        Ok(())
    }

    fn read_each(
        &self,
        requests: &[RangeRead<'_>],
        at_once: usize,
        out: &mut [Vec<u8>],
    ) -> Vec<io::Result<()>> {
        let fetches = requests.iter().map(|request| async move {
            let source = self.source(self.key(request.path)?, e_tag_of(request.version));
            fetch_range(&source, request.range.clone()).await
        });
        let fetched: Vec<io::Result<Bytes>> = self.block_on(
            futures::stream::iter(fetches)
                .buffered(at_once.max(1))
                .collect(),
        );
        fetched
            .into_iter()
            .zip(out)
            .map(|(bytes, buffer)| {
                buffer.clear();
                buffer.extend_from_slice(&bytes?);
                Ok(())
            })
            .collect()
    }

    fn size(&self, path: &Path) -> io::Result<Option<u64>> {
        let key = self.key(path)?;
        match self.block_on(self.store.head(&key)) {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(self.error(err)),
        }
    }

    fn version(&self, path: &Path) -> io::Result<Option<String>> {
        let key = self.key(path)?;
        let meta = self
            .block_on(self.store.head(&key))
            .map_err(|err| self.error(err))?;
        Ok(version_of(meta.e_tag))
    }

    fn stat(&self, path: &Path) -> io::Result<Option<(u64, Option<String>)>> {
        let key = self.key(path)?;
        match self.block_on(self.store.head(&key)) {
            Ok(meta) => Ok(Some((meta.size, version_of(meta.e_tag)))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(self.error(err)),
        }
    }

    fn file_names(&self, dir: &Path) -> io::Result<Vec<String>> {
        let Some(listed) = self.level(dir)? else {
            return Ok(Vec::new());
        };
        Ok(listed
            .objects
            .into_iter()
            .filter_map(|object| object.location.filename().map(str::to_owned))
            .collect())
    }

    fn entries(&self, dir: &Path) -> io::Result<Vec<String>> {
        let Some(listed) = self.level(dir)? else {
            return Ok(Vec::new());
        };
        let mut names: Vec<String> = listed
            .objects
            .iter()
            .map(|object| &object.location)
            .chain(&listed.common_prefixes)
            .filter_map(|location| location.filename().map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        // Prefixes exist by the objects under them.
        Ok(())
    }

    fn create(&self, path: &Path, _durability: Durability) -> io::Result<Box<dyn OutputFile>> {
        let key = self.key(path)?;
        Ok(Box::new(Upload::new(
            Arc::clone(&self.store),
            Arc::clone(&self.info),
            key,
            Arc::clone(&self.runtime),
        )))
    }

    fn renames_cheaply(&self) -> bool {
        false
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from, to) = (self.key(from)?, self.key(to)?);
        self.block_on(self.store.rename(&from, &to))
            .map_err(|err| self.error(err))
    }

    fn put_new(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let key = self.key(path)?;
        match self.create(&key, bytes).map_err(|err| self.error(err))? {
            Created::IfAbsent => Ok(()),
            // A store without conditional writes: the run's lock is all there is.
            Created::Unconditional => self
                .block_on(
                    self.store
                        .put(&key, PutPayload::from(Bytes::copy_from_slice(bytes))),
                )
                .map(|_| ())
                .map_err(|err| self.error(err)),
        }
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        // A completed upload is durable.
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let key = self.key(path)?;
        match self.block_on(self.store.delete(&key)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(err) => Err(self.error(err)),
        }
    }

    fn remove_dir_if_empty(&self, _dir: &Path) {
        // An empty prefix does not exist.
    }

    fn lock(&self, dir: &Path) -> Result<Box<dyn OutputLock>, LockError> {
        self.take_lock(dir)
    }

    fn lock_holder(&self, dir: &Path) -> io::Result<Option<LockHolder>> {
        self.holder_of(&dir.join(LOCK_NAME))
    }

    fn break_lock(&self, holder: &LockHolder) -> io::Result<()> {
        self.remove_lock(holder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_and_name_their_store() {
        for url in ["s3://b/k", "gs://b/k", "az://c/k", "https://h/f", "s3a://b"] {
            assert!(is_url(Path::new(url)), "{url}");
        }
        for path in [
            "file:///tmp/x",
            "data/in",
            "/abs",
            "a:b",
            "://x",
            "weird name://x",
        ] {
            assert!(!is_url(Path::new(path)), "{path}");
        }
        assert_eq!(local_path(Path::new("file:///tmp/x")), Path::new("/tmp/x"));
        assert_eq!(local_path(Path::new("rel/x")), Path::new("rel/x"));
        assert_eq!(store_root("gs://bucket/a/b").unwrap(), "gs://bucket");
        assert_eq!(
            store_root("http://127.0.0.1:9000/a").unwrap(),
            "http://127.0.0.1:9000"
        );
        assert!(store_root("not a url").is_err());
    }

    #[test]
    fn a_gcs_url_builds_a_store_whose_keys_are_the_path_in_the_bucket() {
        // Credentials are looked for when a request is made, not when the store is built.
        let storage =
            ObjectStorage::for_url("gs://tfds-data/datasets/mnist", StoreSettings::current())
                .unwrap();
        assert_eq!(storage.root, "gs://tfds-data");
        assert_eq!(storage.info.kind, StoreKind::Gcs);
        let key = storage
            .key(Path::new("gs://tfds-data/datasets/mnist/3.0.1/x.tfrecord"))
            .unwrap();
        assert_eq!(key.as_ref(), "datasets/mnist/3.0.1/x.tfrecord");
        assert_eq!(
            storage.url_of(&key),
            Path::new("gs://tfds-data/datasets/mnist/3.0.1/x.tfrecord")
        );
        assert!(storage.key(Path::new("gs://other/x")).is_err());
    }

    #[test]
    fn unknown_schemes_and_plain_http_say_what_they_are() {
        let err = ObjectStorage::for_url("ftp://host/x", StoreSettings::current()).unwrap_err();
        assert!(err.to_string().contains("unknown scheme ftp://"), "{err}");
        let http = ObjectStorage::for_url(
            "https://example.com/data/x.tfrecord",
            StoreSettings::current(),
        )
        .unwrap();
        assert_eq!(http.info.kind, StoreKind::Http);
        assert_eq!(http.root, "https://example.com");
    }
}
