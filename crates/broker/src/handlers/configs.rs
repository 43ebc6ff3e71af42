//! What the config APIs share: Kafka's resource types.

/// Kafka's config resource types.
pub(crate) const TOPIC: i8 = 2;
pub(crate) const BROKER: i8 = 4;
