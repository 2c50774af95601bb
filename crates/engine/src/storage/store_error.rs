//! Errors of the object stores as `io::Error`s the engine can tell apart.

use std::io;

/// The `io::Error` of a store error: not-found stays not-found (so that "absent" can be
/// told from "failed"), denied access stays permission-denied, the store's own words kept.
pub(crate) fn store_error(err: object_store::Error) -> io::Error {
    let kind =
        match &err {
            object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => io::ErrorKind::PermissionDenied,
            object_store::Error::AlreadyExists { .. }
            | object_store::Error::Precondition { .. } => io::ErrorKind::AlreadyExists,
            object_store::Error::NotSupported { .. }
            | object_store::Error::NotImplemented { .. } => io::ErrorKind::Unsupported,
            _ => io::ErrorKind::Other,
        };
    // The store's messages already carry their causes' words.
    io::Error::new(kind, err.to_string())
}
