//! [`BrokerBuilder`]: a broker's settings and, for tests and tools, the stores it
//! runs on instead of those the settings name; `start` opens and serves it.

use std::sync::Arc;

use spool_metadata::MetadataStore;
use spool_objects::{ObjectStorage, StorageUrl};

use crate::broker_error::BrokerError;
use crate::config::BrokerConfig;
use crate::server::Broker;

/// A broker about to start (see [`Broker::builder`]). With nothing but the settings,
/// it is the broker `spool` runs: the data directory locked and holding the logs,
/// the metadata store and object storage that the settings name.
#[must_use = "a builder does nothing until `start`"]
pub struct BrokerBuilder {
    config: BrokerConfig,
    log_store: Option<Arc<dyn spool_store::Store>>,
    objects: Option<ObjectStorage>,
    metadata: Option<Arc<dyn MetadataStore>>,
}

impl std::fmt::Debug for BrokerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerBuilder")
            .field("config", &self.config)
            .field("log_store", &self.log_store.is_some())
            .field("objects", &self.objects.is_some())
            .field("metadata", &self.metadata.is_some())
            .finish()
    }
}

impl BrokerBuilder {
    pub(crate) fn new(config: BrokerConfig) -> BrokerBuilder {
        BrokerBuilder {
            config,
            log_store: None,
            objects: None,
            metadata: None,
        }
    }

    /// The partition logs in `store` (in memory, or one that crashes on demand)
    /// instead of the data directory, which still holds the broker's own files; the
    /// data directory is not locked: the caller owns it (the fault checker restarts
    /// brokers in one process over a store whose dead lives it fences itself).
    pub fn log_store(mut self, store: Arc<dyn spool_store::Store>) -> BrokerBuilder {
        self.log_store = Some(store);
        self
    }

    /// Shared-storage mode over `objects`, whatever `storage.url` says (`memory://`
    /// if it says nothing): tests share one in-memory store between brokers, or
    /// between runs of one, and wrap it to make it fail.
    pub fn objects(mut self, objects: ObjectStorage) -> BrokerBuilder {
        self.config.storage.url.get_or_insert(StorageUrl::Memory);
        self.objects = Some(objects);
        self
    }

    /// `metadata` as the metadata store, whatever `metadata_url` says: tests give an
    /// in-memory one, or wrap one to make it fail.
    pub fn metadata(mut self, metadata: Arc<dyn MetadataStore>) -> BrokerBuilder {
        self.metadata = Some(metadata);
        self
    }

    /// Opens the stores, recovers the logs, binds the listeners and starts
    /// accepting.
    ///
    /// # Errors
    /// Whatever stops the broker from starting: a data directory in use or of
    /// another store, a store that cannot be opened, a listener that cannot bind.
    pub async fn start(self) -> Result<Broker, BrokerError> {
        let BrokerBuilder {
            config,
            log_store,
            objects,
            metadata,
        } = self;
        config
            .groups
            .consumer
            .check()
            .map_err(BrokerError::ConsumerGroups)?;
        config
            .share_groups
            .check()
            .map_err(BrokerError::ShareGroups)?;
        config
            .table_catalog
            .check()
            .map_err(BrokerError::TableCatalog)?;
        match log_store {
            None => Broker::start_locked(config, objects, metadata).await,
            Some(store) => Broker::start_from(config, store, objects, metadata).await,
        }
    }
}
