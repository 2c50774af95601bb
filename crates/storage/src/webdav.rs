//! Directories on an HTTP server: listed through WebDAV (`PROPFIND`, one level at a time, as
//! every WebDAV server answers; many refuse `Depth: infinity`), and told apart from the
//! HTML index pages that plain file servers answer for a directory.

use object_store::path::Path as ObjectPath;
use object_store::{Attribute, Attributes, ObjectMeta, ObjectStore};

/// How many directories one listing walks at most (a server's links may loop).
const MAX_DIRECTORIES: usize = 100_000;

/// Every file under `prefix` on a WebDAV server, walked one level at a time.
pub(crate) async fn walk(
    store: &dyn ObjectStore,
    prefix: &ObjectPath,
) -> object_store::Result<Vec<ObjectMeta>> {
    let mut found = Vec::new();
    let mut pending = vec![prefix.clone()];
    let mut walked = 0;
    while let Some(dir) = pending.pop() {
        walked += 1;
        if walked > MAX_DIRECTORIES {
            return Err(object_store::Error::Generic {
                store: "HTTP",
                source: format!("more than {MAX_DIRECTORIES} directories under {prefix}").into(),
            });
        }
        let listed = store.list_with_delimiter(Some(&dir)).await?;
        found.extend(listed.objects);
        // Only deeper directories: a server that lists a directory inside itself is not
        // walked in circles.
        pending.extend(
            listed
                .common_prefixes
                .into_iter()
                .filter(|sub| sub.as_ref().len() > dir.as_ref().len() && sub.prefix_matches(&dir)),
        );
    }
    Ok(found)
}

/// Whether an answer's type says it is a page for people (a directory's index) rather than
/// a file.
pub(crate) fn is_page(attributes: &Attributes) -> bool {
    attributes.get(&Attribute::ContentType).is_some_and(|kind| {
        let kind = kind.as_ref().to_ascii_lowercase();
        kind.starts_with("text/html") || kind.starts_with("application/xhtml")
    })
}
