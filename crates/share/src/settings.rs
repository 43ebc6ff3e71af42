//! The settings of one share group: the broker's (`group.share.*`, Kafka's names and
//! defaults) with the group's own configs over them (`share.*`, KIP-1191's
//! `errors.deadletterqueue.*`, and Spool's `spool.share.release.backoff.ms`), each
//! checked against the broker's bounds.

use std::collections::BTreeMap;
use std::time::Duration;

/// Where a share-partition starts when the group first reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    Earliest,
    Latest,
}

/// The broker's share-group settings: the defaults of every group and the bounds of
/// their overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareBrokerSettings {
    pub record_lock_duration: Duration,
    pub min_record_lock_duration: Duration,
    pub max_record_lock_duration: Duration,
    pub delivery_count_limit: u16,
    pub min_delivery_count_limit: u16,
    pub max_delivery_count_limit: u16,
    pub partition_max_record_locks: u32,
    pub session_timeout: Duration,
    pub min_session_timeout: Duration,
    pub max_session_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub min_heartbeat_interval: Duration,
    pub max_heartbeat_interval: Duration,
    /// The most members one share group may have.
    pub max_size: usize,
    /// The most share sessions this broker keeps.
    pub max_share_sessions: usize,
    /// What every dead-letter topic's name starts with.
    pub dead_letter_prefix: String,
}

impl Default for ShareBrokerSettings {
    fn default() -> ShareBrokerSettings {
        ShareBrokerSettings {
            record_lock_duration: Duration::from_secs(30),
            min_record_lock_duration: Duration::from_secs(15),
            max_record_lock_duration: Duration::from_secs(60),
            delivery_count_limit: 5,
            min_delivery_count_limit: 2,
            max_delivery_count_limit: 10,
            partition_max_record_locks: 2000,
            session_timeout: Duration::from_secs(45),
            min_session_timeout: Duration::from_secs(45),
            max_session_timeout: Duration::from_secs(60),
            heartbeat_interval: Duration::from_secs(5),
            min_heartbeat_interval: Duration::from_secs(5),
            max_heartbeat_interval: Duration::from_secs(15),
            max_size: 200,
            max_share_sessions: 2000,
            dead_letter_prefix: "dlq.".to_owned(),
        }
    }
}

impl ShareBrokerSettings {
    /// Kafka's checks at start: each default within its bounds, heartbeats more often
    /// than sessions end.
    pub fn check(&self) -> Result<(), String> {
        let within = |name: &str, value: Duration, min: Duration, max: Duration| {
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(format!(
                    "group.share.{name}.ms ({}) must lie between group.share.min.{name}.ms ({}) and group.share.max.{name}.ms ({})",
                    value.as_millis(),
                    min.as_millis(),
                    max.as_millis()
                ))
            }
        };
        within(
            "record.lock.duration",
            self.record_lock_duration,
            self.min_record_lock_duration,
            self.max_record_lock_duration,
        )?;
        within(
            "session.timeout",
            self.session_timeout,
            self.min_session_timeout,
            self.max_session_timeout,
        )?;
        within(
            "heartbeat.interval",
            self.heartbeat_interval,
            self.min_heartbeat_interval,
            self.max_heartbeat_interval,
        )?;
        let (limit, min, max) = (
            self.delivery_count_limit,
            self.min_delivery_count_limit,
            self.max_delivery_count_limit,
        );
        if min < 2 || !(min..=max).contains(&limit) {
            return Err(format!(
                "group.share.delivery.count.limit ({limit}) must lie between group.share.min.delivery.count.limit ({min}, at least 2) and group.share.max.delivery.count.limit ({max})"
            ));
        }
        if self.heartbeat_interval >= self.session_timeout {
            return Err(
                "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms"
                    .to_owned(),
            );
        }
        Ok(())
    }
}

/// One group's settings, as its share-partitions and members follow them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSettings {
    pub record_lock_duration: Duration,
    pub delivery_count_limit: u16,
    pub partition_max_record_locks: u32,
    pub auto_offset_reset: OffsetReset,
    pub session_timeout: Duration,
    pub heartbeat_interval: Duration,
    /// How long a released (or lock-expired) record waits before it is delivered
    /// again, by the number of deliveries it had (the last entry for every later
    /// one); empty: at once, as Kafka.
    pub release_backoff: Vec<Duration>,
    /// Where rejected records and those delivered too often go (KIP-1191).
    pub dead_letter_topic: Option<String>,
    /// Whether a dead letter carries the record's key and value, or only headers.
    pub dead_letter_copy_record: bool,
    /// Whether the dead-letter topic is created when it does not exist.
    pub dead_letter_auto_create: bool,
}

