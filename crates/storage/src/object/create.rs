//! Create-if-absent writes (a lock, a manifest, a run's plan): every try of one made here,
//! within the run's bounds, by a store that retries nothing itself.

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::ObjectStorage;
use crate::retry::{self, CreateAnswer};
use crate::store_error::{answered_status, transport_kind};

/// What a create-if-absent write did.
pub(super) enum Created {
    /// The object was written, no other having been there.
    IfAbsent,
    /// Nothing was written: the store has no conditional writes.
    Unconditional,
}

impl ObjectStorage {
    /// Writes `bytes` to `key` only if no object is there. A create is not retried by the
    /// store when its answer is lost (it cannot tell a lost answer from a refusal), so the
    /// store that sends it retries nothing and every try is made here, within the bounds
    /// (`retry::create_if_absent`). A store that answers `501 Not Implemented` to
    /// `If-None-Match` has no conditional writes.
    pub(super) fn create(
        &self,
        key: &ObjectPath,
        bytes: &[u8],
    ) -> Result<Created, object_store::Error> {
        use object_store::client::HttpErrorKind;
        let payload = PutPayload::from(Bytes::copy_from_slice(bytes));
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let mut created = Created::IfAbsent;
        retry::create_if_absent(
            self.settings.bounds,
            bytes,
            || {
                let sent = self
                    .create_store
                    .put_opts(key, payload.clone(), options.clone());
                match self.block_on(sent) {
                    Ok(_) => CreateAnswer::Created,
                    Err(err @ object_store::Error::AlreadyExists { .. })
                    | Err(err @ object_store::Error::Precondition { .. }) => {
                        CreateAnswer::Exists(err)
                    }
                    Err(object_store::Error::NotImplemented { .. })
                    | Err(object_store::Error::NotSupported { .. }) => {
                        created = Created::Unconditional;
                        CreateAnswer::Created
                    }
                    Err(err) => match (answered_status(&err), transport_kind(&err)) {
                        (Some(501), _) => {
                            created = Created::Unconditional;
                            CreateAnswer::Created
                        }
                        (Some(status), _)
                            if status == 408 || status == 429 || (500..600).contains(&status) =>
                        {
                            CreateAnswer::Failed(err)
                        }
                        (
                            None,
                            Some(
                                HttpErrorKind::Connect
                                | HttpErrorKind::Request
                                | HttpErrorKind::Timeout
                                | HttpErrorKind::Interrupted,
                            ),
                        ) => CreateAnswer::Failed(err),
                        _ => CreateAnswer::Refused(err),
                    },
                }
            },
            || match self.block_on(async { self.store.get(key).await?.bytes().await }) {
                Ok(bytes) => Ok(Some(bytes.to_vec())),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(err) => Err(err),
            },
        )?;
        Ok(created)
    }
}
