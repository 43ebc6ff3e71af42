//! The tables' catalogue: Iceberg's SQL catalogue in the metadata store's own
//! database (SQLite in the data directory, or the cluster's PostgreSQL), with the
//! tables' files in the object store under the storage URL's prefix (`tables/`) in
//! shared-storage mode, else under the data directory (`tables/`). With
//! `table.catalog.url`, an Iceberg REST catalogue instead, the files still read and
//! written through the broker's storage. Opened at the first table topic, then kept
//! (a REST one opened again every [`REST_REOPEN`]; any after a failed round).

use std::sync::Arc;
use std::time::{Duration, Instant};

use spool_metadata::MetadataUrl;
use spool_objects::StorageUrl;
use spool_tables::{ObjectStorage, RestCatalogue, TableCatalog};

use crate::config::BrokerConfig;
use crate::shared::Shared;

/// How long a REST catalogue is kept open: its client logs in once (iceberg-catalog-rest
/// 0.10 does not renew an OAuth2 token), so it is opened again — the secret files read
/// again, a new token asked for — before common token lifetimes end.
const REST_REOPEN: Duration = Duration::from_secs(10 * 60);

/// The catalogue, once opened.
#[derive(Debug, Default)]
pub(super) struct Catalogue {
    opened: Option<(Arc<TableCatalog>, Instant)>,
}

impl Catalogue {
    /// The catalogue, opened now if it was not (or a REST one was opened long ago).
    pub(super) async fn get(&mut self, shared: &Shared) -> Result<Arc<TableCatalog>, String> {
        let config = shared.current_config();
        if let Some((catalog, opened_at)) = &self.opened
            && (config.table_catalog.url.is_none() || opened_at.elapsed() < REST_REOPEN)
        {
            return Ok(catalog.clone());
        }
        let (warehouse, objects) = files(&config)?;
        let catalog = Arc::new(match &config.table_catalog.url {
            Some(url) => open_rest(&config, url, warehouse, objects).await?,
            None => open_sql(&config, &warehouse, objects).await?,
        });
        self.opened = Some((catalog.clone(), Instant::now()));
        Ok(catalog)
    }

    /// Opens the catalogue again at the next round (after a failed one: an expired
    /// login, a catalogue that moved).
    pub(super) fn forget(&mut self) {
        self.opened = None;
    }
}

/// Where the tables' files go (the warehouse's location), and the object store they
/// are in (`None`: the local disk).
fn files(config: &BrokerConfig) -> Result<(String, Option<ObjectStorage>), String> {
    match &config.storage.url {
        Some(url) => {
            let opened = url
                .open_with(&config.storage.s3)
                .map_err(|e| e.to_string())?;
            let root = match url {
                StorageUrl::S3 { bucket, .. } => format!("s3://{bucket}"),
                StorageUrl::Gcs { bucket, .. } => format!("gs://{bucket}"),
                StorageUrl::Azure { container, .. } => format!("az://{container}"),
                StorageUrl::Memory => "memory://spool".to_owned(),
            };
            let prefix = opened.prefix.as_ref();
            let warehouse = if prefix.is_empty() {
                format!("{root}/tables")
            } else {
                format!("{root}/{prefix}/tables")
            };
            Ok((warehouse, Some(ObjectStorage::new(&root, opened.store))))
        }
        None => {
            let local = config.data_dir.join("tables");
            std::fs::create_dir_all(&local).map_err(|e| format!("{}: {e}", local.display()))?;
            let local =
                std::fs::canonicalize(&local).map_err(|e| format!("{}: {e}", local.display()))?;
            Ok((format!("file://{}", local.display()), None))
        }
    }
}

/// The REST catalogue at `url`, logged in with the secret files as they are now.
async fn open_rest(
    config: &BrokerConfig,
    url: &str,
    warehouse: String,
    objects: Option<ObjectStorage>,
) -> Result<TableCatalog, String> {
    let rest = RestCatalogue {
        url: url.to_owned(),
        warehouse: config.table_catalog.warehouse.clone().unwrap_or(warehouse),
        token: config.table_catalog.token()?,
        credential: config.table_catalog.credential()?,
    };
    TableCatalog::open_rest(&rest, objects)
        .await
        .map_err(|e| format!("the REST catalogue at {url}: {e}"))
}

/// Iceberg's SQL catalogue in the metadata store's database.
async fn open_sql(
    config: &BrokerConfig,
    warehouse: &str,
    objects: Option<ObjectStorage>,
) -> Result<TableCatalog, String> {
    let metadata = config
        .metadata_url
        .clone()
        .unwrap_or_else(|| MetadataUrl::in_data_dir(&config.data_dir));
    let uri = match &metadata {
        MetadataUrl::Sqlite(path) => format!("sqlite://{}", path.display()),
        MetadataUrl::Postgres(url) => url.clone(),
    };
    // Brokers starting together create the catalogue's tables at the same moment,
    // and PostgreSQL may refuse all but one `CREATE TABLE IF NOT EXISTS`: the
    // others open it again a moment later.
    let mut attempt = 0_u64;
    loop {
        match TableCatalog::open(&uri, warehouse, objects.clone()).await {
            Ok(catalog) => return Ok(catalog),
            Err(error) if attempt < 4 => {
                tracing::debug!(%error, "opening the tables' catalogue failed; again");
                attempt += 1;
                let wait = 100 * attempt + u64::from(config.node_id.unsigned_abs() % 7) * 30;
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            Err(error) => {
                return Err(format!("the catalogue in {}: {error}", metadata.redacted()));
            }
        }
    }
}
