//! Every broker config Kafka 4 documents (`broker_configs/kafka4.rs`), for AlterConfigs,
//! IncrementalAlterConfigs and DescribeConfigs of a BROKER resource. Spool's own
//! settings (`config.rs`) answer for the names they share with Kafka. Every other
//! Kafka name is a *compatibility config*: one Kafka lets change while it runs is
//! accepted (type-checked as Kafka checks it), stored with the other overrides and
//! described back, and changes nothing — [`no_effect`] says why; one Kafka reads only
//! at start is refused as Kafka refuses it (`INVALID_REQUEST`). Described, each shows
//! Kafka's default until set (`docs/configuration.md#kafkas-other-broker-configs`).

mod kafka4;

use crate::config;
use crate::topic_configs::ConfigType;

/// How Kafka lets a broker config change while the broker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpdateMode {
    /// Only at start: AlterConfigs refuses it.
    ReadOnly,
    /// For one broker only (resource name = its id), not as a cluster-wide default.
    PerBroker,
    /// For one broker or as the cluster-wide default (resource name `""`).
    ClusterWide,
}

/// One of Kafka's broker configs.
#[derive(Debug)]
pub(crate) struct KafkaBrokerConfig {
    pub(crate) name: &'static str,
    pub(crate) kind: ConfigType,
    /// Kafka's default as it describes it; `None` for null (or none).
    pub(crate) default: Option<&'static str>,
    pub(crate) mode: UpdateMode,
}

impl KafkaBrokerConfig {
    const fn new(
        name: &'static str,
        kind: ConfigType,
        default: Option<&'static str>,
        mode: UpdateMode,
    ) -> KafkaBrokerConfig {
        KafkaBrokerConfig {
            name,
            kind,
            default,
            mode,
        }
    }

    /// Checks `value` by the config's type, as Kafka parses it.
    pub(crate) fn check(&self, value: &str) -> Result<(), String> {
        let name = self.name;
        let trimmed = value.trim();
        let number = |fits: bool| {
            if fits {
                Ok(())
            } else {
                Err(format!(
                    "{name}={value}: expected a {} number",
                    kind_name(self.kind)
                ))
            }
        };
        match self.kind {
            ConfigType::Boolean => {
                if trimmed.eq_ignore_ascii_case("true") || trimmed.eq_ignore_ascii_case("false") {
                    Ok(())
                } else {
                    Err(format!("{name}={value}: expected true or false"))
                }
            }
            ConfigType::Short => number(trimmed.parse::<i16>().is_ok()),
            ConfigType::Int => number(trimmed.parse::<i32>().is_ok()),
            ConfigType::Long => number(trimmed.parse::<i64>().is_ok()),
            ConfigType::Double => number(trimmed.parse::<f64>().is_ok_and(f64::is_finite)),
            ConfigType::String | ConfigType::List | ConfigType::Class | ConfigType::Password => {
                Ok(())
            }
        }
    }

    /// Whether its value is a secret, never described (Kafka's `PASSWORD` type).
    pub(crate) fn is_sensitive(&self) -> bool {
        self.kind == ConfigType::Password
    }
}

fn kind_name(kind: ConfigType) -> &'static str {
    match kind {
        ConfigType::Short => "16-bit",
        ConfigType::Int => "32-bit",
        ConfigType::Long => "64-bit",
        _ => "decimal",
    }
}

/// Kafka's broker config named `name`, if it is one Spool has no setting for.
pub(crate) fn compatibility(name: &str) -> Option<&'static KafkaBrokerConfig> {
    kafka4::KAFKA_BROKER_CONFIGS
        .iter()
        .find(|config| config.name == name)
        .filter(|config| !is_spool_setting(config.name))
}

/// Kafka's broker configs that Spool has no setting for, by name.
pub(crate) fn compatibility_configs() -> impl Iterator<Item = &'static KafkaBrokerConfig> {
    kafka4::KAFKA_BROKER_CONFIGS
        .iter()
        .filter(|config| !is_spool_setting(config.name))
}

fn is_spool_setting(name: &str) -> bool {
    config::setting_names().any(|setting| setting == name)
}

