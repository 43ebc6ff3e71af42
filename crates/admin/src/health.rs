//! `GET /health/live` (the process answers) and `GET /health/ready` (it serves
//! clients: started, metadata store reachable, in a cluster its lease held), for an
//! orchestrator's probes. Both answer JSON; not ready is 503.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use serde_json::json;

use crate::{AdminState, Readiness};

pub(crate) fn routes() -> axum::Router<Arc<AdminState>> {
    axum::Router::new()
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
}

async fn live() -> Response {
    Json(json!({ "status": "live" })).into_response()
}

async fn ready(State(state): State<Arc<AdminState>>) -> Response {
    let readiness = match state.source() {
        Some(source) => source.readiness().await,
        None => Readiness {
            ready: false,
            checks: BTreeMap::from([("started".to_owned(), "starting".to_owned())]),
        },
    };
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "status": if readiness.ready { "ready" } else { "not ready" },
        "checks": readiness.checks,
    });
    (status, Json(body)).into_response()
}
