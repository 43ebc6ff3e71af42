//! A group's own settings, as Kafka 4 has them (IncrementalAlterConfigs and
//! DescribeConfigs on a GROUP resource): `consumer.session.timeout.ms` and
//! `consumer.heartbeat.interval.ms` override the broker's `group.consumer.*` for one
//! consumer-protocol group, within the broker's bounds; the `share.*` ones (and
//! KIP-1191's dead-letter configs, Spool's release backoff) those of a share group
//! (`spool_share::settings`). A group need not exist to have them. They are kept in the metadata store, and every broker following it
//! reads them again when they change.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use spool_coordinator::consumer::{ConsumerGroupConfig, GroupOverrides};
use spool_metadata::ConfigChange;
use spool_share::ShareSettings;

use crate::config::source::{DEFAULT_CONFIG, GROUP_CONFIG};
use crate::errors::code;
use crate::shared::Shared;
use crate::topics::AdminError;

const SESSION_TIMEOUT: &str = "consumer.session.timeout.ms";
const HEARTBEAT_INTERVAL: &str = "consumer.heartbeat.interval.ms";

/// What a group's config reads as: its name, value and where the value comes from.
pub(crate) struct GroupConfigEntry {
    pub(crate) name: &'static str,
    pub(crate) value: String,
    pub(crate) source: i8,
    pub(crate) documentation: &'static str,
}

/// The overrides `configs` make, checked against the broker's settings: each config
/// known, a whole number of ms within the broker's bounds, and heartbeats more often
/// than sessions end.
pub(crate) fn overrides(
    configs: &BTreeMap<String, String>,
    settings: &ConsumerGroupConfig,
) -> Result<GroupOverrides, String> {
    let mut overrides = GroupOverrides::default();
    for (name, value) in configs {
        let (slot, min, max, bounds) = match name.as_str() {
            SESSION_TIMEOUT => (
                &mut overrides.session_timeout,
                settings.min_session_timeout,
                settings.max_session_timeout,
                "group.consumer.min.session.timeout.ms and group.consumer.max.session.timeout.ms",
            ),
            HEARTBEAT_INTERVAL => (
                &mut overrides.heartbeat_interval,
                settings.min_heartbeat_interval,
                settings.max_heartbeat_interval,
                "group.consumer.min.heartbeat.interval.ms and group.consumer.max.heartbeat.interval.ms",
            ),
            share if spool_share::settings::is_share_key(share) => continue,
            other => {
                return Err(format!(
                    "unknown group config {other}: a group has {SESSION_TIMEOUT}, {HEARTBEAT_INTERVAL} and {}",
                    spool_share::settings::keys::ALL.join(", ")
                ));
            }
        };
        let ms: u64 = value
            .trim()
            .parse()
            .map_err(|_| format!("{name} must be a whole number of ms, not {value:?}"))?;
        let duration = Duration::from_millis(ms);
        if !(min..=max).contains(&duration) {
            return Err(format!(
                "{name} must lie between {} and {} ms ({bounds})",
                min.as_millis(),
                max.as_millis()
            ));
        }
        *slot = Some(duration);
    }
    let session = overrides
        .session_timeout
        .unwrap_or(settings.session_timeout);
    let heartbeat = overrides
        .heartbeat_interval
        .unwrap_or(settings.heartbeat_interval);
    if heartbeat >= session {
        return Err(format!(
            "the group's heartbeat interval ({} ms) must be less than its session timeout ({} ms)",
            heartbeat.as_millis(),
            session.as_millis()
        ));
    }
    Ok(overrides)
}

/// IncrementalAlterConfigs (or AlterConfigs) of a group: `change` makes the group's
/// new configs from its current ones; they are checked, stored, then in force.
pub(crate) async fn change(
    shared: &Arc<Shared>,
    group_id: &str,
    validate_only: bool,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AdminError>,
) -> Result<(), AdminError> {
    if group_id.is_empty() {
        return Err(AdminError {
            code: code::INVALID_REQUEST,
            message: "a group config needs a group id".to_owned(),
        });
    }
    let _admin = shared.changes().lock().await;
    let before = shared.groups().group_configs(group_id);
    let wanted = change(&before)?;
    let config = shared.current_config();
    let overrides = overrides(&wanted, &config.groups.consumer)
        .and_then(|overrides| {
            ShareSettings::of_group(&config.share_groups, &wanted).map(|_| overrides)
        })
        .map_err(|message| AdminError {
            code: code::INVALID_CONFIG,
            message,
        })?;
    if validate_only {
        return Ok(());
    }
    let mut changes: Vec<ConfigChange> = before
        .keys()
        .filter(|name| !wanted.contains_key(*name))
        .map(|name| ConfigChange::Delete { key: name.clone() })
        .collect();
    changes.extend(
        wanted
            .iter()
            .filter(|(name, value)| before.get(*name) != Some(value))
            .map(|(name, value)| ConfigChange::Set {
                key: name.clone(),
                value: value.clone(),
            }),
    );
    if changes.is_empty() {
        return Ok(());
    }
    shared
        .metadata()
        .alter_group_configs(group_id, &changes)
        .await
        .map_err(|error| AdminError {
            code: code::KAFKA_STORAGE_ERROR,
            message: format!("storing the configs of group {group_id} failed: {error}"),
        })?;
    tracing::info!(group = group_id, configs = ?wanted, "group configs changed");
    shared
        .groups()
        .set_group_configs(group_id, wanted, overrides);
    Ok(())
}