/// Why a compatibility config changes nothing in Spool, by what it configures.
pub(crate) fn no_effect(name: &str) -> &'static str {
    const BY_PREFIX: &[(&str, &str)] = &[
        ("controller.", METADATA),
        ("metadata.", METADATA),
        ("process.roles", METADATA),
        (
            "node.id",
            "the node id is --node-id (or taken from the cluster's registry)",
        ),
        ("initial.broker.registration", METADATA),
        ("broker.heartbeat", METADATA),
        ("broker.session", METADATA),
        (
            "sasl.kerberos.",
            "Kerberos (GSSAPI) is not offered: SCRAM, PLAIN and OAUTHBEARER are",
        ),
        (
            "sasl.login.",
            "the broker logs in to nothing: clients log in to it",
        ),
        ("sasl.server.", SASL),
        ("sasl.jaas.", SASL),
        ("sasl.mechanism.", REPLICATION),
        (
            "ssl.",
            "TLS takes PEM files: ssl.certificate.location, ssl.key.location, ssl.ca.location",
        ),
        ("remote.", SHARED_STORAGE),
        ("log.local.", SHARED_STORAGE),
        ("replica.", REPLICATION),
        ("num.replica.", REPLICATION),
        ("leader.imbalance.", REPLICATION),
        ("auto.leader.rebalance.", REPLICATION),
        ("min.insync.replicas", REPLICATION),
        ("default.replication.factor", REPLICATION),
        ("offsets.topic.", INTERNAL_TOPICS),
        ("offsets.load.", INTERNAL_TOPICS),
        ("offsets.commit.", INTERNAL_TOPICS),
        ("transaction.state.log.", INTERNAL_TOPICS),
        ("share.coordinator.", INTERNAL_TOPICS),
        ("metric.", METRICS),
        ("metrics.", METRICS),
        ("kafka.metrics.", METRICS),
        ("quota.", QUOTAS),
        ("client.quota.", QUOTAS),
        ("log.dir", "the data directory is --data-dir"),
        ("num.network.threads", THREADS),
        ("background.threads", THREADS),
        ("num.recovery.threads", THREADS),
        ("log.cleaner.threads", THREADS),
        ("queued.max.", THREADS),
        ("socket.", THREADS),
    ];
    BY_PREFIX
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map_or(
            "Spool has no such mechanism; it is kept for tools that set it",
            |(_, why)| why,
        )
}

const METADATA: &str =
    "the metadata lives in SQLite or PostgreSQL (--metadata-url), not a KRaft quorum";
const SASL: &str = "SASL logins are checked against the SCRAM credentials and OAUTHBEARER settings";
const REPLICATION: &str =
    "one broker owns each partition and storage keeps the copies: there are no followers";
const SHARED_STORAGE: &str =
    "shared-storage mode keeps every partition in the object store (storage.url), not in tiers";
const INTERNAL_TOPICS: &str = "offsets, transactions and share-group state are kept in the metadata store, not internal topics";
const METRICS: &str = "metrics are served in Prometheus's format at /metrics";
const QUOTAS: &str = "quotas are set with AlterClientQuotas and kept in the metadata store";
const THREADS: &str = "the async runtime sizes its threads, queues and socket buffers itself";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kafka_config_is_named_once_and_its_default_has_its_type() {
        let mut names: Vec<&str> = kafka4::KAFKA_BROKER_CONFIGS
            .iter()
            .map(|c| c.name)
            .collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), kafka4::KAFKA_BROKER_CONFIGS.len());
        for config in &kafka4::KAFKA_BROKER_CONFIGS {
            if let Some(default) = config.default.filter(|d| !d.is_empty()) {
                config.check(default).unwrap();
            }
        }
    }

    #[test]
    fn spool_settings_answer_for_the_names_they_share() {
        assert!(compatibility("num.partitions").is_none());
        assert!(compatibility("log.retention.hours").is_none());
        let kerberos = compatibility("sasl.kerberos.service.name").unwrap();
        assert_eq!(kerberos.mode, UpdateMode::PerBroker);
        assert!(no_effect(kerberos.name).contains("Kerberos"));
        assert_eq!(
            compatibility("log.dirs").map(|c| c.mode),
            Some(UpdateMode::ReadOnly)
        );
    }

    #[test]
    fn the_configuration_guide_lists_every_compatibility_config() {
        let guide = include_str!("../../../docs/configuration.md");
        let missing: Vec<&str> = compatibility_configs()
            .map(|config| config.name)
            .filter(|name| !guide.contains(&format!("| `{name}` |")))
            .collect();
        assert!(
            missing.is_empty(),
            "not in docs/configuration.md: {missing:?}"
        );
    }

    #[test]
    fn values_are_checked_by_type() {
        let config = |kind| KafkaBrokerConfig::new("x", kind, None, UpdateMode::ClusterWide);
        assert!(config(ConfigType::Int).check("12").is_ok());
        assert!(config(ConfigType::Int).check("3000000000").is_err());
        assert!(config(ConfigType::Short).check("40000").is_err());
        assert!(config(ConfigType::Long).check("3000000000").is_ok());
        assert!(config(ConfigType::Double).check("0.5").is_ok());
        assert!(config(ConfigType::Double).check("NaN").is_err());
        assert!(config(ConfigType::Boolean).check("yes").is_err());
        assert!(config(ConfigType::Password).check("secret").is_ok());
    }
}
