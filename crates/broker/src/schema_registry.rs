//! The schema registry's listener (`schema.registry.listen`, 8081 by default):
//! Confluent's Schema Registry REST API, answered by every broker from the metadata
//! store (`spool_schema_registry`), so a cluster's brokers answer the same ids. The
//! routes are in [`routes`]; docs/schema-registry.md lists them and what is not
//! implemented.

mod access;
mod routes;
mod tls_listener;
pub(crate) mod validation;

pub(crate) use validation::{SchemaIds, SchemaValidation};

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use spool_metadata::MetadataStore;
use spool_schema_registry::Registry;
use spool_security::tls::TlsConfig;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::shared::Shared;

/// The registry over this broker's metadata store.
pub(crate) type BrokerRegistry = Registry<dyn MetadataStore>;

/// The listener, serving until [`RegistryServer::shutdown`].
#[derive(Debug)]
pub(crate) struct RegistryServer {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// How the listener is secured: TLS (`https://`), and whether requests must log in
/// (the broker authenticates its clients).
#[derive(Debug, Clone, Default)]
pub(crate) struct RegistrySecurity {
    pub(crate) tls: Option<Arc<TlsConfig>>,
    pub(crate) logins: bool,
}

impl RegistryServer {
    /// Binds `address` and serves the registry kept in the broker's metadata store.
    pub(crate) async fn start(
        address: SocketAddr,
        shared: Arc<Shared>,
        security: RegistrySecurity,
    ) -> std::io::Result<RegistryServer> {
        let listener = TcpListener::bind(address).await?;
        let local_addr = listener.local_addr()?;
        let registry = Arc::new(Registry::new(shared.metadata().clone()));
        let mut app = routes::router(registry);
        if security.logins {
            let gate = Arc::new(access::Gate::new(shared));
            app = app.route_layer(axum::middleware::from_fn_with_state(gate, access::guard));
        }
        let (stop, stopped) = watch::channel(false);
        let tls = security.tls.is_some();
        let task = match security.tls {
            None => tokio::spawn(serve(listener, app, stopped)),
            Some(tls) => tokio::spawn(serve(
                tls_listener::TlsListener::new(listener, tls)?,
                app,
                stopped,
            )),
        };
        tracing::info!(address = %local_addr, tls, logins = security.logins, "schema registry listener (Confluent's REST API)");
        if security.logins && !tls && !local_addr.ip().is_loopback() {
            tracing::warn!(address = %local_addr, "the schema registry takes SCRAM passwords (HTTP Basic) without TLS on a non-loopback address: set schema.registry.listen=https://…");
        }
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

/// The client's address, for ACLs that name hosts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub(crate) SocketAddr);

impl Connected<IncomingStream<'_, TcpListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, TcpListener>) -> Peer {
        Peer(*stream.remote_addr())
    }
}

impl Connected<IncomingStream<'_, tls_listener::TlsListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, tls_listener::TlsListener>) -> Peer {
        Peer(*stream.remote_addr())
    }
}

/// Serves `app` on `listener` until `stopped` says so.
async fn serve<L>(listener: L, app: Router, mut stopped: watch::Receiver<bool>)
where
    L: axum::serve::Listener<Addr = SocketAddr>,
    Peer: for<'a> Connected<IncomingStream<'a, L>>,
{
    let served = axum::serve(listener, app.into_make_service_with_connect_info::<Peer>())
        .with_graceful_shutdown(async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        })
        .await;
    if let Err(error) = served {
        tracing::warn!(%error, "the schema registry listener stopped");
    }
}