/// The group configs of share groups, by Kafka's names (and Spool's one addition).
pub mod keys {
    pub const RECORD_LOCK_DURATION: &str = "share.record.lock.duration.ms";
    pub const DELIVERY_COUNT_LIMIT: &str = "share.delivery.count.limit";
    pub const PARTITION_MAX_RECORD_LOCKS: &str = "share.partition.max.record.locks";
    pub const AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";
    pub const SESSION_TIMEOUT: &str = "share.session.timeout.ms";
    pub const HEARTBEAT_INTERVAL: &str = "share.heartbeat.interval.ms";
    pub const RELEASE_BACKOFF: &str = "spool.share.release.backoff.ms";
    pub const DEAD_LETTER_TOPIC: &str = "errors.deadletterqueue.topic.name";
    pub const DEAD_LETTER_COPY_RECORD: &str = "errors.deadletterqueue.copy.record.enable";
    pub const DEAD_LETTER_AUTO_CREATE: &str = "errors.deadletterqueue.auto.create.topics.enable";

    /// Every one of them.
    pub const ALL: [&str; 10] = [
        RECORD_LOCK_DURATION,
        DELIVERY_COUNT_LIMIT,
        PARTITION_MAX_RECORD_LOCKS,
        AUTO_OFFSET_RESET,
        SESSION_TIMEOUT,
        HEARTBEAT_INTERVAL,
        RELEASE_BACKOFF,
        DEAD_LETTER_TOPIC,
        DEAD_LETTER_COPY_RECORD,
        DEAD_LETTER_AUTO_CREATE,
    ];
}

/// RocketMQ's retry schedule (its delay levels from 1 s on), which
/// `spool.share.release.backoff.ms=rocketmq` names.
pub const ROCKETMQ_BACKOFF_MS: [u64; 17] = [
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
    480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000,
];

/// Whether `key` is a share group's config.
#[must_use]
pub fn is_share_key(key: &str) -> bool {
    keys::ALL.contains(&key)
}

impl ShareSettings {
    /// The settings of a group with no configs of its own.
    #[must_use]
    pub fn of_broker(broker: &ShareBrokerSettings) -> ShareSettings {
        ShareSettings {
            record_lock_duration: broker.record_lock_duration,
            delivery_count_limit: broker.delivery_count_limit,
            partition_max_record_locks: broker.partition_max_record_locks,
            auto_offset_reset: OffsetReset::Latest,
            session_timeout: broker.session_timeout,
            heartbeat_interval: broker.heartbeat_interval,
            release_backoff: Vec::new(),
            dead_letter_topic: None,
            dead_letter_copy_record: false,
            dead_letter_auto_create: false,
        }
    }

    /// The settings of a group whose configs are `configs` (those not of share
    /// groups are left to others); an error names the first config out of bounds.
    pub fn of_group(
        broker: &ShareBrokerSettings,
        configs: &BTreeMap<String, String>,
    ) -> Result<ShareSettings, String> {
        let mut settings = ShareSettings::of_broker(broker);
        for (key, value) in configs {
            let value = value.trim();
            match key.as_str() {
                keys::RECORD_LOCK_DURATION => {
                    settings.record_lock_duration = millis_within(
                        key,
                        value,
                        broker.min_record_lock_duration,
                        broker.max_record_lock_duration,
                        "group.share.min.record.lock.duration.ms and group.share.max.record.lock.duration.ms",
                    )?;
                }
                keys::DELIVERY_COUNT_LIMIT => {
                    let limit: u16 = number(key, value)?;
                    let (min, max) = (
                        broker.min_delivery_count_limit,
                        broker.max_delivery_count_limit,
                    );
                    if !(min..=max).contains(&limit) {
                        return Err(format!("{key} must lie between {min} and {max}"));
                    }
                    settings.delivery_count_limit = limit;
                }
                keys::PARTITION_MAX_RECORD_LOCKS => {
                    let locks: u32 = number(key, value)?;
                    if !(100..=10_000).contains(&locks) {
                        return Err(format!("{key} must lie between 100 and 10000"));
                    }
                    settings.partition_max_record_locks = locks;
                }
                keys::AUTO_OFFSET_RESET => {
                    settings.auto_offset_reset = match value {
                        "earliest" => OffsetReset::Earliest,
                        "latest" => OffsetReset::Latest,
                        other => {
                            return Err(format!("{key} must be earliest or latest, not {other:?}"));
                        }
                    };
                }
                keys::SESSION_TIMEOUT => {
                    settings.session_timeout = millis_within(
                        key,
                        value,
                        broker.min_session_timeout,
                        broker.max_session_timeout,
                        "group.share.min.session.timeout.ms and group.share.max.session.timeout.ms",
                    )?;
                }
                keys::HEARTBEAT_INTERVAL => {
                    settings.heartbeat_interval = millis_within(
                        key,
                        value,
                        broker.min_heartbeat_interval,
                        broker.max_heartbeat_interval,
                        "group.share.min.heartbeat.interval.ms and group.share.max.heartbeat.interval.ms",
                    )?;
                }
                keys::RELEASE_BACKOFF => settings.release_backoff = backoff(key, value)?,
                keys::DEAD_LETTER_TOPIC => {
                    settings.dead_letter_topic = if value.is_empty() {
                        None
                    } else if value.starts_with(&broker.dead_letter_prefix) {
                        Some(value.to_owned())
                    } else {
                        return Err(format!(
                            "{key} must start with {:?} (errors.deadletterqueue.topic.name.prefix), not {value:?}",
                            broker.dead_letter_prefix
                        ));
                    };
                }
                keys::DEAD_LETTER_COPY_RECORD => {
                    settings.dead_letter_copy_record = flag(key, value)?
                }
                keys::DEAD_LETTER_AUTO_CREATE => {
                    settings.dead_letter_auto_create = flag(key, value)?
                }
                _ => {}
            }
        }
        if settings.heartbeat_interval >= settings.session_timeout {
            return Err(format!(
                "the group's share heartbeat interval ({} ms) must be less than its share session timeout ({} ms)",
                settings.heartbeat_interval.as_millis(),
                settings.session_timeout.as_millis()
            ));
        }
        Ok(settings)
    }

