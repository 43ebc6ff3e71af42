//! The broker's HTTP listeners — the admin API and the schema registry — and the rule
//! they share: an address asked for that cannot be bound stops the start; the default
//! one taken (another broker on this machine) is a warning.

use spool_admin::AdminServer;

use crate::broker_error::BrokerError;
use crate::config::AdminConfig;
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

/// Binds the schema registry's listener, as [`start_admin`] the admin listener.
pub(crate) async fn start_registry(
    config: &crate::config::SchemaRegistryConfig,
    shared: &Shared,
) -> Result<Option<crate::schema_registry::RegistryServer>, BrokerError> {
    let Some(address) = config.listen else {
        return Ok(None);
    };
    let metadata = shared.metadata().clone();
    match crate::schema_registry::RegistryServer::start(address, metadata).await {
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
