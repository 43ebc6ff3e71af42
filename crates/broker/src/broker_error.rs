//! Why a broker could not start or stop cleanly.

use std::net::SocketAddr;

/// Why the broker could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(
        "data directory {path} is in use by another spool process (see {path}/lock for its pid); stop it or use another --data-dir"
    )]
    DataDirInUse { path: std::path::PathBuf },
    #[error("cannot use data directory {path}: {source}")]
    DataDir {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the logs: {0}")]
    Logs(#[from] spool_log::LogError),
    #[error("{}", metadata_failure(.0))]
    Metadata(#[from] spool_metadata::MetadataError),
    #[error("cannot open the object storage: {0}")]
    Objects(#[from] spool_objects::ObjectsError),
    #[error("security settings: {0}")]
    Security(String),
    #[error("consumer group settings: {0}")]
    ConsumerGroups(String),
    #[error("share group settings: {0}")]
    ShareGroups(String),
    #[error("table catalogue settings: {0}")]
    TableCatalog(String),
    #[error(
        "broker.roles=reader needs shared storage (--storage-url): an embedded broker leads every partition itself"
    )]
    ReaderWithoutSharedStorage,
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("a background task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error(
        "cannot listen on {address} for the admin API (admin.listen; `off` runs none): {source}"
    )]
    AdminListen {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "cannot listen on {address} for the schema registry (schema.registry.listen; `off` runs none): {source}"
    )]
    SchemaRegistryListen {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("Kafka's default topic configs do not resolve: {0}")]
    TopicConfig(String),
    #[error(
        "data directory {path} belongs to metadata store {recorded}, but {url} is store {found}: refusing to start (its topics would be taken for data no topic owns). Start with the metadata URL this directory was used with, or another --data-dir"
    )]
    WrongMetadataStore {
        path: std::path::PathBuf,
        recorded: uuid::Uuid,
        found: uuid::Uuid,
        url: String,
    },
}

/// A metadata error at start: a refusal of this broker (a node id held by another,
/// another object store) as the store said it; anything else as the store failing.
fn metadata_failure(error: &spool_metadata::MetadataError) -> String {
    use spool_metadata::MetadataError;
    match error {
        MetadataError::NodeInUse { .. } | MetadataError::OtherStorage { .. } => {
            format!("refusing to start: {error}")
        }
        _ => format!("cannot open the metadata store: {error}"),
    }
}
