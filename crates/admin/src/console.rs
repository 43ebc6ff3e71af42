//! The web console: one HTML page, its script, its style sheet and its icon, compiled into the
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
const ICON: &str = include_str!("../console/favicon.svg");

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
        // Browsers ask for /favicon.ico whatever the page links: both get the icon.
        .route(
            "/favicon.svg",
            get(|| async { asset("image/svg+xml", ICON) }),
        )
        .route(
            "/favicon.ico",
            get(|| async { asset("image/svg+xml", ICON) }),
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
