//! What the config APIs share: resource types, config sources, the broker's settings.

use crate::config::BrokerConfig;

/// Kafka's config resource types.
pub(crate) const TOPIC: i8 = 2;
pub(crate) const BROKER: i8 = 4;

/// Kafka's config sources.
pub(crate) const DYNAMIC_TOPIC_CONFIG: i8 = 1;
pub(crate) const STATIC_BROKER_CONFIG: i8 = 4;
pub(crate) const DEFAULT_CONFIG: i8 = 5;

/// The broker settings, by their Kafka names, as `--set` accepts them.
pub(crate) fn broker_settings(config: &BrokerConfig) -> Vec<(&'static str, String)> {
    vec![
        (
            "auto.create.topics.enable",
            config.auto_create_topics.to_string(),
        ),
        ("num.partitions", config.default_partitions.to_string()),
        (
            "socket.request.max.bytes",
            config.max_request_bytes.to_string(),
        ),
        ("max.connections", config.max_connections.to_string()),
        (
            "connections.max.idle.ms",
            config.idle_timeout.as_millis().to_string(),
        ),
    ]
}

/// The message for an attempt to change broker settings at run time.
pub(crate) const BROKER_READ_ONLY: &str =
    "broker settings are static in this version: restart spool with --set key=value";
