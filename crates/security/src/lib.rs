//! Security: listeners by Kafka's names, TLS (rustls), SASL (PLAIN, SCRAM-SHA-256,
//! SCRAM-SHA-512) with credentials in the metadata store, ACLs. See `docs/security.md`.
//!
//! - [`listeners`]: `listeners`, `advertised.listeners`, the protocol map;
//! - [`config`]: the settings;
//! - [`tls`]: certificates, reloaded when their files change; [`principal`]: the
//!   principal of a client certificate (`ssl.principal.mapping.rules`);
//! - [`session`]: a connection's authentication state and the pre-auth gate;
//! - [`sasl`]: the exchanges (the mechanisms themselves are `spool_sasl`'s);
//!   [`oauth`]: OAUTHBEARER's key set;
//! - [`acl`]: Kafka's ACL model; [`authorizer`]: the decisions, indexed;
//! - [`quotas`]: client quotas, metered per quota entity.

pub mod acl;
pub mod authorizer;
pub mod config;
pub mod listeners;
pub mod oauth;
pub mod principal;
pub mod quotas;
pub mod sasl;
pub mod session;
pub mod tls;

use std::net::SocketAddr;
use std::sync::Arc;

use spool_metadata::{MetadataStore, ScramCredentialRecord};

use self::config::SecurityConfig;
use self::listeners::{Listener, SecurityProtocol};
use self::sasl::SaslMechanism;
use self::session::ListenerPolicy;
use self::tls::TlsConfig;
use spool_sasl::scram::{Credential, Mechanism};

/// Parses `sasl.enabled.mechanisms`.
pub fn enabled_mechanisms(text: &str) -> Result<Vec<SaslMechanism>, String> {
    let mechanisms: Vec<SaslMechanism> = text
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            SaslMechanism::from_name(name).ok_or_else(|| {
                format!(
                    "SASL mechanism {name}: Spool offers PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER"
                )
            })
        })
        .collect::<Result<_, _>>()?;
    if mechanisms.is_empty() {
        return Err("sasl.enabled.mechanisms names no mechanism".to_owned());
    }
    Ok(mechanisms)
}

/// A listener as the broker runs it.
#[derive(Debug, Clone)]
pub struct ListenerSetup {
    pub listener: Listener,
    pub policy: Arc<ListenerPolicy>,
    /// For `SSL` and `SASL_SSL`.
    pub tls: Option<Arc<TlsConfig>>,
    /// `advertised.listeners`' entry for it, if any (host, port).
    pub advertised: Option<(String, i32)>,
}

/// The listeners the settings ask for: `listeners`, or one PLAINTEXT listener on
/// `listen`. Fails with a message naming the setting at fault.
pub fn listener_setups(
    listen: SocketAddr,
    config: &SecurityConfig,
) -> Result<Vec<ListenerSetup>, String> {
    let map = listeners::parse_protocol_map(&config.protocol_map)?;
    let listeners = match &config.listeners {
        Some(text) => {
            listeners::parse_listeners(text, &map).map_err(|e| format!("listeners: {e}"))?
        }
        None => vec![Listener {
            name: "PLAINTEXT".to_owned(),
            address: listen,
            protocol: SecurityProtocol::Plaintext,
        }],
    };
    let advertised = match &config.advertised_listeners {
        Some(text) => listeners::parse_endpoints(text)?,
        None => Vec::new(),
    };
    for (name, ..) in &advertised {
        if !listeners.iter().any(|listener| listener.name == *name) {
            return Err(format!(
                "advertised.listeners names {name}, which is not a listener"
            ));
        }
    }
    let mechanisms = enabled_mechanisms(&config.sasl_mechanisms)?;
    let mut tls = None;
    let mut setups = Vec::new();
    for listener in listeners {
        let listener_tls = if listener.protocol.uses_tls() {
            if tls.is_none() {
                tls = Some(Arc::new(TlsConfig::load(config)?));
            }
            tls.clone()
        } else {
            None
        };
        let policy = Arc::new(ListenerPolicy {
            name: listener.name.clone(),
            protocol: listener.protocol,
            mechanisms: mechanisms.clone(),
            max_reauth: config.max_reauth,
            failed_delay: config.failed_auth_delay,
        });
        let advertised = advertised
            .iter()
            .find(|(name, ..)| *name == listener.name)
            .map(|(_, host, port)| (host.clone(), i32::from(*port)));
        setups.push(ListenerSetup {
            listener,
            policy,
            tls: listener_tls,
            advertised,
        });
    }
    Ok(setups)
}

/// The iterations of credentials Spool makes itself (`--bootstrap-user`, `spool user
/// create`'s default).
pub const DEFAULT_ITERATIONS: u32 = 8192;

/// Gives `user` SCRAM credentials for both mechanisms from `password`, where it has
/// none: a restart with the same `--bootstrap-user` changes nothing, and a password
/// changed since (through the admin API) stays changed.
pub async fn seed_user(
    metadata: &Arc<dyn MetadataStore>,
    user: &str,
    password: &str,
) -> Result<(), spool_metadata::MetadataError> {
    for mechanism in Mechanism::ALL {
        if metadata.credential(user, mechanism.code()).await?.is_some() {
            continue;
        }
        let password = password.as_bytes().to_vec();
        let credential = tokio::task::spawn_blocking(move || {
            Credential::new(mechanism, &password, DEFAULT_ITERATIONS)
        })
        .await
        .map_err(|error| spool_metadata::MetadataError::Conflict(error.to_string()))?;
        metadata
            .upsert_credential(&record_of(user, &credential))
            .await?;
        tracing::info!(
            user,
            mechanism = mechanism.sasl_name(),
            "bootstrap user's credential set"
        );
    }
    Ok(())
}

/// The store's form of a credential.
pub fn record_of(user: &str, credential: &Credential) -> ScramCredentialRecord {
    ScramCredentialRecord {
        user: user.to_owned(),
        mechanism: credential.mechanism.code(),
        salt: credential.salt.clone(),
        iterations: i32::try_from(credential.iterations).unwrap_or(i32::MAX),
        stored_key: credential.stored_key.clone(),
        server_key: credential.server_key.clone(),
    }
}
