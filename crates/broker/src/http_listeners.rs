//! The broker's HTTP listeners — the admin API and the schema registry — and the rule
//! they share: an address asked for that cannot be bound stops the start; the default
//! one taken (another broker on this machine) is a warning.

use spool_admin::AdminServer;

use std::sync::Arc;

use spool_security::tls::TlsConfig;

use crate::broker_error::BrokerError;
use crate::config::{AdminConfig, BrokerConfig};
use crate::schema_registry::RegistrySecurity;
use crate::shared::Shared;

/// Binds the admin listener: a bind failure stops the broker when the address was
/// asked for, and is only a warning for the default one (another broker on this
/// machine has it).
pub(crate) async fn start_admin(config: &AdminConfig) -> Result<Option<AdminServer>, BrokerError> {
    let Some(address) = config.listen else {
        return Ok(None);
    };
    match AdminServer::start(address).await {
        Ok(server) => Ok(Some(server)),
        Err(source) if config.listen_required => Err(BrokerError::AdminListen { address, source }),
        Err(error) => {
            tracing::warn!(%address, %error, "no admin listener: the default address is taken (set admin.listen to another, or off)");
            Ok(None)
        }
    }
}

/// How the schema registry's listener is secured, from the broker's settings: TLS
/// when asked for (`https://`), with the broker's certificate; logins when any
/// listener authenticates (SASL).
pub(crate) fn registry_security(config: &BrokerConfig) -> Result<RegistrySecurity, BrokerError> {
    let setups = spool_security::listener_setups(config.listen, &config.security)
        .map_err(BrokerError::Security)?;
    let logins = setups.iter().any(|setup| setup.policy.protocol.uses_sasl());
    let tls = if config.schema_registry.tls && config.schema_registry.listen.is_some() {
        let loaded = TlsConfig::load(&config.security)
            .map_err(|error| BrokerError::Security(format!("schema.registry.listen: {error}")))?;
        Some(Arc::new(loaded))
    } else {
        None
    };
    Ok(RegistrySecurity { tls, logins })
}

/// Binds the schema registry's listener, as [`start_admin`] the admin listener.
pub(crate) async fn start_registry(
    config: &crate::config::SchemaRegistryConfig,
    security: RegistrySecurity,
    shared: &Arc<Shared>,
) -> Result<Option<crate::schema_registry::RegistryServer>, BrokerError> {
    let Some(address) = config.listen else {
        return Ok(None);
    };
    match crate::schema_registry::RegistryServer::start(address, shared.clone(), security).await {
        Ok(server) => Ok(Some(server)),
        Err(source) if config.listen_required => {
            Err(BrokerError::SchemaRegistryListen { address, source })
        }
        Err(error) => {
            tracing::warn!(%address, %error, "no schema registry: the default address is taken (set schema.registry.listen to another, or off)");
            Ok(None)
        }
    }
}
