//! What shared storage's partition operations fail with. The broker maps each to its
//! partition error, and from there to a Kafka error code, in one place.

use spool_log::LogError;
use spool_metadata::MetadataError;

/// A shared-storage operation on a partition failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The catalogue does not know the partition.
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// Another broker leads the partition (or it is being handed over).
    #[error("this broker is not the partition's leader")]
    NotLeader,
    /// The partition's tail refused or failed.
    #[error("{0}")]
    Log(#[from] LogError),
    /// The catalogue could not be read or written.
    #[error("catalogue: {0}")]
    Catalogue(#[from] MetadataError),
    /// An object could not be read, or what it holds is not what the catalogue says.
    #[error("object storage: {0}")]
    ObjectRead(String),
    /// The runtime stopped while the work waited for it.
    #[error("the storage task failed: {0}")]
    Interrupted(String),
}
