//! Spool's broker: it accepts Kafka-protocol connections, decodes requests, hands each
//! to the handler of its API, and writes the responses back in request order.
//!
//! - `server`: starting the broker, the listener, connection limit and shutdown;
//! - `shared`: what every connection and background task shares;
//! - `connection`: one task per connection reading frames, one handling them in
//!   order, one writing the responses (pipelining);
//! - `handlers`: one file per Kafka API, each declaring its key and version range;
//!   the ApiVersions response is built from those declarations;
//! - `response`: encoded bytes plus segment-file ranges sent with `sendfile`.

mod admin;
mod broker_configs;
mod broker_error;
mod builder;
mod cleaner;
mod cluster;
mod config;
mod connection;
mod consumer_offsets;
mod data_dir_lock;
mod delayed;
mod dynamic_config;
mod errors;
mod group_configs;
mod handlers;
mod http_listeners;
mod index;
mod instance_id;
mod lag;
mod lanes;
mod leader_hint;
mod listener_endpoint;
mod maintenance;
mod metrics;
mod mirror;
mod partitions;
mod producer_ids;
mod replica_reads;
mod response;
mod schema_registry;
mod server;
mod share;
mod shared;
mod store_binding;
mod tables;
mod topic_configs;
mod topics;
mod transactions;
mod txn_check;
mod view_reader;

pub use broker_error::BrokerError;
pub use builder::BrokerBuilder;
pub use cluster::coordinator_among as group_coordinator;
pub use config::{
    AdminConfig, BrokerConfig, CleanerConfig, ClusterConfig, LaneConfig, ReadConfig,
    SchemaRegistryConfig, StorageConfig, TableCatalogConfig, setting_names,
};
pub use lag::PartitionLag;
pub use server::Broker;
pub use spool_metadata::{BrokerRecord, MetadataStore, MetadataUrl};
pub use spool_objects::{ObjectStorage, StorageUrl};
pub use spool_sasl::scram::salt_password;
pub use spool_security::config::{ClientAuth, SecurityConfig};
pub use spool_security::listeners::SecurityProtocol;
pub use spool_shared_storage::{Latency, StorageStats};
