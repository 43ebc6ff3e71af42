//! What the config APIs share: Kafka's resource types and config sources.

/// Kafka's config resource types.
pub(crate) const TOPIC: i8 = 2;
pub(crate) const BROKER: i8 = 4;

/// Kafka's config sources.
pub(crate) const DYNAMIC_TOPIC_CONFIG: i8 = 1;
pub(crate) const DYNAMIC_BROKER_CONFIG: i8 = 2;
pub(crate) const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
pub(crate) const STATIC_BROKER_CONFIG: i8 = 4;
pub(crate) const DEFAULT_CONFIG: i8 = 5;
