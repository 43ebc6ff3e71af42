//! The web console: one HTML page, its script and its style sheet, compiled into the
//! binary (no build step, nothing fetched from elsewhere). The page reads the REST
//! API and `/metrics` from the same listener.

use std::sync::Arc;

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::AdminState;

const PAGE: &str = include_str!("../console/index.html");
const SCRIPT: &str = include_str!("../console/console.js");
const STYLE: &str = include_str!("../console/console.css");

pub(crate) fn routes() -> axum::Router<Arc<AdminState>> {
    axum::Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", PAGE) }),
        )
        .route(
            "/console.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/console.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // The assets change with the binary: a restarted broker may serve others.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
}