    /// How long a record delivered `deliveries` times waits before it is available
    /// again.
    #[must_use]
    pub fn backoff_after(&self, deliveries: u16) -> Duration {
        let index = usize::from(deliveries.max(1)) - 1;
        self.release_backoff
            .get(index)
            .or(self.release_backoff.last())
            .copied()
            .unwrap_or_default()
    }
}

fn number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{key} must be a whole number, not {value:?}"))
}

fn flag(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("{key} must be true or false, not {other:?}")),
    }
}

fn millis_within(
    key: &str,
    value: &str,
    min: Duration,
    max: Duration,
    bounds: &str,
) -> Result<Duration, String> {
    let duration = Duration::from_millis(number(key, value)?);
    if !(min..=max).contains(&duration) {
        return Err(format!(
            "{key} must lie between {} and {} ms ({bounds})",
            min.as_millis(),
            max.as_millis()
        ));
    }
    Ok(duration)
}

/// A backoff list: ms, comma-separated, each at most a day; or `rocketmq`.
fn backoff(key: &str, value: &str) -> Result<Vec<Duration>, String> {
    if value == "rocketmq" {
        return Ok(ROCKETMQ_BACKOFF_MS
            .iter()
            .copied()
            .map(Duration::from_millis)
            .collect());
    }
    value
        .split(',')
        .map(str::trim)
        .filter(|step| !step.is_empty())
        .map(|step| {
            let ms: u64 = number(key, step)?;
            if ms > 86_400_000 {
                return Err(format!("{key}: {ms} ms is longer than a day"));
            }
            Ok(Duration::from_millis(ms))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(configs: &[(&str, &str)]) -> Result<ShareSettings, String> {
        let configs = configs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ShareSettings::of_group(&ShareBrokerSettings::default(), &configs)
    }

    #[test]
    fn a_group_without_configs_has_kafkas_defaults() {
        let settings = of(&[]).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(settings.record_lock_duration, Duration::from_secs(30));
        assert_eq!(settings.delivery_count_limit, 5);
        assert_eq!(settings.auto_offset_reset, OffsetReset::Latest);
        assert_eq!(settings.backoff_after(3), Duration::ZERO);
        assert_eq!(settings.dead_letter_topic, None);
    }

    #[test]
    fn overrides_are_checked_against_the_brokers_bounds() {
        assert!(of(&[(keys::RECORD_LOCK_DURATION, "1000")]).is_err());
        assert!(of(&[(keys::DELIVERY_COUNT_LIMIT, "1")]).is_err());
        assert!(of(&[(keys::DELIVERY_COUNT_LIMIT, "11")]).is_err());
        assert!(of(&[(keys::AUTO_OFFSET_RESET, "none")]).is_err());
        assert!(of(&[(keys::DEAD_LETTER_TOPIC, "failed")]).is_err());
        let settings = of(&[
            (keys::DEAD_LETTER_TOPIC, "dlq.orders"),
            (keys::DELIVERY_COUNT_LIMIT, "3"),
            (keys::AUTO_OFFSET_RESET, "earliest"),
        ])
        .unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(settings.dead_letter_topic.as_deref(), Some("dlq.orders"));
        assert_eq!(settings.delivery_count_limit, 3);
        assert_eq!(settings.auto_offset_reset, OffsetReset::Earliest);
    }

    #[test]
    fn the_backoff_of_a_delivery_count_is_its_step_or_the_last() {
        let settings = of(&[(keys::RELEASE_BACKOFF, "1000, 5000,10000")])
            .unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(settings.backoff_after(1), Duration::from_secs(1));
        assert_eq!(settings.backoff_after(2), Duration::from_secs(5));
        assert_eq!(settings.backoff_after(9), Duration::from_secs(10));
        let rocketmq =
            of(&[(keys::RELEASE_BACKOFF, "rocketmq")]).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(rocketmq.backoff_after(4), Duration::from_secs(30));
        assert!(of(&[(keys::RELEASE_BACKOFF, "1000,soon")]).is_err());
    }
}
