//! TLS for the `SSL` and `SASL_SSL` listeners, with rustls (its `ring` provider; no
//! OpenSSL in the broker): the PEM certificate chain and key, and for client
//! certificates (`ssl.client.auth=requested|required`) the CA they must chain to.
//!
//! The files are read again when they change (checked every [`RELOAD_EVERY`]), so a
//! renewed certificate takes effect without a restart: new connections get it,
//! connections already open keep theirs. A change that cannot be read (a key that does
//! not match, a half-written file) is logged and the previous certificate stays.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::sync::watch;

use super::config::{ClientAuth, SecurityConfig};
use super::principal::{PrincipalRules, subject_name};

/// How often the certificate files are looked at.
pub const RELOAD_EVERY: Duration = Duration::from_secs(5);

/// The TLS settings in force, replaced when the files change.
#[derive(Debug)]
pub struct TlsConfig {
    files: TlsFiles,
    /// `ssl.principal.mapping.rules`.
    rules: PrincipalRules,
    current: RwLock<Arc<ServerConfig>>,
    stamps: RwLock<Vec<Option<SystemTime>>>,
}

#[derive(Debug, Clone)]
struct TlsFiles {
    certificate: PathBuf,
    key: PathBuf,
    ca: Option<PathBuf>,
    client_auth: ClientAuth,
}

impl TlsFiles {
    fn paths(&self) -> Vec<&PathBuf> {
        [Some(&self.certificate), Some(&self.key), self.ca.as_ref()]
            .into_iter()
            .flatten()
            .collect()
    }

    fn stamps(&self) -> Vec<Option<SystemTime>> {
        self.paths()
            .into_iter()
            .map(|path| std::fs::metadata(path).and_then(|m| m.modified()).ok())
            .collect()
    }
}

impl TlsConfig {
    /// Reads the files the settings name; the message says which is missing or bad.
    pub fn load(config: &SecurityConfig) -> Result<TlsConfig, String> {
        let files = TlsFiles {
            certificate: config
                .certificate
                .clone()
                .ok_or("a TLS listener needs ssl.certificate.location")?,
            key: config
                .key
                .clone()
                .ok_or("a TLS listener needs ssl.key.location")?,
            ca: config.ca.clone(),
            client_auth: config.client_auth,
        };
        if files.client_auth != ClientAuth::None && files.ca.is_none() {
            return Err("ssl.client.auth asks for client certificates: set ssl.ca.location".into());
        }
        let rules = PrincipalRules::parse(&config.principal_mapping_rules)?;
        let stamps = files.stamps();
        let current = server_config(&files)?;
        Ok(TlsConfig {
            files,
            rules,
            current: RwLock::new(current),
            stamps: RwLock::new(stamps),
        })
    }

    /// The user a client certificate (DER) names, by `ssl.principal.mapping.rules`;
    /// why there is none.
    pub fn user_of(&self, certificate: &[u8]) -> Result<String, String> {
        let subject = subject_name(certificate)
            .ok_or_else(|| "the client certificate does not parse".to_owned())?;
        self.rules
            .apply(&subject)
            .ok_or_else(|| format!("no ssl.principal.mapping.rules rule applies to {subject}"))
    }

    /// The settings for a new connection.
    pub fn current(&self) -> Arc<ServerConfig> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reads the files again if they changed since last time; whether it did.
    pub fn reload_if_changed(&self) -> bool {
        let stamps = self.files.stamps();
        if *self
            .stamps
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            == stamps
        {
            return false;
        }
        *self
            .stamps
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = stamps;
        match server_config(&self.files) {
            Ok(config) => {
                *self
                    .current
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = config;
                tracing::info!(certificate = %self.files.certificate.display(), "TLS certificate reloaded");
                true
            }
            Err(error) => {
                tracing::warn!(%error, "the TLS files changed but cannot be used; keeping the previous ones");
                false
            }
        }
    }
}

/// Looks at the files every [`RELOAD_EVERY`] until the broker stops.
pub async fn watch_files(tls: Arc<TlsConfig>, mut stopped: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(RELOAD_EVERY) => {}
            _ = stopped.changed() => return,
        }
        let tls = tls.clone();
        let _ = tokio::task::spawn_blocking(move || tls.reload_if_changed()).await;
    }
}

fn server_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates(&files.certificate)?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|error| format!("ssl.key.location {}: {error}", files.key.display()))?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|error| error.to_string())?;
    let builder = match (&files.ca, files.client_auth) {
        (Some(ca), ClientAuth::Requested | ClientAuth::Required) => {
            let mut roots = RootCertStore::empty();
            for certificate in certificates(ca)? {
                roots
                    .add(certificate)
                    .map_err(|error| format!("ssl.ca.location {}: {error}", ca.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if files.client_auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(verifier.build().map_err(|error| error.to_string())?)
        }
        _ => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|error| format!("the certificate and key do not make a TLS identity: {error}"))?;
    Ok(Arc::new(config))
}

fn certificates(path: &PathBuf) -> Result<Vec<CertificateDer<'static>>, String> {
    let found: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|error| format!("{}: {error}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|error| format!("{}: {error}", path.display()))?;
    if found.is_empty() {
        return Err(format!("{}: no PEM certificate in it", path.display()));
    }
    Ok(found)
}
