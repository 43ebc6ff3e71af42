//! Spool's HTTP admin listener (`--admin-listen`): health checks for an orchestrator,
//! `/metrics` for Prometheus, a JSON REST API and the web console, served with `axum`
//! on the broker's runtime, apart from the Kafka listener.
//!
//! The listener knows nothing of the broker's insides: the broker implements
//! [`AdminSource`], and until it has one (while the broker starts: logs open, the
//! metadata store is read, a cluster is joined) the listener answers liveness and
//! says "starting" to everything else. See `docs/operations.md`.

mod api;
mod console;
mod health;
mod mirror_model;
mod model;
mod schema_model;
mod search;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use self::mirror_model::*;
pub use self::model::*;
pub use self::schema_model::*;
pub use axum::http::StatusCode;

/// What the listener asks of the broker.
#[async_trait::async_trait]
pub trait AdminSource: Send + Sync + 'static {
    /// Whether the broker serves clients now, and if not, why.
    async fn readiness(&self) -> Readiness;
    /// Every metric in the OpenMetrics text format; `None` when metrics are off.
    async fn metrics(&self) -> Option<String>;
    /// The REST API's operations.
    fn api(&self) -> &dyn AdminApi;
}

/// Where the listener finds the broker: empty while it starts.
#[derive(Default)]
pub struct AdminState {
    source: OnceLock<Arc<dyn AdminSource>>,
}

impl std::fmt::Debug for AdminState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminState")
            .field("started", &self.source.get().is_some())
            .finish()
    }
}

impl AdminState {
    /// The broker is running: from now on the listener answers from `source`.
    pub fn started(&self, source: Arc<dyn AdminSource>) {
        let _ = self.source.set(source);
    }

    fn source(&self) -> Option<&Arc<dyn AdminSource>> {
        self.source.get()
    }
}

/// A running admin listener.
#[derive(Debug)]
pub struct AdminServer {
    local_addr: SocketAddr,
    state: Arc<AdminState>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl AdminServer {
    /// Binds `address` and serves until [`AdminServer::shutdown`].
    pub async fn start(address: SocketAddr) -> std::io::Result<AdminServer> {
        let listener = TcpListener::bind(address).await?;
        let local_addr = listener.local_addr()?;
        let state = Arc::new(AdminState::default());
        let (stop, mut stopped) = watch::channel(false);
        let app = router(state.clone());
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.wait_for(|stop| *stop).await;
                })
                .await;
            if let Err(error) = served {
                tracing::warn!(%error, "the admin listener stopped");
            }
        });
        tracing::info!(address = %local_addr, "admin listener: health, /metrics, REST API and console");
        Ok(AdminServer {
            local_addr,
            state,
            stop,
            task,
        })
    }

    /// The address bound (useful with port 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Where the broker hands itself over once it runs.
    #[must_use]
    pub fn state(&self) -> &Arc<AdminState> {
        &self.state
    }

    /// Stops accepting and waits (briefly) for requests in progress.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let task = self.task;
        if tokio::time::timeout(std::time::Duration::from_secs(5), task)
            .await
            .is_err()
        {
            tracing::debug!("admin requests still running at shutdown were dropped");
        }
    }
}

fn router(state: Arc<AdminState>) -> Router {
    Router::new()
        .merge(health::routes())
        .merge(console::routes())
        .route("/metrics", axum::routing::get(metrics))
        .nest("/api", api::routes())
        .fallback(not_found)
        .with_state(state)
}

async fn metrics(axum::extract::State(state): axum::extract::State<Arc<AdminState>>) -> Response {
    let Some(source) = state.source() else {
        return ApiError::starting().into_response();
    };
    match source.metrics().await {
        Some(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "metrics are off (metrics.enable=false)",
        )
        .into_response(),
    }
}

async fn not_found(uri: axum::http::Uri) -> Response {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
        format!("no such endpoint: {}", uri.path()),
    )
    .into_response()
}
