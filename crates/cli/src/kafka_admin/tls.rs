//! TLS for the CLI's own connection (`SSL`, `SASL_SSL`), with rustls as the broker
//! uses it: the broker's certificate checked against `--ssl-ca-location` or the
//! system's roots, for the host the bootstrap address names; a client certificate
//! when `--ssl-certificate-location` and `--ssl-key-location` are given.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::client::ClientArgs;
use crate::error::CliError;

/// The TLS settings the flags ask for.
pub(super) fn connector(client: &ClientArgs) -> Result<TlsConnector, CliError> {
    let mut roots = RootCertStore::empty();
    match &client.ssl_ca_location {
        Some(path) => {
            for certificate in certificates(path)? {
                roots.add(certificate).map_err(|error| {
                    CliError::Usage(format!("--ssl-ca-location {}: {error}", path.display()))
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
        .map_err(|error| CliError::Failed(error.to_string()))?
        .with_root_certificates(roots);
    let config = match (&client.ssl_certificate_location, &client.ssl_key_location) {
        (Some(certificate), Some(key)) => {
            let key = PrivateKeyDer::from_pem_file(key).map_err(|error| {
                CliError::Usage(format!("--ssl-key-location {}: {error}", key.display()))
            })?;
            builder
                .with_client_auth_cert(certificates(certificate)?, key)
                .map_err(|error| CliError::Usage(format!("the client certificate: {error}")))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(CliError::Usage(
                "--ssl-certificate-location and --ssl-key-location go together".to_owned(),
            ));
        }
    };
    Ok(TlsConnector::from(Arc::new(config)))
}

/// TLS over `stream` to `address` (`host:port`), checked for that host.
pub(super) async fn handshake(
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

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, CliError> {
    let read = CertificateDer::pem_file_iter(path)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|error| CliError::Usage(format!("{}: {error}", path.display())))?;
    if read.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: no PEM certificate in it",
            path.display()
        )));
    }
    Ok(read)
}
