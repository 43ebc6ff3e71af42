//! The tables' catalogue: Iceberg's SQL catalogue in the metadata store's own
//! database (SQLite in the data directory, or the cluster's PostgreSQL), with the
//! tables' files under the data directory (`tables/`). Opened at the first table
//! topic, then kept.

use std::sync::Arc;

use spool_metadata::MetadataUrl;
use spool_tables::TableCatalog;

use crate::shared::Shared;

/// The catalogue, once opened.
#[derive(Debug, Default)]
pub(super) struct Catalogue {
    opened: Option<Arc<TableCatalog>>,
}

impl Catalogue {
    /// The catalogue, opened now if it was not.
    pub(super) async fn get(&mut self, shared: &Shared) -> Result<Arc<TableCatalog>, String> {
        if let Some(catalog) = &self.opened {
            return Ok(catalog.clone());
        }
        let config = shared.current_config();
        let metadata = config
            .metadata_url
            .clone()
            .unwrap_or_else(|| MetadataUrl::in_data_dir(&config.data_dir));
        let uri = match &metadata {
            MetadataUrl::Sqlite(path) => format!("sqlite://{}", path.display()),
            MetadataUrl::Postgres(url) => url.clone(),
        };
        let warehouse = config.data_dir.join("tables");
        std::fs::create_dir_all(&warehouse)
            .map_err(|e| format!("{}: {e}", warehouse.display()))?;
        let warehouse = std::fs::canonicalize(&warehouse)
            .map_err(|e| format!("{}: {e}", warehouse.display()))?;
        let catalog = TableCatalog::open(&uri, &format!("file://{}", warehouse.display()))
            .await
            .map_err(|e| format!("the catalogue in {}: {e}", metadata.redacted()))?;
        let catalog = Arc::new(catalog);
        self.opened = Some(catalog.clone());
        Ok(catalog)
    }
}
