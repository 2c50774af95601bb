//! What a store is, as messages name it: its kind ([`StoreKind`]: what serves it, whose
//! variables configure it) and what else its errors may say of it ([`StoreInfo`]). A leaf:
//! the client, the stores' errors and the stores themselves all use it.

/// The kinds of store, by what serves them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// Amazon S3 and the servers that speak its protocol (`s3://`).
    S3,
    /// Google Cloud Storage (`gs://`).
    Gcs,
    /// Azure Blob Storage (`az://`, `abfs://`).
    Azure,
    /// A plain HTTP(S) server, read only (`http://`, `https://`).
    Http,
}

impl StoreKind {
    /// The prefix of the cloud's variables (`AWS`), none for a plain HTTP server.
    pub fn variable_prefix(self) -> Option<&'static str> {
        match self {
            StoreKind::S3 => Some("AWS"),
            StoreKind::Gcs => Some("GOOGLE"),
            StoreKind::Azure => Some("AZURE"),
            StoreKind::Http => None,
        }
    }

    /// The store's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::S3 => "S3",
            StoreKind::Gcs => "GCS",
            StoreKind::Azure => "Azure",
            StoreKind::Http => "HTTP",
        }
    }
}

/// What messages about a store may name besides its URL.
#[derive(Debug, Clone)]
pub struct StoreInfo {
    /// What serves it.
    pub kind: StoreKind,
    /// The bucket or container (empty for an HTTP server).
    pub bucket: String,
    /// Where requests go when the environment moved them off the cloud's own service
    /// (`AWS_ENDPOINT_URL`, ...).
    pub endpoint: Option<String>,
    /// Where the store will ask for credentials when the environment holds none: the
    /// addresses of the instance metadata service. Empty when credentials were given or
    /// requests go unsigned.
    pub metadata: Vec<String>,
    /// Whether requests go unsigned (a public bucket).
    pub unsigned: bool,
}
