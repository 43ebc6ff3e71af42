//! The tables' catalogue: Iceberg's SQL catalogue in the metadata store's own
//! database (SQLite in the data directory, or the cluster's PostgreSQL), with the
//! tables' files in the object store under the storage URL's prefix (`tables/`) in
//! shared-storage mode, else under the data directory (`tables/`). Opened at the
//! first table topic, then kept.

use std::sync::Arc;

use spool_metadata::MetadataUrl;
use spool_objects::StorageUrl;
use spool_tables::{ObjectStorage, TableCatalog};

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
        let (warehouse, objects) = match &config.storage.url {
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
                (warehouse, Some(ObjectStorage::new(&root, opened.store)))
            }
            None => {
                let local = config.data_dir.join("tables");
                std::fs::create_dir_all(&local).map_err(|e| format!("{}: {e}", local.display()))?;
                let local = std::fs::canonicalize(&local)
                    .map_err(|e| format!("{}: {e}", local.display()))?;
                (format!("file://{}", local.display()), None)
            }
        };
        let catalog = TableCatalog::open(&uri, &warehouse, objects)
            .await
            .map_err(|e| format!("the catalogue in {}: {e}", metadata.redacted()))?;
        let catalog = Arc::new(catalog);
        self.opened = Some(catalog.clone());
        Ok(catalog)
    }
}
