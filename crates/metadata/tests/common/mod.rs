//! The backends every metadata test runs against: SQLite in a temp dir, and
//! PostgreSQL when `SPOOL_TEST_POSTGRES_URL` names a server (a database of its own per
//! call); `SPOOL_REQUIRE_POSTGRES=1` makes a missing server a failure.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use spool_metadata::{MetadataStore, MetadataUrl};
use sqlx::Connection;

/// A database of one backend that a test can open several times (a reopen, or two
/// brokers sharing it).
pub(crate) struct Backend {
    pub(crate) label: &'static str,
    pub(crate) url: MetadataUrl,
    _dir: Option<tempfile::TempDir>,
}

impl Backend {
    pub(crate) async fn open(&self) -> Arc<dyn MetadataStore> {
        spool_metadata::open(&self.url)
            .await
            .unwrap_or_else(|e| panic!("{}: open: {e}", self.label))
    }
}

/// A fresh database on every backend there is.
pub(crate) async fn backends() -> Vec<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let mut backends = vec![Backend {
        label: "sqlite",
        url: MetadataUrl::in_data_dir(dir.path()),
        _dir: Some(dir),
    }];
    match std::env::var("SPOOL_TEST_POSTGRES_URL") {
        Ok(server) => backends.push(Backend {
            label: "postgres",
            url: MetadataUrl::Postgres(fresh_postgres_database(&server).await),
            _dir: None,
        }),
        Err(_) if std::env::var("SPOOL_REQUIRE_POSTGRES").as_deref() == Ok("1") => {
            panic!("SPOOL_REQUIRE_POSTGRES=1 but SPOOL_TEST_POSTGRES_URL is not set")
        }
        Err(_) => eprintln!("SPOOL_TEST_POSTGRES_URL not set: PostgreSQL half skipped"),
    }
    backends
}

/// Creates a database of its own on the server at `server` (a URL naming any
/// database there) and returns its URL.
pub(crate) async fn fresh_postgres_database(server: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "conformance_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut connection = sqlx::PgConnection::connect(server).await.unwrap();
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut connection)
        .await
        .unwrap();
    let (base, _) = server.rsplit_once('/').unwrap();
    format!("{base}/{name}")
}
