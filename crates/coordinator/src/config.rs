//! The coordinator's settings, by their Kafka broker-config names.

use std::time::Duration;

use spool_model::Clock;

use crate::consumer::ConsumerGroupConfig;

/// How groups are run. Defaults are Kafka's.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    /// `group.min.session.timeout.ms`: shorter session timeouts are refused.
    pub min_session_timeout: Duration,
    /// `group.max.session.timeout.ms`.
    pub max_session_timeout: Duration,
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an empty
    /// group waits for more members (extended by each new one, up to the rebalance
    /// timeout), so that a group starting up rebalances once, not once per member.
    pub initial_rebalance_delay: Duration,
    /// `offsets.retention.minutes`: committed offsets of a group without members are
    /// deleted this long after the later of their commit and the group emptying.
    pub offsets_retention: Duration,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check: Duration,
    /// `offset.metadata.max.bytes`.
    pub offset_metadata_max_bytes: usize,
    /// How often sessions and rebalance timeouts are checked.
    pub tick: Duration,
    /// This broker's node id: recorded with its claims of groups in the metadata
    /// store, so that it leaves groups another node claimed alone.
    pub node_id: i32,
    /// The broker's clock: sessions, rebalance timeouts, commit times, expiry.
    pub clock: Clock,
    /// The consumer protocol's settings (`group.consumer.*`).
    pub consumer: ConsumerGroupConfig,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            min_session_timeout: Duration::from_secs(6),
            max_session_timeout: Duration::from_secs(30 * 60),
            initial_rebalance_delay: Duration::from_secs(3),
            offsets_retention: Duration::from_secs(7 * 24 * 3600),
            offsets_retention_check: Duration::from_secs(600),
            offset_metadata_max_bytes: 4096,
            tick: Duration::from_millis(100),
            node_id: 1,
            clock: Clock::System,
            consumer: ConsumerGroupConfig::default(),
        }
    }
}
