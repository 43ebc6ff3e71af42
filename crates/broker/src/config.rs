//! The broker's settings, and the one place that reads a setting by its Kafka name
//! (used for `--set`, the config file, `SPOOL_*` variables and AlterConfigs alike).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use spool_coordinator::{CoordinatorConfig, TxnConfig};
use spool_log::CleanerSettings;
use spool_model::Clock;
pub use spool_shared_storage::StorageConfig;

mod consumer_group_settings;
mod index_settings;
mod lane_settings;
mod read_settings;
mod security_settings;
mod share_group_settings;
mod table_settings;

pub use lane_settings::LaneConfig;
pub use read_settings::ReadConfig;
pub use table_settings::TableCatalogConfig;

use crate::topic_configs::{self, BrokerSynonym};
use crate::topics::{check_config, default_config_values};

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
    /// Where the metadata lives (`--metadata-url`): `None` for `metadata.db` in the
    /// data directory.
    pub metadata_url: Option<spool_metadata::MetadataUrl>,
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
    /// The broker settings that default topic configs, by broker name and as given
    /// (`log.retention.hours` in hours): see [`BrokerConfig::topic_defaults`].
    pub topic_default_settings: BTreeMap<String, String>,
    /// How consumer groups are run (`group.*`, `offsets.*` settings).
    pub groups: CoordinatorConfig,
    /// How share groups are run (`group.share.*` settings).
    pub share_groups: spool_share::settings::ShareBrokerSettings,
    /// How transactions are run (`transaction.*`, `transactional.id.*` settings).
    pub transactions: TxnConfig,
    /// The clock every time-driven part of the broker reads (sessions, transaction
    /// timeouts, quotas, delayed delivery, leases, retention): the system's; tests
    /// give a manual one. Not a setting.
    pub clock: Clock,
    /// `num.io.threads`: threads running the fsyncs of durable partitions. Each
    /// partition is its own file, so fsyncs of different partitions run side by side
    /// (and the file system commits them together) rather than one after another.
    pub io_threads: usize,
    /// The log cleaner (`log.cleaner.*`).
    pub cleaner: CleanerConfig,
    /// Where partition data lives (`--storage-url`, `storage.*`).
    pub storage: StorageConfig,
    /// Membership of a cluster (`cluster.*`), in shared-storage mode.
    pub cluster: ClusterConfig,
    /// `log.retention.check.interval.ms`: how often retention runs.
    pub retention_check_interval: Duration,
    /// The HTTP admin listener and what `/metrics` shows (`admin.listen`,
    /// `metrics.*`).
    pub admin: AdminConfig,
    /// The schema registry's listener (`schema.registry.listen`).
    pub schema_registry: SchemaRegistryConfig,
    /// Listeners, TLS and SASL (`listeners`, `ssl.*`, `sasl.*`).
    pub security: spool_security::config::SecurityConfig,
    /// Where table topics' tables are catalogued (`table.catalog.*`).
    pub table_catalog: TableCatalogConfig,
    /// `index.chunk.bytes`: bytes of batches a message index's chunk covers (the
    /// most a new leader of a partition reads again to index it).
    pub index_chunk_bytes: u64,
    /// `broker.rack`, `broker.roles`, `broker.read.preferred`: where reads are served.
    pub reads: ReadConfig,
    /// `lane.*`: how clients join lanes and what base consumers see.
    pub lanes: LaneConfig,
}

/// The HTTP admin listener (health, `/metrics`, the REST API and the console).
#[derive(Debug, Clone, Copy)]
pub struct AdminConfig {
    /// `admin.listen` (`--admin-listen`): `None` (`off`) runs no listener.
    pub listen: Option<SocketAddr>,
    /// Whether `listen` was asked for: a broker cannot start without an address it
    /// was given, but only warns when the default one is taken (a second broker on
    /// the same machine).
    pub listen_required: bool,
    /// `metrics.enable`: whether requests, connections and topics are counted.
    pub metrics: bool,
    /// `metrics.partition.series.limit`: per-partition series are left out of
    /// `/metrics` when the broker has more open partitions than this (0: never shown).
    pub partition_series_limit: usize,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            listen: Some(SocketAddr::from(([127, 0, 0, 1], 9644))),
            listen_required: false,
            metrics: true,
            partition_series_limit: 10_000,
        }
    }
}

