//! TLS for a connection (`SSL`, `SASL_SSL`), with rustls as the broker uses it: the
//! broker's certificate checked against `ssl.ca.*` or the system's roots, for the host
//! the address names; a client certificate when `ssl.certificate.*` and `ssl.key.*`
//! are given.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::settings::Pem;
use crate::{ClientError, ClientSettings};

/// The TLS settings asked for.
pub(crate) fn connector(settings: &ClientSettings) -> Result<TlsConnector, ClientError> {
    let mut roots = RootCertStore::empty();
    match &settings.ssl_ca {
        Some(pem) => {
            for certificate in certificates(pem, "ssl.ca")? {
                roots.add(certificate).map_err(|error| {
                    ClientError::Usage(format!("ssl.ca {}: {error}", name(pem)))
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| ClientError::Failed(error.to_string()))?
        .with_root_certificates(roots);
    let config = match (&settings.ssl_certificate, &settings.ssl_key) {
        (Some(certificate), Some(key)) => {
            let key = match key {
                Pem::File(path) => PrivateKeyDer::from_pem_file(path),
                Pem::Text(text) => PrivateKeyDer::from_pem_slice(text.as_bytes()),
            }
            .map_err(|error| ClientError::Usage(format!("ssl.key {}: {error}", name(key))))?;
            builder
                .with_client_auth_cert(certificates(certificate, "ssl.certificate")?, key)
                .map_err(|error| ClientError::Usage(format!("the client certificate: {error}")))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(ClientError::Usage(
                "ssl.certificate.* and ssl.key.* go together".to_owned(),
            ));
        }
    };
    Ok(TlsConnector::from(Arc::new(config)))
}

/// TLS over `stream` to `address` (`host:port`), checked for that host.
pub(crate) async fn handshake(
    connector: &TlsConnector,
    address: &str,
    stream: TcpStream,
) -> std::io::Result<TlsStream<TcpStream>> {
    let host = address
        .rsplit_once(':')
        .map_or(address, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let name = ServerName::try_from(host.to_owned())
        .map_err(|error| std::io::Error::other(format!("{host}: {error}")))?;
    connector.connect(name, stream).await
}

/// How an error names the PEM: its file, or "(inline PEM)".
fn name(pem: &Pem) -> String {
    match pem {
        Pem::File(path) => path.display().to_string(),
        Pem::Text(_) => "(inline PEM)".to_owned(),
    }
}

fn certificates(pem: &Pem, what: &str) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let read = match pem {
        Pem::File(path) => {
            CertificateDer::pem_file_iter(path).and_then(Iterator::collect::<Result<Vec<_>, _>>)
        }
        Pem::Text(text) => {
            CertificateDer::pem_slice_iter(text.as_bytes()).collect::<Result<Vec<_>, _>>()
        }
    }
    .map_err(|error| ClientError::Usage(format!("{what} {}: {error}", name(pem))))?;
    if read.is_empty() {
        return Err(ClientError::Usage(format!(
            "{what} {}: no PEM certificate in it",
            name(pem)
        )));
    }
    Ok(read)
}
