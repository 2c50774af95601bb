//! Stores behind certificates of a private CA, made here: trusted through `AWS_CA_BUNDLE`
//! (S3) or `SSL_CERT_FILE` (every store); and certificates that do not verify (unknown
//! issuer, another name, expired), refused at once, saying why and what to set.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::http::{FileServer, Serving};
use crate::objects::{written, S3Server};
use crate::util::*;

/// A CA of its own, its certificate in `ca.pem`; and another CA (`other-ca.pem`) that
/// signed nothing here.
struct Pki {
    dir: tempfile::TempDir,
    ca: Issuer<'static, KeyPair>,
    ca_der: CertificateDer<'static>,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempdir();
        let ca_params = |name: &str| {
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.distinguished_name.push(DnType::CommonName, name);
            params
        };
        let (params, key) = (ca_params("ofconvert test CA"), KeyPair::generate().unwrap());
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.path().join("ca.pem"), cert.pem()).unwrap();
        let other_key = KeyPair::generate().unwrap();
        let other = ca_params("another CA").self_signed(&other_key).unwrap();
        std::fs::write(dir.path().join("other-ca.pem"), other.pem()).unwrap();
        Pki {
            dir,
            ca: Issuer::new(params, key),
            ca_der: cert.der().clone(),
        }
    }

    fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    fn other_ca_file(&self) -> PathBuf {
        self.dir.path().join("other-ca.pem")
    }

    /// A server's TLS setup with a leaf certificate for `names` signed by the CA, valid
    /// now or expired long ago.
    fn server(&self, names: &[&str], expired: bool) -> Arc<rustls::ServerConfig> {
        let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "ofconvert test server");
        if expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let leaf = params.signed_by(&key, &self.ca).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone(), self.ca_der.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        Arc::new(config)
    }
}

/// TLS in front of the S3 server on 127.0.0.1, counting connections; it stops with the
/// runtime.
struct TlsFront {
    endpoint: String,
    connections: Arc<AtomicUsize>,
    _runtime: tokio::runtime::Runtime,
}

impl TlsFront {
    fn start(service: s3s::service::S3Service, config: Arc<rustls::ServerConfig>) -> TlsFront {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let endpoint = format!("https://{}", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::clone(&connections);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        runtime.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                let (service, acceptor) = (service.clone(), acceptor.clone());
                tokio::spawn(async move {
                    if let Ok(stream) = acceptor.accept(socket).await {
                        let _ = ConnBuilder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                });
            }
        });
        TlsFront {
            endpoint,
            connections,
            _runtime: runtime,
        }
    }
}

impl TlsFront {
    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// `command` with no certificates to trust but the system's and those given after.
fn trusting_the_system_only(command: &mut TestCommand) -> &mut TestCommand {
    command
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .env_remove("AWS_CA_BUNDLE")
}

#[test]
fn a_private_ca_is_trusted_through_aws_ca_bundle_or_ssl_cert_file() {
    let pki = Pki::new();
    let s3 = S3Server::start(&["data"]);
    let front = TlsFront::start(s3.service.clone(), pki.server(&["127.0.0.1"], false));
    let data = testdata().join("datasets/tutorial");
    let work = tempdir();
    let local = work.path().join("of");
    ofconvert().arg("tf2of").arg(&data).arg(&local).ok();

    trusting_the_system_only(&mut s3.ofconvert_through(&front.endpoint))
        .env("AWS_CA_BUNDLE", pki.ca_file())
        .arg("tf2of")
        .arg(&data)
        .arg("s3://data/of")
        .ok();
    assert_eq!(written(&s3.file("data", "of")), written(&local));
    let counted = trusting_the_system_only(&mut s3.ofconvert_through(&front.endpoint))
        .env("SSL_CERT_FILE", pki.ca_file())
        .args(["count", "s3://data/of"])
        .ok()
        .stdout;
    assert!(
        counted.contains("100  s3://data/of/part-00000"),
        "{counted}"
    );

    let server = FileServer::start(
        testdata(),
        Serving {
            ranges: true,
            tls: Some(pki.server(&["127.0.0.1", "localhost"], false)),
            ..Serving::default()
        },
    );
    let url = format!("{}/datasets/tutorial/tutorial.tfrecord", server.endpoint);
    let over_https = trusting_the_system_only(&mut ofconvert())
        .env("SSL_CERT_FILE", pki.ca_file())
        .args(["cat", &url])
        .ok()
        .stdout;
    let on_disk = ofconvert()
        .arg("cat")
        .arg(data.join("tutorial.tfrecord"))
        .ok()
        .stdout;
    assert_eq!(over_https, on_disk);
}

#[test]
fn a_certificate_of_an_unknown_issuer_is_refused_at_once_naming_what_to_set() {
    let pki = Pki::new();
    let s3 = S3Server::start(&["data"]);
    let front = TlsFront::start(s3.service.clone(), pki.server(&["127.0.0.1"], false));
    let refused = format!(
        "the certificate of {} was refused: it is signed by an unknown issuer (not tried again)",
        front.endpoint
    );

    let run = trusting_the_system_only(&mut s3.ofconvert_through(&front.endpoint))
        .args(["count", "s3://data/of", "--retries", "5"])
        .expect_code(1);
    assert!(run.stderr.contains("s3://data/of"), "{}", run.stderr);
    assert!(run.stderr.contains(&refused), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "set SSL_CERT_FILE or AWS_CA_BUNDLE to a PEM file holding that CA's certificate"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("retries"), "{}", run.stderr);
    // One try: tried again, each of the five retries would have been a connection.
    assert_eq!(front.connections(), 1, "{}", run.stderr);

    let run = trusting_the_system_only(&mut s3.ofconvert_through(&front.endpoint))
        .env("AWS_CA_BUNDLE", pki.other_ca_file())
        .arg("tf2of")
        .arg(testdata().join("datasets/tutorial"))
        .arg("s3://data/of")
        .expect_code(1);
    assert!(run.stderr.contains(&refused), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "AWS_CA_BUNDLE={} holds no CA that signed it",
            pki.other_ca_file().display()
        )),
        "{}",
        run.stderr
    );
    assert!(written(&s3.file("data", "of")).is_empty());
}

#[test]
fn a_certificate_for_another_name_or_expired_is_refused_saying_so() {
    let pki = Pki::new();
    let path = "datasets/tutorial/tutorial.tfrecord";
    let cases = [
        (
            pki.server(&["localhost"], false),
            "it is not valid for the name 127.0.0.1 (only for localhost)",
        ),
        (pki.server(&["127.0.0.1"], true), "it expired on 2001-01-01"),
    ];
    for (tls, why) in cases {
        let server = FileServer::start(
            testdata(),
            Serving {
                ranges: true,
                tls: Some(tls),
                ..Serving::default()
            },
        );
        let url = format!("{}/{path}", server.endpoint);
        let run = trusting_the_system_only(&mut ofconvert())
            .env("SSL_CERT_FILE", pki.ca_file())
            .args(["count", &url])
            .expect_code(1);
        assert!(run.stderr.contains(&url), "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "the certificate of {} was refused: {why}",
                server.endpoint
            )),
            "{}",
            run.stderr
        );
        assert_eq!(server.connections(), 1, "{}", run.stderr);
    }
}
