//! The broker's settings.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What a broker needs to start. Every field has a default (see `Default`).
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Where to listen (`--listen`, `SPOOL_LISTEN`).
    pub listen: SocketAddr,
    /// The address clients are told to connect to (`--advertise`); the listen address
    /// (with the port actually bound) when unset.
    pub advertise: Option<String>,
    /// Where partition data lives (`--data-dir`).
    pub data_dir: PathBuf,
    pub node_id: i32,
    /// `socket.request.max.bytes`: frames larger than this close the connection.
    pub max_request_bytes: usize,
    /// `max.connections`.
    pub max_connections: usize,
    /// `connections.max.idle.ms`.
    pub idle_timeout: Duration,
    /// Requests of one connection handled at the same time before reading pauses.
    pub max_in_flight_per_connection: usize,
    /// `auto.create.topics.enable`: Metadata and Produce create unknown topics.
    pub auto_create_topics: bool,
    /// `num.partitions`: partitions of auto-created topics and of CreateTopics with -1.
    pub default_partitions: i32,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 9092)),
            advertise: None,
            data_dir: PathBuf::from("data"),
            node_id: 1,
            max_request_bytes: 100 << 20,
            max_connections: 10_000,
            idle_timeout: Duration::from_secs(600),
            max_in_flight_per_connection: 64,
            auto_create_topics: true,
            default_partitions: 1,
        }
    }
}
