//! How each kind of store is built from its URL and the environment: the cloud's standard
//! variables (`AWS_*`, `GOOGLE_*`, `AZURE_*`), the certificates to trust (`SSL_CERT_FILE`
//! for every store, `AWS_CA_BUNDLE` for S3), unsigned requests for public buckets
//! (`--anonymous`, or each cloud's skip-signature variable), the retry bounds, and the HTTP
//! client every request goes through (`client`).

use std::io;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::{Certificate, ClientConfigKey, ClientOptions, ObjectStore, RetryConfig};

use crate::client::Connector;
use crate::kind::{StoreInfo, StoreKind};
use crate::retry::{self, NetworkBounds};
use crate::store_error::store_error;

static ANONYMOUS: AtomicBool = AtomicBool::new(false);

/// Sends every request to a cloud store unsigned, as to a public bucket, whatever
/// credentials the environment holds (`--anonymous`); for stores opened from now on.
pub fn set_anonymous(anonymous: bool) {
    ANONYMOUS.store(anonymous, Ordering::Relaxed);
}

/// What a store is built with besides its URL and the environment: the settings in force
/// when it is asked for. A store is shared only by calls with the same settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreSettings {
    /// Requests go unsigned (`--anonymous`).
    pub anonymous: bool,
    /// How long and how often a request is tried.
    pub bounds: NetworkBounds,
}

impl StoreSettings {
    /// The settings in force.
    pub fn current() -> StoreSettings {
        StoreSettings {
            anonymous: ANONYMOUS.load(Ordering::Relaxed),
            bounds: retry::network_bounds(),
        }
    }
}

/// The store of `url` (whose scheme is `scheme`), and what its messages may name; one that
/// retries failed requests within `settings`' bounds when `retried`, none otherwise.
pub fn build(
    url: &str,
    scheme: &str,
    root: &str,
    settings: StoreSettings,
    retried: bool,
) -> io::Result<(Arc<dyn ObjectStore>, StoreInfo)> {
    // reqwest is built without a crypto provider of its own (that would be aws-lc-rs, a
    // long C build); ring serves every TLS connection. Installing it a second time, or
    // after a host program installed one, changes nothing.
    let _ = rustls::crypto::ring::default_provider().install_default();
    check_cert_file("SSL_CERT_FILE")?;
    let StoreSettings { anonymous, bounds } = settings;
    let bucket = url::Url::parse(url)
        .ok()
        .and_then(|parsed| parsed.host_str().map(str::to_owned))
        .unwrap_or_default();
    let timeouts = retry::client_timeouts(bounds);
    // A store that retries nothing itself, for requests whose every try is made by the
    // caller.
    let retry_config = if retried {
        retry::retry_config(bounds)
    } else {
        RetryConfig {
            max_retries: 0,
            ..retry::retry_config(bounds)
        }
    };
    match scheme {
        "s3" | "s3a" => {
            let mut options = ClientOptions::new();
            if let Some(bundle) = check_cert_file("AWS_CA_BUNDLE")? {
                for certificate in bundle {
                    options = options.with_root_certificate(certificate);
                }
            }
            let mut builder = AmazonS3Builder::new().with_client_options(options);
            for (key, value) in env_config::<AmazonS3ConfigKey>("AWS_") {
                builder = builder.with_config(key, value);
            }
            if anonymous {
                builder = builder.with_skip_signature(true);
            }
            let mut builder = builder
                .with_url(url)
                .with_retry(retry_config.clone())
                .with_http_connector(Connector::new(StoreKind::S3, bounds));
            for (key, value) in timeouts {
                builder = builder.with_config(AmazonS3ConfigKey::Client(key), value);
            }
            let config = |key| builder.get_config_value(&key);
            let unsigned = config(AmazonS3ConfigKey::SkipSignature).as_deref() == Some("true");
            let given = unsigned
                || [
                    AmazonS3ConfigKey::AccessKeyId,
                    AmazonS3ConfigKey::WebIdentityTokenFile,
                    AmazonS3ConfigKey::ContainerCredentialsRelativeUri,
                    AmazonS3ConfigKey::ContainerCredentialsFullUri,
                ]
                .into_iter()
                .any(|key| config(key).is_some());
            let metadata = if given {
                Vec::new()
            } else {
                vec![config(AmazonS3ConfigKey::MetadataEndpoint)
                    .unwrap_or_else(|| "http://169.254.169.254".to_owned())]
            };
            let info = StoreInfo {
                kind: StoreKind::S3,
                bucket,
                endpoint: config(AmazonS3ConfigKey::Endpoint),
                metadata,
                unsigned,
            };
            let store = builder.build().map_err(|err| store_error(&info, err))?;
            Ok((Arc::new(store), info))
        }
        "gs" => {
            let mut builder = GoogleCloudStorageBuilder::from_env();
            if anonymous {
                builder = builder.with_skip_signature(true);
            }
            let mut builder = builder
                .with_url(url)
                .with_retry(retry_config.clone())
                .with_http_connector(Connector::new(StoreKind::Gcs, bounds));
            for (key, value) in timeouts {
                builder = builder.with_config(GoogleConfigKey::Client(key), value);
            }
            let config = |key| builder.get_config_value(&key);
            let unsigned = config(GoogleConfigKey::SkipSignature).as_deref() == Some("true");
            let given = unsigned
                || [
                    GoogleConfigKey::ServiceAccount,
                    GoogleConfigKey::ServiceAccountKey,
                    GoogleConfigKey::ApplicationCredentials,
                ]
                .into_iter()
                .any(|key| config(key).is_some())
                || gcloud_default_credentials();
            let metadata = if given {
                Vec::new()
            } else {
                gcs_metadata_hosts()
            };
            let info = StoreInfo {
                kind: StoreKind::Gcs,
                bucket,
                endpoint: config(GoogleConfigKey::BaseUrl),
                metadata,
                unsigned,
            };
            let store = builder.build().map_err(|err| store_error(&info, err))?;
            Ok((Arc::new(store), info))
        }
        "az" | "abfs" | "abfss" | "azure" => {
            let mut builder = MicrosoftAzureBuilder::from_env();
            if anonymous {
                builder = builder.with_skip_signature(true);
            }
            let mut builder = builder
                .with_url(url)
                .with_retry(retry_config.clone())
                .with_http_connector(Connector::new(StoreKind::Azure, bounds));
            for (key, value) in timeouts {
                builder = builder.with_config(AzureConfigKey::Client(key), value);
            }
            let unsigned = builder
                .get_config_value(&AzureConfigKey::SkipSignature)
                .as_deref()
                == Some("true");
            let info = StoreInfo {
                kind: StoreKind::Azure,
                bucket,
                endpoint: builder.get_config_value(&AzureConfigKey::Endpoint),
                // The managed identity's service, which Azure asks when nothing else was
                // given (too many kinds of credentials to tell beforehand).
                metadata: vec![builder
                    .get_config_value(&AzureConfigKey::MsiEndpoint)
                    .unwrap_or_else(|| "http://169.254.169.254".to_owned())],
                unsigned,
            };
            let store = builder.build().map_err(|err| store_error(&info, err))?;
            Ok((Arc::new(store), info))
        }
        "http" | "https" => {
            let mut builder = HttpBuilder::new()
                .with_url(root)
                .with_retry(retry_config.clone())
                .with_http_connector(Connector::new(StoreKind::Http, bounds));
            for (key, value) in timeouts {
                builder = builder.with_config(key, value);
            }
            // The user typed http://: plain HTTP is what was asked for.
            if scheme == "http" {
                builder = builder.with_config(ClientConfigKey::AllowHttp, "true");
            }
            let info = StoreInfo {
                kind: StoreKind::Http,
                bucket: String::new(),
                endpoint: None,
                metadata: Vec::new(),
                unsigned: true,
            };
            let store = builder.build().map_err(|err| store_error(&info, err))?;
            Ok((Arc::new(store), info))
        }
        other => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{url}: unknown scheme {other}:// (s3, gs, az, http, https and file are known)"
            ),
        )),
    }
}