/// The schema registry's listener: Confluent's REST API, on every broker.
#[derive(Debug, Clone, Copy)]
pub struct SchemaRegistryConfig {
    /// `schema.registry.listen`: `None` (`off`) runs no registry.
    pub listen: Option<SocketAddr>,
    /// Whether `listen` was asked for (as for `admin.listen`: only the default may be
    /// taken by another broker of this machine, with a warning).
    pub listen_required: bool,
    /// `https://` before the address: TLS with the broker's certificate settings
    /// (`ssl.certificate.location`, `ssl.key.location`, `ssl.ca.location`,
    /// `ssl.client.auth`).
    pub tls: bool,
}

impl Default for SchemaRegistryConfig {
    fn default() -> Self {
        SchemaRegistryConfig {
            listen: Some(SocketAddr::from(([127, 0, 0, 1], 8081))),
            listen_required: false,
            tls: false,
        }
    }
}

/// `cluster.*`: in shared-storage mode, brokers sharing the metadata store form a
/// cluster; each renews its lease every `heartbeat`, and one whose lease (`lease`)
/// lapsed is dead to the others.
#[derive(Debug, Clone, Copy)]
pub struct ClusterConfig {
    /// `cluster.lease.ms`.
    pub lease: Duration,
    /// `cluster.heartbeat.ms`.
    pub heartbeat: Duration,
    /// `cluster.handover.timeout.ms`: how long the controller lets a live leader
    /// commit what it buffered and hand a partition over before moving it anyway.
    pub handover_timeout: Duration,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            lease: Duration::from_millis(2_000),
            heartbeat: Duration::from_millis(500),
            handover_timeout: Duration::from_millis(3_000),
        }
    }
}

/// The log cleaner's broker settings.
#[derive(Debug, Clone, Copy)]
pub struct CleanerConfig {
    /// `log.cleaner.enable`.
    pub enabled: bool,
    /// `log.cleaner.dedupe.buffer.size` and `log.cleaner.io.max.bytes.per.second`.
    pub settings: CleanerSettings,
    /// `log.cleaner.backoff.ms`.
    pub backoff: Duration,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            enabled: true,
            settings: CleanerSettings::default(),
            backoff: Duration::from_secs(15),
        }
    }
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 9092)),
            advertise: None,
            data_dir: PathBuf::from("data"),
            metadata_url: None,
            node_id: 1,
            max_request_bytes: 100 << 20,
            max_connections: 10_000,
            idle_timeout: Duration::from_secs(600),
            max_in_flight_per_connection: 64,
            auto_create_topics: true,
            default_partitions: 1,
            topic_default_settings: BTreeMap::new(),
            groups: CoordinatorConfig::default(),
            share_groups: spool_share::settings::ShareBrokerSettings::default(),
            transactions: TxnConfig::default(),
            clock: Clock::System,
            io_threads: 8,
            cleaner: CleanerConfig::default(),
            cluster: ClusterConfig::default(),
            storage: StorageConfig::default(),
            retention_check_interval: Duration::from_secs(300),
            admin: AdminConfig::default(),
            schema_registry: SchemaRegistryConfig::default(),
            security: spool_security::config::SecurityConfig::default(),
            table_catalog: TableCatalogConfig::default(),
            index_chunk_bytes: index_settings::DEFAULT_INDEX_CHUNK_BYTES,
            reads: ReadConfig {
                preferred_replicas: true,
                ..ReadConfig::default()
            },
            lanes: LaneConfig::default(),
        }
    }
}

