//! The schema registry's listener (`schema.registry.listen`, 8081 by default):
//! Confluent's Schema Registry REST API, answered by every broker from the metadata
//! store (`spool_schema_registry`), so a cluster's brokers answer the same ids. The
//! routes are in [`routes`]; docs/schema-registry.md lists them and what is not
//! implemented.

mod routes;
pub(crate) mod validation;

pub(crate) use validation::{SchemaIds, SchemaValidation};

use std::net::SocketAddr;
use std::sync::Arc;

use spool_metadata::MetadataStore;
use spool_schema_registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The registry over this broker's metadata store.
pub(crate) type BrokerRegistry = Registry<dyn MetadataStore>;

/// The listener, serving until [`RegistryServer::shutdown`].
#[derive(Debug)]
pub(crate) struct RegistryServer {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl RegistryServer {
    /// Binds `address` and serves the registry kept in `metadata`.
    pub(crate) async fn start(
        address: SocketAddr,
        metadata: Arc<dyn MetadataStore>,
    ) -> std::io::Result<RegistryServer> {
        let listener = TcpListener::bind(address).await?;
        let local_addr = listener.local_addr()?;
        let registry = Arc::new(Registry::new(metadata));
        let (stop, mut stopped) = watch::channel(false);
        let app = routes::router(registry);
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.wait_for(|stop| *stop).await;
                })
                .await;
            if let Err(error) = served {
                tracing::warn!(%error, "the schema registry listener stopped");
            }
        });
        tracing::info!(address = %local_addr, "schema registry listener (Confluent's REST API)");
        Ok(RegistryServer {
            local_addr,
            stop,
            task,
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting and waits (briefly) for requests in progress.
    pub(crate) async fn shutdown(self) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(std::time::Duration::from_secs(5), self.task)
            .await
            .is_err()
        {
            tracing::debug!("schema registry requests still running at shutdown were dropped");
        }
    }
}