/// The settings in the environment variables starting with `prefix` (`AWS_`) that `K`
/// knows, as the builders' `from_env` reads them.
fn env_config<K: FromStr>(prefix: &str) -> Vec<(K, String)> {
    std::env::vars_os()
        .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(key, _)| key.starts_with(prefix))
        .filter_map(|(key, value)| Some((key.to_ascii_lowercase().parse().ok()?, value)))
        .collect()
}

/// The certificates of the PEM file that `variable` names, when it names one; an error
/// naming the variable when that file cannot be read or holds none.
fn check_cert_file(variable: &str) -> io::Result<Option<Vec<Certificate>>> {
    let Some(path) = std::env::var_os(variable).filter(|path| !path.is_empty()) else {
        return Ok(None);
    };
    let shown = std::path::Path::new(&path).display().to_string();
    let bytes = std::fs::read(&path).map_err(|err| {
        io::Error::new(
            err.kind(),
            format!("{variable}={shown}: the certificates to trust cannot be read: {err}"),
        )
    })?;
    let certificates = Certificate::from_pem_bundle(&bytes)
        .ok()
        .filter(|certificates| !certificates.is_empty())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{variable}={shown}: holds no PEM certificate \
                     (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)"
                ),
            )
        })?;
    Ok(Some(certificates))
}

/// Whether gcloud's application default credentials are where the GCS client looks.
fn gcloud_default_credentials() -> bool {
    std::env::var_os("HOME").is_some_and(|home| {
        std::path::Path::new(&home)
            .join(".config/gcloud/application_default_credentials.json")
            .is_file()
    })
}

/// Where the GCS client asks the instance metadata service for a token.
fn gcs_metadata_hosts() -> Vec<String> {
    let host = std::env::var("GCE_METADATA_HOST")
        .or_else(|_| std::env::var("GCE_METADATA_ROOT"))
        .unwrap_or_else(|_| "metadata.google.internal".to_owned());
    let ip = std::env::var("GCE_METADATA_IP").unwrap_or_else(|_| "169.254.169.254".to_owned());
    vec![format!("http://{host}"), format!("http://{ip}")]
}