/// Kafka's config sources, as DescribeConfigs reports them.
pub(crate) mod source {
    pub(crate) const DYNAMIC_TOPIC_CONFIG: i8 = 1;
    pub(crate) const DYNAMIC_BROKER_CONFIG: i8 = 2;
    pub(crate) const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
    pub(crate) const STATIC_BROKER_CONFIG: i8 = 4;
    pub(crate) const DEFAULT_CONFIG: i8 = 5;
    /// A group's own config (KIP-848).
    pub(crate) const GROUP_CONFIG: i8 = 8;
}

/// A broker setting that is a field of [`BrokerConfig`]: its Kafka name, whether it
/// can change while the broker runs (the others need a restart, as in Kafka), and how
/// to read and set it.
pub(crate) struct Setting {
    pub(crate) name: &'static str,
    pub(crate) dynamic: bool,
    pub(crate) get: fn(&BrokerConfig) -> String,
    pub(crate) set: fn(&mut BrokerConfig, &str) -> Result<(), String>,
}

/// Every broker setting that is a field: the general ones, then security's.
fn all_settings() -> impl Iterator<Item = &'static Setting> {
    SETTINGS
        .iter()
        .chain(security_settings::SECURITY_SETTINGS.iter())
        .chain(security_settings::OAUTH_SETTINGS.iter())
        .chain(consumer_group_settings::CONSUMER_GROUP_SETTINGS.iter())
        .chain(share_group_settings::SHARE_GROUP_SETTINGS.iter())
        .chain(table_settings::TABLE_SETTINGS.iter())
        .chain(index_settings::INDEX_SETTINGS.iter())
        .chain(read_settings::READ_SETTINGS.iter())
        .chain(lane_settings::LANE_SETTINGS.iter())
}

/// A listener's address setting: `host:port`, or `off` for none.
fn optional_address(value: &str) -> Result<Option<SocketAddr>, String> {
    match value {
        "off" => Ok(None),
        address => address
            .parse()
            .map(Some)
            .map_err(|_| expected(value, "host:port or off")),
    }
}

/// A listener's address setting as it reads.
fn shown_address(address: Option<SocketAddr>) -> String {
    address.map_or_else(|| "off".to_owned(), |a| a.to_string())
}