/// Makes every group's configs those of the store (at the start, and when another
/// broker may have changed them); configs that no longer fit the broker's settings
/// are skipped with an error log.
pub(crate) fn adopt(shared: &Shared, stored: BTreeMap<String, BTreeMap<String, String>>) {
    let config = shared.current_config();
    let settings = &config.groups.consumer;
    let usable = stored
        .into_iter()
        .filter_map(|(group_id, configs)| match overrides(&configs, settings).and_then(
            |overrides| ShareSettings::of_group(&config.share_groups, &configs).map(|_| overrides),
        ) {
            Ok(overrides) => Some((group_id, configs, overrides)),
            Err(error) => {
                tracing::error!(group = %group_id, %error, "stored group configs do not apply; ignoring them");
                None
            }
        })
        .collect();
    shared.groups().replace_group_configs(usable);
}

/// DescribeConfigs of a group: each config, its own value or the broker's.
pub(crate) fn describe(shared: &Shared, group_id: &str) -> Vec<GroupConfigEntry> {
    let own = shared.groups().group_configs(group_id);
    let settings = &shared.current_config().groups.consumer;
    let entry = |name: &'static str, default: Duration, documentation: &'static str| {
        let (value, source) = match own.get(name) {
            Some(value) => (value.clone(), GROUP_CONFIG),
            None => (default.as_millis().to_string(), DEFAULT_CONFIG),
        };
        GroupConfigEntry {
            name,
            value,
            source,
            documentation,
        }
    };
    let mut entries = vec![
        entry(
            HEARTBEAT_INTERVAL,
            settings.heartbeat_interval,
            "How often the group's consumer-protocol members heartbeat (overrides group.consumer.heartbeat.interval.ms).",
        ),
        entry(
            SESSION_TIMEOUT,
            settings.session_timeout,
            "How long a consumer-protocol member of the group may stay silent before it is fenced (overrides group.consumer.session.timeout.ms).",
        ),
    ];
    let share = ShareSettings::of_broker(&shared.current_config().share_groups);
    for (name, default, documentation) in share_defaults(&share) {
        let (value, source) = match own.get(name) {
            Some(value) => (value.clone(), GROUP_CONFIG),
            None => (default, DEFAULT_CONFIG),
        };
        entries.push(GroupConfigEntry {
            name,
            value,
            source,
            documentation,
        });
    }
    entries
}

/// The share-group configs with the broker's defaults, and what each does.
fn share_defaults(share: &ShareSettings) -> [(&'static str, String, &'static str); 10] {
    use spool_share::settings::{OffsetReset, keys};
    let ms = |d: Duration| d.as_millis().to_string();
    [
        (
            keys::RECORD_LOCK_DURATION,
            ms(share.record_lock_duration),
            "How long a share consumer holds a record it was given before it goes to another (overrides group.share.record.lock.duration.ms).",
        ),
        (
            keys::DELIVERY_COUNT_LIMIT,
            share.delivery_count_limit.to_string(),
            "How often a record is delivered before it is archived (and written to the dead-letter topic) (overrides group.share.delivery.count.limit).",
        ),
        (
            keys::PARTITION_MAX_RECORD_LOCKS,
            share.partition_max_record_locks.to_string(),
            "The most records of one partition in flight for the group (overrides group.share.partition.max.record.locks).",
        ),
        (
            keys::AUTO_OFFSET_RESET,
            match share.auto_offset_reset {
                OffsetReset::Earliest => "earliest",
                OffsetReset::Latest => "latest",
            }
            .to_owned(),
            "Where the group starts reading a partition it never read: earliest or latest.",
        ),
        (
            keys::SESSION_TIMEOUT,
            ms(share.session_timeout),
            "How long a share consumer may stay silent before it leaves the group (overrides group.share.session.timeout.ms).",
        ),
        (
            keys::HEARTBEAT_INTERVAL,
            ms(share.heartbeat_interval),
            "How often the group's share consumers heartbeat (overrides group.share.heartbeat.interval.ms).",
        ),
        (
            keys::RELEASE_BACKOFF,
            String::new(),
            "Spool: how long a released or lock-expired record waits before it is delivered again, in ms by delivery count (the last for every later one), or rocketmq for RocketMQ's schedule; empty: at once.",
        ),
        (
            keys::DEAD_LETTER_TOPIC,
            String::new(),
            "Where rejected records and those past the delivery count limit are written (KIP-1191); its name starts with errors.deadletterqueue.topic.name.prefix; empty: nowhere.",
        ),
        (
            keys::DEAD_LETTER_COPY_RECORD,
            "false".to_owned(),
            "Whether a dead letter carries the record's key, value and headers, or only the headers naming where it came from.",
        ),
        (
            keys::DEAD_LETTER_AUTO_CREATE,
            "false".to_owned(),
            "Whether the dead-letter topic is created when it does not exist.",
        ),
    ]
}
