//! Object storage for Spool's shared-storage mode (`--storage-url`): where partition
//! data lives when brokers own none of it. Everything goes through the `object_store`
//! crate, so S3 (and any S3-compatible server), Google Cloud Storage and Azure Blob
//! Storage are reached by the same code; [`FaultyObjectStore`] wraps a store to make
//! it fail on purpose in tests.
//!
//! This crate holds the URL, the store, and the format of WAL and segment objects
//! ([`wal`]); the write path, the read cache and compaction are the broker's
//! (`crates/broker/src/shared_storage`), the catalogue the metadata store's.

mod faulty;
mod url;
pub mod wal;

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::Path;

pub use faulty::{FaultyObjectStore, ObjectCounts};
pub use url::{S3Options, StorageUrl};

/// Why object storage could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ObjectsError {
    #[error("storage URL {url}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("cannot reach the object store at {url}: {source}")]
    Store {
        url: String,
        #[source]
        source: object_store::Error,
    },
}

/// An object store and the prefix under which Spool keeps its objects.
#[derive(Debug, Clone)]
pub struct ObjectStorage {
    pub store: Arc<dyn ObjectStore>,
    pub prefix: Path,
}

impl ObjectStorage {
    #[must_use]
    pub fn new(store: Arc<dyn ObjectStore>, prefix: Path) -> ObjectStorage {
        ObjectStorage { store, prefix }
    }

    /// The full path of the object `name` (which may hold `/`) under the prefix.
    #[must_use]
    pub fn path(&self, name: &str) -> Path {
        name.split('/')
            .filter(|part| !part.is_empty())
            .fold(self.prefix.clone(), |path, part| path.join(part))
    }
}