const SETTINGS: [Setting; 41] = [
    Setting {
        name: "admin.listen",
        dynamic: false,
        get: |c| shown_address(c.admin.listen),
        set: |c, v| {
            c.admin.listen = optional_address(v)?;
            c.admin.listen_required = true;
            Ok(())
        },
    },
    Setting {
        name: "schema.registry.listen",
        dynamic: false,
        get: |c| match (c.schema_registry.tls, c.schema_registry.listen) {
            (true, Some(address)) => format!("https://{address}"),
            (_, address) => shown_address(address),
        },
        set: |c, v| {
            let (tls, address) = match (v.strip_prefix("https://"), v.strip_prefix("http://")) {
                (Some(address), _) => (true, address),
                (None, Some(address)) => (false, address),
                (None, None) => (false, v),
            };
            c.schema_registry.listen = optional_address(address).map_err(|_| {
                expected(v, "host:port, http://host:port, https://host:port or off")
            })?;
            c.schema_registry.tls = tls && c.schema_registry.listen.is_some();
            c.schema_registry.listen_required = true;
            Ok(())
        },
    },
    Setting {
        name: "metrics.enable",
        dynamic: false,
        get: |c| c.admin.metrics.to_string(),
        set: |c, v| {
            c.admin.metrics = v.parse().map_err(|_| expected(v, "true or false"))?;
            Ok(())
        },
    },
    Setting {
        name: "metrics.partition.series.limit",
        dynamic: false,
        get: |c| c.admin.partition_series_limit.to_string(),
        set: |c, v| {
            c.admin.partition_series_limit = usize::try_from(between(v, 0, 10_000_000)?)
                .map_err(|_| expected(v, "a number from 0 to 10000000"))?;
            Ok(())
        },
    },
    Setting {
        name: "storage.orphan.age.ms",
        dynamic: false,
        get: |c| c.storage.orphan_age.as_millis().to_string(),
        set: |c, v| {
            c.storage.orphan_age = millis(v, 1_000)?;
            Ok(())
        },
    },
    Setting {
        name: "storage.s3.endpoint",
        dynamic: false,
        get: |c| c.storage.s3.endpoint.clone().unwrap_or_default(),
        set: |c, v| {
            c.storage.s3.endpoint = (!v.is_empty()).then(|| v.to_owned());
            Ok(())
        },
    },
    Setting {
        name: "storage.s3.region",
        dynamic: false,
        get: |c| c.storage.s3.region.clone().unwrap_or_default(),
        set: |c, v| {
            c.storage.s3.region = (!v.is_empty()).then(|| v.to_owned());
            Ok(())
        },
    },
    Setting {
        name: "storage.s3.allow.http",
        dynamic: false,
        get: |c| {
            c.storage
                .s3
                .allow_http
                .map(|a| a.to_string())
                .unwrap_or_default()
        },
        set: |c, v| {
            c.storage.s3.allow_http = Some(v.parse().map_err(|_| expected(v, "true or false"))?);
            Ok(())
        },
    },
    Setting {
        name: "storage.compaction.block.bytes",
        dynamic: false,
        get: |c| c.storage.compaction.block_bytes.to_string(),
        set: |c, v| {
            c.storage.compaction.block_bytes = between(v, 1 << 10, 64 << 20)?;
            Ok(())
        },
    },
    Setting {
        name: "storage.compaction.min.ranges",
        dynamic: false,
        get: |c| c.storage.compaction.min_ranges.to_string(),
        set: |c, v| {
            c.storage.compaction.min_ranges = usize::try_from(between(v, 2, 100_000)?)
                .map_err(|_| expected(v, "a number from 2 to 100000"))?;
            Ok(())
        },
    },
    Setting {
        name: "storage.tail.bytes",
        dynamic: false,
        get: |c| c.storage.tail_bytes.to_string(),
        set: |c, v| {
            c.storage.tail_bytes = at_least(v, 0)?;
            Ok(())
        },
    },
    Setting {
        name: "log.retention.check.interval.ms",
        dynamic: false,
        get: |c| c.retention_check_interval.as_millis().to_string(),
        set: |c, v| {
            c.retention_check_interval = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "cluster.lease.ms",
        dynamic: false,
        get: |c| c.cluster.lease.as_millis().to_string(),
        set: |c, v| {
            c.cluster.lease = Duration::from_millis(between(v, 200, 600_000)?);
            Ok(())
        },
    },
    Setting {
        name: "cluster.heartbeat.ms",
        dynamic: false,
        get: |c| c.cluster.heartbeat.as_millis().to_string(),
        set: |c, v| {
            c.cluster.heartbeat = Duration::from_millis(between(v, 20, 60_000)?);
            Ok(())
        },
    },
    Setting {
        name: "cluster.handover.timeout.ms",
        dynamic: false,
        get: |c| c.cluster.handover_timeout.as_millis().to_string(),
        set: |c, v| {
            c.cluster.handover_timeout = Duration::from_millis(between(v, 0, 600_000)?);
            Ok(())
        },
    },
    Setting {
        name: "storage.gc.grace.ms",
        dynamic: false,
        get: |c| c.storage.gc_grace.as_millis().to_string(),
        set: |c, v| {
            c.storage.gc_grace = millis(v, 0)?;
            Ok(())
        },
    },
    Setting {
        name: "storage.flush.ms",
        dynamic: false,
        get: |c| c.storage.flush.as_millis().to_string(),
        set: |c, v| {
            c.storage.flush = Duration::from_millis(between(v, 1, 10_000)?);
            Ok(())
        },
    },
    Setting {
        name: "storage.flush.bytes",
        dynamic: false,
        get: |c| c.storage.flush_bytes.to_string(),
        set: |c, v| {
            c.storage.flush_bytes = between(v, 64 << 10, 1 << 30)?;
            Ok(())
        },
    },
    Setting {
        name: "storage.uploads.in.flight",
        dynamic: false,
        get: |c| c.storage.uploads_in_flight.to_string(),
        set: |c, v| {
            c.storage.uploads_in_flight = usize::try_from(between(v, 1, 64)?)
                .map_err(|_| expected(v, "a number from 1 to 64"))?;
            Ok(())
        },
    },
    Setting {
        name: "storage.cache.bytes",
        dynamic: false,
        get: |c| c.storage.cache_bytes.to_string(),
        set: |c, v| {
            c.storage.cache_bytes = at_least(v, 0)?;
            Ok(())
        },
    },
    Setting {
        name: "log.cleaner.enable",
        dynamic: false,
        get: |c| c.cleaner.enabled.to_string(),
        set: |c, v| {
            c.cleaner.enabled = v.parse().map_err(|_| expected(v, "true or false"))?;
            Ok(())
        },
    },
    Setting {
        name: "log.cleaner.dedupe.buffer.size",
        dynamic: false,
        get: |c| c.cleaner.settings.dedupe_buffer_bytes.to_string(),
        set: |c, v| {
            c.cleaner.settings.dedupe_buffer_bytes = at_least(v, 1024)?;
            Ok(())
        },
    },
    Setting {
        name: "log.cleaner.io.max.bytes.per.second",
        dynamic: false,
        get: |c| {
            c.cleaner
                .settings
                .io_bytes_per_second
                .map_or_else(|| f64::MAX.to_string(), |rate| rate.to_string())
        },
        set: |c, v| {
            // Kafka's default is Double.MAX_VALUE: no limit.
            let rate: f64 = v
                .parse()
                .map_err(|_| expected(v, "a number of bytes per second"))?;
            if rate.is_nan() || rate < 1.0 {
                return Err(expected(v, "at least 1 byte per second"));
            }
            c.cleaner.settings.io_bytes_per_second = (rate < 1e18).then(|| rate_of(rate));
            Ok(())
        },
    },
    Setting {
        name: "log.cleaner.backoff.ms",
        dynamic: false,
        get: |c| c.cleaner.backoff.as_millis().to_string(),
        set: |c, v| {
            c.cleaner.backoff = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "auto.create.topics.enable",
        dynamic: true,
        get: |c| c.auto_create_topics.to_string(),
        set: |c, v| {
            c.auto_create_topics = v.parse().map_err(|_| expected(v, "true or false"))?;
            Ok(())
        },
    },
    Setting {
        name: "num.partitions",
        dynamic: true,
        get: |c| c.default_partitions.to_string(),
        set: |c, v| {
            c.default_partitions =
                i32::try_from(at_least(v, 1)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "socket.request.max.bytes",
        dynamic: false,
        get: |c| c.max_request_bytes.to_string(),
        set: |c, v| {
            c.max_request_bytes =
                usize::try_from(at_least(v, 1024)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "num.io.threads",
        dynamic: false,
        get: |c| c.io_threads.to_string(),
        set: |c, v| {
            c.io_threads = usize::try_from(at_least(v, 1)?)
                .ok()
                .filter(|n| *n <= 256)
                .ok_or_else(|| expected(v, "a number from 1 to 256"))?;
            Ok(())
        },
    },
    Setting {
        name: "max.connections",
        dynamic: false,
        get: |c| c.max_connections.to_string(),
        set: |c, v| {
            c.max_connections =
                usize::try_from(at_least(v, 1)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "connections.max.idle.ms",
        dynamic: false,
        get: |c| c.idle_timeout.as_millis().to_string(),
        set: |c, v| {
            c.idle_timeout = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.min.session.timeout.ms",
        dynamic: false,
        get: |c| c.groups.min_session_timeout.as_millis().to_string(),
        set: |c, v| {
            c.groups.min_session_timeout = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.max.session.timeout.ms",
        dynamic: false,
        get: |c| c.groups.max_session_timeout.as_millis().to_string(),
        set: |c, v| {
            c.groups.max_session_timeout = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "group.initial.rebalance.delay.ms",
        dynamic: false,
        get: |c| c.groups.initial_rebalance_delay.as_millis().to_string(),
        set: |c, v| {
            c.groups.initial_rebalance_delay = millis(v, 0)?;
            Ok(())
        },
    },
    Setting {
        name: "offsets.retention.minutes",
        dynamic: false,
        get: |c| (c.groups.offsets_retention.as_secs() / 60).to_string(),
        set: |c, v| {
            c.groups.offsets_retention = Duration::from_secs(at_least(v, 1)?.saturating_mul(60));
            Ok(())
        },
    },
    Setting {
        name: "offsets.retention.check.interval.ms",
        dynamic: false,
        get: |c| c.groups.offsets_retention_check.as_millis().to_string(),
        set: |c, v| {
            c.groups.offsets_retention_check = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "transaction.max.timeout.ms",
        dynamic: false,
        get: |c| c.transactions.max_timeout_ms.to_string(),
        set: |c, v| {
            c.transactions.max_timeout_ms =
                i32::try_from(at_least(v, 1)?).map_err(|_| expected(v, "at most 2147483647"))?;
            Ok(())
        },
    },
    Setting {
        name: "transactional.id.expiration.ms",
        dynamic: false,
        get: |c| c.transactions.id_expiration_ms.to_string(),
        set: |c, v| {
            c.transactions.id_expiration_ms =
                i64::try_from(at_least(v, 1)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        dynamic: false,
        get: |c| {
            c.transactions
                .timeout_check_interval
                .as_millis()
                .to_string()
        },
        set: |c, v| {
            c.transactions.timeout_check_interval = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "transaction.check.interval.ms",
        dynamic: false,
        get: |c| c.transactions.check_interval.as_millis().to_string(),
        set: |c, v| {
            c.transactions.check_interval = millis(v, 1)?;
            Ok(())
        },
    },
    Setting {
        name: "transaction.check.max.attempts",
        dynamic: false,
        get: |c| c.transactions.check_max_attempts.to_string(),
        set: |c, v| {
            c.transactions.check_max_attempts =
                u32::try_from(at_least(v, 1)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
    Setting {
        name: "offset.metadata.max.bytes",
        dynamic: false,
        get: |c| c.groups.offset_metadata_max_bytes.to_string(),
        set: |c, v| {
            c.groups.offset_metadata_max_bytes =
                usize::try_from(at_least(v, 0)?).map_err(|_| expected(v, "a smaller number"))?;
            Ok(())
        },
    },
];

/// A byte rate from a setting already checked to lie between 1 and 1e18.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn rate_of(rate: f64) -> u64 {
    rate.round() as u64
}

pub(crate) fn expected(value: &str, what: &str) -> String {
    format!("{value:?}: expected {what}")
}

/// A duration setting in ms: at least `minimum`, at most `i32::MAX` (Kafka's int).
fn millis(value: &str, minimum: u64) -> Result<Duration, String> {
    let ms = at_least(value, minimum)?;
    if ms > i32::MAX as u64 {
        return Err(expected(value, &format!("at most {} ms", i32::MAX)));
    }
    Ok(Duration::from_millis(ms))
}

/// A duration setting in ms where 0 means off.
pub(crate) fn millis_or_zero(value: &str) -> Result<Duration, String> {
    millis(value, 0)
}

fn between(value: &str, minimum: u64, maximum: u64) -> Result<u64, String> {
    value
        .parse::<u64>()
        .ok()
        .filter(|n| (minimum..=maximum).contains(n))
        .ok_or_else(|| expected(value, &format!("a number from {minimum} to {maximum}")))
}

fn at_least(value: &str, minimum: u64) -> Result<u64, String> {
    value
        .parse::<u64>()
        .ok()
        .filter(|n| *n >= minimum)
        .ok_or_else(|| expected(value, &format!("a number of at least {minimum}")))
}

/// Every broker setting [`BrokerConfig::set`] accepts, by Kafka name: the broker's
/// own, and those that default a topic config (`log.retention.ms`, with its unit
/// variants `log.retention.minutes` and `log.retention.hours`, and so on; see
/// `crate::topic_configs`).
pub fn setting_names() -> impl Iterator<Item = &'static str> {
    all_settings()
        .map(|setting| setting.name)
        .chain(topic_configs::broker_synonyms().map(|synonym| synonym.name))
}

/// Whether a setting can change at run time (every topic default can).
pub(crate) fn is_dynamic(name: &str) -> bool {
    all_settings().any(|s| s.name == name && s.dynamic)
        || topic_configs::defaulted_by(name).is_some()
}

/// A broker setting's value in the topic config's terms: hours and minutes become
/// milliseconds (-1, no limit, stays -1).
fn in_topic_terms(synonym: &BrokerSynonym, value: &str) -> Result<String, String> {
    if synonym.unit_ms == 1 {
        return Ok(value.to_owned());
    }
    let number: i64 = value
        .trim()
        .parse()
        .map_err(|_| expected(value, "a whole number"))?;
    if number == -1 {
        return Ok("-1".to_owned());
    }
    number
        .checked_mul(synonym.unit_ms)
        .filter(|ms| *ms >= 0)
        .map(|ms| ms.to_string())
        .ok_or_else(|| expected(value, "a smaller, non-negative number"))
}

impl BrokerConfig {
    /// Applies one setting by its Kafka name, checking the value; the message says
    /// what the setting accepts.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        if let Some(setting) = all_settings().find(|s| s.name == name) {
            return (setting.set)(self, value);
        }
        let Some((topic_config, synonym)) = topic_configs::defaulted_by(name) else {
            let known: Vec<_> = setting_names().collect();
            return Err(format!("unknown setting (known: {})", known.join(", ")));
        };
        check_config(topic_config.name, &in_topic_terms(synonym, value)?).map_err(|e| e.0)?;
        self.topic_default_settings
            .insert(name.to_owned(), value.to_owned());
        Ok(())
    }

    /// The broker-wide defaults of topic configs, by topic config name
    /// (`log.retention.ms` sets `retention.ms`), from the settings given. The most
    /// precise one wins: `log.retention.ms` over `log.retention.minutes` over
    /// `log.retention.hours`, as in Kafka.
    #[must_use]
    pub fn topic_defaults(&self) -> BTreeMap<String, String> {
        topic_configs::TOPIC_CONFIGS
            .iter()
            .filter_map(|config| {
                let value = config.broker.iter().find_map(|synonym| {
                    let given = self.topic_default_settings.get(synonym.name)?;
                    in_topic_terms(synonym, given).ok()
                })?;
                Some((config.name.to_owned(), value))
            })
            .collect()
    }

    /// Every setting by Kafka name with its current value.
    pub(crate) fn settings(&self) -> Vec<(&'static str, String)> {
        let mut settings: Vec<_> = all_settings().map(|s| (s.name, (s.get)(self))).collect();
        let defaults = default_config_values(&self.topic_defaults());
        for config in topic_configs::TOPIC_CONFIGS {
            for (i, synonym) in config.broker.iter().enumerate() {
                // The first (most precise) setting shows the value in force; the
                // coarser variants only what they were given.
                let value = if i == 0 {
                    defaults.get(config.name).cloned()
                } else {
                    self.topic_default_settings.get(synonym.name).cloned()
                };
                if let Some(value) = value {
                    settings.push((synonym.name, value));
                }
            }
        }
        settings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_by_kafka_name_are_checked() {
        let mut config = BrokerConfig::default();
        config.set("num.partitions", "4").unwrap();
        config.set("log.retention.ms", "60000").unwrap();
        config.set("message.max.bytes", "2000000").unwrap();
        config.set("num.io.threads", "4").unwrap();
        assert_eq!(config.io_threads, 4);
        assert!(config.set("num.io.threads", "0").is_err());
        assert!(config.set("num.io.threads", "257").is_err());
        config.set("log.flush.interval.ms", "1000").unwrap();
        assert_eq!(config.default_partitions, 4);
        assert_eq!(config.topic_defaults()["retention.ms"], "60000");
        assert_eq!(config.topic_defaults()["max.message.bytes"], "2000000");

        for (name, value, says) in [
            ("num.partitions", "0", "at least 1"),
            ("log.retention.ms", "soon", "not a number"),
            ("log.segment.bytes", "-5", "from 1024 to"),
            ("log.message.timestamp.type", "Tuesday", "CreateTime"),
            ("log.cleanup.policy", "shred", "delete, compact"),
            ("log.retention.hours", "two", "whole number"),
            ("colour", "blue", "unknown setting"),
        ] {
            let error = config.set(name, value).unwrap_err();
            assert!(error.contains(says), "{name}={value}: {error}");
        }
        let described: BTreeMap<_, _> = config.settings().into_iter().collect();
        assert_eq!(described["log.retention.ms"], "60000");
        assert_eq!(described["log.segment.bytes"], (1u64 << 30).to_string());
        assert_eq!(described["num.partitions"], "4");
        assert_eq!(described["log.flush.interval.ms"], "1000");
        assert_eq!(
            described["log.flush.interval.messages"],
            i64::MAX.to_string()
        );
        let coarse = [
            "log.retention.minutes",
            "log.retention.hours",
            "log.roll.hours",
            "log.roll.jitter.hours",
        ];
        assert_eq!(described.len(), setting_names().count() - coarse.len());
        assert!(is_dynamic("log.roll.ms") && !is_dynamic("max.connections"));
    }

    #[test]
    fn time_settings_in_coarser_units_give_way_to_finer_ones() {
        let mut config = BrokerConfig::default();
        config.set("log.retention.hours", "2").unwrap();
        assert_eq!(config.topic_defaults()["retention.ms"], "7200000");
        config.set("log.roll.hours", "1").unwrap();
        assert_eq!(config.topic_defaults()["segment.ms"], "3600000");
        config.set("log.retention.minutes", "30").unwrap();
        assert_eq!(config.topic_defaults()["retention.ms"], "1800000");
        config.set("log.retention.hours", "5").unwrap();
        assert_eq!(
            config.topic_defaults()["retention.ms"],
            "1800000",
            "minutes win"
        );
        config.set("log.retention.ms", "-1").unwrap();
        assert_eq!(config.topic_defaults()["retention.ms"], "-1");
        config.set("log.roll.jitter.hours", "1").unwrap();
        assert_eq!(config.topic_defaults()["segment.jitter.ms"], "3600000");
        let described: BTreeMap<_, _> = config.settings().into_iter().collect();
        assert_eq!(described["log.retention.hours"], "5");
        assert_eq!(described["log.retention.ms"], "-1");
        assert_eq!(described["log.roll.ms"], "3600000");
        config
            .set("log.cleaner.delete.retention.ms", "1000")
            .unwrap();
        config.set("min.insync.replicas", "2").unwrap();
        config.set("compression.type", "lz4").unwrap();
        assert_eq!(config.topic_defaults()["compression.type"], "lz4");
        assert!(config.set("log.retention.hours", "-5").is_err());
    }
}
